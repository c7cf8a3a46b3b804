// Pins the sync payload: Encode/Decode round trips, the MAX combination of the leader's words with the
// other ranks' zeros and flags, version skew, capacity, and every malformed-payload (DataLoss) case.
#include <algorithm>
#include <functional>
#include <random>
#include <tuple>

#include <gtest/gtest.h>

#include "coordinator/coordinator.hpp"
#include "coordinator/internal/layout.hpp"

namespace ccltune::coordinator {
namespace {

using namespace layout;  // NOLINT

Words Max(const std::vector<Words>& contributions) {
  Words r{};
  for (const Words& w : contributions) {
    for (int i = 0; i < kPayloadWords; ++i) r[i] = std::max(r[i], w[i]);
  }
  return r;
}

Words MustEncode(const LeaderMessage* m, uint64_t sync_id, RankFlags f = {}, uint64_t v = kProtocolVersion) {
  absl::StatusOr<Words> w = Encode(m, sync_id, f, v);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? *w : Words{};
}

// The reduced words of a run with `nranks` ranks where rank 0 leads with `m`.
Words Reduced(const LeaderMessage& m, uint64_t sync_id, int nranks, std::vector<RankFlags> flags = {}) {
  flags.resize(nranks);
  std::vector<Words> c;
  for (int r = 0; r < nranks; ++r) c.push_back(MustEncode(r == 0 ? &m : nullptr, sync_id, flags[r]));
  return Max(c);
}

WorkloadUpdate Update(uint64_t w, int candidates, Config final_config = {}, bool converged = false) {
  WorkloadUpdate u{.workload = w, .entries = {}, .converged = converged, .append = w % 2 == 1};
  for (int i = 0; i < candidates; ++i) {
    u.entries.push_back({Config{.algo = i % kNumAlgos,
                                .proto = i % kNumProtos,
                                .channels = 1 + i % 2047,
                                .chunk_bytes = (int64_t{1} << (i % 32))},
                         static_cast<uint32_t>(1 + i % kMaxCallsPerEntry), /*warmup=*/i % 3 == 0});
  }
  u.entries.push_back({final_config, 0});
  return u;
}

// ---- round trips, swept over rank count, message shape and sync id ----

class RoundTrip : public ::testing::TestWithParam<std::tuple<int, int, uint64_t>> {};

TEST_P(RoundTrip, LeaderMessageSurvivesTheMax) {
  const auto [nranks, shape, sync_id] = GetParam();
  LeaderMessage m;
  m.interval = 1 + sync_id * 7;
  m.stop_tuning = shape == 3;
  m.settle = shape == 1 || shape == 2;
  switch (shape) {
    case 0:  // empty
      break;
    case 1:  // one incumbent-only update, extreme field values
      m.updates.push_back(Update(
          ~uint64_t{0}, 0,
          Config{.algo = kNumAlgos - 1, .proto = kNumProtos - 1, .channels = 2047, .chunk_bytes = 0xFFFF'FFFF}, true));
      break;
    case 2:  // several updates that exactly fill the payload
      while (true) {
        WorkloadUpdate u = Update(1000 + m.updates.size(), static_cast<int>(m.updates.size() % 4),
                                  Config{.algo = kAlgoTree, .proto = kProtoLL, .channels = 0, .chunk_bytes = 0});
        int used = 0;
        for (const auto& x : m.updates) used += EncodedWords(x);
        if (used + EncodedWords(u) > kRecordWords) break;
        m.updates.push_back(u);
      }
      break;
    case 3:  // one long schedule, and stop_tuning
      m.updates.push_back(Update(7, kRecordWords - 3, Config{.algo = -1, .proto = -1, .channels = 12}));
      break;
  }
  std::vector<RankFlags> flags(nranks);
  if (nranks > 1) flags[nranks - 1].cannot_tune = true;
  const Words reduced = Reduced(m, sync_id, nranks, flags);
  absl::StatusOr<Delivered> d = Decode(reduced);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->message, m);
  EXPECT_EQ(d->sync_id, sync_id);
  EXPECT_EQ(d->min_version, kProtocolVersion);
  EXPECT_EQ(d->max_version, kProtocolVersion);
  EXPECT_EQ(d->any_cannot_tune, nranks > 1);
  EXPECT_FALSE(d->any_error);
}

INSTANTIATE_TEST_SUITE_P(Sweep, RoundTrip,
                         ::testing::Combine(::testing::Values(1, 2, 4, 8), ::testing::Values(0, 1, 2, 3),
                                            ::testing::Values(uint64_t{0}, uint64_t{1}, uint64_t{12345})));

TEST(Payload, PeriodRoundTripsAndIsBounded) {
  LeaderMessage m;
  m.period = 123456;
  auto w = Encode(&m, 7, {});
  ASSERT_TRUE(w.ok()) << w.status();
  auto d = Decode(*w);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->message.period, 123456u);
  m.period = uint64_t{1} << 32;
  EXPECT_EQ(Encode(&m, 7, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Payload, RandomMessagesRoundTrip) {
  std::mt19937_64 rng(42);
  for (int iter = 0; iter < 2000; ++iter) {
    LeaderMessage m;
    m.interval = 1 + rng() % 100000;
    m.stop_tuning = rng() % 2;
    int used = 0;
    while (true) {
      WorkloadUpdate u;
      u.workload = 1 + rng() % 1000000;
      u.converged = rng() % 2;
      u.append = rng() % 2;
      const int n = 1 + static_cast<int>(rng() % 6);
      for (int i = 0; i < n; ++i) {
        Config c;
        if (rng() % 3) {
          c.algo = static_cast<int>(rng() % kNumAlgos);
          c.proto = static_cast<int>(rng() % kNumProtos);
        }
        c.channels = static_cast<int>(rng() % 2048);
        c.chunk_bytes = static_cast<int64_t>(rng() % (uint64_t{1} << 32));
        const bool last = i + 1 == n;
        u.entries.push_back(
            {c, last ? 0u : static_cast<uint32_t>(1 + rng() % kMaxCallsPerEntry), !last && rng() % 2 == 0});
      }
      if (used + EncodedWords(u) > kRecordWords || rng() % 4 == 0) break;
      used += EncodedWords(u);
      m.updates.push_back(u);
    }
    absl::StatusOr<Delivered> d = Decode(Reduced(m, iter, 1 + iter % 5));
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ(d->message, m);
  }
}

// ---- the MAX combination ----

TEST(Payload, OtherRanksWriteOnlyCommonWordsAndFlags) {
  const Words w = MustEncode(nullptr, 9, {.cannot_tune = false, .saw_error = true});
  EXPECT_EQ(w[kWordMagic], kMagic);
  EXPECT_EQ(w[kWordVersion], kProtocolVersion);
  EXPECT_EQ(w[kWordVersionComplement], kVersionBase - kProtocolVersion);
  EXPECT_EQ(w[kWordSyncId], 9u);
  EXPECT_EQ(w[kWordCannotTune], 0u);
  EXPECT_EQ(w[kWordError], 1u);
  for (int i = kWordInterval; i < kPayloadWords; ++i) EXPECT_EQ(w[i], 0u) << "word " << i;
}

TEST(Payload, FlagsOfAnyRankReachEveryone) {
  LeaderMessage m;
  m.updates.push_back(Update(5, 2));
  for (int raiser = 0; raiser < 4; ++raiser) {
    for (int which = 0; which < 2; ++which) {
      std::vector<RankFlags> flags(4);
      (which == 0 ? flags[raiser].cannot_tune : flags[raiser].saw_error) = true;
      absl::StatusOr<Delivered> d = Decode(Reduced(m, 3, 4, flags));
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_EQ(d->any_cannot_tune, which == 0);
      EXPECT_EQ(d->any_error, which == 1);
      EXPECT_EQ(d->message, m);  // flags never disturb the leader's words
    }
  }
}

TEST(Payload, NoLeaderContributionIsMalformed) {
  const Words r = Max({MustEncode(nullptr, 1), MustEncode(nullptr, 1)});
  EXPECT_TRUE(absl::IsDataLoss(Decode(r).status()));
}

// ---- version skew ----

class VersionSkew : public ::testing::TestWithParam<std::tuple<uint64_t, uint64_t, int>> {};

TEST_P(VersionSkew, DetectedWhicheverRankIsNewer) {
  const auto [v_leader, v_other, nranks] = GetParam();
  LeaderMessage m;
  std::vector<Words> c;
  c.push_back(MustEncode(&m, 4, {}, v_leader));
  for (int r = 1; r < nranks; ++r) c.push_back(MustEncode(nullptr, 4, {}, r == nranks - 1 ? v_other : v_leader));
  absl::StatusOr<Delivered> d = Decode(Max(c));
  if (v_leader == v_other) {
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->min_version, v_leader);
    EXPECT_EQ(d->max_version, v_leader);
    return;
  }
  ASSERT_TRUE(absl::IsFailedPrecondition(d.status())) << d.status();
  const std::string msg(d.status().message());
  EXPECT_NE(msg.find("min " + std::to_string(std::min(v_leader, v_other))), std::string::npos) << msg;
  EXPECT_NE(msg.find("max " + std::to_string(std::max(v_leader, v_other))), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(Sweep, VersionSkew,
                         ::testing::Combine(::testing::Values(1, 2, 1000), ::testing::Values(1, 2, 1000),
                                            ::testing::Values(2, 4)));

TEST(Payload, VersionOutOfRangeIsRejected) {
  EXPECT_TRUE(absl::IsInvalidArgument(Encode(nullptr, 0, {}, 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Encode(nullptr, 0, {}, kVersionBase).status()));
  EXPECT_TRUE(Encode(nullptr, 0, {}, kMaxVersion).ok());
}

// ---- capacity ----

TEST(Payload, Capacity) {
  EXPECT_EQ(EncodedWords(Update(1, 0)), 3);
  EXPECT_EQ(EncodedWords(Update(1, 4)), 7);
  LeaderMessage fits;
  fits.updates.push_back(Update(1, kRecordWords - 3));  // exactly kRecordWords words
  EXPECT_EQ(EncodedWords(fits.updates[0]), kRecordWords);
  EXPECT_TRUE(Encode(&fits, 0, {}).ok());
  LeaderMessage too_long;
  too_long.updates.push_back(Update(1, kRecordWords - 2));
  EXPECT_TRUE(absl::IsInvalidArgument(Encode(&too_long, 0, {}).status()));
  LeaderMessage many;
  for (int i = 0; i < kRecordWords / 3; ++i) many.updates.push_back(Update(1 + i, 0));
  EXPECT_TRUE(Encode(&many, 0, {}).ok());
  many.updates.push_back(Update(99, 0));
  EXPECT_TRUE(absl::IsInvalidArgument(Encode(&many, 0, {}).status()));
  WorkloadUpdate huge = Update(1, 0);
  huge.entries.assign(100000, huge.entries[0]);
  EXPECT_GT(EncodedWords(huge), kPayloadWords);  // saturates, never overflows
}

// From sync id kLag on (protocol version 8), the records run on from the payload's last word into the more record
// words; before it, and without them, a message has the payload's room only.
TEST(Payload, RecordsRunOnIntoTheMoreRecordWords) {
  EXPECT_EQ(RecordRoom(0), kRecordWords);
  EXPECT_EQ(RecordRoom(kLag - 1), kRecordWords);
  EXPECT_EQ(RecordRoom(kLag), kRecordWords + kMoreRecordWords);
  LeaderMessage m;
  m.interval = 32;
  const Config final_config{.algo = kAlgoRing, .proto = kProtoSimple, .channels = 4};  // a word that is not zero
  for (uint64_t w = 1; w <= 9; ++w) m.updates.push_back(Update(w, 10, final_config));  // 9 x 13 words
  EXPECT_TRUE(absl::IsInvalidArgument(Encode(&m, kLag, {}).status()));
  MoreWords more;
  more.fill(7);  // written whole
  absl::StatusOr<Words> w = Encode(&m, kLag, {}, kProtocolVersion, &more);
  ASSERT_TRUE(w.ok()) << w.status();
  const int past = 9 * 13 - kRecordWords;  // record words in `more`
  for (int i = 0; i < kMoreRecordWords; ++i) EXPECT_EQ(more[i] != 0, i < past) << "more record word " << i;
  absl::StatusOr<Delivered> d = Decode(*w, &more);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->message, m);
  // Other ranks write zeros there, so the MAX delivers the leader's words.
  MoreWords other;
  other.fill(7);
  ASSERT_TRUE(Encode(nullptr, kLag, {}, kProtocolVersion, &other).ok());
  EXPECT_EQ(other, MoreWords{});
  // Without the more record words the records run past the array; a word past the records is not zero.
  EXPECT_TRUE(absl::IsDataLoss(Decode(*w).status()));
  MoreWords stray = more;
  stray[kMoreRecordWords - 1] = 1;
  EXPECT_TRUE(absl::IsDataLoss(Decode(*w, &stray).status()));
  // Exactly the room fits; one word more does not.
  LeaderMessage full;
  full.updates.push_back(Update(1, kRecordWords + kMoreRecordWords - 3));
  EXPECT_TRUE(Encode(&full, kLag, {}, kProtocolVersion, &more).ok());
  full.updates[0] = Update(1, kRecordWords + kMoreRecordWords - 2);
  EXPECT_TRUE(absl::IsInvalidArgument(Encode(&full, kLag, {}, kProtocolVersion, &more).status()));
  // A message that fits the payload decodes alike with and without the (zero) more record words.
  LeaderMessage small;
  small.interval = 32;
  small.updates.push_back(Update(3, 4));
  absl::StatusOr<Words> ws = Encode(&small, kLag, {}, kProtocolVersion, &more);
  ASSERT_TRUE(ws.ok());
  EXPECT_EQ(more, MoreWords{});
  ASSERT_TRUE(Decode(*ws, &more).ok());
  EXPECT_EQ(Decode(*ws, &more)->message, small);
  EXPECT_EQ(Decode(*ws)->message, small);
}

// ---- Encode rejects out-of-range fields ----

struct BadField {
  const char* name;
  std::function<void(LeaderMessage&)> spoil;
};

class EncodeRejects : public ::testing::TestWithParam<BadField> {};

TEST_P(EncodeRejects, InvalidArgument) {
  LeaderMessage m;
  m.updates.push_back(Update(5, 2, Config{.algo = kAlgoRing, .proto = kProtoSimple, .channels = 8}));
  ASSERT_TRUE(Encode(&m, 0, {}).ok());
  GetParam().spoil(m);
  EXPECT_TRUE(absl::IsInvalidArgument(Encode(&m, 0, {}).status())) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(
    Fields, EncodeRejects,
    ::testing::Values(
        BadField{"interval0", [](LeaderMessage& m) { m.interval = 0; }},
        BadField{"workload0", [](LeaderMessage& m) { m.updates[0].workload = 0; }},
        BadField{"no_entries", [](LeaderMessage& m) { m.updates[0].entries.clear(); }},
        BadField{"too_many_entries",
                 [](LeaderMessage& m) {
                   m.updates[0].entries.assign(kMaxEntriesPerRecord + 1, {Config{}, 1});
                 }},
        BadField{"last_not_final", [](LeaderMessage& m) { m.updates[0].entries.back().calls = 3; }},
        BadField{"middle_final", [](LeaderMessage& m) { m.updates[0].entries[0].calls = 0; }},
        BadField{"calls_too_many", [](LeaderMessage& m) { m.updates[0].entries[0].calls = kMaxCallsPerEntry + 1; }},
        BadField{"algo_high", [](LeaderMessage& m) { m.updates[0].entries[0].config.algo = kNumAlgos; }},
        BadField{"algo_low", [](LeaderMessage& m) { m.updates[0].entries[0].config.algo = -2; }},
        BadField{"proto_high", [](LeaderMessage& m) { m.updates[0].entries[0].config.proto = kNumProtos; }},
        BadField{"algo_without_proto", [](LeaderMessage& m) { m.updates[0].entries[0].config.proto = -1; }},
        BadField{"proto_without_algo", [](LeaderMessage& m) { m.updates[0].entries[0].config.algo = -1; }},
        BadField{"channels_12_bits", [](LeaderMessage& m) { m.updates[0].entries[0].config.channels = 2048; }},
        BadField{"final_warmup", [](LeaderMessage& m) { m.updates[0].entries.back().warmup = true; }},
        BadField{"channels_negative", [](LeaderMessage& m) { m.updates[0].entries[0].config.channels = -1; }},
        BadField{"chunk_2_32", [](LeaderMessage& m) { m.updates[0].entries[0].config.chunk_bytes = 1ll << 32; }},
        BadField{"chunk_negative", [](LeaderMessage& m) { m.updates[0].entries[0].config.chunk_bytes = -1; }}),
    [](const ::testing::TestParamInfo<BadField>& i) { return std::string(i.param.name); });

// ---- Decode rejects every malformed payload (DataLoss) ----

// A valid reduced payload: two records, at words 9..12 (hash, header, 2 entries) and 13..15.
Words Valid() {
  LeaderMessage m;
  m.updates.push_back(Update(5, 1, Config{.algo = kAlgoRing, .proto = kProtoSimple, .channels = 8}));
  m.updates.push_back(Update(6, 0));
  return Reduced(m, 2, 3);
}

struct Corruption {
  const char* name;
  std::function<void(Words&)> spoil;
};

class DecodeRejects : public ::testing::TestWithParam<Corruption> {};

TEST_P(DecodeRejects, DataLoss) {
  Words w = Valid();
  ASSERT_TRUE(Decode(w).ok());
  GetParam().spoil(w);
  absl::StatusOr<Delivered> d = Decode(w);
  EXPECT_TRUE(absl::IsDataLoss(d.status())) << GetParam().name << ": " << d.status();
}

constexpr int kRec0 = kFirstRecordWord;  // hash, header, entry, entry (final)
constexpr int kRec1 = kFirstRecordWord + 4;

INSTANTIATE_TEST_SUITE_P(
    Cases, DecodeRejects,
    ::testing::Values(
        Corruption{"bad_magic", [](Words& w) { w[kWordMagic] ^= 1; }},
        Corruption{"zero_array", [](Words& w) { w.fill(0); }},
        Corruption{"version_zero", [](Words& w) { w[kWordVersion] = 0; }},
        Corruption{"version_high", [](Words& w) { w[kWordVersion] = kVersionBase; }},
        Corruption{"complement_zero", [](Words& w) { w[kWordVersionComplement] = 0; }},
        Corruption{"complement_high", [](Words& w) { w[kWordVersionComplement] = ~uint64_t{0}; }},
        Corruption{"min_above_max",
                   [](Words& w) { w[kWordVersionComplement] = kVersionBase - (kProtocolVersion + 1); }},
        Corruption{"flag_not_bool", [](Words& w) { w[kWordCannotTune] = 2; }},
        Corruption{"error_flag_not_bool", [](Words& w) { w[kWordError] = 7; }},
        Corruption{"interval_zero", [](Words& w) { w[kWordInterval] = 0; }},
        Corruption{"unknown_control_bit", [](Words& w) { w[kWordControl] |= 4; }},
        Corruption{"record_count_huge", [](Words& w) { w[kWordRecordCount] = ~uint64_t{0}; }},
        Corruption{"record_count_past_array", [](Words& w) { w[kWordRecordCount] = kRecordWords / 3; }},
        Corruption{"record_count_one_more", [](Words& w) { w[kWordRecordCount] = 3; }},
        Corruption{"workload_zero", [](Words& w) { w[kRec0] = 0; }},
        Corruption{"header_n_zero", [](Words& w) { w[kRec0 + 1] = 0; }},
        Corruption{"header_unknown_bits", [](Words& w) { w[kRec0 + 1] |= uint64_t{1} << 10; }},
        Corruption{"final_entry_warmup", [](Words& w) { w[kRec1 + 2] |= uint64_t{1} << kWarmupShift; }},
        Corruption{"header_n_overruns",
                   [](Words& w) {
                     w[kRec1 + 1] = kPayloadWords - kRec1 - 1;  // one entry more than the words left
                   }},
        Corruption{"header_n_255",
                   [](Words& w) {
                     w[kWordRecordCount] = 1;
                     for (int i = kRec0 + 2; i < kPayloadWords; ++i) w[i] = PackEntry(1, 1, 1, false, 1, 0);
                     w[kRec0 + 1] = kMaxEntriesPerRecord;
                   }},
        Corruption{"last_entry_not_final", [](Words& w) { w[kRec1 + 2] |= uint64_t{1} << kCallsShift; }},
        Corruption{"middle_entry_final", [](Words& w) { w[kRec0 + 2] &= ~(kMask12 << kCallsShift); }},
        Corruption{"algo_out_of_range", [](Words& w) { w[kRec0 + 2] = PackEntry(kNumAlgos, 1, 1, false, 1, 0); }},
        Corruption{"algo_nibble_15", [](Words& w) { w[kRec0 + 2] |= kMask4 << kAlgoShift; }},
        Corruption{"proto_out_of_range", [](Words& w) { w[kRec0 + 2] = PackEntry(1, kNumProtos, 1, false, 1, 0); }},
        Corruption{"algo_without_proto", [](Words& w) { w[kRec0 + 2] = PackEntry(1, -1, 1, false, 1, 0); }},
        Corruption{"proto_without_algo", [](Words& w) { w[kRec0 + 3] = PackEntry(-1, 2, 0, false, 0, 0); }},
        Corruption{"trailing_garbage", [](Words& w) { w[kPayloadWords - 1] = 1; }},
        Corruption{"garbage_after_records", [](Words& w) { w[kRec1 + 3] = 42; }}),
    [](const ::testing::TestParamInfo<Corruption>& i) { return std::string(i.param.name); });

// Random corruption of valid payloads: the decoder either accepts or reports DataLoss/FailedPrecondition,
// and never reads out of bounds (run under ASan/UBSan in CI for that part).
TEST(Payload, RandomCorruptionNeverCrashes) {
  std::mt19937_64 rng(7);
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    Words w = Valid();
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      const int i = static_cast<int>(rng() % kPayloadWords);
      w[i] = (rng() % 2) ? rng() : (w[i] ^ (uint64_t{1} << (rng() % 64)));
    }
    absl::StatusOr<Delivered> d = Decode(w);
    if (d.ok()) {
      ++accepted;
      for (const WorkloadUpdate& u : d->message.updates) {
        ASSERT_FALSE(u.entries.empty());
        ASSERT_EQ(u.entries.back().calls, 0u);
      }
    } else {
      ASSERT_TRUE(absl::IsDataLoss(d.status()) || absl::IsFailedPrecondition(d.status())) << d.status();
    }
  }
  EXPECT_GT(accepted, 0);  // some flips land in fields where any value is legal (chunk bytes, channels)
}

}  // namespace
}  // namespace ccltune::coordinator

namespace ccltune::coordinator {
namespace {

// ---- carried timings (the extended syncs' words) ----

TEST(Samples, EncodeDecodeAndEmptySlots) {
  SampleWords w{};
  EncodeSample(&w, 0, 12.3456);
  EncodeSample(&w, 5, 0.0004);  // below a nanosecond: recorded as 1 ns
  EncodeSample(&w, 7, -1);      // not a timing: left alone
  auto s = DecodeSamples(w, 8);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 8u);
  ASSERT_TRUE((*s)[0].has_value());
  EXPECT_NEAR((*s)[0]->min_us, 12.3456, 1e-3);
  EXPECT_NEAR((*s)[0]->max_us, 12.3456, 1e-3);
  ASSERT_TRUE((*s)[5].has_value());
  EXPECT_DOUBLE_EQ((*s)[5]->min_us, 0.001);
  for (int i : {1, 2, 3, 4, 6, 7}) EXPECT_FALSE((*s)[i].has_value()) << i;
}

// What the sync op's all-reduce(MAX) makes of the ranks' contributions.
SampleWords ReduceMax(const std::vector<SampleWords>& ranks) {
  SampleWords reduced{};
  for (const SampleWords& w : ranks)
    for (int i = 0; i < kSampleWords; ++i) reduced[i] = std::max(reduced[i], w[i]);
  return reduced;
}

TEST(Samples, MaxOfContributionsIsMinAndMaxOverRanks) {
  std::vector<SampleWords> ranks(4);
  const double t[4] = {30, 10, 20, 40};
  for (int r = 0; r < 4; ++r) EncodeSample(&ranks[r], 2, t[r]);
  const SampleWords reduced = ReduceMax(ranks);
  auto s = DecodeSamples(reduced, 3);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)[2].has_value());
  EXPECT_DOUBLE_EQ((*s)[2]->min_us, 10);
  EXPECT_DOUBLE_EQ((*s)[2]->max_us, 40);
}

TEST(Samples, OneRankTimingFromAnIdleStreamMakesTheSlotIdle) {
  std::vector<SampleWords> ranks(4);
  const double t[4] = {30, 10, 20, 40};
  for (int r = 0; r < 4; ++r) {
    EncodeSample(&ranks[r], 0, t[r]);
    if (r == 2) {
      EncodeIdleSample(&ranks[r], 1);
    } else {
      EncodeSample(&ranks[r], 1, t[r]);
    }
  }
  EncodeIdleSample(&ranks[3], kSampleSlots);  // past the slots: left alone
  const SampleWords reduced = ReduceMax(ranks);
  auto s = DecodeSamples(reduced, 2);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)[0].has_value() && (*s)[1].has_value());
  EXPECT_EQ(*(*s)[0], (CarriedSample{10, 40, false}));
  EXPECT_EQ(*(*s)[1], (CarriedSample{0, 0, true}));
  // Every rank idle: idle too.
  SampleWords all{};
  EncodeIdleSample(&all, 0);
  auto a = DecodeSamples(all, 1);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE((*a)[0]->idle);
  // The longest timing a rank can carry stays a timing, below the idle mark.
  SampleWords huge{};
  EncodeSample(&huge, 0, 1e30);
  auto h = DecodeSamples(huge, 1);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_FALSE((*h)[0]->idle);
  EXPECT_GT((*h)[0]->max_us, 4e12);
}

// An early copy: a rank without the timing yet marks the slot, which then decodes as not_yet whatever the others had
// (their minimum stays below the mark); a rank's idle mark wins over it (the window carries the idle mark later).
TEST(Samples, OneRankWithoutTheTimingYetMakesTheEarlyCopyNotYet) {
  std::vector<SampleWords> ranks(4);
  const double t[4] = {30, 10, 20, 40};
  for (int r = 0; r < 4; ++r) {
    EncodeSample(&ranks[r], 0, t[r]);
    if (r == 1) {
      EncodeNotYetSample(&ranks[r], 1);
      EncodeNotYetSample(&ranks[r], 2);
    } else {
      EncodeSample(&ranks[r], 1, t[r]);
      if (r == 3) {
        EncodeIdleSample(&ranks[r], 2);
      } else {
        EncodeSample(&ranks[r], 2, t[r]);
      }
    }
  }
  const SampleWords reduced = ReduceMax(ranks);
  auto s = DecodeSamples(reduced, 3);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*(*s)[0], (CarriedSample{10, 40, false, false}));
  EXPECT_EQ(*(*s)[1], (CarriedSample{0, 0, false, true}));
  EXPECT_EQ(*(*s)[2], (CarriedSample{0, 0, true, false}));
  // The longest timing a rank can carry stays a timing, below both marks.
  SampleWords huge{};
  EncodeSample(&huge, 0, 1e30);
  auto h = DecodeSamples(huge, 1);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_FALSE((*h)[0]->idle);
  EXPECT_FALSE((*h)[0]->not_yet);
}

TEST(Samples, MalformedSlotsAreDataLoss) {
  SampleWords w{};
  w[1] = 5;  // a maximum without its minimum
  EXPECT_TRUE(absl::IsDataLoss(DecodeSamples(w, 1).status()));
  SampleWords x{};
  EncodeSample(&x, 0, 10);
  x[1] = 1;  // maximum below the minimum
  EXPECT_TRUE(absl::IsDataLoss(DecodeSamples(x, 1).status()));
  SampleWords y{};
  EncodeSample(&y, 4, 10);  // a timing past the carried count
  EXPECT_TRUE(absl::IsDataLoss(DecodeSamples(y, 2).status()));
  EXPECT_TRUE(absl::IsDataLoss(DecodeSamples(SampleWords{}, kSampleSlots + 1).status()));
}

}  // namespace
}  // namespace ccltune::coordinator
