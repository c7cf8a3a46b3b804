// NcclTransport: what one sync op puts on the user's stream, in order, and that the reduced words come
// back. A Device that records every stream operation (host memory stands in for device memory; the
// copies happen at once, so the fake all-reduce is the identity of one rank).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/comm_state.hpp"

namespace ccltune {
namespace {

using ::testing::ElementsAre;

class RecordingDevice final : public executor::Device {
 public:
  struct Op {
    std::string what;
    const void* dst = nullptr;
    size_t bytes = 0;
    executor::Stream stream = nullptr;
  };
  std::vector<Op> ops;
  std::vector<std::pair<char*, size_t>> device_allocs;
  bool events_done = true;  // false: no recorded event ever completes (a communicator that failed)

  executor::Backend backend() const override { return executor::Backend::kSimulated; }
  const char* name() const override { return "recording"; }
  absl::Status SetDevice(int) override { return absl::OkStatus(); }
  absl::StatusOr<int> DeviceCount() override { return 1; }
  absl::StatusOr<void*> Alloc(size_t bytes) override {
    char* p = static_cast<char*>(std::calloc(1, bytes));
    device_allocs.emplace_back(p, bytes);
    return p;
  }
  void Free(void* p) override { std::free(p); }
  absl::StatusOr<void*> AllocHost(size_t bytes) override { return std::calloc(1, bytes); }
  void FreeHost(void* p) override { std::free(p); }
  absl::Status CopyToDeviceAsync(void* dst, const void* src, size_t bytes, executor::Stream s) override {
    std::memcpy(dst, src, bytes);
    ops.push_back({"h2d", dst, bytes, s});
    return absl::OkStatus();
  }
  absl::Status CopyToHostAsync(void* dst, const void* src, size_t bytes, executor::Stream s) override {
    std::memcpy(dst, src, bytes);
    ops.push_back({"d2h", src, bytes, s});
    return absl::OkStatus();
  }
  absl::Status MemsetAsync(void* dst, uint8_t value, size_t bytes, executor::Stream s) override {
    std::memset(dst, value, bytes);
    ops.push_back({"memset", dst, bytes, s});
    return absl::OkStatus();
  }
  absl::StatusOr<executor::Stream> CreateStream() override { return absl::UnimplementedError("unused"); }
  void DestroyStream(executor::Stream) override {}
  absl::Status StreamSynchronize(executor::Stream) override { return absl::OkStatus(); }
  absl::StatusOr<executor::Event> CreateEvent() override { return reinterpret_cast<executor::Event>(++events_); }
  void DestroyEvent(executor::Event) override {}
  absl::Status RecordEvent(executor::Event, executor::Stream s) override {
    ops.push_back({"record", nullptr, 0, s});
    return absl::OkStatus();
  }
  absl::StatusOr<executor::EventState> QueryEvent(executor::Event) override {
    return events_done ? executor::EventState::kDone : executor::EventState::kPending;
  }
  absl::StatusOr<double> ElapsedUs(executor::Event, executor::Event) override { return 0.0; }
  bool IsCapturing(executor::Stream) override { return false; }

 private:
  uintptr_t events_ = 0;
};

std::vector<std::string> Names(const std::vector<RecordingDevice::Op>& ops) {
  std::vector<std::string> v;
  for (const auto& op : ops) v.push_back(op.what);
  return v;
}

TEST(NcclTransport, SyncOpEndsWithAKernelAfterTheCopyAndReturnsTheReducedWords) {
  RecordingDevice dev;
  executor::Stream user = reinterpret_cast<executor::Stream>(0x51);
  {
    std::vector<int> reduced_words;
    NcclTransport t(&dev, [&](void* buf, int words, void* stream) {
      dev.ops.push_back({"allreduce", buf, 0, stream});
      reduced_words.push_back(words);
      return ncclSuccess;
    });
    ASSERT_TRUE(t.Init().ok());
    ASSERT_EQ(dev.device_allocs.size(), 1u);
    const char* base = dev.device_allocs[0].first;
    const size_t slot_bytes = coordinator::kExtendedWords * sizeof(uint64_t);
    const size_t slots_end = NcclTransport::kSlots * slot_bytes;

    for (uint64_t id = 0; id < 2 * NcclTransport::kSlots; ++id) {
      dev.ops.clear();
      coordinator::Payload p;
      p.extended = coordinator::ExtendedSync(id);
      for (size_t i = 0; i < p.base.size(); ++i) p.base[i] = id * 1000 + i;
      if (p.extended)
        for (size_t i = 0; i < p.more.size(); ++i) p.more[i] = id * 3000 + i;
      for (size_t i = 0; i < p.samples.size(); ++i) p.samples[i] = id * 7 + i;
      ASSERT_TRUE(t.Issue(id, p, user).ok());
      // Everything on the user's stream; the user's next kernel follows a memset, never the copy.
      ASSERT_THAT(Names(dev.ops), ElementsAre("h2d", "allreduce", "d2h", "memset", "record"));
      for (const auto& op : dev.ops) EXPECT_EQ(op.stream, user) << op.what;
      // Base-size syncs copy and reduce 64 words, extended ones 320.
      EXPECT_EQ(reduced_words.back(), p.words());
      EXPECT_EQ(dev.ops[0].bytes, static_cast<size_t>(p.words()) * sizeof(uint64_t));
      // The memset writes past every slot: it cannot touch a sync op's words.
      const char* m = static_cast<const char*>(dev.ops[3].dst);
      EXPECT_GE(m, base + slots_end);
      EXPECT_LE(m + dev.ops[3].bytes, base + dev.device_allocs[0].second);
      // The all-reduce and both copies use this sync's slot.
      const char* slot = base + (id % NcclTransport::kSlots) * slot_bytes;
      EXPECT_EQ(dev.ops[0].dst, slot);
      EXPECT_EQ(dev.ops[1].dst, slot);
      EXPECT_EQ(dev.ops[2].dst, slot);
      coordinator::Payload out;
      ASSERT_TRUE(*t.Poll(id, &out));
      EXPECT_EQ(out.base, p.base);
      ASSERT_TRUE(t.Wait(id, &out, absl::Seconds(1)).ok());
      EXPECT_EQ(out.base, p.base);
      EXPECT_EQ(out.extended, p.extended);
      if (p.extended) {
        EXPECT_EQ(out.more, p.more);
        EXPECT_EQ(out.samples, p.samples);
      }
    }
    EXPECT_EQ(reduced_words.front(), coordinator::kPayloadWords);  // sync 0: the agreement point, base size
    EXPECT_EQ(reduced_words.back(), coordinator::kExtendedWords);
  }
}

// A peer killed while a sync op is on its way: the op never completes on the others. The wait returns
// NCCL's asynchronous error instead of holding the user's call forever (NCCL alone would have returned
// it, and the job's watchdog would have seen the error); a slow op on a healthy communicator is still
// waited for (DeadlineExceeded: the coordinator reports it and waits on).
TEST(NcclTransport, AWaitOnAFailedCommunicatorReturnsItsError) {
  RecordingDevice dev;
  dev.events_done = false;
  ncclResult_t async = ncclSuccess;
  int asked = 0;
  NcclTransport t(
      &dev, [](void*, int, void*) { return ncclSuccess; },
      [&] {
        ++asked;
        return async;
      });
  ASSERT_TRUE(t.Init().ok());
  coordinator::Payload p;
  ASSERT_TRUE(t.Issue(0, p, nullptr).ok());
  coordinator::Payload out;
  absl::Status st = t.Wait(0, &out, absl::Milliseconds(20));
  EXPECT_TRUE(absl::IsDeadlineExceeded(st)) << st;
  EXPECT_GT(asked, 0);
  async = ncclInProgress;  // a non-blocking communicator still initializing: not a failure
  EXPECT_TRUE(absl::IsDeadlineExceeded(t.Wait(0, &out, absl::Milliseconds(5))));
  async = ncclRemoteError;
  const absl::Time start = absl::Now();
  st = t.Wait(0, &out, absl::Seconds(30));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE(absl::IsUnavailable(st)) << st;
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("communicator failed"));
  dev.events_done = true;  // the transport's destructor waits (10 s at most) for its syncs to finish
}

}  // namespace
}  // namespace ccltune
