// Shared vocabulary of ccltune: the small value types every component speaks (collectives, configs,
// workload keys). No CUDA, NCCL or MPI here; the numeric values match NCCL's enums so the plugin
// adapters can convert without tables.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ccltune {

// Values equal NCCL's ncclFunc_t for the five collectives that reach the tuner.
enum class Coll : int { kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4 };
inline constexpr int kNumColls = 5;

// NCCL's algorithm / protocol indices (NCCL_ALGO_*, NCCL_PROTO_*), as in the tuner cost table.
inline constexpr int kNumAlgos = 7;   // Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT
inline constexpr int kNumProtos = 3;  // LL, LL128, Simple
inline constexpr int kAlgoTree = 0;
inline constexpr int kAlgoRing = 1;
inline constexpr int kProtoLL = 0;
inline constexpr int kProtoLL128 = 1;
inline constexpr int kProtoSimple = 2;

std::string_view CollName(Coll c);                     // "allreduce", "allgather", ...
std::optional<Coll> ParseColl(std::string_view name);  // accepts CollName() and "all_reduce"-style; else nullopt
std::string_view AlgoName(int algo);                   // "tree", "ring", ..., "default" for -1, "?" if out of range
std::optional<int> ParseAlgo(std::string_view name);   // case-insensitive; "default" -> -1
std::string_view ProtoName(int proto);                 // "ll", "ll128", "simple", "default" for -1
std::optional<int> ParseProto(std::string_view name);
std::string_view DtypeName(int dtype);  // ncclDataType_t value -> "float32", "bfloat16", ...
std::optional<int> ParseDtype(std::string_view name);
int DtypeSize(int dtype);            // bytes per element; 0 if unknown
std::string_view RedOpName(int op);  // ncclRedOp_t -> "sum", ...; -1 -> "none"

// One configuration of a collective call. Every field has a "NCCL decides" value, so the
// all-default Config means "no override" (NCCL exactly as without ccltune).
struct Config {
  int algo = -1;            // NCCL_ALGO_* or -1 (NCCL's choice; then proto is -1 too)
  int proto = -1;           // NCCL_PROTO_* or -1
  int channels = 0;         // 1..budget, or 0 (NCCL's choice)
  int64_t chunk_bytes = 0;  // > 0 only where the plugin ABI offers getChunkSize (tuner v6); 0 = NCCL's choice

  bool IsDefault() const { return algo < 0 && proto < 0 && channels == 0 && chunk_bytes == 0; }
  bool HasSubspace() const { return algo >= 0 && proto >= 0; }
  int Subspace() const { return HasSubspace() ? algo * kNumProtos + proto : -1; }
  std::string ToString() const;  // "default", or "ring/ll128/nc16[/chunk131072]"
  friend bool operator==(const Config&, const Config&) = default;
};

// Subspaces NCCL allows for one call, read from the cost table the plugin is handed:
// bit (algo * kNumProtos + proto) is set where the entry is not -1.
struct SubspaceSet {
  uint32_t valid_mask = 0;
  int nccl_algo = -1;  // NCCL's own pick (lowest-cost valid entry), -1 if unknown
  int nccl_proto = -1;
  bool Valid(int algo, int proto) const {
    return algo >= 0 && proto >= 0 && algo < kNumAlgos && proto < kNumProtos &&
           ((valid_mask >> (algo * kNumProtos + proto)) & 1u);
  }
  friend bool operator==(const SubspaceSet&, const SubspaceSet&) = default;
};

// One collective as the user issued it. bytes = count * element size (the user's count, not
// NCCL's nBytes: for all-gather NCCL's nBytes is bytes * nranks).
struct CallDesc {
  Coll coll = Coll::kAllReduce;
  int dtype = 0;  // ncclDataType_t
  int op = -1;    // ncclRedOp_t, -1 for collectives without reduction (all-gather, broadcast)
  uint64_t bytes = 0;
  friend bool operator==(const CallDesc&, const CallDesc&) = default;
};

// What ccltune tunes as one thing: an ungrouped call, or a user group (its collectives in order).
struct WorkloadKey {
  std::vector<CallDesc> calls;
  bool grouped = false;

  // Stable across ranks, processes and runs (FNV-1a over the fields); never 0.
  uint64_t Hash() const;
  // Hash() of the key these calls would make, without building it (the per-call path allocates nothing).
  static uint64_t HashOf(std::span<const CallDesc> calls, bool grouped);
  std::string ToString() const;  // "allreduce/float32/sum/1048576" or "group[...;...]"
  friend bool operator==(const WorkloadKey&, const WorkloadKey&) = default;
};

// One step of the FNV-1a hash WorkloadKey::Hash() uses (the 8 bytes of v, little end first).
uint64_t FnvMix(uint64_t h, uint64_t v);

// NCCL's nBytes for the tuner (what getCollInfo sees) for one ungrouped call on nranks ranks.
uint64_t NcclTunerBytes(const CallDesc& c, int nranks);

}  // namespace ccltune
