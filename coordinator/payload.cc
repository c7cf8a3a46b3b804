// coordinator: encoding of one rank's contribution to a sync and decoding of the reduced (MAX) words.
// The decoder is the trust boundary of the protocol: it checks every field and never reads past the
// array, because a malformed payload must stop tuning on every rank, never make ranks diverge.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "coordinator/coordinator.hpp"
#include "coordinator/internal/layout.hpp"

namespace ccltune::coordinator {
namespace {

using namespace layout;  // NOLINT: the word indices read best unqualified here

absl::Status CheckEntry(const WorkloadUpdate& u, size_t i) {
  const ScheduleEntry& e = u.entries[i];
  const Config& c = e.config;
  const bool last = i + 1 == u.entries.size();
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("coordinator: workload ", u.workload, " entry ", i, " (", c.ToString(), "): ", what));
  };
  if (c.algo < -1 || c.algo >= kNumAlgos) return bad(absl::StrCat("algo must be -1..", kNumAlgos - 1));
  if (c.proto < -1 || c.proto >= kNumProtos) return bad(absl::StrCat("proto must be -1..", kNumProtos - 1));
  if ((c.algo < 0) != (c.proto < 0)) return bad("algo and proto must both be set or both be -1");
  if (c.channels < 0 || c.channels > kMaxChannels) return bad(absl::StrCat("channels must be 0..", kMaxChannels));
  if (c.chunk_bytes < 0 || c.chunk_bytes > kMaxChunkBytes) {
    return bad(absl::StrCat("chunk_bytes must be 0..", kMaxChunkBytes));
  }
  if (last && e.calls != 0) return bad("the last entry must be final (calls 0)");
  if (last && e.warmup) return bad("the final entry has no warm-up");
  if (!last && (e.calls == 0 || e.calls > kMaxCallsPerEntry)) {
    return bad(absl::StrCat("a non-final entry needs calls 1..", kMaxCallsPerEntry));
  }
  return absl::OkStatus();
}

absl::Status CheckUpdate(const WorkloadUpdate& u) {
  if (u.workload == 0) return absl::InvalidArgumentError("coordinator: workload hash 0 is reserved");
  if (u.entries.empty() || u.entries.size() > static_cast<size_t>(kMaxEntriesPerRecord)) {  // NOLINT
    return absl::InvalidArgumentError(absl::StrCat("coordinator: workload ", u.workload, " has ", u.entries.size(),
                                                   " entries; 1..", kMaxEntriesPerRecord, " allowed"));
  }
  for (size_t i = 0; i < u.entries.size(); ++i) {
    if (absl::Status s = CheckEntry(u, i); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Malformed(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("coordinator: malformed sync payload: ", what));
}

}  // namespace

int EncodedWords(const WorkloadUpdate& u) {
  // hash + header + entries; saturates so a huge update never overflows int.
  constexpr int kMost = kPayloadWords + kMoreRecordWords;
  return u.entries.size() > static_cast<size_t>(kMost) ? kMost + 1 : 2 + static_cast<int>(u.entries.size());
}

absl::StatusOr<Words> Encode(const LeaderMessage* leader, uint64_t sync_id, RankFlags flags, uint64_t version,
                             MoreWords* more) {
  if (version == 0 || version > kMaxVersion) {
    return absl::InvalidArgumentError(absl::StrCat("coordinator: protocol version ", version, " out of 1..2^63-1"));
  }
  Words w{};
  if (more != nullptr) more->fill(0);
  w[kWordMagic] = kMagic;
  w[kWordVersion] = version;
  w[kWordVersionComplement] = kVersionBase - version;
  w[kWordSyncId] = sync_id;
  w[kWordCannotTune] = flags.cannot_tune ? 1 : 0;
  w[kWordError] = flags.saw_error ? 1 : 0;
  if (leader == nullptr) return w;  // other ranks: zeros, so the MAX delivers the leader's words

  const LeaderMessage& m = *leader;
  if (m.interval == 0) return absl::InvalidArgumentError("coordinator: interval must be at least 1 unit");
  if (m.period > 0xFFFFFFFFull) return absl::InvalidArgumentError("coordinator: period does not fit 32 bits");
  const int room = kRecordWords + (more != nullptr ? kMoreRecordWords : 0);
  int total = 0;
  for (const WorkloadUpdate& u : m.updates) {
    if (absl::Status s = CheckUpdate(u); !s.ok()) return s;
    total += EncodedWords(u);
    if (total > room) {
      return absl::InvalidArgumentError(absl::StrCat("coordinator: message of ", m.updates.size(),
                                                     " updates does not fit in ", room,
                                                     " record words; pack with EncodedWords()"));
    }
  }
  // Record word i of the sync: the payload's up to its end, then the more record words.
  auto at = [&](int i) -> uint64_t& { return i < kPayloadWords ? w[i] : (*more)[i - kPayloadWords]; };
  w[kWordInterval] = m.interval;
  w[kWordControl] =
      (m.stop_tuning ? kControlStopTuning : 0) | (m.settle ? kControlSettle : 0) | (m.period << kControlPeriodShift);
  w[kWordRecordCount] = m.updates.size();
  int pos = kFirstRecordWord;
  for (const WorkloadUpdate& u : m.updates) {
    at(pos++) = u.workload;
    at(pos++) = u.entries.size() | (u.converged ? kHeaderConverged : 0) | (u.append ? kHeaderAppend : 0);
    for (const ScheduleEntry& e : u.entries) {
      at(pos++) = PackEntry(e.config.algo, e.config.proto, e.config.channels, e.warmup, e.calls, e.config.chunk_bytes);
    }
  }
  return w;
}

absl::StatusOr<Delivered> Decode(const Words& r, const MoreWords* more) {
  if (r[kWordMagic] != kMagic) return Malformed(absl::StrCat("bad magic 0x", absl::Hex(r[kWordMagic])));
  const uint64_t max_v = r[kWordVersion];
  const uint64_t complement = r[kWordVersionComplement];
  if (max_v == 0 || max_v > kMaxVersion || complement == 0 || complement > kMaxVersion) {
    return Malformed("version words out of range");
  }
  const uint64_t min_v = kVersionBase - complement;
  if (min_v > max_v) return Malformed("version words inconsistent (min > max)");
  if (min_v != max_v) {
    return absl::FailedPreconditionError(
        absl::StrCat("coordinator: ranks run different protocol versions (min ", min_v, ", max ", max_v, ")"));
  }
  Delivered d;
  d.sync_id = r[kWordSyncId];
  d.min_version = min_v;
  d.max_version = max_v;
  if (r[kWordCannotTune] > 1 || r[kWordError] > 1) return Malformed("flag word not 0/1");
  d.any_cannot_tune = r[kWordCannotTune] == 1;
  d.any_error = r[kWordError] == 1;
  if (r[kWordInterval] == 0) return Malformed("interval 0 (no leader contribution?)");
  d.message.interval = r[kWordInterval];
  if (r[kWordControl] & ~kControlKnownBits) return Malformed("unknown control bits");
  d.message.stop_tuning = (r[kWordControl] & kControlStopTuning) != 0;
  d.message.settle = (r[kWordControl] & kControlSettle) != 0;
  d.message.period = (r[kWordControl] & kControlPeriodMask) >> kControlPeriodShift;

  // The sync's words that records may use: the payload's, then the more record words.
  const int end = kPayloadWords + (more != nullptr ? kMoreRecordWords : 0);
  auto at = [&](int i) { return i < kPayloadWords ? r[i] : (*more)[i - kPayloadWords]; };
  const uint64_t records = r[kWordRecordCount];
  // Each record takes at least 3 words, so a count beyond this cannot fit; checked before any loop.
  if (records > static_cast<uint64_t>((end - kFirstRecordWord) / 3)) {
    return Malformed("record count runs past the array");
  }
  int pos = kFirstRecordWord;
  d.message.updates.reserve(records);
  for (uint64_t k = 0; k < records; ++k) {
    if (pos + 2 > end) return Malformed(absl::StrCat("record ", k, " runs past the array"));
    WorkloadUpdate u;
    u.workload = at(pos);
    const uint64_t header = at(pos + 1);
    pos += 2;
    if (u.workload == 0) return Malformed(absl::StrCat("record ", k, " has workload hash 0"));
    if (header & ~kHeaderKnownBits) return Malformed(absl::StrCat("record ", k, " header has unknown bits"));
    const int n = static_cast<int>(header & kHeaderCountMask);
    if (n == 0 || n > kMaxEntriesPerRecord) return Malformed(absl::StrCat("record ", k, " has ", n, " entries"));
    if (n > end - pos) return Malformed(absl::StrCat("record ", k, " runs past the array"));
    u.converged = (header & kHeaderConverged) != 0;
    u.append = (header & kHeaderAppend) != 0;
    u.entries.reserve(n);
    for (int i = 0; i < n; ++i) {
      const uint64_t e = at(pos++);
      const int algo1 = static_cast<int>((e >> kAlgoShift) & kMask4);
      const int proto1 = static_cast<int>((e >> kProtoShift) & kMask4);
      const uint32_t calls = static_cast<uint32_t>((e >> kCallsShift) & kMask12);
      if (algo1 > kNumAlgos) return Malformed(absl::StrCat("record ", k, " entry ", i, " algo out of range"));
      if (proto1 > kNumProtos) return Malformed(absl::StrCat("record ", k, " entry ", i, " proto out of range"));
      if ((algo1 == 0) != (proto1 == 0)) {
        return Malformed(absl::StrCat("record ", k, " entry ", i, " sets only one of algo/proto"));
      }
      const bool last = i + 1 == n;
      if (last && calls != 0) return Malformed(absl::StrCat("record ", k, " last entry is not final"));
      if (!last && calls == 0) return Malformed(absl::StrCat("record ", k, " entry ", i, " is final but not last"));
      const bool warmup = ((e >> kWarmupShift) & 1) != 0;
      if (last && warmup) return Malformed(absl::StrCat("record ", k, " final entry has a warm-up"));
      ScheduleEntry se;
      se.config.algo = algo1 - 1;
      se.config.proto = proto1 - 1;
      se.config.channels = static_cast<int>((e >> kChannelsShift) & kMask11);
      se.warmup = warmup;
      se.config.chunk_bytes = static_cast<int64_t>((e >> kChunkShift) & kMask32);
      se.calls = calls;
      u.entries.push_back(se);
    }
    d.message.updates.push_back(std::move(u));
  }
  // Nobody writes past the records, so anything there means a corrupted or foreign payload.
  for (int i = pos; i < end; ++i) {
    if (at(i) != 0) return Malformed(absl::StrCat("word ", i, " past the records is not zero"));
  }
  return d;
}

void EncodeSample(SampleWords* words, int slot, double us) {
  if (slot < 0 || slot >= kSampleSlots || !(us > 0)) return;
  const double ns_d = us * 1000.0;
  const uint64_t ns = ns_d >= static_cast<double>(kMaxSampleNs)
                          ? kMaxSampleNs
                          : std::max<uint64_t>(1, static_cast<uint64_t>(ns_d + 0.5));
  (*words)[2 * slot] = kSampleMinBase - ns;
  (*words)[2 * slot + 1] = ns;
}

void EncodeIdleSample(SampleWords* words, int slot) {
  if (slot < 0 || slot >= kSampleSlots) return;
  (*words)[2 * slot] = kSampleMinBase - kIdleSampleNs;
  (*words)[2 * slot + 1] = kIdleSampleNs;
}

void EncodeNotYetSample(SampleWords* words, int slot) {
  if (slot < 0 || slot >= kSampleSlots) return;
  (*words)[2 * slot] = kSampleMinBase - kNotYetSampleNs;
  (*words)[2 * slot + 1] = kNotYetSampleNs;
}

absl::StatusOr<std::vector<std::optional<CarriedSample>>> DecodeSamples(const SampleWords& r, int n) {
  if (n < 0 || n > kSampleSlots) return Malformed(absl::StrCat("sample count ", n, " out of 0..", kSampleSlots));
  std::vector<std::optional<CarriedSample>> out(n);
  for (int i = 0; i < n; ++i) {
    const uint64_t lo = r[2 * i], hi = r[2 * i + 1];
    if (lo == 0 && hi == 0) continue;
    if (lo == 0 || hi == 0 || lo > kSampleMinBase - 1 || hi > kIdleSampleNs) {
      return Malformed(absl::StrCat("sample slot ", i, " words do not belong together"));
    }
    const uint64_t min_ns = kSampleMinBase - lo;
    if (min_ns == 0 || min_ns > kIdleSampleNs || min_ns > hi) {
      return Malformed(absl::StrCat("sample slot ", i, " has its minimum above its maximum"));
    }
    if (hi == kIdleSampleNs) {
      out[i] = CarriedSample{0, 0, true};
      continue;
    }
    if (hi == kNotYetSampleNs) {
      out[i] = CarriedSample{0, 0, false, true};
      continue;
    }
    out[i] = CarriedSample{static_cast<double>(min_ns) / 1000.0, static_cast<double>(hi) / 1000.0};
  }
  for (int i = 2 * n; i < kSampleWords; ++i) {
    if (r[i] != 0) return Malformed(absl::StrCat("sample word ", i, " past the carried timings is not zero"));
  }
  return out;
}

}  // namespace ccltune::coordinator
