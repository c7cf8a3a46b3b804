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
    Payload reduced{};
    int words = -1;  // the size of the first contribution; another size fails the sync
    bool size_mismatch = false;
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

  absl::Status Issue(uint64_t sync_id, const Payload& contribution, void* /*stream*/) override {
    if (absl::Status s = CheckRank(); !s.ok()) return s;
    std::scoped_lock lock(shared_->mu);
    if (shared_->drops.erase({rank_, sync_id}) > 0) return absl::OkStatus();  // injected fault: lost
    HubState::Sync& s = shared_->Get(sync_id);
    if (s.contributed[rank_]) {
      return absl::FailedPreconditionError(absl::StrCat("FakeHub: rank ", rank_, " issued sync ", sync_id, " twice"));
    }
    s.contributed[rank_] = true;
    if (s.words < 0) s.words = contribution.words();
    if (s.words != contribution.words()) s.size_mismatch = true;
    s.reduced.extended = contribution.extended;
    for (int i = 0; i < kPayloadWords; ++i) s.reduced.base[i] = std::max(s.reduced.base[i], contribution.base[i]);
    if (contribution.extended) {
      for (int i = 0; i < kMoreRecordWords; ++i) s.reduced.more[i] = std::max(s.reduced.more[i], contribution.more[i]);
      for (int i = 0; i < kSampleWords; ++i)
        s.reduced.samples[i] = std::max(s.reduced.samples[i], contribution.samples[i]);
    }
    if (++s.contributions == shared_->n) shared_->complete.notify_all();
    return absl::OkStatus();
  }

  absl::StatusOr<bool> Poll(uint64_t sync_id, Payload* reduced) override {
    if (absl::Status s = CheckRank(); !s.ok()) return s;
    std::unique_lock lock(shared_->mu);
    auto it = shared_->syncs.find(sync_id);
    if (it == shared_->syncs.end() || it->second.contributions < shared_->n) return false;
    if (it->second.size_mismatch) return Mismatch(sync_id);
    *reduced = it->second.reduced;
    return true;
  }

  absl::Status Wait(uint64_t sync_id, Payload* reduced, absl::Duration timeout) override {
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
    if (it->second.size_mismatch) return Mismatch(sync_id);
    *reduced = it->second.reduced;
    if (!it->second.collected[rank_]) {
      it->second.collected[rank_] = true;
      // Forget a sync once every rank has collected it, so a long test does not grow without bound.
      if (++it->second.collections == shared_->n) shared_->syncs.erase(it);
    }
    return absl::OkStatus();
  }

 private:
  static absl::Status Mismatch(uint64_t sync_id) {
    return absl::DataLossError(absl::StrCat("FakeHub: sync ", sync_id,
                                            " had contributions of different sizes (a real all-reduce would hang)"));
  }
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
