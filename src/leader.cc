// Leader logic: which workloads get a batch in the next payload, and how long the next interval is.
#include "src/leader.hpp"

#include <algorithm>

#include "src/log.hpp"

namespace ccltune {

Leader::Work& Leader::Get(uint64_t workload) {
  auto [it, inserted] = work_.try_emplace(workload);
  if (inserted) order_.push_back(workload);
  return it->second;
}

void Leader::OnUnit(uint64_t workload) {
  detector_.Observe(workload);
  Get(workload);
}

void Leader::OnSpace(uint64_t workload, const SubspaceSet& space) {
  Work& w = Get(workload);
  if (w.search.has_value()) return;
  optimizer::SearchSpace ss;
  ss.subspaces = space;
  ss.max_channels = o_.channel_budget;
  ss.chunk_dim = o_.chunk_dim;
  // Protocol grains as NCCL computes them (LL 16 B, LL128 1920 B, Simple 512 B) and a range that
  // stays within NCCL's buffer-derived maximum (which clamps above anyway).
  const int64_t grain[kNumProtos] = {16, 1920, 512};
  for (int p = 0; p < kNumProtos; ++p) {
    ss.chunk_grain[p] = grain[p];
    ss.chunk_min[p] = grain[p] * 16;
    ss.chunk_max[p] = p == kProtoSimple ? (1 << 20) : grain[p] * 1024;
  }
  w.search.emplace(ss, o_.search);
  if (w.import.has_value()) {
    w.search->Adopt(*w.import, w.import_us);
  } else if (w.from_import) {
    w.search->Adopt(w.last_final, w.import_us);
  }
}

void Leader::OnSample(uint64_t workload, const Config& config, double us, bool scheduled) {
  auto it = work_.find(workload);
  if (it == work_.end() || !it->second.search.has_value()) return;
  optimizer::Search& s = *it->second.search;
  if (!scheduled && s.state() != optimizer::State::kConverged) return;
  const bool was_converged = s.state() == optimizer::State::kConverged;
  s.AddSample(config, us);
  if (!was_converged && s.state() == optimizer::State::kConverged) {
    CCLTUNE_TRACE(kOpt, "search of %016x done: %s", workload, s.Describe().c_str());
  }
}

void Leader::OnApplied(const coordinator::WorkloadUpdate& u) {
  auto it = work_.find(u.workload);
  if (it != work_.end()) it->second.awaiting_apply = false;
}

void Leader::AddImports(const std::vector<config_table::ImportedWorkload>& imports) {
  for (const auto& imp : imports) {
    Work& w = Get(imp.key.Hash());
    w.import = imp.config;
    w.import_us = imp.tuned_us;
    w.from_import = true;
  }
}

bool Leader::imported(uint64_t workload) const {
  auto it = work_.find(workload);
  return it != work_.end() && it->second.from_import;
}

bool Leader::searching() const {
  for (const auto& [h, w] : work_) {
    if (w.awaiting_apply || w.import.has_value()) return true;
    if (w.search.has_value() && w.search->state() != optimizer::State::kConverged) return true;
  }
  return false;
}

bool Leader::ShouldTime(uint64_t workload, bool scheduled, uint64_t call_index) const {
  if (scheduled) return true;
  auto it = work_.find(workload);
  if (it == work_.end() || !it->second.search.has_value()) return false;
  // Calls outside a schedule while searching feed nothing: the batch's own calls are the samples.
  if (it->second.search->state() != optimizer::State::kConverged) return false;
  const int every = std::max(1, o_.search.monitor_every);
  return call_index % static_cast<uint64_t>(every) == 0;
}

coordinator::LeaderMessage Leader::Build(const coordinator::ScheduleBook& book) {
  coordinator::LeaderMessage msg;
  int room = coordinator::kRecordWords;
  for (uint64_t h : order_) {
    Work& w = work_[h];
    if (w.awaiting_apply) continue;
    coordinator::WorkloadUpdate u;
    u.workload = h;
    if (w.import.has_value()) {
      // Imported config: shipped as the converged final entry; no tuning for this workload.
      u.entries.push_back({*w.import, 0});
      u.converged = true;
      if (coordinator::EncodedWords(u) > room) break;
      w.last_final = *w.import;
      if (w.search.has_value()) w.search->Adopt(*w.import, w.import_us);
      w.import.reset();
      w.sent_converged = true;
    } else if (!w.search.has_value()) {
      continue;
    } else if (w.search->state() == optimizer::State::kNeedBatch && !frozen_ && book.Exhausted(h)) {
      // Entries of the batch, then the incumbent as the final entry; as many as fit.
      const int max_entries = std::min<int>(
          {o_.search.max_batch, coordinator::kMaxEntriesPerRecord - 1, room - 3});  // hash + header + final entry
      if (max_entries < 1) break;
      std::vector<optimizer::Candidate> batch = w.search->NextBatch(max_entries);
      for (const auto& c : batch) {
        u.entries.push_back({c.config, static_cast<uint32_t>(std::min<int>(c.calls, coordinator::kMaxCallsPerEntry))});
      }
      u.converged = w.search->state() == optimizer::State::kConverged;
      u.entries.push_back({w.search->incumbent(), 0});
      w.last_final = w.search->incumbent();
      w.sent_converged = u.converged;
    } else if (w.search->state() == optimizer::State::kConverged &&
               (!w.sent_converged || !(w.search->incumbent() == w.last_final))) {
      u.entries.push_back({w.search->incumbent(), 0});
      u.converged = true;
      if (coordinator::EncodedWords(u) > room) break;
      w.last_final = w.search->incumbent();
      w.sent_converged = true;
    } else {
      continue;
    }
    const int words = coordinator::EncodedWords(u);
    if (words > room) break;  // what does not fit waits for the next payload
    room -= words;
    w.awaiting_apply = true;
    CCLTUNE_TRACE(kOpt, "schedule for %016x: %d entries, final %s%s", h, static_cast<int>(u.entries.size()),
                  u.entries.back().config.ToString(), u.converged ? " (converged)" : "");
    msg.updates.push_back(std::move(u));
  }
  msg.period = std::min<uint64_t>(detector_.period(), 0xFFFFFFFFull);
  msg.interval = policy_.Next(detector_.period(), searching());
  return msg;
}

std::optional<optimizer::Stats> Leader::StatsOf(uint64_t workload) const {
  auto it = work_.find(workload);
  if (it == work_.end() || !it->second.search.has_value()) return std::nullopt;
  return it->second.search->stats();
}

}  // namespace ccltune
