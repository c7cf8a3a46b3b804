// coordinator: CommCoordinator, one rank's protocol state for one communicator (DESIGN.md §4). Every
// decision below depends only on the unit count and on reduced words that every rank received, so
// every rank takes it identically; nothing here may depend on timing or on rank-local state other
// than the flags this rank contributes.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/coordinator.hpp"

namespace ccltune::coordinator {

CommCoordinator::CommCoordinator(int rank, std::unique_ptr<Transport> transport, Hooks hooks, absl::Duration warn_after)
    : rank_(rank), transport_(std::move(transport)), hooks_(std::move(hooks)), warn_after_(warn_after) {}

ScheduleBook::Call CommCoordinator::ConfigFor(uint64_t workload, bool capturing, bool hold) {
  if (!tuning_) return {};
  if (capturing) return {book_.Incumbent(workload).value_or(Config{}), false};
  return book_.Next(workload, hold).value_or(ScheduleBook::Call{});
}

void CommCoordinator::Deliver(const Window& w, const Payload& reduced) {
  if (!hooks_.on_samples || w.n + w.early_n == 0) return;
  absl::StatusOr<std::vector<std::optional<CarriedSample>>> s = DecodeSamples(reduced.samples, w.n + w.early_n);
  // Carried timings steer only the leader's search, never a schedule every rank applies: a slot that
  // does not decode is dropped with the rest of its sync (nothing to stop), and its calls stay unmeasured.
  if (!s.ok()) return;
  // Handed on in runs of consecutive calls: the window less the calls that came early, then the early copies
  // every rank had the timing of (not idle: an idle mark comes with the window, where the leader counts it).
  std::vector<std::optional<CarriedSample>> run;
  uint64_t run_first = 0;
  bool window = true;
  auto flush = [&] {
    if (!run.empty()) hooks_.on_samples(run_first, run, window);
    run.clear();
  };
  auto emit = [&](uint64_t seq, const std::optional<CarriedSample>& c) {
    if (run.empty() || seq != run_first + run.size()) flush(), run_first = seq;
    run.push_back(c);
  };
  for (int i = 0; i < w.n; ++i) {
    const uint64_t seq = w.first + static_cast<uint64_t>(i);
    if (came_early_.erase(seq) == 0) emit(seq, (*s)[static_cast<size_t>(i)]);
  }
  flush();
  window = false;
  for (int i = 0; i < w.early_n; ++i) {
    const std::optional<CarriedSample>& c = (*s)[static_cast<size_t>(w.n + i)];
    if (!c || c->idle || c->not_yet) continue;
    const uint64_t seq = w.early_first + static_cast<uint64_t>(i);
    // Copied twice (this interval's calls, then again as the calls before id - 1): handed on once.
    if (!came_early_.insert(seq).second) continue;
    emit(seq, c);
  }
  flush();
}

void CommCoordinator::HarvestSamples() {
  while (!undelivered_.empty()) {
    Payload reduced;
    absl::StatusOr<bool> done = transport_->Poll(undelivered_.front().sync_id, &reduced);
    if (!done.ok() || !*done) return;
    Deliver(undelivered_.front(), reduced);
    undelivered_.pop_front();
  }
}

absl::Status CommCoordinator::OnUnitComplete(void* stream) {
  ++units_;
  if (!syncing_) return absl::OkStatus();
  const SyncCadence::Actions actions = cadence_.OnUnitComplete(units_);
  absl::Status first = absl::OkStatus();
  if (actions.apply) first = Apply(*actions.apply);
  if (!actions.issue || !syncing_) return first;

  // A rank never skips a sync: the others would wait for it forever. A leader message that cannot be
  // encoded becomes an empty one with the error flag raised, which stops tuning on every rank.
  const uint64_t id = *actions.issue;
  book_.NewInterval();
#if CCLTUNE_PLANTED_BUG_SKIP_SYNC
  // PLANTED BUG (negative control, ccltune_coordinator_planted_skip_sync only): rank 1 skips sync 3,
  // which every other rank issues; its next collective then meets their sync op.
  if (rank_ == 1 && id == 3) return first;
#endif
  timed_at_issue_[id] = timed_calls_;
  LeaderMessage msg;
  if (is_leader()) HarvestSamples();  // every timing that came back reaches the search before it plans
  if (is_leader() && hooks_.build_message) msg = hooks_.build_message(id);
  Payload payload;
  payload.extended = ExtendedSync(id);
  MoreWords* more = payload.extended ? &payload.more : nullptr;
  absl::StatusOr<Words> words = Encode(is_leader() ? &msg : nullptr, id, flags_, kProtocolVersion, more);
  if (!words.ok()) {
    if (first.ok()) first = words.status();
    flags_.saw_error = true;
    const LeaderMessage empty;
    words = Encode(is_leader() ? &empty : nullptr, id, flags_, kProtocolVersion, more);
  }
  if (words.ok()) {
    payload.base = *words;
    if (payload.extended) {
      // The timed calls issued before sync point id - kLag that no sync carried yet: the apply just
      // above waited for that sync, which every rank issued after them on its stream, so every rank has
      // their timings (a window reaching later calls would find them still running on a rank whose
      // host runs ahead of its GPU, and lose them). Every rank counts the same timed calls, so every
      // rank picks the same window.
      auto prev = timed_at_issue_.find(id - kLag);
      const uint64_t upto = prev != timed_at_issue_.end() ? prev->second : carried_;
      Window w{id, carried_, static_cast<int>(std::min<uint64_t>(kSampleSlots, upto > carried_ ? upto - carried_ : 0))};
      carried_ += static_cast<uint64_t>(w.n);
      // The free slots carry early copies of the calls issued before sync point id - 1 (one interval sooner than
      // their window): where every rank has their timings (a loop that waits for its GPU once per iteration, say),
      // they reach the leader an interval sooner. Every rank counts the same calls, so every rank picks the same.
      w.early_first = std::max(carried_, early_next_);
      auto last = timed_at_issue_.find(id - 1);
      const uint64_t early_upto = std::max(w.early_first, last != timed_at_issue_.end() ? last->second : w.early_first);
      const uint64_t free_slots = kSampleSlots - static_cast<uint64_t>(w.n);
      uint64_t early_n = std::min(free_slots, early_upto - w.early_first);
      early_next_ = w.early_first + early_n;
      // From version 7 on, the slots still free after those carry copies of this interval's calls too (issued since
      // sync point id - 1): where every rank's GPU finished them by now (the loop waited for its GPU since), they
      // reach the leader two intervals before their window. Their copies are made again at the next sync (early_next_
      // stays), so a call that some rank had not finished yet keeps the chance version 6 gave it.
      if (early_next_ == early_upto) early_n += std::min(free_slots - early_n, timed_calls_ - early_upto);
      w.early_n = static_cast<int>(early_n);
      if (hooks_.fill_samples) {
        if (w.n > 0) hooks_.fill_samples(w.first, w.n, 0, false, &payload.samples);
        if (w.early_n > 0) hooks_.fill_samples(w.early_first, w.early_n, w.n, true, &payload.samples);
      }
      if (is_leader() && w.n + w.early_n > 0) undelivered_.push_back(w);
      timed_at_issue_.erase(id - kLag);
    }
    if (absl::Status s = transport_->Issue(id, payload, stream); !s.ok()) {
      // Only reachable when the communicator itself failed (the sync op runs on it), where the user's
      // own next collective fails too; there is no payload to agree on any more, so stop locally.
      tuning_ = false;
      syncing_ = false;
      book_.Clear();
      if (hooks_.on_stop) {
        hooks_.on_stop(
            absl::StrCat("tuning stopped at unit ", units_, ": issuing sync ", id, " failed: ", s.message()));
      }
      if (first.ok()) first = s;
    }
  }
  return first;
}

absl::Status CommCoordinator::Apply(uint64_t sync_id) {
  Payload reduced;
  absl::Duration waited = absl::ZeroDuration();
  absl::Status st;
  // Never give up and never go on without the payload: a rank that did would diverge from the others.
  // A long wait is reported (loudly, by the hook) and the wait resumes.
  while (true) {
    st = transport_->Wait(sync_id, &reduced, warn_after_);
    if (!absl::IsDeadlineExceeded(st)) break;
    waited += warn_after_;
    if (hooks_.on_slow_wait) hooks_.on_slow_wait(sync_id, waited);
  }

  std::string reason;
  absl::StatusOr<Delivered> d;
  if (!st.ok()) {
    // As for Issue above: only when the communicator failed; the reason is then rank-local.
    reason = absl::StrCat("waiting for sync ", sync_id, " failed: ", st.message());
  } else if (d = Decode(reduced.base, reduced.extended ? &reduced.more : nullptr); !d.ok()) {
    reason = absl::StrCat("sync ", sync_id, " payload rejected: ", d.status().message());
    st = d.status();
  } else if (d->sync_id != sync_id) {
    reason = absl::StrCat("sync ", sync_id, " delivered the payload of sync ", d->sync_id);
    st = absl::DataLossError(reason);
  } else if (d->any_cannot_tune) {
    reason = absl::StrCat("a rank cannot tune (raised by sync ", sync_id, ")");
  } else if (d->any_error) {
    reason = absl::StrCat("a rank saw an error (raised by sync ", sync_id, ")");
  } else if (d->message.stop_tuning) {
    reason = absl::StrCat("the leader stopped tuning (sync ", sync_id, ")");
  }
  if (!reason.empty()) {
    tuning_ = false;
    syncing_ = false;
    book_.Clear();
    if (hooks_.on_stop) hooks_.on_stop(absl::StrCat("tuning stopped at unit ", units_, ": ", reason));
    return st;
  }

  // The carried timings of this sync, if the leader did not harvest them earlier.
  while (!undelivered_.empty() && undelivered_.front().sync_id <= sync_id) {
    if (undelivered_.front().sync_id == sync_id) Deliver(undelivered_.front(), reduced);
    undelivered_.pop_front();
  }
  for (const WorkloadUpdate& u : d->message.updates) {
#if CCLTUNE_PLANTED_BUG_LATE_APPLY
    // PLANTED BUG (negative control, ccltune_coordinator_planted_late only): rank 1 applies each update
    // one call late, by serving the old schedule's config once before the new schedule starts.
    if (rank_ == 1) {
      WorkloadUpdate late = u;
      late.entries.insert(late.entries.begin(), ScheduleEntry{book_.Incumbent(u.workload).value_or(Config{}), 1});
      const std::vector<ScheduleEntry> dropped = book_.Apply(late);
      if (hooks_.on_update) hooks_.on_update(u, dropped);
      continue;
    }
#endif
    const std::vector<ScheduleEntry> dropped = book_.Apply(u);
    if (hooks_.on_update) hooks_.on_update(u, dropped);
  }
  cadence_.SetDeliveredInterval(sync_id, d->message.interval);
  cadence_.SetDeliveredPeriod(d->message.period);
  settle_ = d->message.settle;
  return absl::OkStatus();
}

}  // namespace ccltune::coordinator
