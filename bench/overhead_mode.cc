// ccltune-bench, overhead mode: host-time statistics and memory snapshots (see overhead_mode.hpp).
#include "bench/overhead_mode.hpp"

#include <algorithm>
#include <numeric>

namespace ccltune::bench {
namespace {

double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

HostTimes SummarizeHostTimes(std::vector<double> us) {
  HostTimes t;
  if (us.empty()) return t;
  std::sort(us.begin(), us.end());
  t.calls = static_cast<int64_t>(us.size());
  t.median = Quantile(us, 0.5);
  t.p10 = Quantile(us, 0.1);
  t.p90 = Quantile(us, 0.9);
  t.mean = std::accumulate(us.begin(), us.end(), 0.0) / static_cast<double>(us.size());
  t.max = us.back();
  return t;
}

void GatherHostTimes(HostTimes* t) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::vector<double> all(rank == 0 ? n : 0);
  MPI_Gather(&t->median, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  t->rank_medians = all;
}

nlohmann::json HostTimesJson(const HostTimes& t) {
  return {
      {"calls", t.calls}, {"median_us", t.median},           {"p10_us", t.p10}, {"p90_us", t.p90}, {"mean_us", t.mean},
      {"max_us", t.max},  {"rank_median_us", t.rank_medians}};
}

std::vector<double> GatherUsedMiB(executor::Device* device) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  absl::StatusOr<executor::MemoryInfo> info = device->GetMemoryInfo();
  double mine = info.ok() ? static_cast<double>(info->total_bytes - info->free_bytes) / (1 << 20) : -1.0;
  std::vector<double> all(rank == 0 ? n : 0);
  MPI_Gather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0 && std::any_of(all.begin(), all.end(), [](double v) { return v < 0; })) all.clear();
  return all;
}

}  // namespace ccltune::bench
