// The in-band transport of sync payloads, and the communicator state's teardown.
#include "src/comm_state.hpp"

#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"

// LeakSanitizer builds (scripts/sanitize.sh) are told which blocks an abort leaks on purpose, so that any
// other leak still fails a test. Only the simulated device's buffers are heap blocks that LSan tracks.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define CCLTUNE_HAVE_LSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)  // gcc
#define CCLTUNE_HAVE_LSAN 1
#endif
#ifdef CCLTUNE_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace ccltune {
namespace {
// Every slot holds an extended payload; base-size syncs use its first kPayloadWords words.
constexpr size_t kSlotWords = coordinator::kExtendedWords;
// An extended sync's words: the payload, the more record words, the carried timings.
constexpr size_t kMoreAt = coordinator::kPayloadWords;
constexpr size_t kSamplesAt = kMoreAt + coordinator::kMoreRecordWords;
constexpr size_t kSlotBytes = kSlotWords * sizeof(uint64_t);
// After the slots: the word the engine-switch memset writes (see Issue).
constexpr size_t kFenceBytes = 16;
}  // namespace

void NcclTransport::Leak() {
  leaked_ = true;
  // Aborted, not destroyed: a peer that failed may never complete our last sync op there.
  if (side_ && side_->release) side_->release(/*abort=*/true);
#ifdef CCLTUNE_HAVE_LSAN
  for (const void* p : {dev_, static_cast<void*>(host_in_), static_cast<void*>(host_out_)}) {
    if (p != nullptr) __lsan_ignore_object(p);
  }
  for (const auto* events : {&events_, &issued_after_}) {
    for (executor::Event e : *events) {
      if (e != nullptr) __lsan_ignore_object(e);
    }
  }
  if (side_ && side_->stream != nullptr) __lsan_ignore_object(side_->stream);
#endif
}

absl::Status NcclTransport::Init() {
  auto dev = device_->Alloc(kSlots * kSlotBytes + kFenceBytes);
  if (!dev.ok()) return dev.status();
  dev_ = *dev;
  auto in = device_->AllocHost(kSlots * kSlotBytes);
  if (!in.ok()) return in.status();
  host_in_ = static_cast<uint64_t*>(*in);
  auto out = device_->AllocHost(kSlots * kSlotBytes);
  if (!out.ok()) return out.status();
  host_out_ = static_cast<uint64_t*>(*out);
  for (auto& e : events_) {
    auto ev = device_->CreateEvent();
    if (!ev.ok()) return ev.status();
    e = *ev;
  }
  if (side_) {
    for (auto& e : issued_after_) {
      auto ev = device_->CreateEvent();
      if (!ev.ok()) return ev.status();
      e = *ev;
    }
  }
  return absl::OkStatus();
}

NcclTransport::~NcclTransport() {
  if (leaked_) return;  // after an abort nothing of ours may wait or touch the device
  // Destroy: our last sync ops must have completed before their buffers go.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool all_done = true;
  for (int s = 0; s < kSlots; ++s) {
    if (!slot_used_[s] || events_[s] == nullptr) continue;
    bool done = false;
    while (std::chrono::steady_clock::now() < deadline) {
      auto st = device_->QueryEvent(events_[s]);
      if (!st.ok() || *st == executor::EventState::kDone) {
        done = st.ok();
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    all_done = all_done && done;
  }
  if (side_) {
    // The side communicator goes first, with every rank (destroying a communicator is collective): a sync op
    // of ours still running there (a peer gone) leaves only an abort.
    if (side_->release) side_->release(/*abort=*/!all_done);
    if (side_->stream != nullptr) device_->DestroyStream(side_->stream);
  }
  for (const auto* events : {&events_, &issued_after_}) {
    for (executor::Event e : *events)
      if (e != nullptr) device_->DestroyEvent(e);
  }
  if (dev_ != nullptr) device_->Free(dev_);
  if (host_in_ != nullptr) device_->FreeHost(host_in_);
  if (host_out_ != nullptr) device_->FreeHost(host_out_);
}

absl::Status NcclTransport::Issue(uint64_t sync_id, const coordinator::Payload& contribution, void* stream) {
  const int s = static_cast<int>(sync_id % kSlots);
  const int words = contribution.words();
  const size_t bytes = static_cast<size_t>(words) * sizeof(uint64_t);
  uint64_t* in = host_in_ + s * kSlotWords;
  uint64_t* out = host_out_ + s * kSlotWords;
  void* buf = static_cast<char*>(dev_) + s * kSlotBytes;
  std::memcpy(in, contribution.base.data(), sizeof(coordinator::Words));
  if (contribution.extended) {
    std::memcpy(in + kMoreAt, contribution.more.data(), sizeof(coordinator::MoreWords));
    std::memcpy(in + kSamplesAt, contribution.samples.data(), sizeof(coordinator::SampleWords));
  }
  if (side_) {
    // After the calls issued so far on the user's stream, without making that stream wait for us.
    if (auto st = device_->RecordEvent(issued_after_[s], stream); !st.ok()) return st;
    if (auto st = device_->StreamWaitEvent(side_->stream, issued_after_[s]); !st.ok()) return st;
    stream = side_->stream;
  }
  if (auto st = device_->CopyToDeviceAsync(buf, in, bytes, stream); !st.ok()) return st;
  if (ncclResult_t r = all_reduce_max_(buf, words, stream); r != ncclSuccess) {
    return absl::InternalError(absl::StrCat("sync all-reduce failed: NCCL error ", static_cast<int>(r)));
  }
  if (auto st = device_->CopyToHostAsync(out, buf, bytes, stream); !st.ok()) return st;
  // A kernel after the copy: the first kernel that follows a copy on a stream starts late (the switch
  // from the copy engine), and without this one that is the user's next collective, whose timed sample
  // then grows by a fixed few µs. Measured on 2xH200, NCCL 2.28.9, reducescatter 1 and 4 MiB with a
  // sync op every 2 calls: the call after a sync op +3.3 to +4.4 µs over the other (median per config),
  // +0.2 to +0.4 µs with this memset, and the search's noise 0.07-0.09 -> 0.017-0.021. The side route's
  // stream runs no user kernel.
  if (!side_) {
    if (auto st = device_->MemsetAsync(static_cast<char*>(dev_) + kSlots * kSlotBytes, 0, kFenceBytes, stream);
        !st.ok()) {
      return st;
    }
  }
  if (auto st = device_->RecordEvent(events_[s], stream); !st.ok()) return st;
  slot_sync_[s] = sync_id;
  slot_used_[s] = true;
  slot_extended_[s] = contribution.extended;
  return absl::OkStatus();
}

int NcclTransport::Slot(uint64_t sync_id, absl::Status* st) const {
  const int s = static_cast<int>(sync_id % kSlots);
  if (!slot_used_[s] || slot_sync_[s] != sync_id) {
    *st = absl::FailedPreconditionError(absl::StrCat("sync ", sync_id, " was never issued here"));
    return -1;
  }
  return s;
}

void NcclTransport::Read(int s, coordinator::Payload* reduced) const {
  const uint64_t* out = host_out_ + s * kSlotWords;
  std::memcpy(reduced->base.data(), out, sizeof(coordinator::Words));
  reduced->extended = slot_extended_[s];
  if (reduced->extended) {
    std::memcpy(reduced->more.data(), out + kMoreAt, sizeof(coordinator::MoreWords));
    std::memcpy(reduced->samples.data(), out + kSamplesAt, sizeof(coordinator::SampleWords));
  } else {
    reduced->more.fill(0);
    reduced->samples.fill(0);
  }
}

absl::StatusOr<bool> NcclTransport::Poll(uint64_t sync_id, coordinator::Payload* reduced) {
  absl::Status bad;
  const int s = Slot(sync_id, &bad);
  if (s < 0) return bad;
  auto st = device_->QueryEvent(events_[s]);
  if (!st.ok()) return st.status();
  if (*st != executor::EventState::kDone) return false;
  Read(s, reduced);
  return true;
}

absl::Status NcclTransport::Wait(uint64_t sync_id, coordinator::Payload* reduced, absl::Duration timeout) {
  absl::Status bad;
  const int s = Slot(sync_id, &bad);
  if (s < 0) return bad;
  const absl::Time deadline = absl::Now() + timeout;
  int64_t sleep_us = 0;
  for (;;) {
    auto st = device_->QueryEvent(events_[s]);
    if (!st.ok()) return st.status();
    if (*st == executor::EventState::kDone) break;
    // ncclInProgress: a non-blocking communicator still initializing, not a failure.
    for (const AsyncErrorFn* f : {&async_error_, side_ ? &side_->async_error : nullptr}) {
      if (f == nullptr || !*f) continue;
      if (const ncclResult_t r = (*f)(); r != ncclSuccess && r != ncclInProgress) {
        return absl::UnavailableError(absl::StrCat("the ", f == &async_error_ ? "" : "side ",
                                                   "communicator failed (NCCL's asynchronous error ", r, "): sync ",
                                                   sync_id, " cannot complete"));
      }
    }
    if (absl::Now() >= deadline) return absl::DeadlineExceededError(absl::StrCat("sync ", sync_id, " not done"));
    // Back off from a yield to 1 ms: the wait normally targets a sync issued iterations ago.
    sleep_us = sleep_us == 0 ? 1 : std::min<int64_t>(sleep_us * 2, 1000);
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
  }
  Read(s, reduced);
  return absl::OkStatus();
}

CommState::~CommState() = default;

}  // namespace ccltune
