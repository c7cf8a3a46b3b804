// The communicators ccltune knows, by NCCL handle. Every collective looks its communicator up, so the
// lookup has a fast path: a per-thread cache of the last handle, valid while the registry's epoch (bumped
// by every add and remove) is unchanged; only a miss takes the lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "nccl.h"

namespace ccltune {

class CommState;

class CommRegistry {
 public:
  void Add(ncclComm_t comm, std::shared_ptr<CommState> cs);
  // Removes and returns the state (nullptr if unknown).
  std::shared_ptr<CommState> Remove(ncclComm_t comm);
  // The state of `comm`, or nullptr. The pointer stays valid until `comm` is destroyed.
  CommState* Find(ncclComm_t comm);
  std::shared_ptr<CommState> FindShared(ncclComm_t comm) const;
  std::vector<std::shared_ptr<CommState>> Live() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<ncclComm_t, std::shared_ptr<CommState>> comms_;
  std::atomic<uint64_t> epoch_{1};
};

}  // namespace ccltune
