// Export and summary: the JSON export and NCCL's example-tuner CSV of every communicator this process
// leads (at exit, on request through ccltuneExport, and every CCLTUNE_EXPORT_INTERVAL seconds from a
// thread of its own), and the summary table printed at exit. Destroyed communicators' tables are kept.
#pragma once

#include <sys/types.h>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config_table/config_table.hpp"

namespace ccltune {

class Runtime;
class CommState;

class Exporter {
 public:
  explicit Exporter(Runtime& rt) : rt_(rt) {}
  // Writes the export to `path` (nullptr: CCLTUNE_EXPORT). A ccltuneResult_t.
  int Export(const char* path);
  // The leader's measurements into its table (cs.mu held).
  void Snapshot(CommState& cs);
  // A led communicator went away: its table stays for the export and the summary (cs.mu held).
  void Retire(CommState& cs);
  int64_t retired_changes() const;
  void AddRetiredChanges(int64_t n);
  void StartFlusher();
  void AtExit();

 private:
  void StopFlusher();
  Runtime& rt_;
  mutable std::mutex mu_;            // guards retired_, retired_changes_
  config_table::ExportSet retired_;  // tables of destroyed communicators this process led
  int64_t retired_changes_ = 0;      // schedule updates applied on destroyed communicators

  std::mutex export_mu_;  // one export at a time (exit, ccltuneExport, the flusher)
  int exports_ = 0;       // exports written or attempted, guarded by export_mu_

  std::mutex flush_mu_;  // guards flush_stop_; the flusher sleeps on flush_cv_
  std::condition_variable flush_cv_;
  bool flush_stop_ = false;
  std::thread flusher_;  // started once, by the process that owns it
  pid_t flusher_pid_ = 0;
};

}  // namespace ccltune
