// Writes the payload seeds of corpus/fuzz_payload_decode: real encodings (a leader message with
// schedules, other ranks' words, flags, a newer protocol version, a full payload, records running on into the more
// record words of a sync from id kLag on). Usage:
// fuzz_make_seeds <corpus/fuzz_payload_decode>
#include <algorithm>
#include <cstdio>
#include <string>

#include "coordinator/coordinator.hpp"

namespace cc = ccltune::coordinator;

namespace {

// Writes the payload's words, then the more record words where there are (a sync from id kLag on).
int Write(const std::string& dir, const std::string& name, const absl::StatusOr<cc::Words>& w,
          const cc::MoreWords* more = nullptr) {
  if (!w.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), std::string(w.status().message()).c_str());
    return 1;
  }
  const std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 1;
  std::fwrite(w->data(), sizeof(uint64_t), w->size(), f);
  if (more != nullptr) std::fwrite(more->data(), sizeof(uint64_t), more->size(), f);
  return std::fclose(f) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  cc::LeaderMessage m;
  m.interval = 48;
  m.period = 12;
  cc::WorkloadUpdate u1{0x1234'5678'9abc'def0ull, {{{1, 2, 16, 0}, 3}, {{0, 0, 8, 65536}, 3}, {{-1, -1, 0, 0}, 0}}};
  cc::WorkloadUpdate u2{42, {{{1, 1, 32, 0}, 0}}, true};
  m.updates = {u1, u2};
  int rc = 0;
  rc |= Write(dir, "leader_two_updates", cc::Encode(&m, 7, {}));
  rc |= Write(dir, "other_rank", cc::Encode(nullptr, 7, {}));
  cc::LeaderMessage stop;
  stop.stop_tuning = true;
  rc |= Write(dir, "leader_stop_flags", cc::Encode(&stop, 3, {true, true}));
  rc |= Write(dir, "leader_version_2", cc::Encode(&m, 0, {}, 2));
  // What the MAX delivers when the leader runs protocol 1 and another rank protocol 2.
  auto a = cc::Encode(&m, 5, {}, 1), b = cc::Encode(nullptr, 5, {}, 2);
  if (a.ok() && b.ok()) {
    for (int i = 0; i < cc::kPayloadWords; ++i) (*a)[i] = std::max((*a)[i], (*b)[i]);
  }
  rc |= Write(dir, "reduced_version_skew", a);
  cc::LeaderMessage full;
  for (uint64_t h = 1; h <= 18; ++h) full.updates.push_back({h, {{{0, 0, 4, 0}, 0}}, true});
  rc |= Write(dir, "leader_full", cc::Encode(&full, 99, {}));
  cc::LeaderMessage spans;  // 30 updates of 3 words: the records run on past the payload's last word
  for (uint64_t h = 1; h <= 30; ++h) spans.updates.push_back({h, {{{1, 2, 4, 0}, 0}}, false, true});
  cc::MoreWords more{};
  auto spans_words = cc::Encode(&spans, 99, {}, cc::kProtocolVersion, &more);
  rc |= Write(dir, "leader_spans_more", spans_words, &more);
  return rc;
}
