// executor tests: the simulated backend, driven by a fake `simncclVirtualTimeUs` defined and exported
// by this test binary (as the simulated libnccl.so.2 would export it).
#include <cstdint>
#include <cstring>
#include <vector>

#include "executor/executor.hpp"
#include "gtest/gtest.h"
#include "tests/executor/fake_clock.hpp"

namespace {
double g_fake_clock_us = 0;
double g_fake_lag_us = 0;          // what the start clock adds: the rank's lag after its last collective
long long g_fake_host_syncs = -1;  // simncclHostSyncs: -1, the GPU keeps up (SIMNCCL_HOST_AHEAD unset)
}  // namespace

// Exported (the executable links with -rdynamic) so dlsym(RTLD_DEFAULT) finds them.
extern "C" __attribute__((visibility("default"))) double simncclVirtualTimeUs(void) { return g_fake_clock_us; }
extern "C" __attribute__((visibility("default"))) double simncclVirtualStartTimeUs(void) {
  return g_fake_clock_us + g_fake_lag_us;
}
extern "C" __attribute__((visibility("default"))) long long simncclHostSyncs(void) { return g_fake_host_syncs; }

namespace ccltune::executor {
namespace testing {
void SetFakeClockUs(double us) { g_fake_clock_us = us; }
}  // namespace testing

namespace {

TEST(SimulatedDeviceTest, OpenDevicePicksSimulatedWhenClockIsPresent) {
  absl::StatusOr<std::unique_ptr<Device>> dev = OpenDevice();
  ASSERT_TRUE(dev.ok()) << dev.status();
  EXPECT_EQ((*dev)->backend(), Backend::kSimulated);
  EXPECT_STREQ((*dev)->name(), "simulated");
  EXPECT_TRUE((*dev)->SetDevice(3).ok());
  absl::StatusOr<int> count = (*dev)->DeviceCount();
  ASSERT_TRUE(count.ok());
  EXPECT_GE(*count, 1);
}

TEST(SimulatedDeviceTest, MemoryAndCopiesAreHostMemory) {
  auto dev = OpenSimulatedDevice();
  ASSERT_TRUE(dev.ok()) << dev.status();
  Device& d = **dev;
  absl::StatusOr<Stream> s = d.CreateStream();
  ASSERT_TRUE(s.ok());
  EXPECT_NE(*s, nullptr);
  absl::StatusOr<void*> buf = d.Alloc(1000);
  ASSERT_TRUE(buf.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*buf) % 256, 0u);
  absl::StatusOr<void*> host = d.AllocHost(1000);
  ASSERT_TRUE(host.ok());

  std::vector<uint8_t> src(1000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(d.CopyToDeviceAsync(*buf, src.data(), src.size(), *s).ok());
  ASSERT_TRUE(d.CopyToHostAsync(*host, *buf, src.size(), *s).ok());
  EXPECT_EQ(std::memcmp(*host, src.data(), src.size()), 0);
  ASSERT_TRUE(d.MemsetAsync(*buf, 0xAB, 10, *s).ok());
  ASSERT_TRUE(d.StreamSynchronize(*s).ok());
  EXPECT_EQ(static_cast<uint8_t*>(*buf)[9], 0xAB);
  EXPECT_EQ(static_cast<uint8_t*>(*buf)[10], src[10]);

  d.Free(*buf);
  d.FreeHost(*host);
  d.DestroyStream(*s);
}

TEST(SimulatedDeviceTest, StreamsAreDistinct) {
  auto dev = OpenSimulatedDevice();
  ASSERT_TRUE(dev.ok());
  auto a = (*dev)->CreateStream();
  auto b = (*dev)->CreateStream();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_FALSE((*dev)->IsCapturing(*a));
  (*dev)->DestroyStream(*a);
  (*dev)->DestroyStream(*b);
}

TEST(SimulatedDeviceTest, EventsHoldVirtualTime) {
  auto dev = OpenSimulatedDevice();
  ASSERT_TRUE(dev.ok());
  Device& d = **dev;
  auto s = d.CreateStream();
  auto a = d.CreateEvent();
  auto b = d.CreateEvent();
  ASSERT_TRUE(s.ok() && a.ok() && b.ok());
  testing::SetFakeClockUs(100.0);
  ASSERT_TRUE(d.RecordEvent(*a, *s).ok());
  testing::SetFakeClockUs(142.5);
  ASSERT_TRUE(d.RecordEvent(*b, *s).ok());
  testing::SetFakeClockUs(1000.0);  // later clock moves do not change recorded events
  auto state = d.QueryEvent(*b);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(*state, EventState::kDone);
  auto us = d.ElapsedUs(*a, *b);
  ASSERT_TRUE(us.ok());
  EXPECT_DOUBLE_EQ(*us, 42.5);
  d.DestroyEvent(*a);
  d.DestroyEvent(*b);
  d.DestroyStream(*s);
}

// A timed region's start event (Timer::Begin, Device::RecordStartEvent) reads the clock after the rank's lag
// (simncclVirtualStartTimeUs), its stop event the plain clock: a call timed right after an untimed one does not
// count the lag the rank owes from before it.
TEST(SimulatedDeviceTest, StartEventsReadTheClockAfterTheRanksLag) {
  auto dev = OpenSimulatedDevice();
  ASSERT_TRUE(dev.ok());
  Device& d = **dev;
  auto s = d.CreateStream();
  ASSERT_TRUE(s.ok());
  Timer timer(&d, 4);
  testing::SetFakeClockUs(200.0);
  g_fake_lag_us = 25.0;
  ASSERT_TRUE(timer.Begin(*s, 7));
  g_fake_lag_us = 0;
  testing::SetFakeClockUs(300.0);
  timer.End(*s);
  std::vector<Sample> got;
  timer.Harvest(&got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].tag, 7u);
  EXPECT_DOUBLE_EQ(got[0].us, 75.0);
  d.DestroyStream(*s);
}

TEST(SimulatedDeviceTest, ElapsedOnUnrecordedEventIsAnError) {
  auto dev = OpenSimulatedDevice();
  ASSERT_TRUE(dev.ok());
  auto a = (*dev)->CreateEvent();
  auto b = (*dev)->CreateEvent();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*dev)->ElapsedUs(*a, *b).status().code(), absl::StatusCode::kFailedPrecondition);
  (*dev)->DestroyEvent(*a);
  (*dev)->DestroyEvent(*b);
}

// SIMNCCL_HOST_AHEAD: the GPU runs behind its host. An event is done once the application synchronized with the device
// after it was recorded, or once the host waits for it (queried again with nothing recorded since), which finishes the
// events before it; an event recorded after that is not. Without it (simncclHostSyncs -1) every event is done.
TEST(SimulatedDeviceTest, HostAheadEventsAreDoneAfterAHostSyncOrAWait) {
  absl::StatusOr<std::unique_ptr<Device>> dev = OpenDevice();
  ASSERT_TRUE(dev.ok()) << dev.status();
  Device& d = **dev;
  auto s = d.CreateStream();
  ASSERT_TRUE(s.ok());
  std::vector<Event> e;
  for (int i = 0; i < 4; ++i) {
    auto ev = d.CreateEvent();
    ASSERT_TRUE(ev.ok());
    e.push_back(*ev);
  }
  auto state = [&d](Event ev) {
    absl::StatusOr<EventState> st = d.QueryEvent(ev);
    EXPECT_TRUE(st.ok()) << st.status();
    return st.ok() ? *st : EventState::kDone;
  };
  g_fake_host_syncs = 0;
  ASSERT_TRUE(d.RecordEvent(e[0], *s).ok());
  ASSERT_TRUE(d.RecordEvent(e[1], *s).ok());
  EXPECT_EQ(state(e[0]), EventState::kPending);
  ASSERT_TRUE(d.RecordEvent(e[2], *s).ok());
  EXPECT_EQ(state(e[0]), EventState::kPending);  // something was recorded since its last query: not a wait
  EXPECT_EQ(state(e[0]), EventState::kDone);     // queried again with nothing recorded since: the host waits
  EXPECT_EQ(state(e[1]), EventState::kPending);  // after the one waited for
  g_fake_host_syncs = 1;                         // the application synchronized with the device
  EXPECT_EQ(state(e[2]), EventState::kDone);
  EXPECT_EQ(state(e[1]), EventState::kDone);
  ASSERT_TRUE(d.RecordStartEvent(e[3], *s).ok());
  EXPECT_EQ(state(e[3]), EventState::kPending);
  absl::StatusOr<double> us = d.ElapsedUs(e[0], e[3]);  // the virtual times are there all the same
  EXPECT_TRUE(us.ok()) << us.status();
  g_fake_host_syncs = -1;
  EXPECT_EQ(state(e[3]), EventState::kDone);
  for (Event ev : e) d.DestroyEvent(ev);
  d.DestroyStream(*s);
}

}  // namespace
}  // namespace ccltune::executor
