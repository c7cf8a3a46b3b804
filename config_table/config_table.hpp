// config_table: what ccltune knows per communicator and workload (incumbent, state, statistics),
// and its life beyond the run: versioned JSON export/import under a fingerprint, and NCCL's
// example-tuner CSV export. Pure C++ (nlohmann-json for the file format); no CUDA, NCCL or MPI.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vocab/types.hpp"

namespace ccltune::config_table {

inline constexpr int kSchemaVersion = 1;

// Where the numbers were measured. Import requires gpu, nranks, nnodes and nccl_version to match.
struct Fingerprint {
  std::string gpu;  // "NVIDIA H200", "simulated"
  int nranks = 0;
  int nnodes = 0;
  int nccl_version = 0;    // NCCL_VERSION_CODE, e.g. 22809
  int plugin_version = 0;  // tuner ABI version NCCL loaded (5, 6)
  int channel_budget = 0;  // channels the communicator was created with (process-level knob)
  // Channels the communicator really has: the most NCCL ran a call with (channel truth, NCCL's profiler
  // plugin interface; 0 where unknown). Not matched on import.
  int channels = 0;
  std::string ccltune_version;
  friend bool operator==(const Fingerprint&, const Fingerprint&) = default;
};

enum class WorkloadState { kDefault, kSearching, kConverged, kImported, kForced };
std::string_view StateName(WorkloadState s);

struct Entry {
  WorkloadKey key;
  Config config;  // incumbent (the default Config: NCCL's own choice won)
  WorkloadState state = WorkloadState::kDefault;
  double default_us = 0;        // median time of NCCL's default (0: not measured)
  double tuned_us = 0;          // median time of the incumbent (0: not measured)
  uint64_t calls = 0;           // calls seen on this rank
  uint64_t samples = 0;         // measured calls
  uint64_t converge_calls = 0;  // calls of the workload until the final config applied (0: not yet)
  SubspaceSet subspaces;        // as read from NCCL's cost table
  // What NCCL really ran (channel truth, from its profiler plugin interface; Config{} while unknown):
  // for the latest call, and per config ccltune asked for (NCCL may use fewer channels than asked).
  Config last_ran;
  std::vector<std::pair<Config, Config>> ran;  // (asked, ran), one per config asked
  // The size class whose search decided this workload's config (ungrouped calls of one collective,
  // datatype and op whose bytes fall in [min, max] share one search); 0, 0 where unknown.
  uint64_t class_min_bytes = 0, class_max_bytes = 0;
  void NoteRan(const Config& asked, const Config& really) {
    last_ran = really;
    for (auto& [a, r] : ran)
      if (a == asked) {
        r = really;
        return;
      }
    ran.emplace_back(asked, really);
  }
  // What NCCL ran for `asked`, or Config{} when never seen.
  Config RanFor(const Config& asked) const {
    for (const auto& [a, r] : ran)
      if (a == asked) return r;
    return Config{};
  }
};

// One communicator's workloads, keyed by WorkloadKey::Hash(). Thread-safe.
class CommTable {
 public:
  explicit CommTable(Fingerprint fp) : fp_(std::move(fp)) {}
  const Fingerprint& fingerprint() const { return fp_; }
  void set_fingerprint(const Fingerprint& fp);
  // Creates the entry on first sight; then applies `fn` to it under the lock.
  template <typename Fn>
  void Update(const WorkloadKey& key, Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = entries_.try_emplace(key.Hash());
    if (inserted) it->second.key = key;
    fn(it->second);
  }
  std::optional<Entry> Find(uint64_t hash) const;
  std::vector<Entry> Snapshot() const;  // in first-seen order is not promised; sorted by key string

 private:
  mutable std::mutex mu_;
  Fingerprint fp_;
  std::map<uint64_t, Entry> entries_;
};

// A group of communicators' tables as exported together (one process).
struct ExportSet {
  std::vector<std::pair<Fingerprint, std::vector<Entry>>> comms;
};

// Versioned JSON: {"schema": 1, "producer": "ccltune x.y.z", "configs": [ {"fingerprint": {...},
// "workloads": [ {"key": {...}, "config": {...}, "state", "default_us", "tuned_us", ...} ] } ] }.
// Keys carry (collective, dtype, op, bytes) per call, never a per-run communicator hash. Workloads
// of the same fingerprint from several communicators are merged (the one with more samples wins).
std::string ToJson(const ExportSet& set);
// NCCL's example-tuner CSV: collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,
// nRanks,numPipeOps,regBuff — one line per converged ungrouped workload that is not NCCL's default;
// bytes are NCCL's nBytes (NcclTunerBytes), min == max; numPipeOps and regBuff -1 (any).
std::string ToCsv(const ExportSet& set);
// Writes `content` to `path` atomically (temporary file in the same directory, fsync, rename, fsync
// of the directory): whoever reads `path`, even after a crash or a SIGKILL at any point, finds the
// previous content or the new one, whole. `before_rename` (tests only) runs once the temporary file
// holds the new content, durably, and before the rename; it gets the temporary file's name.
absl::Status WriteFileAtomic(const std::string& path, const std::string& content,
                             const std::function<void(const std::string& temp_path)>& before_rename = {});

struct ImportedWorkload {
  WorkloadKey key;
  Config config;
  double tuned_us = 0;
  double default_us = 0;
};
// Parses an export and returns the workloads recorded under a fingerprint equal to `fp` in gpu,
// nranks, nnodes and nccl_version. Errors carry a one-line message naming the file:
// NotFound (no file), DataLoss (does not parse / wrong types), FailedPrecondition (schema version
// or fingerprint mismatch, saying which field).
absl::StatusOr<std::vector<ImportedWorkload>> ImportJson(const std::string& path, const Fingerprint& fp);
absl::StatusOr<std::vector<ImportedWorkload>> ParseJson(const std::string& text, const Fingerprint& fp,
                                                        const std::string& source_name);

// One line of NCCL's example-tuner CSV (the format ToCsv writes, as NCCL's example plugin reads it):
// calls of `coll` whose NCCL nBytes (NcclTunerBytes) is in [min_bytes, max_bytes], on communicators
// of nnodes/nranks (-1: any), with num_pipe_ops ops in the launch and a registered buffer or not
// (reg_buff; -1: either) run `config` (channels 0 where the line says -1; never a chunk size).
struct CsvRule {
  Coll coll = Coll::kAllReduce;
  uint64_t min_bytes = 0;
  uint64_t max_bytes = 0;
  Config config;
  int nnodes = -1;
  int nranks = -1;
  int num_pipe_ops = -1;
  int reg_buff = -1;
  int line = 0;  // 1-based line in the file
};
// One line of that CSV (no newline): all ten fields, channels 0 written as -1; and a whole file, the
// two comment lines ToCsv(ExportSet) starts with and one line per rule, in the order given.
std::string CsvLine(const CsvRule& rule);
std::string ToCsv(const std::vector<CsvRule>& rules);
// Strict like the JSON import: a line must have 8 to 10 comma-separated fields (numPipeOps and
// regBuff may be left out, meaning -1), known spellings (never a silent default), numbers in range;
// '#' lines and blank lines are skipped. DataLoss naming the file and the line otherwise.
absl::StatusOr<std::vector<CsvRule>> ParseCsv(const std::string& text, const std::string& source_name);
// Reads and parses `path` and keeps the lines for a communicator of nranks ranks on nnodes nodes.
// NotFound (no file), DataLoss (does not parse), FailedPrecondition (lines, but none for this
// communicator's nRanks/nNodes: the CSV's fingerprint mismatch). One-line messages naming the file.
absl::StatusOr<std::vector<CsvRule>> ImportCsv(const std::string& path, int nranks, int nnodes);
// The config of the first rule that applies to one ungrouped call (the example plugin's rule: the
// first matching line wins): same collective, nBytes in range, nranks/nnodes matching, numPipeOps
// -1 or 1. ccltune cannot know whether NCCL registered the buffer, so only lines with regBuff -1
// apply. nullopt: no line applies (NCCL's default, or ccltune's own tuning).
std::optional<Config> MatchCsv(const std::vector<CsvRule>& rules, const CallDesc& call, int nranks, int nnodes);

// ---- Whole files, as the ccltune command-line tool reads them ----

// The merge rule of two entries of one workload key under one fingerprint (export, `ccltune merge`):
// `a` replaces `b` when `a` is final (converged, imported) and `b` is not, or when they are alike in
// that and `a` has more samples; otherwise `b` stays (a tie keeps the earlier one).
bool Supersedes(const Entry& a, const Entry& b);

// Every block and every workload of a JSON export, in any state, with its statistics and the
// informative fields (nccl_choice, valid_subspaces), checked as strictly as ParseJson; no fingerprint
// filter and no merge. Errors as ParseJson's, prefixed "ccltune: <source_name>".
absl::StatusOr<ExportSet> ParseExport(const std::string& text, const std::string& source_name);
absl::StatusOr<ExportSet> ReadExport(const std::string& path);

// Every problem of a file, one line each ("<source_name>: <where>: <what>"), empty when there is none:
// each bad field of each workload (not only the first), a syntax error or another schema (then only
// that line), duplicate keys in a block, a config outside its recorded valid_subspaces, and, with `fp`,
// a file no block of which an import into a run of `fp` would use (the import's fingerprint rule).
std::vector<std::string> ValidateJson(const std::string& text, const std::string& source_name,
                                      const Fingerprint* fp = nullptr);
// The same for NCCL's example-tuner CSV: each line that does not parse (ParseCsv's reasons), and with
// nranks/nnodes above 0, a file with lines but none for that communicator (ImportCsv's rule).
std::vector<std::string> ValidateCsv(const std::string& text, const std::string& source_name, int nranks = 0,
                                     int nnodes = 0);

// The tuned table as people read it: the exit summary of a communicator and `ccltune show`. One header
// line and one line per entry, by collective, dtype, op and size: collective, bytes (nccl-tests' size: the output of
// an all-gather, the input of a reduce-scatter, the buffer otherwise; a group's total), the size class
// whose search decided the config (in the same bytes; "-" where unknown or for a group), dtype, op,
// NCCL's default (its own algorithm/protocol pick from the cost table; its own channel count), its
// median time, the tuned config as NCCL runs it (an algorithm/protocol NCCL would not accept for the
// call, one NCCL_ALGO/NCCL_PROTO leave out among them, shows as NCCL's), what NCCL really ran for it (channel
// truth; "?" where unknown), its median time, the speed-up, the samples and the state; then one legend
// line if a config came from an import. Each line starts with `indent`; no line ends with a newline
// except between lines.
struct TableOptions {
  int nranks = 1;
  std::string indent = "  ";
};
std::string FormatTable(const std::vector<Entry>& entries, const TableOptions& options);
// nccl-tests' size of a workload (as the table's bytes column).
uint64_t DisplayBytes(const WorkloadKey& key, int nranks);
// The entry's size class as NCCL's nBytes for the tuner (NcclTunerBytes of its bounds; nccl-tests' size,
// as DisplayBytes): [lo, hi], the range the exported CSV line covers and the table's size_class column.
// nullopt for a group, where the class is unknown, or where it does not hold the workload's own bytes.
std::optional<std::pair<uint64_t, uint64_t>> SizeClassTunerBytes(const Entry& e, int nranks);
// The config as NCCL runs it, as the table's tuned column writes it.
std::string RunConfigText(const Entry& e);

}  // namespace ccltune::config_table
