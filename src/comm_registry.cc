// The communicator registry and its per-thread lookup cache (see comm_registry.hpp).
#include "src/comm_registry.hpp"

#include "src/comm_state.hpp"

namespace ccltune {
namespace {

struct Cache {
  const CommRegistry* registry = nullptr;
  ncclComm_t comm = nullptr;
  std::shared_ptr<CommState> cs;  // owned, so a removed state outlives a stale entry until refreshed
  uint64_t epoch = 0;
};
thread_local Cache t_cache;

}  // namespace

void CommRegistry::Add(ncclComm_t comm, std::shared_ptr<CommState> cs) {
  std::lock_guard<std::mutex> lock(mu_);
  comms_[comm] = std::move(cs);
  epoch_.fetch_add(1, std::memory_order_release);
}

std::shared_ptr<CommState> CommRegistry::Remove(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = comms_.find(comm);
  if (it == comms_.end()) return nullptr;
  std::shared_ptr<CommState> cs = std::move(it->second);
  comms_.erase(it);
  epoch_.fetch_add(1, std::memory_order_release);
  return cs;
}

CommState* CommRegistry::Find(ncclComm_t comm) {
  Cache& c = t_cache;
  const uint64_t epoch = epoch_.load(std::memory_order_acquire);
  if (c.registry == this && c.comm == comm && c.epoch == epoch) return c.cs.get();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = comms_.find(comm);
  c.registry = this;
  c.comm = comm;
  c.cs = it == comms_.end() ? nullptr : it->second;
  c.epoch = epoch_.load(std::memory_order_relaxed);
  return c.cs.get();
}

std::shared_ptr<CommState> CommRegistry::FindShared(ncclComm_t comm) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = comms_.find(comm);
  return it == comms_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<CommState>> CommRegistry::Live() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<CommState>> out;
  out.reserve(comms_.size());
  for (const auto& [c, cs] : comms_) out.push_back(cs);
  return out;
}

}  // namespace ccltune
