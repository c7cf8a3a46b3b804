// executor: Timer, which times regions on streams with pooled event pairs. Regions are kept in the
// order they were begun; Harvest queries the oldest ones without blocking and stops at the first
// that is still in flight, so samples come out in call order and nothing ever synchronizes.
#include <algorithm>
#include <deque>
#include <utility>
#include <vector>

#include "executor/executor.hpp"

namespace ccltune::executor {

struct Timer::Impl {
  struct Pair {
    Event begin = nullptr;
    Event end = nullptr;
  };
  struct Region {
    Pair events;
    uint64_t tag = 0;
    bool ended = false;   // End was called (and recorded)
    bool failed = false;  // End could not be recorded: dropped at harvest
    bool idle = false;    // the stream was idle at Begin
  };

  Device* device;
  int max_pending;
  std::vector<Pair> free_pairs;  // created, idle
  std::deque<Region> regions;    // begun, not yet harvested, in order

  void Recycle(Pair p) { free_pairs.push_back(p); }
  void Destroy(Pair p) {
    if (p.begin) device->DestroyEvent(p.begin);
    if (p.end) device->DestroyEvent(p.end);
  }

  // A pair from the pool, growing it by one when it is empty (bounded by max_pending in Begin).
  bool Acquire(Pair* out) {
    if (!free_pairs.empty()) {
      *out = free_pairs.back();
      free_pairs.pop_back();
      return true;
    }
    absl::StatusOr<Event> b = device->CreateEvent();
    if (!b.ok()) return false;
    absl::StatusOr<Event> e = device->CreateEvent();
    if (!e.ok()) {
      device->DestroyEvent(*b);
      return false;
    }
    *out = Pair{*b, *e};
    return true;
  }
};

Timer::Timer(Device* device, int max_pending) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  impl_->max_pending = max_pending < 1 ? 1 : max_pending;
}

Timer::~Timer() {
  for (Impl::Region& r : impl_->regions) impl_->Destroy(r.events);
  for (Impl::Pair& p : impl_->free_pairs) impl_->Destroy(p);
}

bool Timer::Begin(Stream s, uint64_t tag) {
  Impl& im = *impl_;
  if (static_cast<int>(im.regions.size()) >= im.max_pending) return false;
  Impl::Pair pair;
  if (!im.Acquire(&pair)) return false;
  const bool idle = im.device->StreamIdle(s);  // before the start event, which would make it busy
  if (!im.device->RecordStartEvent(pair.begin, s).ok()) {
    im.Recycle(pair);
    return false;
  }
  im.regions.push_back(Impl::Region{pair, tag, false, false, idle});
  return true;
}

void Timer::End(Stream s) {
  Impl& im = *impl_;
  if (im.regions.empty() || im.regions.back().ended) return;  // no open region: nothing to close
  Impl::Region& r = im.regions.back();
  r.ended = true;
  r.failed = !im.device->RecordEvent(r.events.end, s).ok();
}

void Timer::Harvest(std::vector<Sample>* out) {
  Impl& im = *impl_;
  while (!im.regions.empty()) {
    Impl::Region& r = im.regions.front();
    if (!r.ended) return;  // still open: later regions wait behind it to keep call order
    if (!r.failed) {
      absl::StatusOr<EventState> end_state = im.device->QueryEvent(r.events.end);
      if (end_state.ok() && *end_state == EventState::kPending) return;
      if (end_state.ok()) {
        // The begin event normally completes first; a region begun on another stream may not have.
        absl::StatusOr<EventState> begin_state = im.device->QueryEvent(r.events.begin);
        if (begin_state.ok() && *begin_state == EventState::kPending) return;
        if (begin_state.ok()) {
          absl::StatusOr<double> us = im.device->ElapsedUs(r.events.begin, r.events.end);
          if (us.ok() && out != nullptr) out->push_back(Sample{r.tag, *us, r.idle});
          if (us.ok()) {
            im.Recycle(r.events);
            im.regions.pop_front();
            continue;
          }
        }
      }
    }
    // Failed record, query or elapsed time: drop the sample and the events, which may be unusable.
    im.Destroy(r.events);
    im.regions.pop_front();
  }
}

bool IdleFilter::Mark(bool idle, bool by_min) {
  const bool mark = idle && !by_min && share_ < kMaxShare;
  const double weight = std::max(kWeight, 1.0 / (seen_ + 1));
  if (weight > kWeight) ++seen_;
  share_ += weight * ((idle ? 1.0 : 0.0) - share_);
  return mark;
}

int Timer::pending() const { return static_cast<int>(impl_->regions.size()); }

}  // namespace ccltune::executor
