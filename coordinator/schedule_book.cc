// coordinator: ScheduleBook, each workload's schedule consumed one call at a time. Every rank applies
// the same updates at the same unit and consumes the same calls, so every rank returns the same config.
#include "coordinator/coordinator.hpp"

namespace ccltune::coordinator {

// Expects an update as Decode delivers it (the last entry final, the others with calls > 0); an
// update without entries removes the workload's schedule (NCCL's default again).
std::vector<ScheduleEntry> ScheduleBook::Apply(const WorkloadUpdate& u) {
  std::vector<ScheduleEntry> dropped;
  auto it = book_.find(u.workload);
  if (it != book_.end() && (!u.append || u.entries.empty())) {
    dropped.assign(it->second.pending.begin(), it->second.pending.end());
    it->second.pending.clear();
  }
  if (u.entries.empty()) {
    book_.erase(u.workload);
    return dropped;
  }
  Slot& slot = book_[u.workload];
  for (size_t i = 0; i + 1 < u.entries.size(); ++i) {
    if (u.entries[i].calls > 0) slot.pending.push_back(u.entries[i]);
  }
  if (!(slot.final_config == u.entries.back().config) || slot.converged != u.converged) slot.final_calls = 0;
  slot.final_config = u.entries.back().config;
  slot.converged = u.converged;
  return dropped;
}

std::optional<ScheduleBook::Call> ScheduleBook::Next(uint64_t workload, bool hold) {
  auto it = book_.find(workload);
  if (it == book_.end()) return std::nullopt;
  Slot& s = it->second;
  if (hold) {
    // Runs the config the next call will, untimed: that call then follows its own config, as in a run of calls. A
    // warm-up entry's untimed first call is this one, and is consumed (its count includes it): left in, the entry
    // ran one timed call more than the leader asked for, a default sample in place of the next entry's (while
    // settling, most of the default's entries follow another config and start with a warm-up).
    if (s.pending.empty()) return Call{s.final_config, false, false};
    ScheduleEntry& front = s.pending.front();
    const Call c{front.config, false, false};
    if (front.warmup) {
      front.warmup = false;
      if (--front.calls == 0) s.pending.pop_front();
    }
    return c;
  }
  if (s.pending.empty()) {
    // A converged final entry is sampled now and then (monitoring). A search's final entry runs while
    // the schedule waits for timings: every such call is a sample too (the leader's search takes it
    // as a sample of the incumbent it did not ask for), so the wait measures the reference.
    bool timed = true;
    if (s.converged) {
      timed = s.final_calls++ % kMonitorEvery == 0 && monitor_timed_ < kMonitorPerInterval;
      if (timed) ++monitor_timed_;
    }
    return Call{s.final_config, timed, false};
  }
  ScheduleEntry& front = s.pending.front();
  Call c{front.config, !front.warmup, true};
  front.warmup = false;  // only the entry's first call
  if (--front.calls == 0) s.pending.pop_front();
  return c;
}

uint64_t ScheduleBook::PendingCalls(uint64_t workload) const {
  auto it = book_.find(workload);
  if (it == book_.end()) return 0;
  uint64_t n = 0;
  for (const ScheduleEntry& e : it->second.pending) n += e.calls;
  return n;
}

std::optional<Config> ScheduleBook::Incumbent(uint64_t workload) const {
  auto it = book_.find(workload);
  if (it == book_.end()) return std::nullopt;
  return it->second.final_config;
}

bool ScheduleBook::Exhausted(uint64_t workload) const {
  auto it = book_.find(workload);
  return it == book_.end() || it->second.pending.empty();
}

bool ScheduleBook::Converged(uint64_t workload) const {
  auto it = book_.find(workload);
  return it != book_.end() && it->second.converged;
}

void ScheduleBook::Clear() { book_.clear(); }

bool BackToBack::Hold(uint64_t call, bool follows_other) {
  if (!follows_other) {
    last_warm_call_ = call;
    return false;
  }
  return last_warm_call_ != 0 && call - last_warm_call_ <= kHoldWindow;
}

}  // namespace ccltune::coordinator
