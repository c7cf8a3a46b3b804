// Pins FakeHub: an all-reduce(MAX) across n endpoints; Issue never blocks, Wait blocks until every
// endpoint contributed or the timeout passes (DeadlineExceeded, and the caller may wait again).
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "coordinator/coordinator.hpp"

namespace ccltune::coordinator {
namespace {

Words Filled(uint64_t v, int at) {
  Words w{};
  w[at] = v;
  w[63] = v;
  return w;
}

Payload Base(const Words& w) {
  Payload p;
  p.base = w;
  return p;
}

TEST(FakeHub, ElementwiseMaxAcrossThreads) {
  constexpr int kRanks = 4;
  FakeHub hub(kRanks);
  std::vector<Words> got(kRanks);
  std::vector<std::thread> t;
  for (int r = 0; r < kRanks; ++r) {
    t.emplace_back([&, r] {
      auto ep = hub.Endpoint(r);
      for (uint64_t id = 0; id < 50; ++id) {
        ASSERT_TRUE(ep->Issue(id, Base(Filled(10 * id + r, r)), nullptr).ok());
      }
      for (uint64_t id = 0; id < 50; ++id) {
        Payload p;
        ASSERT_TRUE(ep->Wait(id, &p, absl::Seconds(10)).ok());
        const Words& w = p.base;
        for (int i = 0; i < kRanks; ++i) ASSERT_EQ(w[i], 10 * id + i);
        ASSERT_EQ(w[63], 10 * id + kRanks - 1);
        if (id == 49) got[r] = w;
      }
    });
  }
  for (auto& th : t) th.join();
  for (int r = 1; r < kRanks; ++r) EXPECT_EQ(got[r], got[0]);
}

TEST(FakeHub, WaitTimesOutAndCanWaitAgain) {
  FakeHub hub(2);
  auto a = hub.Endpoint(0);
  auto b = hub.Endpoint(1);
  ASSERT_TRUE(a->Issue(0, Base(Filled(1, 0)), nullptr).ok());
  Payload p;
  const absl::Time start = absl::Now();
  absl::Status s = a->Wait(0, &p, absl::Milliseconds(30));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(25));
  std::thread late([&] {
    absl::SleepFor(absl::Milliseconds(20));
    ASSERT_TRUE(b->Issue(0, Base(Filled(2, 1)), nullptr).ok());
  });
  EXPECT_TRUE(a->Wait(0, &p, absl::Seconds(10)).ok());
  late.join();
  EXPECT_EQ(p.base[0], 1u);
  EXPECT_EQ(p.base[1], 2u);
  EXPECT_TRUE(b->Wait(0, &p, absl::Seconds(1)).ok());
}

TEST(FakeHub, DroppedContributionNeverCompletesUntilSupplied) {
  FakeHub hub(2);
  hub.DropContribution(1, 3);
  auto a = hub.Endpoint(0);
  auto b = hub.Endpoint(1);
  ASSERT_TRUE(a->Issue(3, Base(Filled(1, 0)), nullptr).ok());
  ASSERT_TRUE(b->Issue(3, Base(Filled(2, 1)), nullptr).ok());  // lost
  Payload p;
  EXPECT_TRUE(absl::IsDeadlineExceeded(a->Wait(3, &p, absl::Milliseconds(20))));
  ASSERT_TRUE(b->Issue(3, Base(Filled(2, 1)), nullptr).ok());  // the drop was one-shot
  EXPECT_TRUE(a->Wait(3, &p, absl::Seconds(1)).ok());
  EXPECT_EQ(p.base[1], 2u);
}

TEST(FakeHub, MisuseIsReported) {
  FakeHub hub(2);
  auto a = hub.Endpoint(0);
  ASSERT_TRUE(a->Issue(0, Payload{}, nullptr).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(a->Issue(0, Payload{}, nullptr)));
  auto bad = hub.Endpoint(5);
  EXPECT_TRUE(absl::IsInvalidArgument(bad->Issue(0, Payload{}, nullptr)));
}

// Extended syncs reduce the carried timings too: the MAX of the encoded words is the minimum and the
// maximum over the ranks that timed a call; Poll answers without blocking.
TEST(FakeHub, ExtendedPayloadCarriesMinAndMaxOverRanks) {
  FakeHub hub(3);
  std::vector<std::unique_ptr<Transport>> ep;
  for (int r = 0; r < 3; ++r) ep.push_back(hub.Endpoint(r));
  Payload p;
  EXPECT_FALSE(*ep[0]->Poll(7, &p));
  const double us[3][2] = {{10.0, 0}, {12.5, 7.0}, {11.0, 0}};  // slot 1: only rank 1 timed it
  for (int r = 0; r < 3; ++r) {
    Payload c;
    c.extended = true;
    EncodeSample(&c.samples, 0, us[r][0]);
    EncodeSample(&c.samples, 1, us[r][1]);  // 0: not timed here, left alone
    ASSERT_TRUE(ep[r]->Issue(7, c, nullptr).ok());
    if (r < 2) EXPECT_FALSE(*ep[0]->Poll(7, &p));
  }
  ASSERT_TRUE(*ep[0]->Poll(7, &p));
  EXPECT_TRUE(p.extended);
  auto s = DecodeSamples(p.samples, 3);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)[0].has_value());
  EXPECT_DOUBLE_EQ((*s)[0]->min_us, 10.0);
  EXPECT_DOUBLE_EQ((*s)[0]->max_us, 12.5);
  ASSERT_TRUE((*s)[1].has_value());
  EXPECT_DOUBLE_EQ((*s)[1]->min_us, 7.0);
  EXPECT_DOUBLE_EQ((*s)[1]->max_us, 7.0);
  EXPECT_FALSE((*s)[2].has_value());
}

// A rank whose op has another size than the others' (an extended payload against a base one) makes
// the sync fail: the real all-reduce would hang or mix words.
TEST(FakeHub, ContributionsOfDifferentSizesFail) {
  FakeHub hub(2);
  auto a = hub.Endpoint(0);
  auto b = hub.Endpoint(1);
  Payload ext;
  ext.extended = true;
  ASSERT_TRUE(a->Issue(2, ext, nullptr).ok());
  ASSERT_TRUE(b->Issue(2, Payload{}, nullptr).ok());
  Payload p;
  EXPECT_TRUE(absl::IsDataLoss(a->Wait(2, &p, absl::Seconds(1))));
  EXPECT_TRUE(absl::IsDataLoss(b->Poll(2, &p).status()));
}

}  // namespace
}  // namespace ccltune::coordinator
