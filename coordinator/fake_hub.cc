// coordinator: FakeHub, the in-process Transport for tests: n endpoints (usually one per thread) whose
// contributions are combined by element-wise MAX, like the in-band all-reduce(MAX) of the real one.
// Locks are std::mutex / std::condition_variable (pthread underneath), which ThreadSanitizer sees; it
// cannot see the lock operations of an absl::Mutex from an Abseil not built with it.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "coordinator/coordinator.hpp"

namespace ccltune::coordinator {
namespace {

struct HubState {
  struct Sync {
    Words reduced{};
    std::vector<bool> contributed;
    std::vector<bool> collected;
    int contributions = 0;
    int collections = 0;
  };
  explicit HubState(int n) : n(n) {}

  Sync& Get(uint64_t sync_id) {  // mu held
    Sync& s = syncs[sync_id];
    if (s.contributed.empty()) {
      s.contributed.assign(n, false);
      s.collected.assign(n, false);
    }
    return s;
  }

  const int n;
  std::mutex mu;                     // guards syncs and drops
  std::condition_variable complete;  // notified when a sync has all n contributions
  std::map<uint64_t, Sync> syncs;
  std::set<std::pair<int, uint64_t>> drops;
};

class FakeEndpoint final : public Transport {
 public:
  FakeEndpoint(std::shared_ptr<HubState> shared, int rank) : shared_(std::move(shared)), rank_(rank) {}

  absl::Status Issue(uint64_t sync_id, const Words& contribution, void* /*stream*/) override {
    if (absl::Status s = CheckRank(); !s.ok()) return s;
    std::scoped_lock lock(shared_->mu);
    if (shared_->drops.erase({rank_, sync_id}) > 0) return absl::OkStatus();  // injected fault: lost
    HubState::Sync& s = shared_->Get(sync_id);
    if (s.contributed[rank_]) {
      return absl::FailedPreconditionError(absl::StrCat("FakeHub: rank ", rank_, " issued sync ", sync_id, " twice"));
    }
    s.contributed[rank_] = true;
    for (int i = 0; i < kPayloadWords; ++i) s.reduced[i] = std::max(s.reduced[i], contribution[i]);
    if (++s.contributions == shared_->n) shared_->complete.notify_all();
    return absl::OkStatus();
  }

  absl::Status Wait(uint64_t sync_id, Words* reduced, absl::Duration timeout) override {
    if (absl::Status s = CheckRank(); !s.ok()) return s;
    std::unique_lock lock(shared_->mu);
    auto complete = [&] { return shared_->Get(sync_id).contributions >= shared_->n; };
    // A year stands for an infinite timeout: steady_clock::now() + nanoseconds::max() would overflow.
    const auto wait = absl::ToChronoNanoseconds(std::min(timeout, absl::Hours(24 * 365)));
    if (!shared_->complete.wait_for(lock, wait, complete)) {
      return absl::DeadlineExceededError(
          absl::StrCat("FakeHub: rank ", rank_, " waited ", absl::FormatDuration(timeout), " for sync ", sync_id));
    }
    auto it = shared_->syncs.find(sync_id);
    *reduced = it->second.reduced;
    if (!it->second.collected[rank_]) {
      it->second.collected[rank_] = true;
      // Forget a sync once every rank has collected it, so a long test does not grow without bound.
      if (++it->second.collections == shared_->n) shared_->syncs.erase(it);
    }
    return absl::OkStatus();
  }

 private:
  absl::Status CheckRank() const {
    if (rank_ < 0 || rank_ >= shared_->n) {
      return absl::InvalidArgumentError(absl::StrCat("FakeHub: rank ", rank_, " out of 0..", shared_->n - 1));
    }
    return absl::OkStatus();
  }
  std::shared_ptr<HubState> shared_;
  int rank_;
};

}  // namespace

struct FakeHub::Shared : HubState {
  using HubState::HubState;
};

FakeHub::FakeHub(int n) : shared_(std::make_shared<Shared>(n)) {}
FakeHub::~FakeHub() = default;

std::unique_ptr<Transport> FakeHub::Endpoint(int rank) { return std::make_unique<FakeEndpoint>(shared_, rank); }

// One-shot: the next contribution of `rank` to `sync_id` is lost (the others then wait on it).
void FakeHub::DropContribution(int rank, uint64_t sync_id) {
  std::scoped_lock lock(shared_->mu);
  shared_->drops.insert({rank, sync_id});
}

}  // namespace ccltune::coordinator
