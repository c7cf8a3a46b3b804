// executor GPU tests (label gpu): the CUDA backend on a real device: context, memory, copies,
// events and Timer. Skipped with a message where no GPU or driver is present.
#include <cstdint>
#include <vector>

#include "executor/executor.hpp"
#include "gtest/gtest.h"

namespace ccltune::executor {
namespace {

class CudaGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Device>> dev = OpenCudaDevice();
    if (!dev.ok()) GTEST_SKIP() << "no usable GPU here (" << dev.status() << "): CUDA backend tests skipped";
    device_ = *std::move(dev);
    ASSERT_TRUE(device_->SetDevice(0).ok());
  }
  std::unique_ptr<Device> device_;
};

TEST_F(CudaGpuTest, CopiesRoundTrip) {
  EXPECT_EQ(device_->backend(), Backend::kCuda);
  EXPECT_STRNE(device_->name(), "");
  auto count = device_->DeviceCount();
  ASSERT_TRUE(count.ok());
  EXPECT_GE(*count, 1);
  const size_t n = 1 << 20;
  auto s = device_->CreateStream();
  auto d = device_->Alloc(n);
  auto h = device_->AllocHost(n);
  ASSERT_TRUE(s.ok() && d.ok() && h.ok());
  std::vector<uint8_t> src(n);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>(i * 13);
  ASSERT_TRUE(device_->CopyToDeviceAsync(*d, src.data(), n, *s).ok());
  ASSERT_TRUE(device_->MemsetAsync(*d, 0x5A, 16, *s).ok());
  ASSERT_TRUE(device_->CopyToHostAsync(*h, *d, n, *s).ok());
  ASSERT_TRUE(device_->StreamSynchronize(*s).ok());
  auto* out = static_cast<uint8_t*>(*h);
  EXPECT_EQ(out[0], 0x5A);
  EXPECT_EQ(out[15], 0x5A);
  EXPECT_EQ(out[16], src[16]);
  EXPECT_EQ(out[n - 1], src[n - 1]);
  EXPECT_FALSE(device_->IsCapturing(*s));
  device_->FreeHost(*h);
  device_->Free(*d);
  device_->DestroyStream(*s);
}

TEST_F(CudaGpuTest, TimerMeasuresCopies) {
  const size_t n = 64 << 20;
  auto s = device_->CreateStream();
  auto d = device_->Alloc(n);
  ASSERT_TRUE(s.ok() && d.ok());
  Timer timer(device_.get(), 16);
  for (uint64_t tag = 0; tag < 4; ++tag) {
    ASSERT_TRUE(timer.Begin(*s, tag));
    ASSERT_TRUE(device_->MemsetAsync(*d, static_cast<uint8_t>(tag), n, *s).ok());
    timer.End(*s);
  }
  ASSERT_TRUE(device_->StreamSynchronize(*s).ok());
  std::vector<Sample> out;
  timer.Harvest(&out);
  ASSERT_EQ(out.size(), 4u);
  for (uint64_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].tag, i);
    EXPECT_GT(out[i].us, 0.0);
    EXPECT_LT(out[i].us, 1e6);
  }
  EXPECT_EQ(timer.pending(), 0);
  device_->Free(*d);
  device_->DestroyStream(*s);
}

TEST_F(CudaGpuTest, QueryPendingEventDoesNotBlock) {
  auto s = device_->CreateStream();
  auto e = device_->CreateEvent();
  ASSERT_TRUE(s.ok() && e.ok());
  ASSERT_TRUE(device_->RecordEvent(*e, *s).ok());
  auto st = device_->QueryEvent(*e);
  ASSERT_TRUE(st.ok()) << st.status();
  ASSERT_TRUE(device_->StreamSynchronize(*s).ok());
  st = device_->QueryEvent(*e);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(*st, EventState::kDone);
  device_->DestroyEvent(*e);
  device_->DestroyStream(*s);
}

}  // namespace
}  // namespace ccltune::executor
