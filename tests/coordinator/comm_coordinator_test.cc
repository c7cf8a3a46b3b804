// Pins CommCoordinator end to end over FakeHub: ranks as threads running the same script must get
// the identical config at every call, and every way tuning can stop (a rank cannot tune, an error, the
// leader's stop, an unencodable message, version skew) must stop every rank at the same unit. Slow
// and lost contributions are waited for (loudly), never skipped.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "coordinator/coordinator.hpp"
#include "coordinator/internal/layout.hpp"
#include "tests/coordinator/harness.hpp"

namespace ccltune::coordinator {
namespace {

using testing::CountNonDefault;
using testing::RankResult;
using testing::RunOptions;
using testing::RunRanks;

constexpr uint64_t kAgreementApplyUnit = kFirstSyncUnit + kLag * kInitialInterval;  // s_kLag

void ExpectIdenticalAcrossRanks(const std::vector<RankResult>& r) {
  for (size_t i = 1; i < r.size(); ++i) {
    ASSERT_EQ(r[i].configs.size(), r[0].configs.size());
    for (size_t k = 0; k < r[0].configs.size(); ++k) {
      ASSERT_EQ(r[i].configs[k], r[0].configs[k])
          << "rank " << i << " call " << k << " (unit " << r[0].call_unit[k] << "): " << r[i].configs[k].ToString()
          << " vs rank 0 " << r[0].configs[k].ToString();
    }
    EXPECT_EQ(r[i].tuning_after_unit, r[0].tuning_after_unit) << "rank " << i;
    EXPECT_EQ(r[i].stops, r[0].stops) << "rank " << i;
    EXPECT_EQ(r[i].stop_unit, r[0].stop_unit) << "rank " << i;
    EXPECT_EQ(r[i].updates, r[0].updates) << "rank " << i;
  }
}

// ---- the happy path ----

class Consistency : public ::testing::TestWithParam<int> {};

TEST_P(Consistency, EveryRankGetsTheSameConfigAtEveryCall) {
  RunOptions o;
  o.nranks = GetParam();
  const std::vector<RankResult> r = RunRanks(o);
  ExpectIdenticalAcrossRanks(r);
  for (const RankResult& x : r) {
    EXPECT_TRUE(x.first_error.ok()) << x.first_error;
    EXPECT_TRUE(x.stops.empty());
    EXPECT_EQ(x.slow_waits, 0);
  }
  EXPECT_GT(r[0].updates, 50);
  EXPECT_GT(CountNonDefault(r[0].configs), 200);  // the schedules really were used
  for (size_t k = 0; k < r[0].configs.size(); ++k) {
    if (r[0].call_unit[k] <= kAgreementApplyUnit) {
      ASSERT_TRUE(r[0].configs[k].IsDefault()) << "nothing applies before the agreement point; call " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, Consistency, ::testing::Values(1, 2, 4, 8));

TEST(CommCoordinator, SingleRankFollowsTheScheduleCallByCall) {
  const Config a{.algo = kAlgoTree, .proto = kProtoLL, .channels = 2};
  const Config b{.algo = kAlgoRing, .proto = kProtoLL128, .channels = 4};
  const Config inc{.algo = kAlgoRing, .proto = kProtoSimple, .channels = 16};
  FakeHub hub(1);
  CommCoordinator::Hooks hooks;
  hooks.build_message = [&](uint64_t id) {
    LeaderMessage m;
    if (id == 0) m.updates.push_back({.workload = 7, .entries = {{a, 2}, {b, 1}, {inc, 0}}});
    return m;
  };
  CommCoordinator c(0, hub.Endpoint(0), hooks);
  EXPECT_TRUE(c.is_leader());
  for (uint64_t u = 1; u < kAgreementApplyUnit; ++u) {
    ASSERT_EQ(c.ConfigFor(7, false).config, Config{});
    ASSERT_TRUE(c.OnUnitComplete(nullptr).ok());
  }
  EXPECT_EQ(c.syncs_issued(), static_cast<uint64_t>(kLag));
  ASSERT_TRUE(c.OnUnitComplete(nullptr).ok());  // unit s_kLag: payload 0 applies
  EXPECT_EQ(c.units(), kAgreementApplyUnit);
  EXPECT_EQ(c.book().size(), 1u);
  EXPECT_EQ(c.ConfigFor(7, /*capturing=*/true).config, inc);
  EXPECT_EQ(c.ConfigFor(7, false).config, a);
  EXPECT_EQ(c.ConfigFor(7, true).config, inc);  // capture consumes nothing
  EXPECT_EQ(c.ConfigFor(7, false).config, a);
  EXPECT_EQ(c.ConfigFor(7, false).config, b);
  EXPECT_EQ(c.ConfigFor(7, false).config, inc);
  EXPECT_EQ(c.ConfigFor(7, false).config, inc);
  EXPECT_EQ(c.ConfigFor(8, false).config, Config{});  // unscheduled workload: NCCL's default
  EXPECT_TRUE(c.tuning());
}

// The settle bit of payload k holds from its apply at sync point k + kLag until a payload without it applies.
TEST(CommCoordinator, SettleBitTakesEffectWhereItsPayloadApplies) {
  FakeHub hub(1);
  CommCoordinator::Hooks hooks;
  hooks.build_message = [&](uint64_t id) {
    LeaderMessage m;
    m.interval = 1;
    m.settle = id == 0;
    return m;
  };
  CommCoordinator c(0, hub.Endpoint(0), hooks);
  for (uint64_t u = 1; u < kAgreementApplyUnit; ++u) {
    EXPECT_FALSE(c.settle()) << u;
    ASSERT_TRUE(c.OnUnitComplete(nullptr).ok());
  }
  ASSERT_TRUE(c.OnUnitComplete(nullptr).ok());  // unit s_kLag: payload 0 applies
  EXPECT_TRUE(c.settle());
  ASSERT_TRUE(c.OnUnitComplete(nullptr).ok());  // the next sync point (interval 1): payload 1 applies
  EXPECT_FALSE(c.settle());
}

// From sync id kLag on, a message up to RecordRoom's words (the payload's room and the more record words, protocol
// version 8) reaches every rank whole: every update shipped by a sync that applied is applied on every rank.
TEST(CommCoordinator, MessagesBeyondThePayloadsRoomReachEveryRank) {
  RunOptions o;
  std::map<uint64_t, int> shipped;  // sync id -> updates (the leader's thread only)
  o.build_message = [&](uint64_t id) {
    LeaderMessage m = testing::GeneratedMessage(id);
    int words = 0;
    for (const WorkloadUpdate& u : m.updates) words += EncodedWords(u);
    for (uint64_t k = 0; words + 12 <= RecordRoom(id); ++k) {  // updates of 10 words up to the room
      WorkloadUpdate u;
      u.workload = 101 + (id + k) % 6;
      for (int c = 0; c < 7; ++c) {
        u.entries.push_back(
            {Config{.algo = kAlgoTree, .proto = c % 3, .channels = 1 + c + static_cast<int>(k % 4)}, 1});
      }
      u.entries.push_back({Config{.algo = kAlgoRing, .proto = kProtoLL, .channels = 1 + static_cast<int>(id % 8)}, 0});
      u.append = k % 2 == 1;
      words += EncodedWords(u);
      m.updates.push_back(u);
    }
    if (ExtendedSync(id)) EXPECT_GT(words, kRecordWords) << "sync " << id;
    shipped[id] = static_cast<int>(m.updates.size());
    return m;
  };
  const std::vector<RankResult> r = RunRanks(o);
  ExpectIdenticalAcrossRanks(r);
  for (const RankResult& x : r) EXPECT_TRUE(x.first_error.ok()) << x.first_error;
  // Payload k applies at sync point k + kLag: the last kLag syncs issued never applied.
  const uint64_t issued = r[0].sync_units.size();
  ASSERT_GT(issued, 20u);
  int applied = 0;
  for (const auto& [id, n] : shipped)
    if (id + kLag < issued) applied += n;
  for (const RankResult& x : r) EXPECT_EQ(x.updates, applied);
  EXPECT_GT(CountNonDefault(r[0].configs), 200);
}

// ---- stopping: a rank cannot tune ----

class CannotTune : public ::testing::TestWithParam<std::tuple<int, uint64_t>> {};

TEST_P(CannotTune, EveryRankStopsAtTheSameUnit) {
  // Not a structured binding: clang 14 (the sanitizer builds) cannot capture one in a lambda.
  const int raiser = std::get<0>(GetParam());
  const uint64_t raise_before_unit = std::get<1>(GetParam());
  RunOptions o;
  o.before_unit_complete = [&](int rank, uint64_t unit, CommCoordinator& c) {
    if (rank == raiser && unit == raise_before_unit) c.RaiseCannotTune();
  };
  const std::vector<RankResult> r = RunRanks(o);
  ExpectIdenticalAcrossRanks(r);
  ASSERT_EQ(r[0].stops.size(), 1u);
  EXPECT_NE(r[0].stops[0].find("cannot tune"), std::string::npos) << r[0].stops[0];
  EXPECT_GT(r[0].stop_unit, raise_before_unit);
  EXPECT_FALSE(r[0].tuning_after_unit.back());
  EXPECT_FALSE(r[0].tuning_after_unit[r[0].stop_unit - 1]);
  EXPECT_TRUE(r[0].tuning_after_unit[r[0].stop_unit - 2]);
  for (size_t k = 0; k < r[0].configs.size(); ++k) {
    if (r[0].call_unit[k] > r[0].stop_unit) ASSERT_TRUE(r[0].configs[k].IsDefault()) << "call " << k;
  }
  if (raise_before_unit == kFirstSyncUnit) {
    // Raised before the agreement sync: everyone stays on NCCL's default, stopping at s_kLag.
    EXPECT_EQ(r[0].stop_unit, kAgreementApplyUnit);
    EXPECT_EQ(CountNonDefault(r[0].configs), 0);
    EXPECT_EQ(r[0].updates, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Sweep, CannotTune,
                         ::testing::Combine(::testing::Values(0, 1, 3),
                                            ::testing::Values(kFirstSyncUnit, uint64_t{50}, uint64_t{300})));

// ---- stopping: error flag, leader stop, leader message that cannot be encoded ----

TEST(CommCoordinator, ErrorFlagStopsEveryone) {
  RunOptions o;
  o.before_unit_complete = [](int rank, uint64_t unit, CommCoordinator& c) {
    if (rank == 2 && unit == 250) c.RaiseError();
  };
  const std::vector<RankResult> r = RunRanks(o);
  ExpectIdenticalAcrossRanks(r);
  ASSERT_EQ(r[0].stops.size(), 1u);
  EXPECT_NE(r[0].stops[0].find("error"), std::string::npos) << r[0].stops[0];
  EXPECT_GT(r[0].stop_unit, 250u);
  EXPECT_GT(CountNonDefault(r[0].configs), 0);  // tuned before the error
}

TEST(CommCoordinator, LeaderStopStopsEveryone) {
  RunOptions o;
  o.build_message = [](uint64_t id) {
    LeaderMessage m = testing::GeneratedMessage(id);
    m.stop_tuning = id == 6;
    return m;
  };
  const std::vector<RankResult> r = RunRanks(o);
  ExpectIdenticalAcrossRanks(r);
  ASSERT_EQ(r[0].stops.size(), 1u);
  EXPECT_NE(r[0].stops[0].find("leader stopped"), std::string::npos) << r[0].stops[0];
  EXPECT_NE(r[0].stops[0].find("sync 6"), std::string::npos) << r[0].stops[0];
}

TEST(CommCoordinator, UnencodableLeaderMessageRaisesTheErrorFlagInsteadOfSkipping) {
  RunOptions o;
  o.build_message = [](uint64_t id) {
    LeaderMessage m = testing::GeneratedMessage(id);
    if (id == 4) m.updates.assign(30, m.updates[0]);  // does not fit
    return m;
  };
  const std::vector<RankResult> r = RunRanks(o);
  ExpectIdenticalAcrossRanks(r);
  EXPECT_TRUE(absl::IsInvalidArgument(r[0].first_error)) << r[0].first_error;
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(r[i].first_error.ok());
  ASSERT_EQ(r[0].stops.size(), 1u);
  EXPECT_NE(r[0].stops[0].find("error (raised by sync 4)"), std::string::npos) << r[0].stops[0];
}

// ---- version skew on the wire ----

class RewriteVersion final : public Transport {
 public:
  RewriteVersion(std::unique_ptr<Transport> inner, uint64_t version) : inner_(std::move(inner)), version_(version) {}
  absl::Status Issue(uint64_t id, const Payload& w, void* stream) override {
    Payload x = w;
    x.base[layout::kWordVersion] = version_;
    x.base[layout::kWordVersionComplement] = layout::kVersionBase - version_;
    return inner_->Issue(id, x, stream);
  }
  absl::Status Wait(uint64_t id, Payload* out, absl::Duration t) override { return inner_->Wait(id, out, t); }
  absl::StatusOr<bool> Poll(uint64_t id, Payload* out) override { return inner_->Poll(id, out); }

 private:
  std::unique_ptr<Transport> inner_;
  uint64_t version_;
};

class VersionSkewRun : public ::testing::TestWithParam<uint64_t> {};

TEST_P(VersionSkewRun, EveryRankStopsAtTheAgreementPoint) {
  RunOptions o;
  o.wrap = [](int rank, std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
    if (rank != 2) return t;
    return std::make_unique<RewriteVersion>(std::move(t), GetParam());
  };
  const std::vector<RankResult> r = RunRanks(o);
  ExpectIdenticalAcrossRanks(r);
  ASSERT_EQ(r[0].stops.size(), 1u);
  // The exact one line every rank reports (the runtime logs it after "tuning off, NCCL's defaults from here on: ").
  EXPECT_EQ(r[0].stops[0], absl::StrCat("tuning stopped at unit ", kAgreementApplyUnit,
                                        ": sync 0 payload rejected: coordinator: ranks run different protocol versions "
                                        "(min ",
                                        kProtocolVersion, ", max ", GetParam(), ")"));
  EXPECT_EQ(r[0].stop_unit, kAgreementApplyUnit);
  EXPECT_EQ(CountNonDefault(r[0].configs), 0);
  for (const RankResult& x : r) EXPECT_TRUE(absl::IsFailedPrecondition(x.first_error)) << x.first_error;
}

INSTANTIATE_TEST_SUITE_P(OlderAndNewer, VersionSkewRun, ::testing::Values(kProtocolVersion + 1, uint64_t{1000}));

// A rank whose words are not ccltune's payload at all (another program's all-reduce, or a layout
// of the future with another magic): every rank rejects the same reduced words at the same unit.
class ForeignMagic final : public Transport {
 public:
  explicit ForeignMagic(std::unique_ptr<Transport> inner) : inner_(std::move(inner)) {}
  absl::Status Issue(uint64_t id, const Payload& w, void* stream) override {
    Payload x = w;
    x.base[layout::kWordMagic] = 0x0145'4E55'544C'4343ull;  // "CCLTUNE\x01": above ccltune's, so the MAX delivers it
    return inner_->Issue(id, x, stream);
  }
  absl::Status Wait(uint64_t id, Payload* out, absl::Duration t) override { return inner_->Wait(id, out, t); }
  absl::StatusOr<bool> Poll(uint64_t id, Payload* out) override { return inner_->Poll(id, out); }

 private:
  std::unique_ptr<Transport> inner_;
};

TEST(CommCoordinator, ForeignPayloadStopsEveryRankWithOneLine) {
  RunOptions o;
  o.wrap = [](int rank, std::unique_ptr<Transport> t) -> std::unique_ptr<Transport> {
    if (rank != 1) return t;
    return std::make_unique<ForeignMagic>(std::move(t));
  };
  const std::vector<RankResult> r = RunRanks(o);
  ExpectIdenticalAcrossRanks(r);
  ASSERT_EQ(r[0].stops.size(), 1u);
  EXPECT_EQ(r[0].stops[0], absl::StrCat("tuning stopped at unit ", kAgreementApplyUnit,
                                        ": sync 0 payload rejected: coordinator: malformed sync payload: bad magic "
                                        "0x1454e55544c4343"));
  EXPECT_EQ(r[0].stop_unit, kAgreementApplyUnit);
  EXPECT_EQ(CountNonDefault(r[0].configs), 0);  // NCCL's defaults on every call, every rank
  for (const RankResult& x : r) EXPECT_TRUE(absl::IsDataLoss(x.first_error)) << x.first_error;
}

// ---- slow and lost contributions: waited for, reported, never skipped ----

TEST(CommCoordinator, SlowRankFiresTheSlowWaitHook) {
  RunOptions o;
  o.warn_after = absl::Milliseconds(20);
  o.before_unit_complete = [](int rank, uint64_t unit, CommCoordinator&) {
    if (rank == 3 && unit == kFirstSyncUnit) absl::SleepFor(absl::Milliseconds(300));  // sync 0 issued late
  };
  const std::vector<RankResult> r = RunRanks(o);
  ExpectIdenticalAcrossRanks(r);
  int fired = 0;
  for (int i = 0; i < 3; ++i) {
    fired += r[i].slow_waits;
    for (uint64_t id : r[i].slow_wait_ids) EXPECT_EQ(id, 0u);
  }
  EXPECT_GT(fired, 0);
  EXPECT_TRUE(r[0].stops.empty());
  EXPECT_GT(CountNonDefault(r[0].configs), 0);
}

TEST(CommCoordinator, LostContributionIsWaitedForUntilItArrives) {
  constexpr uint64_t kLost = 3;
  FakeHub hub(4);
  hub.DropContribution(1, kLost);
  std::atomic<int> fired{0};
  std::atomic<bool> supplied{false};
  RunOptions o;
  o.hub = &hub;
  o.warn_after = absl::Milliseconds(10);
  o.on_slow_wait = [&](int, uint64_t id) {
    EXPECT_EQ(id, kLost);
    // After a few loud waits, the lost contribution finally arrives (as a retransmission would).
    if (++fired >= 6 && !supplied.exchange(true)) {
      absl::StatusOr<Words> w = Encode(nullptr, kLost, {});
      ASSERT_TRUE(w.ok());
      Payload p;
      p.base = *w;
      p.extended = ExtendedSync(kLost);
      ASSERT_TRUE(hub.Endpoint(1)->Issue(kLost, p, nullptr).ok());
    }
  };
  const std::vector<RankResult> r = RunRanks(o);
  ExpectIdenticalAcrossRanks(r);
  EXPECT_TRUE(supplied.load());
  EXPECT_GE(fired.load(), 6);
  EXPECT_TRUE(r[0].stops.empty());
  EXPECT_GT(CountNonDefault(r[0].configs), 200);
}

}  // namespace
}  // namespace ccltune::coordinator

namespace ccltune::coordinator {
namespace {

using testing::RankResult;
using testing::RunOptions;
using testing::RunRanks;

// Every timed call's timings reach the leader exactly once, as the minimum and maximum over the ranks that
// timed it; a call no rank timed arrives empty; the ranks agree on every number. A call that every rank timed may
// come early (from its early copy), one that some rank did not comes with its window, after later calls.
TEST(CommCoordinator, CarriedTimingsReachTheLeaderOnce) {
  RunOptions o;
  // Rank 0 (the fastest here) cannot time every 5th call, rank 3 (the slowest) every 4th; no rank can
  // time every 7th.
  o.timing = [](int rank, uint64_t seq) -> std::optional<double> {
    if (seq % 7 == 3 || (rank == 0 && seq % 5 == 0) || (rank == 3 && seq % 4 == 1)) return std::nullopt;
    return 10.0 + static_cast<double>(seq) + rank;
  };
  const std::vector<RankResult> r = RunRanks(o);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(r[i].timed, r[0].timed);  // every rank numbered the same calls
  ASSERT_GT(r[0].timed, 100u);
  std::vector<std::pair<uint64_t, std::optional<CarriedSample>>> c = r[0].carried;
  ASSERT_FALSE(c.empty());
  std::stable_sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Each once; all but the last few (issued after the last syncs: their early copies may have come, the windows of
  // those that no rank or not every rank timed not yet) were carried.
  for (size_t i = 1; i < c.size(); ++i) ASSERT_LT(c[i - 1].first, c[i].first) << "delivered twice";
  ASSERT_GT(r[0].timed, 3u * kSampleSlots);
  const uint64_t settled = r[0].timed - 3 * kSampleSlots;
  for (uint64_t seq = 0; seq < settled; ++seq) ASSERT_EQ(c[seq].first, seq) << "never delivered";
  bool reordered = false;
  for (size_t i = 0; i < r[0].carried.size(); ++i) reordered = reordered || r[0].carried[i].first != i;
  EXPECT_TRUE(reordered) << "no early copy came before a call's window";
  for (size_t i = 0; i < c.size(); ++i) {
    const uint64_t seq = c[i].first;
    if (seq % 7 == 3) {
      EXPECT_FALSE(c[i].second.has_value()) << seq;
      continue;
    }
    ASSERT_TRUE(c[i].second.has_value()) << seq;
    const int lowest = seq % 5 == 0 ? 1 : 0, highest = seq % 4 == 1 ? 2 : 3;
    EXPECT_DOUBLE_EQ(c[i].second->min_us, 10.0 + static_cast<double>(seq) + lowest) << seq;
    EXPECT_DOUBLE_EQ(c[i].second->max_us, 10.0 + static_cast<double>(seq) + highest) << seq;
  }
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(r[i].carried.empty());  // only the leader is handed them
}

// Early copies: where every rank has a call's timing at the sync point that ends its interval (here the leader waits
// for the others at every unit, so they always have), the leader has it by the sync point after that one; from the copy
// made one sync later (the calls issued before sync point j - 1, version 6) it came a sync point later, and from its
// window alone (the calls issued before sync point j - kLag) later still. A call that a rank has no timing of yet when
// the first copy is made comes with the second, and one it has none of at either copy comes with its window.
TEST(CommCoordinator, TimingsEveryRankHasComeAnIntervalSooner) {
  RunOptions o;
  o.units = 500;
  // The leader goes on from a unit only once every other rank issued every sync it did (the others' count is
  // read before their unit completes, so at the very end it may lag: a second at most, past what is checked).
  std::array<std::atomic<uint64_t>, 4> issued{};
  o.before_unit_complete = [&issued](int rank, uint64_t, CommCoordinator& c) {
    if (rank != 0) {
      issued[static_cast<size_t>(rank)].store(c.syncs_issued());
      return;
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    auto behind = [&] {
      for (size_t r = 1; r < issued.size(); ++r)
        if (issued[r].load() < c.syncs_issued()) return true;
      return false;
    };
    while (behind() && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  };
  // Rank 2 (the fastest; its GPU is behind) has no timing of every 9th call at the copy made at the end of the call's
  // interval, and none of every 13th at either copy; it has both for the window.
  auto late = [](int rank, uint64_t seq) { return rank == 2 && seq % 9 == 4; };
  auto later = [](int rank, uint64_t seq) { return rank == 2 && seq % 13 == 6; };
  o.timing = [](int rank, uint64_t seq) -> std::optional<double> {
    return 10.0 + static_cast<double>(seq) + (rank == 2 ? -1 : rank);
  };
  o.early_timing = [&](int rank, uint64_t seq, bool this_interval) -> std::optional<double> {
    if (later(rank, seq) || (this_interval && late(rank, seq))) return std::nullopt;
    return o.timing(rank, seq);
  };
  const std::vector<RankResult> r = RunRanks(o);
  const RankResult& l = r[0];
  ASSERT_GT(l.timed, 50u);
  ASSERT_EQ(l.carried.size(), l.carried_unit.size());
  ASSERT_EQ(l.timed_unit.size(), l.timed);
  std::set<uint64_t> seen;
  int checked = 0, checked_late = 0, checked_later = 0;
  for (size_t i = 0; i < l.carried.size(); ++i) {
    const uint64_t seq = l.carried[i].first;
    EXPECT_TRUE(seen.insert(seq).second) << "call " << seq << " delivered twice";
    ASSERT_TRUE(l.carried[i].second.has_value()) << seq;
    EXPECT_DOUBLE_EQ(l.carried[i].second->min_us, 9.0 + static_cast<double>(seq)) << "not every rank's timing";
    // The first sync point at or after the call's unit, s_j: the timing came by s_{j+1}; where rank 2 had none yet for
    // that copy, from the next (sync j + 1, at the earliest at s_{j+2}); where it had none for either, from the window
    // of sync j + 2 (at the earliest at s_{j+3}).
    const uint64_t unit = l.timed_unit[seq];
    auto it = std::lower_bound(l.sync_units.begin(), l.sync_units.end(), unit);
    const size_t j = static_cast<size_t>(it - l.sync_units.begin());
    if (j + 3 >= l.sync_units.size()) continue;
    if (later(2, seq)) {
      EXPECT_GT(l.carried_unit[i], l.sync_units[j + 2]) << "call " << seq << " came early without rank 2's timing";
      EXPECT_LE(l.carried_unit[i], l.sync_units[j + 3]) << "call " << seq;
      ++checked_later;
    } else if (late(2, seq)) {
      EXPECT_GT(l.carried_unit[i], l.sync_units[j + 1]) << "call " << seq << " came early without rank 2's timing";
      EXPECT_LE(l.carried_unit[i], l.sync_units[j + 2]) << "call " << seq;
      ++checked_late;
    } else {
      EXPECT_LE(l.carried_unit[i], l.sync_units[j + 1]) << "call " << seq << " of unit " << unit;
      ++checked;
    }
  }
  EXPECT_GT(checked, 50);
  EXPECT_GT(checked_late, 5);
  EXPECT_GT(checked_later, 5);
  // A window's run comes after every call numbered before it was handed on (the leader forgets, at a window, the
  // timed calls before it); an early copy may come before an earlier call that some rank had not finished, which its
  // window still brings (the leader keeps waiting for that one).
  ASSERT_EQ(l.carried_window.size(), l.carried.size());
  std::set<uint64_t> done;
  uint64_t lowest_missing = 0;
  int early_ahead = 0;
  for (size_t i = 0; i < l.carried.size(); ++i) {
    const uint64_t seq = l.carried[i].first;
    if (l.carried_window[i]) {
      EXPECT_GE(lowest_missing, seq) << "call " << seq << " came in a window before call " << lowest_missing;
    } else if (lowest_missing < seq) {
      ++early_ahead;
    }
    done.insert(seq);
    while (done.count(lowest_missing) > 0) ++lowest_missing;
  }
  EXPECT_GT(early_ahead, 5);
}

// Once everything is converged the intervals are long (here 4096 units): the monitoring calls timed in one
// are few enough for the syncs to carry them, so the leader's newest timing stays a few intervals behind the
// calls instead of falling further behind at every sync (one call in 16 timed, 96 carried per sync).
TEST(CommCoordinator, MonitoringTimingsKeepUpWithLongIntervals) {
  RunOptions o;
  o.units = 100000;
  constexpr uint64_t kInterval = 4096;
  o.build_message = [](uint64_t sync_id) {
    LeaderMessage m;
    m.interval = kInterval;
    if (sync_id == 0) {
      for (uint64_t w : {101, 102, 106}) {
        WorkloadUpdate u;
        u.workload = w;
        u.entries.push_back({Config{.algo = kAlgoRing, .proto = kProtoSimple, .channels = 4}, 0});
        u.converged = true;
        m.updates.push_back(u);
      }
    }
    return m;
  };
  const std::vector<RankResult> r = RunRanks(o);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(r[i].timed, r[0].timed);
  const auto& c = r[0].carried;
  ASSERT_GT(c.size(), 100u);
  for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i].first, i) << "delivered out of order or twice";
  // Timed but not carried: at most those of the last 2 kLag + 1 intervals. Sync k carries the calls timed before
  // sync point k - kLag, and reaches the leader by sync point k + kLag at the latest (earlier when the leader's
  // poll finds it complete: how much earlier depends on the threads' timing, so only the latest counts here).
  EXPECT_LE(r[0].timed - c.size(), static_cast<uint64_t>((2 * kLag + 1) * kMonitorPerInterval));
}

}  // namespace
}  // namespace ccltune::coordinator
