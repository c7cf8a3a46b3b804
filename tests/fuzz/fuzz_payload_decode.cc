// Fuzz target: the coordinator's payload decoder, the protocol's trust boundary (a payload reduced
// from ranks that run another ccltune version, or corrupted, arrives here). Input: up to 64
// little-endian 64-bit words, zero-padded; an input longer than that is a sync from id kLag on, its next 64 words the
// more record words (zero-padded). Properties: Decode never reads out of bounds or crashes
// (ASan/UBSan), its errors are one-line "coordinator: " messages of the documented codes, and a
// payload it accepts is exactly what Encode writes for the decoded message (no two payloads mean
// the same thing, so nothing a rank ignores can differ between ranks).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "coordinator/coordinator.hpp"

using ccltune::coordinator::Decode;
using ccltune::coordinator::Encode;
using ccltune::coordinator::kPayloadWords;
using ccltune::coordinator::MoreWords;
using ccltune::coordinator::RankFlags;
using ccltune::coordinator::Words;

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::cerr << "fuzz_payload_decode: " << what << "\n";
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Words w{};
  std::memcpy(w.data(), data, std::min(size, sizeof(w)));
  MoreWords more{};
  const bool extended = size > sizeof(w);
  if (extended) std::memcpy(more.data(), data + sizeof(w), std::min(size - sizeof(w), sizeof(more)));
  auto d = Decode(w, extended ? &more : nullptr);
  if (!d.ok()) {
    const std::string msg(d.status().message());
    if (msg.rfind("coordinator: ", 0) != 0) Fail("error without the coordinator prefix: " + msg);
    if (msg.find_first_of("\r\n") != std::string::npos) Fail("error of several lines: " + msg);
    if (!absl::IsDataLoss(d.status()) && !absl::IsFailedPrecondition(d.status())) {
      Fail("unexpected code: " + d.status().ToString());
    }
    return 0;
  }
  if (d->min_version != d->max_version) Fail("accepted a payload of two versions");
  RankFlags flags{d->any_cannot_tune, d->any_error};
  MoreWords more_again{};
  auto again = Encode(&d->message, d->sync_id, flags, d->max_version, extended ? &more_again : nullptr);
  if (!again.ok()) Fail("decoded message does not encode: " + again.status().ToString());
  for (int i = 0; i < kPayloadWords; ++i) {
    if ((*again)[i] != w[i]) Fail("accepted payload is not canonical at word " + std::to_string(i));
  }
  if (more_again != more) Fail("accepted more record words are not canonical");
  return 0;
}
