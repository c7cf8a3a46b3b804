// Stage 6, the search: runs prior -> screen -> race (with refinement) -> decide for one workload, within a
// sample budget, and keeps monitoring after convergence (see optimizer.hpp). Asynchronous: Next() always
// answers from what came back so far, counting the samples already asked for, so a caller can keep a
// schedule ahead of the calls while samples are in flight, and no stage waits for a round to complete.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "optimizer/internal/samples.hpp"
#include "optimizer/internal/stages.hpp"
#include "optimizer/internal/stats.hpp"
#include "optimizer/optimizer.hpp"

namespace ccltune::optimizer {

using internal::ConfigKey;
using internal::KeyOf;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The default is measured at least once every kDefaultEvery entries (its samples are the local reference
// of the others), every kConfirmEvery entries once the leader is only compared with the default.
constexpr int kDefaultEvery = 4;
constexpr int kConfirmEvery = 2;
// The leader is taken once it clears internal::Decide against the default on kMinDecideSamples or more
// samples and no other arm's lower bound is more than kEpsilonBest below its estimate (a config within a
// few percent of the best is as good as the samples can tell apart).
constexpr int kMinDecideSamples = 6;
constexpr double kEpsilonBest = 0.03;
constexpr int kTieSamples = 8;
// An arm chosen at the end as the pessimistic best of several, judged on all of its samples: its estimate
// is moved up by this many standard errors of its own samples first (internal::Decide's `picked`).
constexpr double kPickedZ = 1.0;
// Samples of one arm asked for at most (more cannot move a decision the budget allows).
constexpr int kArmCap = 24;
// The sample budget (entries asked for while searching, NCCL's default included): kBudgetPerArm per arm
// (screening, and its share of the race) plus Options::race_budget. Past it the search decides on what it has:
// a training loop that runs each workload once per iteration converges when its slowest search does.
constexpr double kBudgetPerArm = 3;
// A low-stakes search (Search::SetLowStakes) has Options::low_stakes_budget in place of race_budget, and
// race_budget again while its race leader reads under kPromising of the default's time without clearing the
// decision on all of its samples: a gain of 10% or more is worth confirming whatever the workload's share (on the
// simulated cluster, without it, all-gather 256 KiB stayed on the default at 1.456 of the oracle's time; sixty-second
// session). A low-stakes search also counts the samples of its waiting config (Search::waiting(), run while the
// entries asked for are on their way) against its budget: they are samples of its race leader or of the default, and
// calls the loop pays for. In a loop of four calls per iteration they were a third of such a search's samples (real
// NCCL on the one-GPU testbed, all-gather 16 KiB per rank: 33 samples for 21 entries asked); counting them settled the
// simulated four-calls loop after 15.4 iterations instead of 16.4, the converged configs 0.06% slower. Not for every
// search: on the recorded NVLink landscapes (optimizer-replay) that cost reduce-scatter's share of the headroom 0.62 ->
// 0.39 (docs/results/search-testbed.md, sixty-fourth session).
constexpr double kPromising = 0.9;
constexpr int kPromiseSamples = 2;
// Refinement steps (each adds the channel counts halfway to the leader's measured neighbours, or chunk
// sizes); a leader is refined once it has kRefineAfter samples.
constexpr int kMaxRefine = 3;
constexpr int kRefineAfter = 2;
// No refinement once fewer than this many entries of the budget are left (new arms need their screening
// and a few race samples).
constexpr int kRefineReserve = 12;
// Earlier arms within kCarryMargin of the leader (relative to the default): the best of another subspace
// among them is refined too (a near tie between subspaces is settled on each one's refined best).
constexpr double kCarryMargin = 0.05;
// Screening samples this many times slower than a neighbour of the same subspace (times the neighbour's
// channels over theirs, when it has more) are checked again.
constexpr double kSuspectRatio = 1.5;
// A leader that read slower than the default on fewer than kMinLook samples gets more while that reading is
// within kLookSigmas of the measured noise (at least kSecondLook) of the default: one call of a heavy-tailed
// distribution can read 20% slow (simulated testbed noise, seed 6: all-gather 4 MiB ring/simple/nc1, faster
// than the default, read 1.18 on its one screening sample and the search stayed on the default).
constexpr double kSecondLook = 0.10;
constexpr int kMinLook = 3;
constexpr double kLookSigmas = 2.5;
// The guard after convergence on a config other than NCCL's default: one call of the default is asked for
// every `every` monitoring samples of the incumbent (kProbeEvery at first, doubling up to kProbeEveryMax
// each time a window confirms the gain), and every kGuardProbes probes (and at least twice as many
// incumbent samples) the window's incumbent samples, each against the default probes nearest to it, are
// judged at kGuardZ standard errors: significantly slower than the default, or an edge over it shrunk by
// more than drift_ratio from what the search measured, re-opens the search. A decision can be taken on a
// stretch where NCCL's default ran slow and the winner did not (real NCCL on the testbed, run 60: all-reduce 4 MiB
// tree/simple/nc2 read 1.13x faster than a default at 4741 us while searching, and was 1.42x slower than the default at
// 3280 us afterwards); the monitoring of the incumbent against its own first window never sees that.
constexpr int kProbeEvery = 2;
constexpr int kProbeEveryMax = 64;
constexpr int kGuardProbes = 8;
// The caller keeps its syncs close (Search::checking) until a window confirmed the gain, for this many windows
// at most (a config about as fast as the default is neither confirmed nor re-opened).
constexpr int kCheckWindows = 4;
constexpr double kGuardZ = 2.0;

}  // namespace

// The race is asynchronous: there are no rounds to wait for. Every entry Next() hands out is chosen from
// what has come back so far, counting the samples still on their way as if they had come at the arm's
// current estimate (so consecutive entries spread over the arms instead of repeating one); a sample that
// arrives moves the race on at once. Screening gives every arm its first sample(s); after it, the race
// samples the leader and its strongest challenger (the arm with the lowest lower confidence bound),
// whichever is the less certain, until one of the stopping rules holds (Advance).
struct Search::Impl {
  enum class Stage { kScreen, kRace, kDone };

  SearchSpace space;
  Options opt;
  Prior prior;
  internal::SampleStore store;
  // Samples asked for and not received, by the config asked for: what NCCL runs for it may be learnt
  // (channel truth) while they are on their way, and several configs asked may turn out to run as one, so
  // they are counted under the config NCCL runs for them only when read (Pending).
  std::map<ConfigKey, int> pending;
  std::vector<Config> arms;     // every config in the race (as NCCL runs it), default excluded
  std::set<ConfigKey> refined;  // arms of another subspace than the leader's whose neighbours joined
  int refine_steps = 0;
  Stage stage = Stage::kScreen;
  std::map<int, int> since_default;  // per stream: entries since its last default sample
  Config incumbent;
  double incumbent_us = 0;
  // Converged on NCCL's default: the guard's reference (PickReference), its time over the default's as the
  // search measured it, at kGuardZ standard errors below its estimate (0: unknown), and whether a drift of the
  // default's time handed a check to the guard.
  Config reference;
  double reference_relative = 0;
  bool reference_check = false;
  double converged_relative = 0;  // the incumbent's time over the default's as the search measured it (0: unknown)
  Stats stats;
  Config last_leader;
  int generation = 0;  // counts the re-openings (entries asked for before one are worth nothing)
  // Samples from this arrival index on came after the leader became the leader: they played no part in
  // making it the leader (of several noisy arms the luckiest leads), so its decision is taken on them.
  int64_t lead_since = 0;

  Impl(const SearchSpace& s, const Options& o, const Prior& p) : space(s), opt(o), prior(p) {
    space.max_channels = std::max(1, space.max_channels);
    store.set_max_channels(space.max_channels);
    opt.max_screen = std::max(1, opt.max_screen);
    opt.monitor_window = std::max(1, opt.monitor_window);
    opt.race_budget = std::max(0, opt.race_budget);
    opt.low_stakes_budget = std::max(0, opt.low_stakes_budget);
  }

  Config KeyFor(const Config& asked) const { return store.TwinOfDefault(asked) ? Config{} : store.Effective(asked); }
  int Pending(const Config& eff) const {
    const ConfigKey want = KeyOf(eff);
    int n = 0;
    for (const auto& [k, v] : pending)
      if (v > 0 && KeyOf(KeyFor(internal::ConfigOf(k))) == want) n += v;
    return n;
  }
  int Have(const Config& eff) const { return store.Count(eff) + Pending(eff); }
  // One sample asked for as `asked` came back or will not come.
  // Whether it was awaited.
  bool Unawait(const Config& asked) {
    auto it = pending.find(KeyOf(asked));
    if (it == pending.end() || it->second <= 0) return false;
    --it->second;
    return true;
  }
  int TotalPending() const {
    int n = 0;
    for (const auto& [k, v] : pending) n += v;
    return n;
  }
  bool IsArm(const Config& c) const { return std::find(arms.begin(), arms.end(), c) != arms.end(); }
  int Budget() const {
    return RaceBudget() + static_cast<int>(std::lround(kBudgetPerArm * static_cast<double>(arms.size())));
  }
  // The budget's part beyond kBudgetPerArm per arm.
  int RaceBudget() const {
    if (!LowBudget()) return opt.race_budget;
    return Promising() ? opt.race_budget : opt.low_stakes_budget;
  }
  // Low stakes, with a smaller budget to apply (Options::low_stakes_budget).
  bool LowBudget() const { return low_stakes && opt.low_stakes_budget < opt.race_budget; }
  // Whether the race's leader (as Advance last saw it) reads under kPromising of the default on its samples since it
  // leads (kPromiseSamples or more: those played no part in making it the leader) and has not cleared the decision on
  // all of its samples.
  bool Promising() const {
    const Config& leader = last_leader;
    if (leader.IsDefault() || store.Count(leader, lead_since) < kPromiseSamples ||
        !(store.Relative(leader, lead_since) < kPromising))
      return false;
    return !internal::Decide(leader, store, opt.min_gain, 0, internal::kDecideZ, 0, kPickedZ).switch_to_winner;
  }
  bool low_stakes = false;
  // Entries that count against the budget since the search (re)started: those asked for that came back or are
  // still on their way. Not stats.requested - stats.lost: the lost count runs on across re-openings.
  int spent = 0;
  // Samples of the waiting config (the calls run while nothing asked for is scheduled) that came while the search
  // was low stakes: they count against its budget as the entries do (see kPromising). A search that is not low stakes
  // takes them as samples its budget does not pay for.
  int waited = 0;
  int Used() const { return spent + waited; }

  // Two samples of one config that disagree: one of them is not what the config takes.
  static bool Disagree(double a, double b) { return std::max(a, b) > kSuspectRatio * std::min(a, b); }
  // A screened config whose one sample reads kSuspectRatio times slower than a channel count of its own
  // subspace that measured as fast as the default or faster (NCCL's default included, where it runs that
  // subspace): one slow call can look like that
  // (real NCCL on the testbed: all-reduce 1 MiB ring/simple/nc1 read 4.1x on its screening sample, was
  // dropped, and was the oracle's pick at 1.15x faster). It gets a second sample, and a third when the
  // two disagree by that ratio too (the median of three drops one outlier) and the smaller of the two could lead.
  bool Suspect(const Config& c) const {
    if (c.IsDefault()) return false;
    const std::vector<internal::Sample>& own = store.Of(c);
    if (own.empty() || own.size() > 2) return false;
    if (own.size() == 2) {
      if (!Disagree(own[0].us, own[1].us)) return false;
      // The median of three is at least the smaller of the two readings: a third look matters only where that
      // reading could still lead the race (or beat the default, where no arm does). The leader's bound is its
      // estimate plus kBoundZ of its standard errors, as a leader ahead on few samples may be lucky (against its
      // estimate alone, Search.NearTiedFastArmsInHeavyNoiseDoNotEndOnTheDefault ended 34 of 40 seeds on a fast arm;
      // with the bound 35, as with every third look). Otherwise the arm stays in the race on its two samples, and the
      // race waits for no look that cannot change its standing (real NCCL on the one-GPU testbed, all-gather 16 KiB
      // per rank in a loop of four calls per iteration: ring/ll/nc2 read 181 and 289 us where ring/ll/nc1 read 110-175
      // us and NCCL's default 214-336 us, and the race waited five iterations for its third look).
      const std::vector<double> r = store.Normalised(c);
      if (r.size() != 2) return true;
      const Config leader = RaceLeader();
      const double bar = !leader.IsDefault() && !(leader == c)
                             ? std::min(1.0, store.Relative(leader) + internal::kBoundZ * StdErr(leader, false))
                             : 1.0;
      return std::min(r[0], r[1]) <= bar;
    }
    // Only next to a neighbour that is a contender (as fast as the default or faster): a subspace slow at
    // every channel count is not worth the samples, and some are many times slower at one count.
    // Fewer channels may be slower by their ratio (a bandwidth-bound call on half the channels takes
    // twice as long): the allowance grows with it.
    const double mine = store.Relative(c);
    auto implausible = [&](double theirs, int their_channels) {
      const double fewer = std::max(1.0, static_cast<double>(their_channels) / std::max(1, c.channels));
      return theirs <= 1 && mine > kSuspectRatio * fewer * theirs;
    };
    const std::optional<Config>& d = store.DefaultRan();
    if (d && d->algo == c.algo && d->proto == c.proto && implausible(1.0, d->channels)) return true;
    for (const Config& m : store.Measured())
      if (!m.IsDefault() && m.algo == c.algo && m.proto == c.proto && !(m == c) &&
          implausible(store.Relative(m), m.channels))
        return true;
    return false;
  }
  // The leader's samples since it leads are two that disagree by kSuspectRatio (relative to the default next
  // to each): one of them is an outlier, and which one only a third can tell (real NCCL on the testbed,
  // all-reduce 1 MiB: ring/simple/nc1 led on 802 us, then read 1241 us on the first call of its waiting block,
  // right after another config, and 754 us; the default, at 888-974 us, was kept on those two).
  bool LeadDisputed(const Config& leader) const {
    if (leader.IsDefault() || store.Count(leader, lead_since) != 2) return false;
    const std::vector<double> r = store.Normalised(leader, lead_since);
    return r.size() == 2 && Disagree(r[0], r[1]);
  }
  // Samples an arm gets before the race looks at it: one, more for a suspect.
  int ScreenTarget(const Config& c) const { return 1 + (Suspect(c) ? static_cast<int>(store.Of(c).size()) : 0); }

  // The race's rules (race.cc), with the samples on their way counted where `with_pending` says so.
  double StdErr(const Config& c, bool with_pending) const {
    return internal::RaceStdErr(c, store, with_pending ? Pending(c) : 0);
  }
  double Lower(const Config& c, bool with_pending) const {
    return internal::LowerBound(c, store, with_pending ? Pending(c) : 0);
  }
  Config RaceLeader() const { return internal::RaceLeader(arms, store); }
  std::optional<Config> Challenger(const Config& leader, bool with_pending) const {
    if (!with_pending) return internal::Challenger(arms, leader, store);
    return internal::Challenger(arms, leader, store, [this](const Config& c) { return Pending(c); });
  }
  bool Screened() const {
    for (const Config& a : arms)
      if (store.Count(a) < ScreenTarget(a)) return false;
    return true;
  }

  void Converge(const Config& c) {
    stage = Stage::kDone;
    incumbent = c;
    const double v = store.Absolute(c);
    incumbent_us = std::isfinite(v) ? v : 0;
    const double r = c.IsDefault() ? 0 : store.Relative(c);
    converged_relative = std::isfinite(r) && r > 0 ? r : 0;
    watch.clear();
    pending.clear();
    ResetGuard();
    reference_check = false;
    reference = c.IsDefault() ? PickReference() : Config{};
    // Its estimate as low as its samples allow (most of the reference's samples are its screening ones).
    const double rr = reference.IsDefault()
                          ? 0
                          : store.Relative(reference) * std::exp(-kGuardZ * store.RelativeStdErr(reference, 0.03));
    reference_relative = std::isfinite(rr) && rr > 0 ? rr : 0;
  }
  // An arm's estimate plus one standard error of its own samples (a config ahead on few samples is more likely lucky
  // than fast): how the final choice, the guard's reference and a near tie at the top rank arms.
  double Pessimistic(const Config& c) const { return store.Relative(c) + store.OwnStdErr(c, 0.03); }
  // Converged on NCCL's default: the arm that came closest to it (by the pessimistic estimate FinalOrder uses),
  // the config the guard reads the default against once the default's own time drifts. Default when no arm
  // has a sample.
  Config PickReference() const {
    std::optional<std::pair<double, Config>> best;
    for (const Config& c : arms) {
      if (store.Count(c) < 1) continue;
      const double v = Pessimistic(c);
      if (std::isfinite(v) && (!best || v < best->first)) best.emplace(v, c);
    }
    return best ? best->second : Config{};
  }

  // The final choice when the budget ran out: the arms with 4 samples or more (else the leader), best
  // first by a pessimistic estimate, Relative() plus one standard error of its own samples (a config ahead
  // on few samples is more likely lucky than fast).
  std::vector<Config> FinalOrder() const {
    std::vector<std::pair<double, Config>> ranked;
    for (const Config& c : arms)
      if (store.Count(c) >= 4) ranked.emplace_back(Pessimistic(c), c);
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Config> out;
    for (const auto& [v, c] : ranked) out.push_back(c);
    if (out.empty()) out.push_back(RaceLeader());
    return out;
  }

  void AddArm(const Config& c) {
    if (c.IsDefault() || store.TwinOfDefault(c) || IsArm(c)) return;
    arms.push_back(c);
  }
  // Arms as NCCL is now known to run them: merged, twins of the default dropped.
  void Normalise() {
    std::vector<Config> out;
    std::set<ConfigKey> seen;
    for (const Config& c : arms) {
      if (store.TwinOfDefault(c)) continue;
      const Config e = store.Effective(c);
      if (seen.insert(KeyOf(e)).second) out.push_back(e);
    }
    arms = std::move(out);
  }
  // The leader's channel (and chunk) neighbours join the race once it has kRefineAfter samples, and those
  // of the best arm of another subspace within kCarryMargin of it.
  void Refine(const Config& leader) {
    if (refine_steps >= kMaxRefine || store.Count(leader) < kRefineAfter || !(store.Relative(leader) < 1)) return;
    // Arms that join now need their screening and a few race samples before the budget runs out.
    if (Budget() - Used() < kRefineReserve) return;
    // The leader's bracket halves at each step it still leads (internal::Neighbours: halfway to the nearest
    // measured channel counts of its subspace), until the gaps are closed or the steps are used up.
    std::vector<Config> next = internal::Neighbours(leader, space, store);
    const double lv = store.Relative(leader);
    std::optional<Config> other;
    for (const Config& a : arms)
      if (a.Subspace() != leader.Subspace() && store.Count(a) >= 2 && store.Relative(a) <= lv + kCarryMargin &&
          (!other || store.Relative(a) < store.Relative(*other)))
        other = a;
    if (other && refined.insert(KeyOf(*other)).second)
      for (const Config& n : internal::Neighbours(*other, space, store)) next.push_back(n);
    bool added = false;
    for (const Config& n : next)
      if (!IsArm(n) && !store.TwinOfDefault(n)) AddArm(n), added = true;
    if (added) ++refine_steps;
  }

  // Set by whatever can move the search on: samples, lost samples, channel truth (truth_seen).
  bool dirty = true;
  uint64_t truth_seen = ~uint64_t{0};

  void Advance() {
    const bool truth_changed = store.truth_version() != truth_seen;
    if (stage == Stage::kDone || (!dirty && !truth_changed)) return;
    dirty = false;
    truth_seen = store.truth_version();
    if (truth_changed) {
      Normalise();
      for (const Config& c : internal::ScreenSet(space, opt, prior, store)) AddArm(c);
    }
    if (arms.empty()) return Converge(Config{});  // nothing to try: NCCL's default
    // Out of budget: decide on what came back.
    if (Used() >= Budget() && TotalPending() == 0) return DecideNow();
    if (!Screened()) {
      stage = Stage::kScreen;
      return;
    }
    stage = Stage::kRace;
    const Config leader = RaceLeader();
    if (!(leader == last_leader)) last_leader = leader, lead_since = store.total();
    Refine(leader);
    if (!Screened()) return;  // refinement added arms: they are screened first
    const int n = store.Count(leader, lead_since);
    const internal::Verdict v = LeaderVerdict(leader);
    const std::optional<Config> rival = Challenger(leader, false);
    // Taken: significantly faster than the default, and nothing else plausibly better by kEpsilonBest.
    if (v.switch_to_winner && n >= kMinDecideSamples && (!rival || !Apart(leader, *rival))) {
      ++stats.early;
      return Converge(leader);
    }
    // A near tie at the top (not Apart: both arms on kTieSamples or more, within kEpsilonBest) whose lead moves
    // between the two: each change restarts the samples since it leads, and the race ran to its budget on a
    // difference the search does not care about (simulated testbed noise, all-reduce 256 KiB: tree/simple/nc2
    // at 0.829 and ring/simple/nc1 at 0.839 of the default on 20 samples each, 39 of 39 entries). The better of
    // the two by the pessimistic estimate is taken once it clears the decision on all of its samples. Not between
    // channel counts of one subspace that refinement can still split (Splittable).
    if (rival && !Splittable(leader, *rival) && n < kMinDecideSamples && !Apart(leader, *rival) &&
        store.Count(leader) >= kTieSamples && store.Count(*rival) >= kTieSamples) {
      const Config& first = PessimisticBest(leader, *rival);
      if (internal::Decide(first, store, opt.min_gain, 0, internal::kDecideZ, 0, kPickedZ).switch_to_winner) {
        ++stats.early;
        return Converge(first);
      }
    }
    // Kept: the leader shows no gain (or none the budget could confirm), and no other arm could show one.
    if (!v.switch_to_winner && !v.undecided && n >= 2 && !LeadDisputed(leader) && !RecordShowsGain(leader) &&
        (!rival || Lower(*rival, false) >= 1 - opt.min_gain))
      return Converge(Config{});
    // Nothing left worth a sample, and nothing on its way: decide on what came back.
    if (TotalPending() == 0 && !NextArm()) return DecideNow();
  }
  // Two arms of one subspace that refinement can still split: channel counts with others between them (counts that
  // read within 3% of each other can be 9% apart: the simulated acceptance bench, all-gather 4 MiB, ring/ll128 on 7
  // and 11 channels), or two chunk sizes (tuner v6). Not adjacent counts at one chunk size (the testbed's 2-channel
  // communicators: the simulated training loop ran all-gather and reduce-scatter 64 KiB to the budget on
  // pat/simple/nc1 against nc2, at 0.775 and 0.777 of the default), nor arms of two subspaces.
  static bool Splittable(const Config& a, const Config& b) {
    return a.Subspace() == b.Subspace() && (a.chunk_bytes != b.chunk_bytes || std::abs(a.channels - b.channels) > 1);
  }
  // Of two arms, the one with the lower pessimistic estimate.
  const Config& PessimisticBest(const Config& a, const Config& b) const {
    return Pessimistic(b) < Pessimistic(a) ? b : a;
  }
  // Whether `rival` may still be better than `leader` by more than kEpsilonBest: its lower bound says so,
  // unless both have kTieSamples and their estimates are within kEpsilonBest (a near tie inside heavy
  // noise, which otherwise races to the budget for a difference the search does not care about).
  bool Apart(const Config& leader, const Config& rival) const {
    const double lv = store.Relative(leader);
    if (Lower(rival, false) >= lv - kEpsilonBest) return false;
    return !(store.Count(leader) >= kTieSamples && store.Count(rival) >= kTieSamples &&
             store.Relative(rival) - lv < kEpsilonBest);
  }
  // The leader against the default on its samples since it leads, with the cap the budget still allows.
  internal::Verdict LeaderVerdict(const Config& leader) const {
    return internal::Decide(leader, store, opt.min_gain, lead_since, internal::kDecideZ,
                            DecideCap(store.Count(leader, lead_since)));
  }
  // The samples a decision on `have` samples may still reach: kArmCap, or fewer where the budget runs out first.
  int DecideCap(int have) const { return std::min(kArmCap, have + std::max(0, Budget() - Used())); }
  // Whether the leader's whole record (all of its samples, its estimate moved by kPickedZ of its own standard
  // errors) still shows a gain over the default, or leaves one the budget could confirm: the samples since it
  // leads can be a slow stretch after a fast one (real NCCL on the testbed, reduce-scatter 1 MiB: ring/simple/nc1
  // read 366-400 us against the default's 404-443 us while screening went on, then 414-493 us against 443-578
  // us once it led, and the default was kept after 15 of 33 entries with the config at 0.888 on 7 samples).
  bool RecordShowsGain(const Config& leader) const {
    const internal::Verdict all =
        internal::Decide(leader, store, opt.min_gain, 0, internal::kDecideZ, DecideCap(store.Count(leader)), kPickedZ);
    return all.switch_to_winner || all.undecided;
  }
  // The final choice on the samples there are: the first arm in FinalOrder() that clears the decision,
  // the leader on its samples since it leads, or any arm on all of its own with its estimate moved by
  // kPickedZ of its own standard errors for having been picked as the best of several. Either suffices:
  // where the lead changed among near ties until the end, the few samples since it leads may have one or
  // two default samples behind them; and the pessimistic best may be an arm with few samples that cannot
  // clear the test while one just behind it, on many, does (real NCCL, 4 NVLink H100s, reduce-scatter
  // 4 MiB: kept on the default with an arm at 0.74 of it on 30 samples).
  void DecideNow() {
    for (const Config& w : FinalOrder()) {
      if (w.IsDefault()) break;
      const bool lead = w == last_leader && store.Count(w, lead_since) >= kMinDecideSamples;
      if ((lead && internal::Decide(w, store, opt.min_gain, lead_since).switch_to_winner) ||
          internal::Decide(w, store, opt.min_gain, 0, internal::kDecideZ, 0, kPickedZ).switch_to_winner) {
        return Converge(w);
      }
    }
    Converge(Config{});
  }

  Config Waiting() const {
    if (stage == Stage::kDone) return incumbent;
    const Config w = RaceLeader();
    return !w.IsDefault() && store.Relative(w) < 1 ? w : Config{};
  }

  // The next arm to sample, or nothing when every sample worth asking for now is asked for.
  std::optional<Config> NextArm() const {
    for (const Config& a : arms)
      if (Have(a) < ScreenTarget(a)) return a;
    // The race starts once every arm's screening came back: entries asked for before would be spent on
    // what the first one or two samples happened to show (with a deep pipeline, most of the budget).
    if (!Screened()) return std::nullopt;
    const Config leader = RaceLeader();
    if (leader.IsDefault()) return std::nullopt;
    std::optional<Config> pick;
    if (const std::optional<Config> rival = Challenger(leader, true)) {
      pick = StdErr(*rival, true) > StdErr(leader, true) ? *rival : leader;
      if (Have(*pick) >= kArmCap) pick = *pick == leader ? *rival : leader;
    } else if (store.Relative(leader) < 1 - opt.min_gain / 2 || LeaderVerdict(leader).undecided ||
               (LeadDisputed(leader) && Pending(leader) == 0) ||
               (Have(leader) < kMinLook &&
                store.Relative(leader) < 1 + std::max(kSecondLook, kLookSigmas * store.Noise()))) {
      // Only the default left to beat: the leader while it shows a gain or a worthwhile gain is still
      // plausible (internal::Decide's undecided), and more looks at a leader that read a little slower than
      // the default on one or two samples.
      pick = leader;
    }
    if (pick && Have(*pick) >= kArmCap) return std::nullopt;
    return pick;
  }

  // The next entry, or nothing when every sample worth asking for now is asked for.
  std::optional<Config> PickNext(int stream) {
    if (Used() >= Budget()) return std::nullopt;
    const std::optional<Config> arm = NextArm();
    const bool confirming = arm && stage == Stage::kRace && !Challenger(RaceLeader(), true);
    const int every = confirming ? kConfirmEvery : kDefaultEvery;
    // A stream starts with a default sample: its others are read against it.
    int& since = since_default.try_emplace(stream, every).first->second;
    if (!arm && Have(Config{}) >= 2) return std::nullopt;
    if (!arm || since >= every) {
      since = 0;
      return Config{};
    }
    ++since;
    return arm;
  }

  std::vector<Candidate> Next(int max_candidates, int stream) {
    std::vector<Candidate> out;
    if (stage == Stage::kDone) {
      // The guard's probe: NCCL's default beside another incumbent, the reference beside the default.
      if (max_candidates > 0 && Probe(stream))
        out.push_back(Candidate{incumbent.IsDefault() ? reference : Config{}, 1});
      return out;
    }
    Advance();
    while (static_cast<int>(out.size()) < max_candidates && stage != Stage::kDone) {
      std::optional<Config> c = PickNext(stream);
      if (!c) break;
      ++pending[KeyOf(*c)];
      ++stats.requested;
      ++spent;
      if (!out.empty() && out.back().config == *c) {
        ++out.back().calls;
      } else {
        out.push_back(Candidate{*c, 1});
      }
    }
    return out;
  }

  void AddSample(const Config& asked, double us, int stream, bool requested) {
    if (!(us > 0) || !std::isfinite(us)) return;
    if (stage == Stage::kDone) {
      if (!incumbent.IsDefault() && asked.IsDefault()) {
        if (opt.guard) GuardProbe(us, stream);
        return;
      }
      if (KeyFor(asked) == KeyFor(incumbent)) {
        Monitor(us, stream);
        if (stage == Stage::kDone && Guarding()) GuardSample(us, stream);
        return;
      }
      if (Guarding() && incumbent.IsDefault() && KeyFor(asked) == KeyFor(reference)) ReferenceProbe(us, stream);
      return;
    }
    if (requested) {
      Unawait(asked);
    } else if (LowBudget()) {
      ++waited;
    }
    store.Add(asked, us, stream);
    dirty = true;
    Advance();
  }

  // After convergence: the incumbent's samples (the caller samples it now and then), per stream. The
  // first full window of a stream is its baseline; two consecutive windows away from it by more than
  // drift_ratio re-open the search (one window can be dragged off by a burst of outliers).
  struct Watch {
    std::deque<double> window;
    double baseline = 0;
    int strikes = 0;
  };
  std::map<int, Watch> watch;

  void Monitor(double us, int stream) {
    Watch& w = watch[stream];
    w.window.push_back(us);
    if (static_cast<int>(w.window.size()) < opt.monitor_window) return;
    const double m = internal::Median(std::vector<double>(w.window.begin(), w.window.end()));
    w.window.clear();
    if (!(w.baseline > 0)) {
      w.baseline = m;
      return;
    }
    if (std::fabs(m / w.baseline - 1) > opt.drift_ratio) {
      if (++w.strikes < 2) return;
      // With the guard, a drift of a config other than the default is judged against the default: a slow
      // period of the machine slows both (real NCCL on the testbed: all-reduce 64 KiB on tree/simple/nc2,
      // 1.6x faster than the default, read two windows 22-26% above its first and re-opened the search
      // 3000 calls after it converged). The guard looks again from a fresh first window, and the new level
      // is the baseline from here on. Converged on the default, the guard reads the default against the
      // reference (the arm that came closest to it) the same way: a slow period of the machine slows both too
      // (real NCCL on the testbed: all-gather 4 MiB, kept on the default at 1512 us, read two windows 15-30%
      // above that once the bench ran a second communicator beside it, and the search was taken again).
      if (!opt.guard || (incumbent.IsDefault() && reference.IsDefault())) return Reopen();
      w.strikes = 0;
      w.baseline = m;
      if (incumbent.IsDefault()) reference_check = true;
      Recheck();
    } else {
      w.strikes = 0;
    }
  }

  // The guard (kProbeEvery..kGuardZ): per stream, the monitoring samples of the incumbent since the last
  // probe was asked for and the spacing; the window's samples in a store of their own (each incumbent
  // sample read against the default probes of its stream nearest to it).
  struct Guard {
    int since_probe = 0;
    int every = kProbeEvery;
  };
  std::map<int, Guard> guards;
  internal::SampleStore guard_store;
  int guard_probes = 0;
  // Windows judged since convergence (or the last recheck), and those that confirmed the gain: the guard checks
  // (Checking) until one confirms it or kCheckWindows were judged.
  int guard_windows = 0;
  int guard_confirmed = 0;

  void ResetGuard() {
    guards.clear();
    guard_store.Clear();
    guard_probes = 0;
    guard_windows = 0;
    guard_confirmed = 0;
  }
  // A fresh first window at the first spacing (the probes on their way still count).
  void Recheck() {
    ++stats.rechecks;
    for (auto& [s, g] : guards) g.every = kProbeEvery;
    guard_store.Clear();
    guard_probes = 0;
    guard_windows = 0;
    guard_confirmed = 0;
  }
  // Whether the guard is at work: always after convergence on a config other than the default; on the
  // default, from a drift of its time until the check against the reference ended (ReferenceProbe).
  bool Guarding() const { return opt.guard && (!incumbent.IsDefault() || reference_check); }
  bool Checking() const {
    if (stage != Stage::kDone || !Guarding()) return false;
    return incumbent.IsDefault() || (guard_confirmed == 0 && guard_windows < kCheckWindows);
  }
  Guard& GuardOf(int stream) {
    auto [it, inserted] = guards.try_emplace(stream);
    // The first probe comes after half the spacing: the window starts with samples on both sides.
    if (inserted) it->second.since_probe = kProbeEvery / 2;
    return it->second;
  }
  // Whether a probe of NCCL's default is due on `stream` now (`every` monitoring samples since the last one
  // was asked for). Several may be on their way: the caller ships one per update, and updates come at its
  // syncs; a probe lost on the way is simply not counted.
  bool Probe(int stream) {
    if (!Guarding()) return false;
    Guard& g = GuardOf(stream);
    if (g.since_probe < g.every) return false;
    g.since_probe = 0;
    ++stats.probes;
    return true;
  }
  void GuardSample(double us, int stream) {
    ++GuardOf(stream).since_probe;
    guard_store.Add(incumbent, us, stream);
  }

  // The guard's window: a probe (a call of `probe`) joins it, and once it holds kGuardProbes probes and twice as
  // many samples of the incumbent a judgement is due: `judged`'s time relative to the default's from the window's
  // samples (each against the default samples nearest to it), with its bounds at kGuardZ standard errors. The
  // probe count starts over; the samples stay (the caller clears them or judges on them again).
  struct Judgement {
    bool valid = false;  // both the estimate and its error are finite
    double lower = 0, relative = 0, upper = 0;
  };
  std::optional<Judgement> WindowJudgement(const Config& probe, const Config& judged, double us, int stream) {
    guard_store.Add(probe, us, stream);
    if (++guard_probes < kGuardProbes || guard_store.Count(incumbent) < 2 * kGuardProbes) return std::nullopt;
    guard_probes = 0;
    ++guard_windows;
    Judgement j;
    j.relative = guard_store.Relative(judged);
    const double se = guard_store.RelativeStdErr(judged, 0.03);
    j.valid = std::isfinite(j.relative) && std::isfinite(se);
    j.lower = j.relative * std::exp(-kGuardZ * se);
    j.upper = j.relative * std::exp(kGuardZ * se);
    return j;
  }

  // A probe of the default while converged on another config. Default samples the search asked for before it
  // converged may still come: they count as probes. Each window is judged on its own samples.
  void GuardProbe(double us, int stream) {
    const std::optional<Judgement> j = WindowJudgement(Config{}, incumbent, us, stream);
    if (!j) return;
    guard_store.Clear();
    if (!j->valid) return;
    if (j->lower > 1) {
      ++stats.demoted;
      return Reopen();
    }
    // Still faster than the default, but its edge shrank by more than drift_ratio from what the search
    // measured: the landscape moved, and another config may now be the best.
    if (converged_relative > 0 && j->lower > converged_relative * (1 + opt.drift_ratio)) {
      ++stats.shifted;
      return Reopen();
    }
    // The gain confirmed: the probes spread out (each costs the gain of one call).
    if (j->upper < 1) {
      ++guard_confirmed;
      for (auto& [s, g] : guards) g.every = std::min(kProbeEveryMax, 2 * g.every);
    }
  }

  // A probe of the reference while converged on the default (after a drift of the default's time), judged as
  // GuardProbe judges a window with the thresholds turned round: the reference significantly faster than the
  // default, or closer to it by more than drift_ratio than the search measured, re-opens the search; the
  // reference not faster than the default by more than min_gain (at kGuardZ standard errors) keeps it at its
  // new level, and the probes stop. Neither: the check goes on with the samples it has, kCheckWindows
  // judgements at most (a reference 3% faster than the default needs more than 8 probes under 5-20% noise).
  void ReferenceProbe(double us, int stream) {
    const std::optional<Judgement> j = WindowJudgement(reference, reference, us, stream);
    if (!j) return;
    if (j->valid && j->upper < 1) {
      ++stats.demoted;
      return Reopen();
    }
    if (j->valid && reference_relative > 0 && j->upper < reference_relative / (1 + opt.drift_ratio)) {
      ++stats.shifted;
      return Reopen();
    }
    if (!j->valid || j->lower > 1 - opt.min_gain || guard_windows >= kCheckWindows) {
      guard_store.Clear();
      reference_check = false;
    }
  }

  void Reopen() {
    ++stats.reopened;
    ResetGuard();
    reference = Config{};
    reference_relative = 0;
    reference_check = false;
    store.Clear();
    pending.clear();
    arms.clear();
    refined.clear();
    refine_steps = 0;
    stage = Stage::kScreen;
    since_default.clear();
    stats.requested = 0;
    spent = 0;
    waited = 0;
    last_leader = Config{};
    lead_since = 0;
    ++generation;
    dirty = true;
    truth_seen = ~uint64_t{0};
    Advance();
  }

  void Adopt(const Config& c, double us) {
    Converge(c);
    incumbent_us = us > 0 ? us : 0;
  }

  Stats GetStats() const {
    Stats s = stats;
    const double d = store.Absolute(Config{});
    s.default_us = std::isfinite(d) ? d : 0;
    s.incumbent_us = incumbent_us;
    if (stage == Stage::kDone && !incumbent.IsDefault()) {
      const double r = store.Relative(incumbent);
      if (std::isfinite(r) && r > 0) s.incumbent_relative = r;
    }
    s.noise = store.Noise();
    s.samples = static_cast<int>(store.total());
    s.configs = static_cast<int>(store.Measured().size());
    s.budget = Budget();
    s.arms = static_cast<int>(arms.size());
    s.low_stakes = low_stakes;
    s.waited = waited;
    return s;
  }

  std::string Describe(int max_configs) const {
    std::vector<std::pair<double, Config>> rows;
    for (const Config& c : store.Measured()) rows.emplace_back(store.Relative(c), c);
    std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    static constexpr const char* kStage[] = {"screen", "race", "done"};
    char buf[128];
    std::snprintf(buf, sizeof(buf),
                  "%s, %d arms, %d samples (%d asked of %d, %d lost, %d pending), relative to default:",
                  kStage[static_cast<int>(stage)], static_cast<int>(arms.size()), static_cast<int>(store.total()),
                  stats.requested, Budget(), stats.lost, TotalPending());
    std::string out = buf;
    int shown = 0;
    for (const auto& [v, c] : rows) {
      if (shown >= max_configs && !c.IsDefault()) continue;
      ++shown;
      std::snprintf(buf, sizeof(buf), " %s%s=%.3f/%d", c.IsDefault() ? "*" : "", c.ToString().c_str(), v,
                    store.Count(c));
      out += buf;
    }
    if (shown < static_cast<int>(rows.size())) out += " +" + std::to_string(rows.size() - shown) + " more";
    std::snprintf(buf, sizeof(buf), "; noise %.3f; incumbent %s", store.Noise(), incumbent.ToString().c_str());
    out += buf;
    if (stage == Stage::kDone) {
      std::snprintf(buf, sizeof(buf), " %.2f us (converged)", incumbent_us);
      out += buf;
    }
    return out;
  }
};

Search::Search(const SearchSpace& space, const Options& options, const Prior& prior)
    : impl_(std::make_unique<Impl>(space, options, prior)) {
  impl_->Advance();
}
Search::~Search() = default;
Search::Search(Search&&) noexcept = default;
Search& Search::operator=(Search&&) noexcept = default;

State Search::state() const { return impl_->stage == Impl::Stage::kDone ? State::kConverged : State::kSearching; }
bool Search::checking() const { return impl_->Checking(); }
std::vector<Candidate> Search::Next(int max_candidates, int stream) { return impl_->Next(max_candidates, stream); }
void Search::AddSample(const Config& config, double us, int stream, bool requested) {
  impl_->AddSample(config, us, stream, requested);
}
// The samples on their way stay counted under what they asked for (Pending reads them as NCCL runs it).
void Search::NoteRan(const Config& asked, const Config& ran) { impl_->store.NoteRan(asked, ran); }
void Search::NoteLost(const Config& config) {
  if (impl_->stage == Impl::Stage::kDone) return;  // a probe of the guard: not counted
  if (impl_->Unawait(config)) --impl_->spent;
  ++impl_->stats.lost;
  impl_->dirty = true;
  impl_->Advance();
}
void Search::DropPending() {
  if (impl_->stage == Impl::Stage::kDone) return;
  impl_->stats.lost += impl_->TotalPending();
  impl_->spent -= impl_->TotalPending();
  impl_->pending.clear();
  impl_->dirty = true;
  impl_->Advance();
}
Config Search::incumbent() const { return impl_->incumbent; }
Config Search::waiting() const { return impl_->Waiting(); }
void Search::Adopt(const Config& config, double us) { impl_->Adopt(config, us); }
void Search::Reopen() { impl_->Reopen(); }
Stats Search::stats() const { return impl_->GetStats(); }
void Search::SetLowStakes(bool low) { impl_->low_stakes = low; }
int Search::pending() const { return impl_->TotalPending(); }
int Search::generation() const { return impl_->generation; }
std::string Search::Describe(int max_configs) const { return impl_->Describe(max_configs); }

std::vector<Config> EnumerateSpace(const SearchSpace& space) {
  std::vector<Config> out;
  out.push_back(Config{});
  const int mc = std::max(1, space.max_channels);
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) {
      if (!space.subspaces.Valid(a, p)) continue;
      std::vector<int64_t> chunks = {0};
      const std::vector<int64_t> v = internal::ChunkValues(space, p);
      chunks.insert(chunks.end(), v.begin(), v.end());
      for (int c = 1; c <= mc; ++c)
        for (int64_t ck : chunks) out.push_back(Config{a, p, c, ck});
    }
  return out;
}

}  // namespace ccltune::optimizer
