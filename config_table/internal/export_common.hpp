// Shared by the JSON and CSV exporters: which entries are exportable, the merge of several
// communicators' tables under one fingerprint, and the names of workload states.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config_table/config_table.hpp"

namespace ccltune::config_table::internal {

inline constexpr int kMaxChannels = 64;  // NCCL's MAXCHANNELS (2.28 and 2.30)
inline constexpr int kNumReduceOps = 5;  // sum, prod, max, min, avg: the ops with a stable name

// An entry is exportable when every call of its key has a name that means the same thing in a
// later run: a known collective and dtype, and no per-communicator custom reduction op.
bool Exportable(const Entry& e);

// True for states whose config is a final answer another run may reuse.
bool IsFinal(WorkloadState s);

std::optional<WorkloadState> ParseState(std::string_view name);
std::optional<int> ParseRedOp(std::string_view name);  // "sum".."avg" -> ncclRedOp_t
bool IsReduction(Coll c);

// Groups the set by fingerprint (full equality, first-seen order of fingerprints) and merges the
// entries of one fingerprint by key (Supersedes; a tie keeps the earlier one). Non-exportable entries
// are dropped. Entries come out sorted by key string.
std::vector<std::pair<Fingerprint, std::vector<Entry>>> MergeByFingerprint(const ExportSet& set);

// NCCL's example-tuner CSV spellings, indexed by ccltune's (NCCL's) enum values (csv_export.cc
// says where they come from). Export writes them, import accepts exactly them.
inline constexpr std::array<std::string_view, kNumAlgos> kCsvAlgo = {
    "tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
inline constexpr std::array<std::string_view, kNumProtos> kCsvProto = {"ll", "ll128", "simple"};
inline constexpr std::array<std::string_view, kNumColls> kCsvColl = {"broadcast", "reduce", "allgather",
                                                                     "reducescatter", "allreduce"};

// Import messages are one line whatever the file or a parser put in them.
std::string OneLine(std::string s);

// The whole file, or NotFound ("ccltune: import file <path> not found") / the errno's code, each
// with a one-line message naming the file.
absl::StatusOr<std::string> ReadImportFile(const std::string& path);
// The same with another noun than "import file" ("ccltune: <what> <path> not found").
absl::StatusOr<std::string> ReadFileNamed(const std::string& path, std::string_view what);

}  // namespace ccltune::config_table::internal

#include <sstream>
#include <string>

namespace ccltune::config_table::internal {

// Concatenation that takes std::string_view: the installed Abseil is built without
// std::string_view as absl::string_view, so absl::StrCat does not accept it.
template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}

}  // namespace ccltune::config_table::internal
