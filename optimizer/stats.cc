// Robust statistics of the search (see internal/stats.hpp).
#include "optimizer/internal/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ccltune::optimizer::internal {

double Median(std::vector<double> s) {
  if (s.empty()) return std::numeric_limits<double>::infinity();
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

double RobustEstimate(std::vector<double> s) {
  const int n = static_cast<int>(s.size());
  if (n <= 4) return Median(std::move(s));
  std::sort(s.begin(), s.end());
  const int trim = std::max(1, n / 5);
  double sum = 0;
  for (int i = trim; i < n - trim; ++i) sum += s[i];
  return sum / (n - 2 * trim);
}

double EstimateStdErrFactor(int n) {
  if (n <= 0) return std::numeric_limits<double>::infinity();
  const double k = n <= 4 ? 1.25 : 1.1;
  return k / std::sqrt(static_cast<double>(n));
}

void NoiseEstimator::AddGroup(const std::vector<double>& s) {
  if (s.size() < 2) return;
  const double m = Median(s);
  if (!(m > 0) || !std::isfinite(m)) return;
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t j = i + 1; j < s.size(); ++j) diffs_.push_back(std::fabs(s[i] - s[j]) / m);
}

double NoiseEstimator::Sigma() const {
  if (diffs_.empty()) return 0;
  return Median(diffs_) / 0.954;
}

}  // namespace ccltune::optimizer::internal
