// The leader's side of tuning one communicator (rank 0 only): one optimizer::Search per workload,
// fed with this rank's timings, and the payload messages that ship schedules to every rank.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "config_table/config_table.hpp"
#include "coordinator/coordinator.hpp"
#include "optimizer/optimizer.hpp"
#include "vocab/types.hpp"

namespace ccltune {

class Leader {
 public:
  struct Options {
    optimizer::Options search;
    int channel_budget = 32;
    bool chunk_dim = false;
    coordinator::IntervalOptions interval;
  };
  explicit Leader(const Options& o) : o_(o), policy_(o.interval) {}

  // A unit of `workload` started (the iteration detector's input).
  void OnUnit(uint64_t workload);
  // NCCL's cost table for `workload` was seen: its search space is known from now on.
  void OnSpace(uint64_t workload, const SubspaceSet& space);
  // A measured call. `scheduled`: it ran a candidate of the current schedule (not the final entry).
  void OnSample(uint64_t workload, const Config& config, double us, bool scheduled);
  // Every rank applied this update (the leader included).
  void OnApplied(const coordinator::WorkloadUpdate& u);
  // Imported configs: shipped as final, converged entries; the searches adopt them.
  void AddImports(const std::vector<config_table::ImportedWorkload>& imports);
  void set_frozen(bool frozen) { frozen_ = frozen; }
  bool imported(uint64_t workload) const;

  // The message for the next sync op, given the leader's own schedule book.
  coordinator::LeaderMessage Build(const coordinator::ScheduleBook& book);

  // Statistics of a workload's search, if it has one.
  std::optional<optimizer::Stats> StatsOf(uint64_t workload) const;
  // Whether this call of `workload` should be timed (scheduled calls always; converged workloads
  // only every monitor_every calls).
  bool ShouldTime(uint64_t workload, bool scheduled, uint64_t call_index) const;
  bool searching() const;

 private:
  struct Work {
    std::optional<optimizer::Search> search;
    bool awaiting_apply = false;  // sent, not yet applied at the sync point
    bool sent_converged = false;
    Config last_final;
    std::optional<Config> import;  // to ship (and adopt once the space is known)
    double import_us = 0;
    bool from_import = false;
  };
  Options o_;
  coordinator::IterationDetector detector_;
  coordinator::IntervalPolicy policy_;
  std::unordered_map<uint64_t, Work> work_;
  std::vector<uint64_t> order_;  // first-seen order, for deterministic packing
  bool frozen_ = false;
  Work& Get(uint64_t workload);
};

}  // namespace ccltune
