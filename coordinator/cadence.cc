// coordinator: when syncs happen. SyncCadence places the sync points (identically on every rank, from
// delivered data only); IterationDetector and IntervalPolicy are the leader's choice of the next
// interval (any kLag of them in a row at least one training iteration long, DESIGN.md §4 "No new deadlock";
// docs/how-it-works.md "The host wait and deadlock").
#include <algorithm>
#include <limits>

#include "coordinator/coordinator.hpp"

namespace ccltune::coordinator {

// Contract: called once per unit with units = 1, 2, 3, ... (every rank counts the same units).
// I_j for j >= kLag is only known once payload j - kLag has been applied, which happens after this
// returned the actions of sync point s_j; so the step from s_j to s_{j+1} is taken lazily, at the
// next call. Until then next_sync_unit() still reports s_j.
SyncCadence::Actions SyncCadence::OnUnitComplete(uint64_t units) {
  Actions a;
  if (next_sync_id_ > 0 && units > next_sync_unit_) {
    const uint64_t j = next_sync_id_ - 1;  // the sync point just passed
    uint64_t interval = kInitialInterval;
    if (j >= static_cast<uint64_t>(kLag)) {
      // A missing (or zero) delivered interval is a programming error (the apply was skipped); every
      // rank skips the same applies, so the fallback to kInitialInterval stays identical on all ranks.
      auto it = interval_for_.find(j);
      if (it != interval_for_.end()) {
        if (it->second > 0) interval = it->second;
        interval_for_.erase(it);
      }
    }
    if (boost_left_ > 0) {
      interval = std::min(interval, BoostCap());
      --boost_left_;
    }
    const uint64_t room = std::numeric_limits<uint64_t>::max() - next_sync_unit_;
    next_sync_unit_ += std::min(interval, room);  // saturates: a huge interval means no further sync
  }
  if (new_workload_) {
    new_workload_ = false;
    boost_left_ = kLag + 1;
    // Pull the pending sync point in (never behind this unit: then it is this unit).
    if (next_sync_id_ > 0 && next_sync_unit_ > units) next_sync_unit_ = std::min(next_sync_unit_, units + BoostCap());
  }
  if (units == next_sync_unit_ && next_sync_unit_ != std::numeric_limits<uint64_t>::max()) {
    const uint64_t j = next_sync_id_++;
    if (j >= static_cast<uint64_t>(kLag)) a.apply = j - kLag;
    a.issue = j;
  }
  return a;
}

void SyncCadence::SetDeliveredInterval(uint64_t sync_id, uint64_t interval) {
  interval_for_[sync_id + kLag] = interval;
}

// Sticky period: once found, P is kept while every new key equals the one P before it (O(1) per key),
// so the last 3P keys stay three repeats; a run of identical keys inside an iteration therefore cannot
// shrink P below the iteration. A mismatch drops P. While no period is known, the search (smallest P
// first, each candidate abandoned at its first mismatch from the end, O(history/3) at worst) runs over
// every candidate on every kSearchStride-th key only, so the per-call cost on the leader stays small;
// on every other key it tries the periods up to kEveryKeyPeriods (a few dozen comparisons). A short
// period is thus found as soon as it has repeated three times: a late one would keep the intervals at
// kInitialInterval for several more of them (the period reaches the cadence kLag syncs after the
// leader reads it), and a stride that divides the period would try only one phase of it.
namespace {
constexpr uint64_t kSearchStride = 16;
constexpr size_t kEveryKeyPeriods = 64;
}  // namespace

void IterationDetector::Observe(uint64_t workload) {
  ++observed_;
  seq_.push_back(workload);
  if (seq_.size() > history_) seq_.pop_front();
  const size_t n = seq_.size();
  if (period_ != 0) {
    if (n > period_ && seq_[n - 1] == seq_[n - 1 - period_]) return;
    period_ = 0;
  }
  Detect(observed_ % kSearchStride == 0 ? history_ : kEveryKeyPeriods);
}

void IterationDetector::Detect(size_t limit) {
  const size_t n = seq_.size();
  const size_t max_p = std::min({history_, n, 3 * limit}) / 3;
  for (size_t p = 1; p <= max_p; ++p) {
    bool repeats = true;
    for (size_t i = n; i-- > n - 2 * p;) {
      if (seq_[i] != seq_[i - p]) {
        repeats = false;
        break;
      }
    }
    if (repeats) {
      period_ = p;
      return;
    }
  }
  period_ = 0;
}

uint64_t IterationDetector::ShiftToRunEnd(uint64_t ahead) const {
  const size_t n = seq_.size();
  const uint64_t p = period_;
  if (p < 2 || n <= p) return 0;
  // The workload k units after the last one observed: a whole number of periods earlier in the history.
  auto at = [&](uint64_t k) {
    const uint64_t m = k % p;
    return m == 0 ? seq_[n - 1] : seq_[n - 1 + m - p];
  };
  for (uint64_t d = 0; d < p; ++d)
    if (at(ahead + d) != at(ahead + d + 1)) return d;
  return 0;
}

namespace {
uint64_t RoundUp(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }
}  // namespace

// The floor always wins over max_units: kLag intervals in a row shorter than an iteration are what could make
// the host wait deadlock. Converged, it is one iteration (at least min_units, a multiple of the period). While
// something is searched it is half an iteration, the complement of the last interval: the wait at sync point
// k + kLag for sync k then still targets a sync issued at least one iteration earlier, and the loop's host
// synchronisation, which comes once in every iteration, lies between the two.
uint64_t IntervalPolicy::Next(uint64_t period, bool searching, uint64_t cap, bool settle) {
  static_assert(kLag == 2, "the half-iteration floor spans one iteration in two intervals");
  const uint64_t fewest = settle && period == 1 ? std::max(o_.min_units, o_.settle_units) : o_.min_units;
  uint64_t floor =
      period == 0 ? std::max<uint64_t>(o_.unknown_period_units, 1) : RoundUp(std::max(fewest, period), period);
  if (searching && period >= 2 && fewest <= period / 2)
    floor = std::max({fewest, period / 2, period - std::min(last_, period)});
  uint64_t next = floor;
  if (!searching && last_ != 0) {
    const uint64_t doubled = last_ > std::numeric_limits<uint64_t>::max() / 2 ? last_ : 2 * last_;
    const uint64_t top = cap > 0 ? std::min(cap, o_.max_units) : o_.max_units;
    next = std::max(floor, std::min(doubled, top));
    if (period != 0 && next > floor) {
      next = RoundUp(next, period);  // the period may have changed since last_
      if (next > top) next = std::max(floor, top / period * period);
    }
  }
  last_ = next;
  return next;
}

}  // namespace ccltune::coordinator
