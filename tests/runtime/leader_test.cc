// The leader on one rank, driven the way the runtime drives it: its messages go through the payload
// encoder into a schedule book, the book's timed calls are numbered and timed with a synthetic cost
// function, and the timings come back as carried samples a sync later. Pins: a search converges through
// that loop on a good config; schedules stay ahead of the calls (appended) while searching; the first
// run of an algorithm/protocol is a warm-up; workloads of one size class share one search while a group
// and other sizes do not; imports ship as converged entries; every message fits a payload.
#include "src/leader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <initializer_list>
#include <map>
#include <set>
#include <string>

namespace ccltune {
namespace {

constexpr int kAlgoPat = 6;  // NCCL_ALGO_PAT

// Every protocol of the algorithms, NCCL's pick ring/simple.
SubspaceSet SpaceOf(std::initializer_list<int> algos) {
  SubspaceSet s;
  for (int a : algos)
    for (int p = 0; p < kNumProtos; ++p) s.valid_mask |= 1u << (a * kNumProtos + p);
  s.nccl_algo = kAlgoRing;
  s.nccl_proto = kProtoSimple;
  return s;
}

SubspaceSet RingAndTree() { return SpaceOf({kAlgoTree, kAlgoRing}); }

std::array<float, kNumAlgos * kNumProtos> Costs() {
  std::array<float, kNumAlgos * kNumProtos> c;
  c.fill(-1);
  for (int a : {kAlgoTree, kAlgoRing})
    for (int p = 0; p < kNumProtos; ++p) c[a * kNumProtos + p] = 10.0f + a + p;
  c[kAlgoRing * kNumProtos + kProtoSimple] = 5;
  return c;
}

WorkloadKey Key(uint64_t bytes, Coll coll = Coll::kAllReduce) {
  return WorkloadKey{{CallDesc{coll, 7, coll == Coll::kAllGather ? -1 : 0, bytes}}, false};
}

// Ring/LL128 at 12 channels is best; NCCL's default costs 30% more. Times scale with the size.
double Cost(const Config& c, uint64_t bytes) {
  const double scale = static_cast<double>(bytes) / (1 << 20);
  if (c.IsDefault()) return 130 * scale;
  double base = (c.algo == kAlgoRing && c.proto == kProtoLL128) ? 100 : 140;
  return scale * base * (1 + 0.01 * std::abs(c.channels - 12));
}

// One rank: the leader's messages applied to its own book, calls made round-robin over `keys`, every
// timed call timed with Cost, its timing carried back `lag` syncs later.
struct Loop {
  Leader leader;
  coordinator::ScheduleBook book;
  std::vector<WorkloadKey> keys;
  uint64_t next_seq = 0;
  std::map<uint64_t, std::pair<Config, uint64_t>> flying;  // seq -> (config, bytes)
  int64_t calls = 0;
  uint64_t units = 0;          // the communicator's units (one per call)
  uint64_t last_workload = 0;  // the workload of the latest call
  std::set<uint64_t> seen;
  std::vector<coordinator::WorkloadUpdate> shipped;
  bool report_dropped = true;  // as the runtime does (false: replaced calls are never reported lost)
  double slow = 1;             // every call's time multiplied by this (a slow period of the machine)
  double default_factor = 1;   // NCCL's default's time multiplied by this (the landscape shifts)
  int lose_every = 0;          // every lose_every-th sync leaves its first timing out of its window: never carried
  int idle_every = 0;  // every idle_every-th timed call comes back idle (some rank timed it from an idle stream)
  // Up to this many µs added to every timing's maximum over ranks (scattered over the calls): the late finish, on
  // some ranks, of the call before it.
  double late_us = 0;
  std::set<uint64_t> idle_workloads;             // every timed call of these comes back idle
  std::map<uint64_t, uint64_t> flying_workload;  // seq -> workload
  std::map<uint64_t, bool> flying_scheduled;     // seq -> the call ran a schedule entry (not the final one)
  int syncs = 0;
  // Syncs between building an update and applying it (0: at once; the runtime's is coordinator::kLag).
  int apply_lag = 0;
  int built = 0;                                                   // Syncs so far
  std::deque<std::pair<int, coordinator::WorkloadUpdate>> queued;  // (the Sync it applies at, the update)
  SubspaceSet space = RingAndTree();                               // every workload's, as NCCL reports it
  int settle_messages = 0;                                         // messages with the settle bit

  explicit Loop(Leader::Options o) : leader(o) {}

  void Sync(uint64_t id) {
    // Timings of everything timed so far come back (the runtime's syncs carry them a sync later).
    std::vector<std::optional<coordinator::CarriedSample>> s;
    if (lose_every > 0 && ++syncs % lose_every == 0 && !flying.empty()) flying.erase(flying.begin());
    const uint64_t first = flying.empty() ? next_seq : flying.begin()->first;
    for (uint64_t q = first; q < next_seq; ++q) {
      auto it = flying.find(q);
      if (it == flying.end()) {
        s.push_back(std::nullopt);
        continue;
      }
      if ((idle_every > 0 && q % idle_every == 0) || idle_workloads.count(flying_workload[q]) > 0) {
        s.push_back(coordinator::CarriedSample{0, 0, true});  // as coordinator::DecodeSamples gives it
        continue;
      }
      const double us =
          slow * Cost(it->second.first, it->second.second) * (it->second.first.IsDefault() ? default_factor : 1);
      const double late = late_us * static_cast<double>((q * 2654435761u) % 1000) / 1000;
      s.push_back(coordinator::CarriedSample{us, us * 1.05 + late});
    }
    flying.clear();
    if (!s.empty()) leader.OnSamples(first, s);
    ++built;
    while (!queued.empty() && queued.front().first <= built) {
      Apply(queued.front().second);
      queued.pop_front();
    }
    book.NewInterval();  // as the coordinator does at each sync point (the monitoring's allowance)
    coordinator::LeaderMessage m = leader.Build(book, coordinator::RecordRoom(id));
    if (m.settle) ++settle_messages;
    coordinator::MoreWords more{};
    auto words =
        coordinator::Encode(&m, id, {}, coordinator::kProtocolVersion, coordinator::ExtendedSync(id) ? &more : nullptr);
    ASSERT_TRUE(words.ok()) << words.status();
    for (const auto& u : m.updates) {
      shipped.push_back(u);
      if (apply_lag == 0) {
        Apply(u);
      } else {
        queued.emplace_back(built + apply_lag, u);
      }
    }
  }
  void Apply(const coordinator::WorkloadUpdate& u) {
    const std::vector<coordinator::ScheduleEntry> dropped = book.Apply(u);
    if (report_dropped) {
      leader.OnApplied(u, dropped);
    } else {
      leader.OnApplied(u);
    }
  }

  void Call(const WorkloadKey& k) {
    const uint64_t h = k.Hash();
    if (seen.insert(h).second) {
      leader.OnUnit(h, k);
      leader.OnSpace(h, space, Costs());
    } else {
      leader.OnUnit(h, k);
    }
    std::optional<coordinator::ScheduleBook::Call> c = book.Next(h);
    const Config cfg = c ? c->config : Config{};
    ++units;
    const bool follows_other = last_workload != h;  // as the call path works it out
    last_workload = h;
    if (c && c->timed) {
      leader.OnTimed(next_seq, h, cfg, c->scheduled, 0, units, follows_other);
      flying_workload[next_seq] = h;
      flying_scheduled[next_seq] = c->scheduled;
      flying[next_seq++] = {cfg, k.calls[0].bytes};
    }
    leader.OnRan(h, cfg, cfg.IsDefault() ? Config{kAlgoRing, kProtoSimple, 24, 0} : cfg);
    ++calls;
  }

  // Iterations of every key once, a sync after each iteration; true when every key converged.
  bool Run(int iterations) {
    uint64_t id = 0;
    for (int it = 0; it < iterations; ++it) {
      for (const WorkloadKey& k : keys) Call(k);
      Sync(id++);
      bool all = true;
      for (const WorkloadKey& k : keys) all = all && book.Converged(k.Hash());
      if (all) return true;
    }
    return false;
  }
};

Leader::Options Opts() {
  Leader::Options o;
  o.channel_budget = 24;
  o.channel_truth = true;
  return o;
}

TEST(Leader, SearchConvergesThroughTheBookOnAGoodConfig) {
  Loop loop(Opts());
  loop.keys = {Key(1 << 20)};
  ASSERT_TRUE(loop.Run(400)) << loop.leader.Describe(loop.keys[0].Hash());
  const Config best = *loop.book.Incumbent(loop.keys[0].Hash());
  EXPECT_LE(Cost(best, 1 << 20), 1.05 * 100) << best.ToString();
  EXPECT_LE(loop.calls, 120);
  // While searching, every schedule after the first was appended to what every rank still had: entries on
  // their way are never dropped when the race's leader or arms change (each drop cost a round trip of
  // samples; a training loop running each workload 4 times per iteration converged at iterations 27-69
  // over seeds 1-10 with the drops, 22-45 without).
  ASSERT_GE(loop.shipped.size(), 3u);
  EXPECT_FALSE(loop.shipped.front().append);
  for (size_t i = 1; i + 1 < loop.shipped.size(); ++i) EXPECT_TRUE(loop.shipped[i].append) << "update " << i;
  EXPECT_FALSE(loop.shipped.back().append);  // the converged one replaces whatever is left
}

// Settling (the settle bit: longer intervals, no sample right after a sync op) is for searches of short calls that NCCL
// could run with tree, whose time after a sync op is its latency from the ranks' alignment by it: ring and PAT read
// alike in both contexts, and settling them only cost calls (docs/results/search-testbed.md, forty-second session).
TEST(Leader, SettlesOnlyShortSearchesThatCouldRunTree) {
  const SubspaceSet ring_and_pat = SpaceOf({kAlgoRing, kAlgoPat});
  struct Case {
    const char* name;
    SubspaceSet space;
    uint64_t bytes;
    bool settles;
  };
  // Cost(): NCCL's default takes 130 µs per MiB, so 1 MiB is below the 1000 µs bound and 64 MiB above it.
  for (const Case& c :
       {Case{"tree, short", RingAndTree(), 1 << 20, true}, Case{"no tree, short", ring_and_pat, 1 << 20, false},
        Case{"tree, long", RingAndTree(), uint64_t{64} << 20, false}}) {
    Leader::Options o = Opts();
    o.settle_below_us = 1000;
    Loop loop(o);
    loop.space = c.space;
    loop.keys = {Key(c.bytes)};
    loop.Run(60);
    EXPECT_EQ(loop.settle_messages > 0, c.settles) << c.name << ": " << loop.settle_messages << " settle messages";
  }
}

// The tuned time reported is the incumbent's as measured beside the default while searching: monitoring
// samples come later, and a slow period between the two must not read as a smaller gain (or a loss).
TEST(Leader, TunedTimeIsMeasuredBesideTheDefault) {
  Loop loop(Opts());
  loop.keys = {Key(1 << 20)};
  ASSERT_TRUE(loop.Run(400));
  const uint64_t h = loop.keys[0].Hash();
  const Config best = *loop.book.Incumbent(h);
  ASSERT_FALSE(best.IsDefault());
  loop.slow = 1.1;  // below the drift monitor's 15%: the search stays converged
  for (int it = 0; it < 300; ++it) {
    loop.Call(loop.keys[0]);
    if (it % 8 == 7) loop.Sync(10000 + static_cast<uint64_t>(it));
  }
  ASSERT_TRUE(loop.book.Converged(h));
  const std::optional<Leader::WorkloadStats> st = loop.leader.StatsOf(h);
  ASSERT_TRUE(st.has_value());
  ASSERT_GT(st->default_us, 0);
  EXPECT_NEAR(st->incumbent_us / st->default_us, Cost(best, 1 << 20) / Cost(Config{}, 1 << 20), 0.01)
      << best.ToString();
}

// A converged search's monitoring reads the calls of the converged schedule only. The runtime applies an update
// two syncs after it is built: the calls in between run the search's last entries, and their timings come back
// after the decision. Here they read 1.3x: taken as the monitoring's first window (its baseline), the calls after
// would read as a drift and re-open the search (the guard off: a drift re-opens it directly).
TEST(Leader, TheMonitoringBaselineIsTakenOnTheConvergedSchedule) {
  Leader::Options o = Opts();
  o.search.guard = false;
  Loop loop(o);
  loop.apply_lag = 2;
  const WorkloadKey k = Key(1 << 20);
  loop.keys = {k, k, k, k, k, k};  // six calls per sync
  const uint64_t h = k.Hash();
  auto converged_shipped = [&] {
    for (const coordinator::WorkloadUpdate& u : loop.shipped)
      if (u.converged) return true;
    return false;
  };
  uint64_t id = 0;
  for (int it = 0; it < 400 && !loop.book.Converged(h); ++it) {
    for (const WorkloadKey& key : loop.keys) loop.Call(key);
    loop.slow = converged_shipped() ? 1.3 : 1.0;  // the calls between the decision and its apply
    loop.Sync(id++);
  }
  ASSERT_TRUE(loop.book.Converged(h)) << loop.leader.Describe(h);
  const size_t converged_at = loop.shipped.size();
  loop.slow = 1.0;
  for (int it = 0; it < 400; ++it) {
    for (const WorkloadKey& key : loop.keys) loop.Call(key);
    loop.Sync(id++);
  }
  for (size_t i = converged_at; i < loop.shipped.size(); ++i)
    EXPECT_TRUE(loop.shipped[i].converged) << "update " << i << ": the search re-opened";
  EXPECT_TRUE(loop.book.Converged(h));
  EXPECT_GE(loop.leader.StatsOf(h)->samples, 100);  // the monitoring's samples kept coming
}

// A search's result ships at the first sync after it converged, even while the workload's last top-up is still on
// its way (applied two syncs after it is built, as the runtime does): the top-up applies first, then the converged
// update drops what is left of it. Only the converged update goes out beside one in flight, never a third. (Eight
// calls per sync: the top-ups then go out at every other sync, and the decision comes while one is in flight.)
TEST(Leader, AConvergedResultShipsBesideAnUpdateStillInFlight) {
  Loop loop(Opts());
  loop.apply_lag = 2;
  const WorkloadKey k = Key(1 << 20);
  loop.keys = {k, k, k, k, k, k, k, k};
  const uint64_t h = k.Hash();
  bool beside = false;
  uint64_t id = 0;
  for (int it = 0; it < 400 && !loop.book.Converged(h); ++it) {
    for (const WorkloadKey& key : loop.keys) loop.Call(key);
    const size_t before = loop.shipped.size();
    loop.Sync(id++);
    int flying = 0;
    for (const auto& [at, u] : loop.queued) flying += u.workload == h ? 1 : 0;
    EXPECT_LE(flying, 2) << "sync " << id;
    for (size_t i = before; i < loop.shipped.size(); ++i)
      if (loop.shipped[i].converged && flying == 2) beside = true;
  }
  ASSERT_TRUE(loop.book.Converged(h)) << loop.leader.Describe(h);
  EXPECT_TRUE(beside) << "the converged update waited for the top-up in flight";
  EXPECT_TRUE(loop.book.Exhausted(h));  // nothing of the search's schedule is left to run
  EXPECT_EQ(*loop.book.Incumbent(h), loop.shipped.back().entries.back().config);
  EXPECT_FALSE(loop.book.Incumbent(h)->IsDefault());
}

// After convergence on a config other than NCCL's default, the search's guard has the default run now and then:
// shipped as an entry before the converged final entry (appended, the workload converged throughout), until the
// config reads slower than the default beside it; then the search runs again and ends on the default. With
// Options::search.guard off, nothing but the final entry is shipped after convergence.
TEST(Leader, TheGuardProbesTheDefaultAfterConvergenceAndReopensWhenItTurnsFaster) {
  for (const bool guard : {true, false}) {
    Leader::Options o = Opts();
    o.search.guard = guard;
    Loop loop(o);
    loop.keys = {Key(1 << 20)};
    ASSERT_TRUE(loop.Run(400));
    const uint64_t h = loop.keys[0].Hash();
    const Config best = *loop.book.Incumbent(h);
    ASSERT_FALSE(best.IsDefault());
    const size_t converged_at = loop.shipped.size();
    // Held: 1000 calls at the same landscape.
    for (int it = 0; it < 1000; ++it) {
      loop.Call(loop.keys[0]);
      if (it % 8 == 7) loop.Sync(10000 + static_cast<uint64_t>(it));
    }
    int probes = 0;
    for (size_t i = converged_at; i < loop.shipped.size(); ++i) {
      const coordinator::WorkloadUpdate& u = loop.shipped[i];
      EXPECT_TRUE(u.converged && u.append) << "update " << i;
      EXPECT_EQ(u.entries.back().config, best);
      for (size_t k = 0; k + 1 < u.entries.size(); ++k) probes += u.entries[k].config.IsDefault();
    }
    EXPECT_TRUE(loop.book.Converged(h));
    if (!guard) {
      EXPECT_EQ(probes, 0);
      continue;
    }
    // One probe every 2 monitoring samples (one timed call in 16) at first, spreading out once a window
    // confirmed the gain; one update in flight at a time: 1000 calls hold 8 to 20.
    EXPECT_GE(probes, 8);
    EXPECT_LE(probes, 20);
    // The default turns 40% faster than it was (78 us against the config's 100): the guard re-opens, and the
    // search taken again ends on the default.
    loop.default_factor = 0.6;
    bool reopened = false;
    for (int it = 0; it < 6000 && !(reopened && loop.book.Converged(h)); ++it) {
      loop.Call(loop.keys[0]);
      if (it % 8 == 7) loop.Sync(20000 + static_cast<uint64_t>(it));
      reopened = reopened || !loop.book.Converged(h);
    }
    EXPECT_TRUE(reopened);
    EXPECT_TRUE(loop.book.Converged(h));
    EXPECT_TRUE(loop.book.Incumbent(h)->IsDefault()) << loop.leader.Describe(h);
  }
}

// Converged on NCCL's default: nothing but the final entry is shipped while the default's time holds. When the
// whole machine slows by 30%, the drift goes to the guard, which runs the config that came closest to the default
// now and then (entries before the final default, appended, the workload converged throughout) and keeps the
// default; with the guard off the search runs again.
TEST(Leader, ADriftOfAKeptDefaultIsCheckedAgainstTheClosestConfig) {
  for (const bool guard : {true, false}) {
    Leader::Options o = Opts();
    o.search.guard = guard;
    Loop loop(o);
    loop.keys = {Key(1 << 20)};
    loop.default_factor = 0.6;  // NCCL's default is the fastest
    ASSERT_TRUE(loop.Run(400));
    const uint64_t h = loop.keys[0].Hash();
    ASSERT_TRUE(loop.book.Incumbent(h)->IsDefault());
    auto run = [&](int calls, uint64_t first_sync) {
      for (int it = 0; it < calls; ++it) {
        loop.Call(loop.keys[0]);
        if (it % 8 == 7) loop.Sync(first_sync + static_cast<uint64_t>(it));
      }
    };
    const size_t converged_at = loop.shipped.size();
    run(600, 10000);
    EXPECT_EQ(loop.shipped.size(), converged_at);  // held: nothing shipped
    loop.slow = 1.3;
    run(2000, 20000);
    if (!guard) {
      EXPECT_GT(loop.leader.StatsOf(h)->search.reopened, 0);
      continue;
    }
    int probes = 0;
    for (size_t i = converged_at; i < loop.shipped.size(); ++i) {
      const coordinator::WorkloadUpdate& u = loop.shipped[i];
      EXPECT_TRUE(u.converged && u.append) << "update " << i;
      EXPECT_TRUE(u.entries.back().config.IsDefault());
      for (size_t k = 0; k + 1 < u.entries.size(); ++k) probes += !u.entries[k].config.IsDefault();
    }
    EXPECT_GE(probes, 8);
    EXPECT_LE(probes, 32);
    EXPECT_TRUE(loop.book.Converged(h));
    EXPECT_TRUE(loop.book.Incumbent(h)->IsDefault());
    EXPECT_EQ(loop.leader.StatsOf(h)->search.reopened, 0);
  }
}

// A search whose workload stopped running (a phase of the job that is over) cannot finish; it must not
// keep the intervals short for good (on the simulated cluster, the bench's later rows ran 13-23% slower
// when a re-opened search of an earlier row kept waiting).
TEST(Leader, AWorkloadThatStoppedRunningDoesNotKeepTheSearchCadence) {
  Loop loop(Opts());
  loop.keys = {Key(1 << 20)};
  ASSERT_FALSE(loop.Run(4));  // searching, far from converged
  EXPECT_TRUE(loop.leader.searching());
  loop.keys = {Key(4 << 20)};
  ASSERT_TRUE(loop.Run(400)) << loop.leader.Describe(loop.keys[0].Hash());
  const uint64_t first = Key(1 << 20).Hash();
  EXPECT_FALSE(loop.book.Converged(first));  // its search never finished
  EXPECT_FALSE(loop.leader.searching());
  // Running again, it searches again.
  loop.keys = {Key(1 << 20)};
  loop.Call(loop.keys[0]);
  loop.Sync(1000);
  EXPECT_TRUE(loop.leader.searching());
}

// A member of a size class that stopped running while its class searches (DDP's buckets of the first iteration,
// before PyTorch rebuilds them): the entries scheduled for it will never run, and its class's search, which awaited
// their samples, must still finish on the members that run (on the one-GPU testbed, a DDP class of three buckets
// searched for 250 steps, 969 samples of its live member).
TEST(Leader, AClassMemberThatStoppedRunningDoesNotStallItsClassSearch) {
  Loop loop(Opts());
  loop.keys = {Key(1 << 20), Key((1 << 20) + 1024)};
  ASSERT_FALSE(loop.Run(3));
  loop.keys = {Key(1 << 20)};
  ASSERT_TRUE(loop.Run(400)) << loop.leader.Describe(loop.keys[0].Hash());

  EXPECT_LE(Cost(*loop.book.Incumbent(loop.keys[0].Hash()), 1 << 20), 1.05 * 100);
  EXPECT_FALSE(loop.leader.searching());
}

// A member of a size class whose every timed call comes back idle (some rank timed it from an idle stream: DDP's
// bucket that starts each backward pass): the search's entries for it never come back as samples, and its class's
// search must still finish on its other members (on the one-GPU testbed, every entry of a DDP class went to that
// bucket, first in the leader's order, for 250 steps).
TEST(Leader, AClassMemberThatCannotBeSampledDoesNotStallItsClassSearch) {
  Loop loop(Opts());
  loop.keys = {Key((1 << 20) + 1024), Key(1 << 20), Key((1 << 20) + 5120)};
  loop.idle_workloads = {loop.keys[0].Hash()};
  ASSERT_TRUE(loop.Run(400)) << loop.leader.Describe(loop.keys[1].Hash());
  EXPECT_LE(Cost(*loop.book.Incumbent(loop.keys[1].Hash()), 1 << 20), 1.05 * 100);
  const std::optional<Leader::WorkloadStats> st = loop.leader.StatsOf(loop.keys[0].Hash());
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->samples, 0);
}

// A size class whose every member's timed calls come back idle (a DDP class of one bucket, the one that starts each
// backward pass): its search can never get a sample. It ends on NCCL's default instead of searching for good (the
// intervals stay at one iteration while anything searches: a sync per iteration for the rest of the job), and the
// other workloads' searches are not held up.
TEST(Leader, AClassThatCannotBeSampledEndsOnTheDefault) {
  Loop loop(Opts());
  loop.keys = {Key(1 << 20), Key(16 << 20)};
  loop.idle_workloads = {loop.keys[0].Hash()};
  ASSERT_TRUE(loop.Run(400)) << loop.leader.Describe(loop.keys[0].Hash());
  EXPECT_TRUE(loop.book.Incumbent(loop.keys[0].Hash())->IsDefault());
  EXPECT_LE(Cost(*loop.book.Incumbent(loop.keys[1].Hash()), 16 << 20), 1.05 * 1600);
  const std::optional<Leader::WorkloadStats> st = loop.leader.StatsOf(loop.keys[0].Hash());
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->samples, 0);
  EXPECT_FALSE(loop.leader.searching());
}

// Samples the search awaits that will never come, unreported (timed calls no sync carried, here; a replaced
// schedule's calls are another case): once nothing of the class is scheduled, shipped or in flight, the
// leader has the search ask again.
TEST(Leader, UnreportedLostTimingsDoNotStallTheSearch) {
  Loop loop(Opts());
  loop.report_dropped = false;
  loop.lose_every = 4;
  loop.keys = {Key(1 << 20)};
  ASSERT_TRUE(loop.Run(400)) << loop.leader.Describe(loop.keys[0].Hash());
  EXPECT_LE(Cost(*loop.book.Incumbent(loop.keys[0].Hash()), 1 << 20), 1.05 * 100);
}

TEST(Leader, CallsTimedFromAnIdleStreamAreNotSamplesAndAreAskedForAgain) {
  Loop loop(Opts());
  loop.idle_every = 3;
  loop.keys = {Key(1 << 20)};
  ASSERT_TRUE(loop.Run(400)) << loop.leader.Describe(loop.keys[0].Hash());
  // Read as timings, the idle slots' zero times would make whichever config drew them the fastest.
  EXPECT_LE(Cost(*loop.book.Incumbent(loop.keys[0].Hash()), 1 << 20), 1.05 * 100);
  const std::optional<Leader::WorkloadStats> st = loop.leader.StatsOf(loop.keys[0].Hash());
  ASSERT_TRUE(st.has_value());
  EXPECT_GT(st->search.lost, 10);  // the search's own calls among them, asked for again
  EXPECT_LE(st->samples, loop.next_seq - loop.next_seq / 3);
}

// The coordinator hands on early copies of the calls every rank has finished; they may skip an earlier call (idle on
// some rank, or still running), which its window brings later. Only a window shows that the calls before it were all
// carried: at an early copy's run, the leader forgot the skipped call, never reported its sample lost, and its search
// waited for it.
TEST(Leader, ACallAnEarlyCopySkippedComesWithItsWindow) {
  Loop loop(Opts());
  loop.keys = {Key(1 << 20)};
  const uint64_t h = loop.keys[0].Hash();
  ASSERT_FALSE(loop.Run(3));
  // Timed calls of the schedule, none carried yet; the first that ran a schedule entry is skipped by the early copy.
  const uint64_t first = loop.next_seq;
  while (loop.next_seq < first + 5) loop.Call(loop.keys[0]);
  uint64_t skipped = first;
  while (skipped < loop.next_seq && !loop.flying_scheduled[skipped]) ++skipped;
  ASSERT_LT(skipped + 1, loop.next_seq);
  const int lost_before = loop.leader.StatsOf(h)->search.lost;
  std::vector<std::optional<coordinator::CarriedSample>> after;
  for (uint64_t q = skipped + 1; q < loop.next_seq; ++q) after.push_back(coordinator::CarriedSample{100, 100});
  loop.leader.OnSamples(skipped + 1, after, /*window=*/false);
  std::vector<std::optional<coordinator::CarriedSample>> window;
  for (uint64_t q = first; q < skipped; ++q) window.push_back(coordinator::CarriedSample{100, 100});
  window.push_back(coordinator::CarriedSample{0, 0, true});  // idle on some rank
  loop.leader.OnSamples(first, window, /*window=*/true);
  EXPECT_EQ(loop.leader.StatsOf(h)->search.lost, lost_before + 1);  // asked for again
}

// Calls that follow another workload's call are read by their minimum over ranks: their maximum holds that call's
// late finish on some ranks (here up to 20 times the all-reduce's own time), whatever config they ran. Calls that
// follow one of their own are read by the maximum (what the job waits for).
TEST(Leader, ACallAfterAnotherWorkloadsIsReadByItsMinimumOverRanks) {
  Loop loop(Opts());
  loop.late_us = 20 * Cost(Config{}, 1 << 20);
  loop.keys = {Key(1 << 20), Key(64 << 10, Coll::kAllGather)};  // alternating: every call follows the other's
  ASSERT_TRUE(loop.Run(600)) << loop.leader.Describe(loop.keys[0].Hash());
  EXPECT_LE(Cost(*loop.book.Incumbent(loop.keys[0].Hash()), 1 << 20), 1.05 * 100);
  const std::optional<Leader::WorkloadStats> st = loop.leader.StatsOf(loop.keys[0].Hash());
  ASSERT_TRUE(st.has_value());
  EXPECT_NEAR(st->default_us, Cost(Config{}, 1 << 20), 1e-6);

  Loop twice(Opts());
  twice.keys = {Key(1 << 20), Key(1 << 20)};  // back to back: every call but the first follows its own
  ASSERT_TRUE(twice.Run(600));
  const std::optional<Leader::WorkloadStats> t = twice.leader.StatsOf(twice.keys[0].Hash());
  ASSERT_TRUE(t.has_value());
  EXPECT_NEAR(t->default_us, 1.05 * Cost(Config{}, 1 << 20), 1e-6);
}

TEST(Leader, FirstRunOfAnAlgorithmProtocolIsAWarmUp) {
  Loop loop(Opts());
  loop.keys = {Key(1 << 20)};
  loop.Run(400);
  std::map<std::pair<int, int>, int> warmups, entries;
  for (const auto& u : loop.shipped)
    for (size_t i = 0; i + 1 < u.entries.size(); ++i) {
      const Config& c = u.entries[i].config;
      if (!c.HasSubspace()) continue;
      ++entries[{c.algo, c.proto}];
      if (u.entries[i].warmup) ++warmups[{c.algo, c.proto}];
    }
  ASSERT_FALSE(entries.empty());
  for (const auto& [sub, n] : entries) {
    // NCCL's default ran ring/simple already (channel truth): it never needs one.
    const int want = sub == std::make_pair(kAlgoRing, kProtoSimple) ? 0 : 1;
    EXPECT_EQ(warmups[sub], want) << sub.first << "/" << sub.second << " in " << n << " entries";
  }
}

// NCCL's default timed right after a call of another config pays for the switch (4 NVLink H100s: all-reduce
// 16 MiB ring/Simple 112-114 us after ring/LL128, 105.8 us in its own blocks). A workload that runs back to
// back gets a warm-up call before each default entry that follows another config; calls of other workloads
// in between need none.
int DefaultEntries(const Loop& loop, bool warmup) {
  int n = 0;
  for (const auto& u : loop.shipped)
    for (size_t i = 0; i + 1 < u.entries.size(); ++i)
      if (u.entries[i].config.IsDefault() && (i > 0 && !u.entries[i - 1].config.IsDefault()) &&
          u.entries[i].warmup == warmup)
        ++n;
  return n;
}

TEST(Leader, TheDefaultAfterAnotherConfigIsWarmedUpWhenTheWorkloadRunsBackToBack) {
  Loop alone(Opts());
  alone.keys = {Key(1 << 20)};
  alone.Run(400);
  EXPECT_GT(DefaultEntries(alone, true), 0);
  EXPECT_EQ(DefaultEntries(alone, false), 0);

  Loop interleaved(Opts());
  interleaved.keys = {Key(1 << 20), Key(1 << 24)};
  interleaved.Run(400);
  EXPECT_GT(DefaultEntries(interleaved, false), 0);
  EXPECT_EQ(DefaultEntries(interleaved, true), 0);
}

TEST(Leader, OneSearchPerSizeClass) {
  Loop loop(Opts());
  // Three sizes in [1 MiB, 2 MiB): one class; 4 MiB another; an all-gather of 1 MiB another.
  loop.keys = {Key(1 << 20), Key((1 << 20) + 4096), Key((1 << 21) - 64), Key(1 << 22), Key(1 << 20, Coll::kAllGather)};
  ASSERT_TRUE(loop.Run(400));
  auto stats = [&](size_t i) { return *loop.leader.StatsOf(loop.keys[i].Hash()); };
  EXPECT_EQ(stats(0).size_class.id, stats(1).size_class.id);
  EXPECT_EQ(stats(0).size_class.id, stats(2).size_class.id);
  EXPECT_EQ(stats(0).size_class.min_bytes, 1u << 20);
  EXPECT_EQ(stats(0).size_class.max_bytes, (1u << 21) - 1);
  EXPECT_NE(stats(0).size_class.id, stats(3).size_class.id);
  EXPECT_NE(stats(0).size_class.id, stats(4).size_class.id);
  // The class's search is one: its sample count covers all three members.
  EXPECT_EQ(stats(0).search.samples, stats(2).search.samples);
  EXPECT_GT(stats(0).search.samples, stats(0).samples);
  // Every member got the class's result.
  const Config c0 = *loop.book.Incumbent(loop.keys[0].Hash());
  EXPECT_EQ(*loop.book.Incumbent(loop.keys[1].Hash()), c0);
  EXPECT_EQ(*loop.book.Incumbent(loop.keys[2].Hash()), c0);
}

// A size class whose running workloads take a small share of the communicator's time (each one's default's measured
// time times its calls per unit of the communicator) is searched on the low-stakes budget (optimizer::Options::
// low_stakes_budget): all-reduce 64 KiB beside all-reduce 16 MiB (0.2% of the time here), not all-gather 1 MiB run 24
// times per iteration beside them (60%). A workload that stopped running counts for nothing: alone, 64 KiB is all of
// the time. With Options::low_stakes_share 0 no search is low stakes.
TEST(Leader, ASizeClassWithASmallShareOfTheTimeIsLowStakes) {
  const WorkloadKey big = Key(16 << 20), small = Key(64 << 10), often = Key(1 << 20, Coll::kAllGather);
  for (const double share : {0.015, 0.0}) {
    Leader::Options o = Opts();
    o.low_stakes_share = share;
    Loop loop(o);
    loop.keys = {big, small};
    for (int i = 0; i < 24; ++i) loop.keys.push_back(often);
    ASSERT_FALSE(loop.Run(6));
    auto low = [&](const WorkloadKey& k) {
      const std::optional<Leader::WorkloadStats> st = loop.leader.StatsOf(k.Hash());
      EXPECT_TRUE(st.has_value());
      return st.has_value() && st->search.low_stakes;
    };
    EXPECT_EQ(low(small), share > 0) << loop.leader.Describe(small.Hash());
    EXPECT_FALSE(low(big));
    EXPECT_FALSE(low(often));
    if (share == 0) continue;
    loop.keys = {small};
    loop.Run(3);
    EXPECT_FALSE(low(small)) << loop.leader.Describe(small.Hash());
  }
}

TEST(Leader, SizeClassBoundsAndGroups) {
  const SizeClass a = SizeClassOf(Key(3000));
  EXPECT_EQ(a.min_bytes, 2048u);
  EXPECT_EQ(a.max_bytes, 4095u);
  EXPECT_EQ(SizeClassOf(Key(4095)).id, a.id);
  EXPECT_NE(SizeClassOf(Key(4096)).id, a.id);
  EXPECT_NE(SizeClassOf(Key(3000, Coll::kAllGather)).id, a.id);
  WorkloadKey g{{CallDesc{Coll::kAllReduce, 7, 0, 3000}, CallDesc{Coll::kAllReduce, 7, 0, 3000}}, true};
  EXPECT_EQ(SizeClassOf(g).id, g.Hash());  // a group is its own class
  EXPECT_NE(SizeClassOf(g).id, a.id);
}

// A communicator in NCCL-default mode first (the bench's memory baseline, a user's warm-up): the plugin
// reads the cost table on a call that counts no unit; the search must still start once units count.
TEST(Leader, CostTableSeenBeforeTheFirstCountedUnitStillStartsTheSearch) {
  Leader leader(Opts());
  coordinator::ScheduleBook book;
  const WorkloadKey k = Key(1 << 20);
  leader.OnSpace(k.Hash(), RingAndTree(), Costs());
  EXPECT_TRUE(leader.Build(book, coordinator::kRecordWords).updates.empty());  // not a unit yet: nothing to schedule
  leader.OnUnit(k.Hash(), k);
  EXPECT_TRUE(leader.Build(book, coordinator::kRecordWords).updates.empty());  // one call: not searched yet
  leader.OnUnit(k.Hash(), k);
  const coordinator::LeaderMessage m = leader.Build(book, coordinator::kRecordWords);
  ASSERT_EQ(m.updates.size(), 1u);
  EXPECT_GT(m.updates[0].entries.size(), 1u);
}

// NCCL's run of its default is reported once, at the workload's first call, before its class's search exists
// (the runtime reports a run only when it changes): the leader keeps it and hands it to the search as it
// starts. The first schedule then screens one channel beside the largest point of a subspace (NCCL's default
// runs on more than one, so one cannot be what the largest runs as), and the default's own subspace below
// its channel count (those exist); without the default's run only the largest points could be asked.
TEST(Leader, TheDefaultsRunReportedBeforeTheSearchStartedReachesIt) {
  Leader leader(Opts());
  coordinator::ScheduleBook book;
  const WorkloadKey k = Key(1 << 20);
  SubspaceSet ring;
  ring.valid_mask = (1u << (kAlgoRing * kNumProtos + kProtoSimple)) | (1u << (kAlgoRing * kNumProtos + kProtoLL));
  ring.nccl_algo = kAlgoRing;
  ring.nccl_proto = kProtoSimple;
  leader.OnUnit(k.Hash(), k);
  leader.OnSpace(k.Hash(), ring, Costs());
  leader.OnRan(k.Hash(), Config{}, Config{kAlgoRing, kProtoSimple, 24, 0});
  EXPECT_TRUE(leader.Build(book, coordinator::kRecordWords).updates.empty());  // one call: not searched yet
  leader.OnUnit(k.Hash(), k);  // the search starts; NCCL's run is the same, not reported
  const coordinator::LeaderMessage m = leader.Build(book, coordinator::kRecordWords);
  ASSERT_EQ(m.updates.size(), 1u);
  std::set<std::string> asked;
  for (const coordinator::ScheduleEntry& e : m.updates[0].entries)
    if (e.calls > 0 && !e.config.IsDefault()) asked.insert(e.config.ToString());
  EXPECT_TRUE(asked.count("ring/ll/nc24")) << "the largest point of ring/LL";
  EXPECT_TRUE(asked.count("ring/ll/nc1")) << "one channel beside it";
  EXPECT_TRUE(asked.count("ring/simple/nc8")) << "the default's subspace below its 24 channels";
  EXPECT_FALSE(asked.count("ring/simple/nc24")) << "NCCL's default itself";
}

// A call seen once (a set-up broadcast, a one-off all-reduce) is never searched, so it never shows as
// searching and never holds a job's "everything converged" back; a second call of its size class (another
// member included) starts the class's search.
TEST(Leader, ACallSeenOnceIsNotSearched) {
  Leader leader(Opts());
  coordinator::ScheduleBook book;
  const WorkloadKey once = Key(3 << 20);
  leader.OnSpace(once.Hash(), RingAndTree(), Costs());
  leader.OnUnit(once.Hash(), once);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(leader.Build(book, coordinator::kRecordWords).updates.empty());
  // Another workload of the same size class (2-4 MiB): the class's second call starts its one search,
  // which schedules both members (and converges both).
  const WorkloadKey member = Key((3 << 20) + 4096);
  leader.OnSpace(member.Hash(), RingAndTree(), Costs());
  leader.OnUnit(member.Hash(), member);
  const coordinator::LeaderMessage m = leader.Build(book, coordinator::kRecordWords);
  ASSERT_FALSE(m.updates.empty());
  EXPECT_TRUE(std::any_of(m.updates.begin(), m.updates.end(),
                          [&](const coordinator::WorkloadUpdate& u) { return u.workload == member.Hash(); }));
}

TEST(Leader, ImportShipsConvergedFinalEntries) {
  Leader leader(Leader::Options{});
  coordinator::ScheduleBook book;
  config_table::ImportedWorkload imp;
  imp.key = Key(1 << 20);
  imp.config = Config{kAlgoRing, kProtoLL128, 16, 0};
  imp.tuned_us = 10;
  leader.AddImports({imp});
  coordinator::LeaderMessage m = leader.Build(book, coordinator::kRecordWords);
  ASSERT_EQ(m.updates.size(), 1u);
  EXPECT_TRUE(m.updates[0].converged);
  ASSERT_EQ(m.updates[0].entries.size(), 1u);
  EXPECT_EQ(m.updates[0].entries[0].config, imp.config);
  EXPECT_EQ(m.updates[0].entries[0].calls, 0u);
  EXPECT_TRUE(leader.imported(imp.key.Hash()));
  // Imported workloads are never searched.
  book.Apply(m.updates[0]);
  leader.OnApplied(m.updates[0]);
  leader.OnUnit(imp.key.Hash(), imp.key);
  leader.OnSpace(imp.key.Hash(), RingAndTree(), Costs());
  EXPECT_TRUE(leader.Build(book, coordinator::kRecordWords).updates.empty());
}

// Four workloads, each four calls in a row per iteration (period 16): the first intervals (kInitialInterval, 16 units)
// put every sync point after the first call of a run, where the call after the sync op is held beside the one that
// starts the run. Once the period is known the leader moves them to the end of a run, and they stay there. While
// the search runs the intervals are half an iteration, and a sync op and the host wait for it (kLag sync points
// later) are never less than one iteration apart.
TEST(Leader, SyncPointsMoveToTheEndOfAWorkloadsRun) {
  Leader leader(Opts());
  coordinator::ScheduleBook book;
  coordinator::SyncCadence cadence;
  std::vector<WorkloadKey> keys;
  for (int i = 0; i < 4; ++i) keys.push_back(Key(uint64_t{1} << (16 + 2 * i)));
  auto key_at = [&](uint64_t unit) { return keys[((unit - 1) / 4) % 4]; };  // units from 1
  std::map<uint64_t, coordinator::LeaderMessage> sent;
  std::vector<uint64_t> sync_units;
  for (uint64_t u = 1; u <= 16 * 40; ++u) {
    const WorkloadKey k = key_at(u);
    leader.OnUnit(k.Hash(), k);
    if (u <= 16) leader.OnSpace(k.Hash(), RingAndTree(), Costs());
    const coordinator::SyncCadence::Actions a = cadence.OnUnitComplete(u);
    if (a.apply) {
      cadence.SetDeliveredInterval(*a.apply, sent.at(*a.apply).interval);
      cadence.SetDeliveredPeriod(sent.at(*a.apply).period);
    }
    if (a.issue) {
      sync_units.push_back(u);
      sent[*a.issue] = leader.Build(book, coordinator::RecordRoom(*a.issue));
      EXPECT_GE(sent[*a.issue].interval, sent[*a.issue].period / 2) << "an interval shorter than half an iteration";
    }
  }
  ASSERT_EQ(sent.rbegin()->second.period, 16u);
  for (size_t i = 0; i + coordinator::kLag < sync_units.size(); ++i)
    EXPECT_GE(sync_units[i + coordinator::kLag] - sync_units[i], 16u) << "the host wait at sync point " << i + 2;
  const auto halves = std::count_if(sent.begin(), sent.end(), [](const auto& m) { return m.second.interval == 8; });
  EXPECT_GT(halves, 20) << "intervals of half an iteration while searching";
  int at_run_end = 0, later = 0;
  for (uint64_t s : sync_units) {
    if (s <= 16 * 10) continue;
    ++later;
    if (key_at(s).Hash() != key_at(s + 1).Hash()) ++at_run_end;
  }
  EXPECT_GT(later, 20);
  EXPECT_EQ(at_run_end, later) << "sync points after iteration 10 that end a workload's run";
}

TEST(Leader, ManyWorkloadsFitOnePayloadAtATime) {
  Leader leader(Opts());
  coordinator::ScheduleBook book;
  for (uint64_t i = 0; i < 20; ++i) {
    const WorkloadKey k = Key(uint64_t{1} << (10 + i));  // 20 size classes
    leader.OnUnit(k.Hash(), k);
    leader.OnSpace(k.Hash(), RingAndTree(), Costs());
    leader.OnUnit(k.Hash(), k);  // the second call starts the search
  }
  coordinator::LeaderMessage m = leader.Build(book, coordinator::kRecordWords);
  EXPECT_FALSE(m.updates.empty());
  EXPECT_LT(m.updates.size(), 20u);  // the rest waits for the next payload
  auto words = coordinator::Encode(&m, 0, {});
  EXPECT_TRUE(words.ok()) << words.status();
}

// Many members of one size class converge at once (DDP buckets): their converged updates take several
// payloads, and every member gets one. (One that did not fit used to be marked as sent all the same and
// stayed "searching" for good.)
TEST(Leader, EveryMemberOfAClassGetsItsConvergedUpdate) {
  Loop loop(Opts());
  for (uint64_t i = 0; i < 30; ++i) loop.keys.push_back(Key((1 << 20) + i * 4096));
  ASSERT_TRUE(loop.Run(400));
  const Config c0 = *loop.book.Incumbent(loop.keys[0].Hash());
  for (const WorkloadKey& k : loop.keys) EXPECT_EQ(*loop.book.Incumbent(k.Hash()), c0);
}

}  // namespace
}  // namespace ccltune
