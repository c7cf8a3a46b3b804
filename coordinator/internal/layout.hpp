// coordinator internals: word indices and bit fields of the payload (the layout in coordinator.hpp's
// top comment, as constants). Shared by the encoder, the decoder and the tests that corrupt payloads.
#pragma once

#include <cstdint>

#include "coordinator/coordinator.hpp"

namespace ccltune::coordinator::layout {

inline constexpr int kWordMagic = 0;
inline constexpr int kWordVersion = 1;
inline constexpr int kWordVersionComplement = 2;  // 2^63 - v
inline constexpr int kWordSyncId = 3;
inline constexpr int kWordCannotTune = 4;
inline constexpr int kWordError = 5;
inline constexpr int kWordInterval = 6;
inline constexpr int kWordControl = 7;
inline constexpr int kWordRecordCount = 8;
inline constexpr int kFirstRecordWord = kHeaderWords;
static_assert(kWordRecordCount + 1 == kHeaderWords);

inline constexpr uint64_t kVersionBase = uint64_t{1} << 63;  // version words are v and kVersionBase - v
inline constexpr uint64_t kMaxVersion = kVersionBase - 1;    // versions are 1..2^63-1

inline constexpr uint64_t kControlStopTuning = 1;
inline constexpr uint64_t kControlSettle = 2;  // LeaderMessage::settle (protocol version 4 on)
// The leader's detected iteration period (units, 0 unknown) in bits 8..39 of the control word.
inline constexpr int kControlPeriodShift = 8;
inline constexpr uint64_t kControlPeriodMask = uint64_t{0xFFFFFFFF} << kControlPeriodShift;
inline constexpr uint64_t kControlKnownBits = kControlStopTuning | kControlSettle | kControlPeriodMask;

// Record header word: n entries in bits 0..7, converged in bit 8, append in bit 9, nothing else.
inline constexpr uint64_t kHeaderCountMask = 0xFF;
inline constexpr uint64_t kHeaderConverged = uint64_t{1} << 8;
inline constexpr uint64_t kHeaderAppend = uint64_t{1} << 9;
inline constexpr uint64_t kHeaderKnownBits = kHeaderCountMask | kHeaderConverged | kHeaderAppend;

// Entry word, low bits first: algo+1 (4) | proto+1 (4) | channels (11) | warm-up (1) | calls (12) |
// chunk bytes (32).
inline constexpr int kAlgoShift = 0;
inline constexpr int kProtoShift = 4;
inline constexpr int kChannelsShift = 8;
inline constexpr int kWarmupShift = 19;
inline constexpr int kCallsShift = 20;
inline constexpr int kChunkShift = 32;
inline constexpr uint64_t kMask4 = 0xF;
inline constexpr uint64_t kMask11 = 0x7FF;
inline constexpr uint64_t kMask12 = 0xFFF;
inline constexpr uint64_t kMask32 = 0xFFFF'FFFF;
inline constexpr int kMaxChannels = 0x7FF;
inline constexpr int64_t kMaxChunkBytes = 0xFFFF'FFFF;

inline uint64_t PackEntry(int algo, int proto, int channels, bool warmup, uint32_t calls, int64_t chunk) {
  return (static_cast<uint64_t>(algo + 1) << kAlgoShift) | (static_cast<uint64_t>(proto + 1) << kProtoShift) |
         (static_cast<uint64_t>(channels) << kChannelsShift) | (static_cast<uint64_t>(warmup ? 1 : 0) << kWarmupShift) |
         (static_cast<uint64_t>(calls) << kCallsShift) | (static_cast<uint64_t>(chunk) << kChunkShift);
}

// Carried timings: per slot, word 2i = 2^63 - ns (MAX: the minimum), word 2i+1 = ns (MAX: the maximum);
// a timing is at least 1 ns and below 2^62 - 2 ns; 2^62 - 1 marks a call timed from an idle stream, 2^62 - 2 (from
// protocol version 6 on) a call whose timing a rank does not have yet (an early copy, CommCoordinator).
inline constexpr uint64_t kSampleMinBase = uint64_t{1} << 63;
inline constexpr uint64_t kIdleSampleNs = (uint64_t{1} << 62) - 1;
inline constexpr uint64_t kNotYetSampleNs = kIdleSampleNs - 1;
inline constexpr uint64_t kMaxSampleNs = kNotYetSampleNs - 1;

}  // namespace ccltune::coordinator::layout
