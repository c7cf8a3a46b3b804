// Unit tests of the optimizer's robust statistics.
#include "optimizer/internal/stats.hpp"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace ccltune::optimizer::internal {
namespace {

TEST(RobustStats, MedianAndTrimmedMean) {
  EXPECT_TRUE(std::isinf(Median({})));
  EXPECT_TRUE(std::isinf(RobustEstimate({})));
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 2, 3}), 2.5);
  EXPECT_DOUBLE_EQ(RobustEstimate({10, 11, 500}), 11);  // one outlier among three: median
  // Ten samples: one cut at each end... two, since n/5 = 2.
  EXPECT_DOUBLE_EQ(RobustEstimate({1, 1000, 10, 10, 10, 10, 10, 10, 10, 10}), 10);
}

TEST(RobustStats, StdErrFactorShrinksWithSamples) {
  EXPECT_GT(EstimateStdErrFactor(3), EstimateStdErrFactor(8));
  EXPECT_TRUE(std::isinf(EstimateStdErrFactor(0)));
}

TEST(RobustStats, NoiseEstimatorRecoversSigmaDespiteOutliers) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> n(0, 0.04);
  NoiseEstimator ne;
  for (int g = 0; g < 60; ++g) {
    std::vector<double> s;
    for (int i = 0; i < 3; ++i) s.push_back(100 * (1 + n(rng)) * (i == 0 && g % 10 == 0 ? 2.0 : 1.0));
    ne.AddGroup(s);
  }
  EXPECT_EQ(ne.pairs(), 180);
  EXPECT_NEAR(ne.Sigma(), 0.04, 0.01);
  NoiseEstimator empty;
  EXPECT_EQ(empty.Sigma(), 0);
}

}  // namespace
}  // namespace ccltune::optimizer::internal
