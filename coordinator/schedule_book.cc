// coordinator: ScheduleBook, each workload's schedule consumed one call at a time. Every rank applies
// the same updates at the same unit and consumes the same calls, so every rank returns the same config.
#include "coordinator/coordinator.hpp"

namespace ccltune::coordinator {

// Expects an update as Decode delivers it (the last entry final, the others with calls > 0); an
// update without entries removes the workload's schedule (NCCL's default again).
void ScheduleBook::Apply(const WorkloadUpdate& u) {
  if (u.entries.empty()) {
    book_.erase(u.workload);
    return;
  }
  Slot slot;
  for (size_t i = 0; i + 1 < u.entries.size(); ++i) {
    if (u.entries[i].calls > 0) slot.pending.push_back(u.entries[i]);
  }
  slot.final_config = u.entries.back().config;
  slot.converged = u.converged;
  book_[u.workload] = std::move(slot);
}

std::optional<Config> ScheduleBook::Next(uint64_t workload) {
  auto it = book_.find(workload);
  if (it == book_.end()) return std::nullopt;
  Slot& s = it->second;
  if (s.pending.empty()) return s.final_config;
  ScheduleEntry& front = s.pending.front();
  Config c = front.config;
  if (--front.calls == 0) s.pending.pop_front();
  return c;
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

}  // namespace ccltune::coordinator
