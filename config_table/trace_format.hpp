// The tuning trace: one CSV line per timed call on a communicator's leader, for `ccltune plot TRACE.csv`
// (time per call against call index, candidates and incumbent marked) and for anyone's own analysis.
// The runtime writes it where CCLTUNE_TRACE names a path; the format is defined here, with its writer
// and its (strict) reader, so that writer and readers cannot drift apart. Pure C++, no CUDA/NCCL/MPI.
//
//   comm,workload,call,unit,config,us,role,min_us,max_us
//   0x5581c3a0,allreduce/float32/sum/1048576,17,33,ring/ll128/nc16,41.25,candidate,38.50,41.25
//
// comm      the communicator as this process names it (its handle, hex): a per-run label
// workload  WorkloadKey::ToString() (never contains a comma)
// call      the workload's call index on this rank, from 0
// unit      the communicator's unit count when the call was issued (sync ops fall between units)
// config    Config::ToString() of what the call ran ("default": NCCL's own choice)
// us        the time the search compared, in microseconds: max_us, or min_us under CCLTUNE_TIMING=min
//           and for a call that follows another workload's call on the communicator
// role      candidate: a config on trial in the search's schedule;
//           incumbent: the search's current best config, re-timed;
//           default:   NCCL's default (no override), re-timed or before anything was scheduled;
//           monitor:   a low-rate check of the incumbent after the search converged
// min_us    the call's time on the rank that took least (the last to arrive), in microseconds
// max_us    the call's time on the rank that took most (what the job waited for); `us` is one of the two
//           (CCLTUNE_TIMING). Traces written before these two columns existed end at role
//           (kTraceHeaderV1); the reader takes both forms.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ccltune::config_table {

inline constexpr std::string_view kTraceHeader = "comm,workload,call,unit,config,us,role,min_us,max_us";
inline constexpr std::string_view kTraceHeaderV1 = "comm,workload,call,unit,config,us,role";

enum class TraceRole { kCandidate, kIncumbent, kDefault, kMonitor };
std::string_view TraceRoleName(TraceRole role);
std::optional<TraceRole> ParseTraceRole(std::string_view name);

struct TraceRow {
  std::string comm;
  std::string workload;
  uint64_t call = 0;
  uint64_t unit = 0;
  std::string config;
  double us = 0;
  TraceRole role = TraceRole::kCandidate;
  // Unset when read from a trace of the older form (kTraceHeaderV1); written as 0 when unset.
  std::optional<double> min_us;
  std::optional<double> max_us;
  friend bool operator==(const TraceRow&, const TraceRow&) = default;
};

// One line, without its newline. A comma or newline inside comm, workload or config is replaced by
// ';' (none of ccltune's own names has one), so a line always has nine fields.
std::string TraceLine(const TraceRow& row);

// Appends lines to a file that starts with kTraceHeader. Thread-safe; each line is written whole and
// flushed, so a reader (or a crash) sees whole lines only.
class TraceWriter {
 public:
  // Creates or truncates `path` and writes the header.
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Open(const std::string& path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  absl::Status Append(const TraceRow& row);

 private:
  TraceWriter(std::FILE* f, std::string path) : f_(f), path_(std::move(path)) {}
  std::mutex mu_;
  std::FILE* f_;
  std::string path_;
};

// Strict: the first line must be kTraceHeader (then every other non-blank line has nine fields) or
// kTraceHeaderV1 (seven), numbers in range, a known role. DataLoss naming the source and the line otherwise.
absl::StatusOr<std::vector<TraceRow>> ParseTrace(const std::string& text, const std::string& source_name);
absl::StatusOr<std::vector<TraceRow>> ReadTrace(const std::string& path);

// True for either header line (a trace of either form).
bool IsTraceHeader(std::string_view line);

}  // namespace ccltune::config_table
