// Robust statistics used by the search: estimates of a config's time from a few noisy samples
// (slow outliers are common: interference, first-use effects) and the pooled relative noise.
#pragma once

#include <vector>

namespace ccltune::optimizer::internal {

// Robust location: the median for up to 4 samples, a trimmed mean (about 1/5 cut at each end)
// beyond. Trimmed means are nearly as efficient as the mean under Gaussian noise and, like the
// median, ignore an occasional outlier. Returns +inf for no samples.
double RobustEstimate(std::vector<double> samples);

// Plain median; +inf for no samples.
double Median(std::vector<double> samples);

// Standard error of RobustEstimate() relative to the per-sample noise sigma, for n samples
// (median: ~1.25/sqrt(n); trimmed mean: ~1.1/sqrt(n)).
double EstimateStdErrFactor(int n);

// Accumulates |x_i - x_j| / median over all sample pairs of each config; the median of those,
// divided by 0.954 (the median of |X-Y| for two Gaussian draws of sigma 1), is a robust estimate
// of the per-sample relative noise sigma.
class NoiseEstimator {
 public:
  void AddGroup(const std::vector<double>& samples);
  int pairs() const { return static_cast<int>(diffs_.size()); }
  double Sigma() const;  // 0 when no pair was seen

 private:
  std::vector<double> diffs_;
};

}  // namespace ccltune::optimizer::internal
