// Names, parsing and hashing of the shared vocabulary types.
#include "vocab/types.hpp"

#include <array>
#include <cctype>
#include <string>

namespace ccltune {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

std::string Canon(std::string_view s) {  // lower case, '_' and '-' dropped: "all_reduce" == "allreduce"
  std::string out;
  for (char ch : s) {
    if (ch == '_' || ch == '-') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  }
  return out;
}

constexpr std::array<std::string_view, kNumColls> kCollNames = {"broadcast", "reduce", "allgather", "reducescatter",
                                                                "allreduce"};
constexpr std::array<std::string_view, kNumAlgos> kAlgoNames = {
    "tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"};
constexpr std::array<std::string_view, kNumProtos> kProtoNames = {"ll", "ll128", "simple"};

struct DtypeInfo {
  std::string_view name;
  int size;
};
constexpr std::array<DtypeInfo, 12> kDtypes = {{{"int8", 1},
                                                {"uint8", 1},
                                                {"int32", 4},
                                                {"uint32", 4},
                                                {"int64", 8},
                                                {"uint64", 8},
                                                {"float16", 2},
                                                {"float32", 4},
                                                {"float64", 8},
                                                {"bfloat16", 2},
                                                {"float8e4m3", 1},
                                                {"float8e5m2", 1}}};
constexpr std::array<std::string_view, 5> kOpNames = {"sum", "prod", "max", "min", "avg"};

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

void Mix(uint64_t& h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xffu;
    h *= kFnvPrime;
  }
}

}  // namespace

std::string_view CollName(Coll c) {
  const int i = static_cast<int>(c);
  return (i >= 0 && i < kNumColls) ? kCollNames[i] : std::string_view("?");
}

std::optional<Coll> ParseColl(std::string_view name) {
  const std::string c = Canon(name);
  for (int i = 0; i < kNumColls; ++i)
    if (c == kCollNames[i]) return static_cast<Coll>(i);
  if (c == "bcast") return Coll::kBroadcast;
  return std::nullopt;
}

std::string_view AlgoName(int algo) {
  if (algo == -1) return "default";
  return (algo >= 0 && algo < kNumAlgos) ? kAlgoNames[algo] : std::string_view("?");
}

std::optional<int> ParseAlgo(std::string_view name) {
  const std::string c = Canon(name);
  if (c == "default") return -1;
  for (int i = 0; i < kNumAlgos; ++i)
    if (c == kAlgoNames[i]) return i;
  return std::nullopt;
}

std::string_view ProtoName(int proto) {
  if (proto == -1) return "default";
  return (proto >= 0 && proto < kNumProtos) ? kProtoNames[proto] : std::string_view("?");
}

std::optional<int> ParseProto(std::string_view name) {
  const std::string c = Canon(name);
  if (c == "default") return -1;
  for (int i = 0; i < kNumProtos; ++i)
    if (c == kProtoNames[i]) return i;
  return std::nullopt;
}

std::string_view DtypeName(int dtype) {
  return (dtype >= 0 && dtype < static_cast<int>(kDtypes.size())) ? kDtypes[dtype].name : std::string_view("?");
}

std::optional<int> ParseDtype(std::string_view name) {
  const std::string c = Lower(name);
  for (int i = 0; i < static_cast<int>(kDtypes.size()); ++i)
    if (c == kDtypes[i].name) return i;
  if (c == "float" || c == "fp32") return 7;
  if (c == "half" || c == "fp16") return 6;
  if (c == "bf16") return 9;
  if (c == "double" || c == "fp64") return 8;
  if (c == "int" || c == "char") return c == "int" ? 2 : 0;
  return std::nullopt;
}

int DtypeSize(int dtype) { return (dtype >= 0 && dtype < static_cast<int>(kDtypes.size())) ? kDtypes[dtype].size : 0; }

std::string_view RedOpName(int op) {
  if (op == -1) return "none";
  return (op >= 0 && op < static_cast<int>(kOpNames.size())) ? kOpNames[op] : std::string_view("custom");
}

std::string Config::ToString() const {
  if (IsDefault()) return "default";
  std::string s;
  s += HasSubspace() ? std::string(AlgoName(algo)) + "/" + std::string(ProtoName(proto)) : std::string("default");
  s += "/nc" + std::to_string(channels);
  if (chunk_bytes > 0) s += "/chunk" + std::to_string(chunk_bytes);
  return s;
}

namespace {
void MixCall(uint64_t& h, const CallDesc& c) {
  Mix(h, static_cast<uint64_t>(c.coll));
  Mix(h, static_cast<uint64_t>(static_cast<int64_t>(c.dtype)));
  Mix(h, static_cast<uint64_t>(static_cast<int64_t>(c.op)));
  Mix(h, c.bytes);
}
}  // namespace

uint64_t WorkloadKey::Hash() const { return HashOf(calls, grouped); }

uint64_t WorkloadKey::HashOf(std::span<const CallDesc> calls, bool grouped) {
  uint64_t h = kFnvOffset;
  Mix(h, grouped ? 1 : 0);
  Mix(h, calls.size());
  for (const CallDesc& c : calls) MixCall(h, c);
  return h == 0 ? 1 : h;
}

uint64_t FnvMix(uint64_t h, uint64_t v) {
  Mix(h, v);
  return h;
}

std::string WorkloadKey::ToString() const {
  auto one = [](const CallDesc& c) {
    std::string s(CollName(c.coll));
    s += "/" + std::string(DtypeName(c.dtype));
    if (c.op >= 0) s += "/" + std::string(RedOpName(c.op));
    s += "/" + std::to_string(c.bytes);
    return s;
  };
  if (!grouped && calls.size() == 1) return one(calls[0]);
  std::string s = "group[";
  for (size_t i = 0; i < calls.size(); ++i) s += (i ? ";" : "") + one(calls[i]);
  return s + "]";
}

uint64_t NcclTunerBytes(const CallDesc& c, int nranks) {
  // NCCL sizes the tuner's nBytes by the larger of send and receive counts.
  switch (c.coll) {
    case Coll::kAllGather:
    case Coll::kReduceScatter:
      return c.bytes * static_cast<uint64_t>(nranks);
    default:
      return c.bytes;
  }
}

}  // namespace ccltune
