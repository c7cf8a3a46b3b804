// Negative control: linked against ccltune_coordinator_planted_late, in which rank 1 applies every
// schedule update one call late. The multi-rank harness must see rank 1 diverge from rank 0 (that is
// what the consistency checks exist to catch), while the other ranks still agree with rank 0.
#include <gtest/gtest.h>

#include "coordinator/coordinator.hpp"
#include "tests/coordinator/harness.hpp"

namespace ccltune::coordinator {
namespace {

TEST(PlantedLateApply, RankOneDivergesFromRankZero) {
  testing::RunOptions o;
  const std::vector<testing::RankResult> r = testing::RunRanks(o);
  ASSERT_EQ(r.size(), 4u);
  ASSERT_EQ(r[1].configs.size(), r[0].configs.size());
  int diverged = 0;
  size_t first = r[0].configs.size();
  for (size_t k = 0; k < r[0].configs.size(); ++k) {
    if (r[1].configs[k] != r[0].configs[k]) {
      ++diverged;
      first = std::min(first, k);
    }
  }
  EXPECT_GT(diverged, 0) << "the planted bug did not show: the negative control is broken";
  ASSERT_LT(first, r[0].configs.size());
  EXPECT_GT(r[0].call_unit[first], kFirstSyncUnit + kLag * kInitialInterval);  // only once updates apply
  EXPECT_EQ(r[2].configs, r[0].configs);
  EXPECT_EQ(r[3].configs, r[0].configs);
}

}  // namespace
}  // namespace ccltune::coordinator
