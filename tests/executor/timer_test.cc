// executor tests: Timer. Ordering and elapsed times with the simulated backend (fake clock), and
// pending / failing events with a scripted fake Device.
#include <map>
#include <memory>
#include <vector>

#include "executor/executor.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/executor/fake_clock.hpp"

namespace ccltune::executor {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;

// A Device whose events complete when the test says so; everything else is unused by Timer.
class ScriptedDevice final : public Device {
 public:
  struct Ev {
    bool done = false;
    double time = 0;
  };
  Backend backend() const override { return Backend::kSimulated; }
  const char* name() const override { return "scripted"; }
  absl::Status SetDevice(int) override { return absl::OkStatus(); }
  absl::StatusOr<int> DeviceCount() override { return 1; }
  absl::StatusOr<void*> Alloc(size_t) override { return absl::UnimplementedError("unused"); }
  void Free(void*) override {}
  absl::StatusOr<void*> AllocHost(size_t) override { return absl::UnimplementedError("unused"); }
  void FreeHost(void*) override {}
  absl::Status CopyToDeviceAsync(void*, const void*, size_t, Stream) override { return absl::OkStatus(); }
  absl::Status CopyToHostAsync(void*, const void*, size_t, Stream) override { return absl::OkStatus(); }
  absl::Status MemsetAsync(void*, uint8_t, size_t, Stream) override { return absl::OkStatus(); }
  absl::StatusOr<Stream> CreateStream() override { return reinterpret_cast<Stream>(1); }
  void DestroyStream(Stream) override {}
  absl::Status StreamSynchronize(Stream) override { return absl::OkStatus(); }

  absl::StatusOr<Event> CreateEvent() override {
    if (fail_create) return absl::ResourceExhaustedError("scripted: no more events");
    auto ev = std::make_unique<Ev>();
    Event e = ev.get();
    events[e] = std::move(ev);
    ++created;
    return e;
  }
  void DestroyEvent(Event e) override {
    events.erase(e);
    ++destroyed;
  }
  absl::Status RecordEvent(Event e, Stream) override {
    if (fail_record) return absl::InternalError("scripted: record failed");
    Ev& ev = *events.at(e);
    ev.done = complete_on_record;
    ev.time = now;
    recorded.push_back(e);
    return absl::OkStatus();
  }
  absl::StatusOr<EventState> QueryEvent(Event e) override {
    return events.at(e)->done ? EventState::kDone : EventState::kPending;
  }
  absl::StatusOr<double> ElapsedUs(Event a, Event b) override { return events.at(b)->time - events.at(a)->time; }
  bool IsCapturing(Stream) override { return false; }
  bool StreamIdle(Stream) override { return idle; }

  void CompleteAll() {
    for (auto& [e, ev] : events) ev->done = true;
  }

  std::map<Event, std::unique_ptr<Ev>> events;
  std::vector<Event> recorded;
  double now = 0;
  bool complete_on_record = true;
  bool fail_create = false;
  bool fail_record = false;
  bool idle = false;  // what StreamIdle answers
  int created = 0;
  int destroyed = 0;
};

TEST(TimerTest, SimulatedSamplesComeOutInBeginOrder) {
  auto dev = OpenSimulatedDevice();
  ASSERT_TRUE(dev.ok()) << dev.status();
  auto s = (*dev)->CreateStream();
  ASSERT_TRUE(s.ok());
  Timer timer(dev->get(), 8);
  double t = 0;
  for (uint64_t tag = 1; tag <= 3; ++tag) {
    testing::SetFakeClockUs(t);
    ASSERT_TRUE(timer.Begin(*s, tag));
    t += 10.0 * tag;  // the "collective" advances the virtual clock
    testing::SetFakeClockUs(t);
    timer.End(*s);
  }
  EXPECT_EQ(timer.pending(), 3);
  std::vector<Sample> out;
  timer.Harvest(&out);
  EXPECT_EQ(timer.pending(), 0);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_THAT(out, ElementsAre(Field(&Sample::tag, 1u), Field(&Sample::tag, 2u), Field(&Sample::tag, 3u)));
  EXPECT_DOUBLE_EQ(out[0].us, 10.0);
  EXPECT_DOUBLE_EQ(out[1].us, 20.0);
  EXPECT_DOUBLE_EQ(out[2].us, 30.0);
  (*dev)->DestroyStream(*s);
}

TEST(TimerTest, HarvestStopsAtOpenRegion) {
  auto dev = OpenSimulatedDevice();
  ASSERT_TRUE(dev.ok());
  Stream s = reinterpret_cast<Stream>(0x10);
  Timer timer(dev->get(), 8);
  ASSERT_TRUE(timer.Begin(s, 1));
  timer.End(s);
  ASSERT_TRUE(timer.Begin(s, 2));  // not ended yet
  std::vector<Sample> out;
  timer.Harvest(&out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tag, 1u);
  EXPECT_EQ(timer.pending(), 1);
  timer.End(s);
  timer.Harvest(&out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].tag, 2u);
}

TEST(TimerTest, HarvestStopsAtFirstPendingAndKeepsOrder) {
  ScriptedDevice dev;
  dev.complete_on_record = false;
  Stream s = reinterpret_cast<Stream>(1);
  Timer timer(&dev, 8);
  for (uint64_t tag = 1; tag <= 3; ++tag) {
    dev.now = tag * 100.0;
    ASSERT_TRUE(timer.Begin(s, tag));
    dev.now += tag;
    timer.End(s);
  }
  std::vector<Sample> out;
  timer.Harvest(&out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(timer.pending(), 3);

  // Regions 1 and 3 finish, 2 does not: only 1 comes out; 3 waits behind 2.
  auto done = [&](int idx) { dev.events.at(dev.recorded[idx])->done = true; };
  done(0), done(1), done(4), done(5);
  timer.Harvest(&out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tag, 1u);
  EXPECT_DOUBLE_EQ(out[0].us, 1.0);
  EXPECT_EQ(timer.pending(), 2);

  dev.CompleteAll();
  timer.Harvest(&out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].tag, 2u);
  EXPECT_DOUBLE_EQ(out[1].us, 2.0);
  EXPECT_EQ(out[2].tag, 3u);
  EXPECT_DOUBLE_EQ(out[2].us, 3.0);
  EXPECT_EQ(timer.pending(), 0);
}

TEST(TimerTest, PoolExhaustionRefusesBeginAndRecovers) {
  ScriptedDevice dev;
  dev.complete_on_record = false;
  Stream s = reinterpret_cast<Stream>(1);
  Timer timer(&dev, 2);
  ASSERT_TRUE(timer.Begin(s, 1));
  timer.End(s);
  ASSERT_TRUE(timer.Begin(s, 2));
  timer.End(s);
  EXPECT_FALSE(timer.Begin(s, 3));  // two regions in flight: the bound
  EXPECT_EQ(timer.pending(), 2);
  EXPECT_EQ(dev.created, 4);

  dev.CompleteAll();
  std::vector<Sample> out;
  timer.Harvest(&out);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_TRUE(timer.Begin(s, 4));  // reuses a pooled pair, creates nothing
  timer.End(s);
  EXPECT_EQ(dev.created, 4);
}

TEST(TimerTest, DeviceFailuresRefuseBeginAndDropSamples) {
  ScriptedDevice dev;
  Stream s = reinterpret_cast<Stream>(1);
  Timer timer(&dev, 4);
  dev.fail_create = true;
  EXPECT_FALSE(timer.Begin(s, 1));
  dev.fail_create = false;
  dev.fail_record = true;
  EXPECT_FALSE(timer.Begin(s, 2));
  EXPECT_EQ(timer.pending(), 0);
  dev.fail_record = false;
  ASSERT_TRUE(timer.Begin(s, 3));
  dev.fail_record = true;
  timer.End(s);  // end event not recorded: the sample is dropped at harvest
  dev.fail_record = false;
  std::vector<Sample> out;
  timer.Harvest(&out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(timer.pending(), 0);
}

TEST(TimerTest, DestructorReleasesEveryEvent) {
  ScriptedDevice dev;
  dev.complete_on_record = false;
  Stream s = reinterpret_cast<Stream>(1);
  {
    Timer timer(&dev, 4);
    ASSERT_TRUE(timer.Begin(s, 1));
    timer.End(s);
    ASSERT_TRUE(timer.Begin(s, 2));  // left open and pending
  }
  EXPECT_EQ(dev.created, dev.destroyed);
  EXPECT_TRUE(dev.events.empty());
}

TEST(TimerTest, ARegionBegunOnAnIdleStreamSaysSo) {
  ScriptedDevice dev;
  Timer timer(&dev, 8);
  Stream s = reinterpret_cast<Stream>(1);
  dev.idle = true;
  ASSERT_TRUE(timer.Begin(s, 1));
  dev.idle = false;  // the begin event itself made it busy
  dev.now = 5;
  timer.End(s);
  ASSERT_TRUE(timer.Begin(s, 2));
  dev.now = 9;
  timer.End(s);
  std::vector<Sample> out;
  timer.Harvest(&out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].idle);
  EXPECT_DOUBLE_EQ(out[0].us, 5);
  EXPECT_FALSE(out[1].idle);
}

TEST(IdleFilterTest, MarksIdleSamplesOnlyWhileMostAreNot) {
  IdleFilter f;
  // A step of 8 calls whose first follows a host synchronisation: its idle call is marked, every time.
  for (int step = 0; step < 50; ++step)
    for (int i = 0; i < 8; ++i) EXPECT_EQ(f.Mark(i == 0), i == 0) << step << " " << i;
  EXPECT_LT(f.share(), 0.25);
  // A host-bound stretch: every call idle. Marked until idle calls are half the moving share, then none.
  int marked = 0;
  for (int i = 0; i < 200; ++i) marked += f.Mark(true) ? 1 : 0;
  EXPECT_GT(marked, 5);
  EXPECT_LT(marked, 20);
  EXPECT_FALSE(f.Mark(true));
  // Back to busy streams: marking resumes once the share fell below half.
  for (int i = 0; i < 40; ++i) EXPECT_FALSE(f.Mark(false));
  EXPECT_TRUE(f.Mark(true));
}

TEST(IdleFilterTest, AWorkloadAlwaysStartingIdleLosesItsFirstSampleOnly) {
  // The first collective of every training step, right after the step's host synchronisation: every config it
  // tries pays the idle start alike, so its samples are kept (marking them all would leave its search with none).
  IdleFilter f;
  EXPECT_TRUE(f.Mark(true));
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(f.Mark(true)) << i;
  // One that mostly starts busy and was idle first: its idle samples stay marked.
  IdleFilter g;
  EXPECT_TRUE(g.Mark(true));
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(g.Mark(false));
  EXPECT_TRUE(g.Mark(true));
  EXPECT_LT(g.share(), 0.5);
}

TEST(IdleFilterTest, ACallReadByItsMinimumOverRanksIsNeverMarked) {
  // Mostly busy, idle now and then: the idle ones are marked, unless read by the minimum over ranks (they follow
  // another workload's call), which still count in the share.
  IdleFilter f;
  for (int i = 0; i < 20; ++i) f.Mark(false);
  EXPECT_TRUE(f.Mark(true));
  EXPECT_FALSE(f.Mark(true, /*by_min=*/true));
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(f.Mark(true, /*by_min=*/true));
  EXPECT_GT(f.share(), 0.5);
  EXPECT_FALSE(f.Mark(true));  // idle calls are the share's majority now
}

}  // namespace
}  // namespace ccltune::executor
