// ccltune-bench --mode landscape: names, statistics and files (see landscape.hpp).
#include "bench/landscape.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config_table/config_table.hpp"

namespace ccltune::bench {

std::string LandscapeConfigName(const Config& c) {
  if (c.IsDefault()) return "default";
  std::string s = absl::StrFormat("a%d.p%d.nc%d", c.algo, c.proto, c.channels);
  if (c.chunk_bytes > 0) absl::StrAppend(&s, ".ck", c.chunk_bytes);
  return s;
}

std::string NcclTestsCollName(Coll c) {
  switch (c) {
    case Coll::kAllReduce:
      return "all_reduce";
    case Coll::kAllGather:
      return "all_gather";
    case Coll::kReduceScatter:
      return "reduce_scatter";
    case Coll::kBroadcast:
      return "broadcast";
    case Coll::kReduce:
      return "reduce";
  }
  return "unknown";
}

double BusBwFactor(Coll c, int nranks) {
  const double n = std::max(1, nranks);
  switch (c) {
    case Coll::kAllReduce:
      return 2 * (n - 1) / n;
    case Coll::kAllGather:
    case Coll::kReduceScatter:
      return (n - 1) / n;
    default:
      return 1;
  }
}

std::vector<std::string> LandscapeTableLines(const std::vector<LandscapeSample>& samples, int nranks) {
  // Sorted by collective (in first-seen order), size, then config (NCCL's default first).
  std::vector<int> coll_order;
  using Key = std::tuple<int, uint64_t, int, int, int, int64_t>;
  std::map<Key, std::vector<double>> times;
  for (const LandscapeSample& s : samples) {
    const int c = static_cast<int>(s.coll);
    if (std::find(coll_order.begin(), coll_order.end(), c) == coll_order.end()) coll_order.push_back(c);
    const int rank = static_cast<int>(std::find(coll_order.begin(), coll_order.end(), c) - coll_order.begin());
    times[Key{rank, s.bytes, s.config.algo, s.config.proto, s.config.channels, s.config.chunk_bytes}].push_back(
        s.max_us);
  }
  std::vector<std::string> lines;
  for (auto& [k, v] : times) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    const double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    const auto& [rank, bytes, algo, proto, channels, chunk] = k;
    const int coll = coll_order[rank];
    const std::string name = LandscapeConfigName(Config{algo, proto, channels, chunk});
    const double busbw =
        med > 0 ? static_cast<double>(bytes) / (med * 1e3) * BusBwFactor(static_cast<Coll>(coll), nranks) : 0;
    lines.push_back(
        absl::StrFormat("%s %s %d %.2f %.2f", NcclTestsCollName(static_cast<Coll>(coll)), name, bytes, med, busbw));
  }
  return lines;
}

absl::Status WriteLandscape(const std::string& prefix, const std::vector<std::string>& header,
                            const std::vector<LandscapeSample>& samples, const std::vector<LandscapeAlias>& aliases,
                            int nranks) {
  std::string head;
  for (const std::string& h : header) absl::StrAppend(&head, "# ", h, "\n");
  std::string table = head;
  absl::StrAppend(&table,
                  "# collective config bytes us busbw (us: median over samples of the per-call max over ranks)\n");
  for (const std::string& l : LandscapeTableLines(samples, nranks)) absl::StrAppend(&table, l, "\n");
  for (const LandscapeAlias& a : aliases) {
    absl::StrAppend(&table, "# alias ", NcclTestsCollName(a.coll), " ", LandscapeConfigName(a.config), " ", a.bytes,
                    " runs as ", LandscapeConfigName(a.same_as), " (NCCL ran ", a.ran, ")\n");
  }
  std::string s = head;
  absl::StrAppend(&s, "# collective bytes config round pos seq min_us max_us ran\n");
  for (const LandscapeSample& x : samples) {
    absl::StrAppend(&s,
                    absl::StrFormat("%s %d %s %d %d %d %.3f %.3f %s\n", NcclTestsCollName(x.coll), x.bytes,
                                    LandscapeConfigName(x.config), x.round, x.pos, x.seq, x.min_us, x.max_us, x.ran));
  }
  if (absl::Status st = config_table::WriteFileAtomic(prefix + ".txt", table); !st.ok()) return st;
  return config_table::WriteFileAtomic(prefix + ".samples", s);
}

}  // namespace ccltune::bench
