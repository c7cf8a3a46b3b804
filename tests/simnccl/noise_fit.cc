// Fitting the noise model to recorded calls, and the statistics that compare recorded and simulated calls
// (noise_fit.hpp).
#include "noise_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

namespace simnccl {

namespace {

// One config's consecutive timed calls of a round: calls [begin, end) of set `set`.
struct BlockRef {
  size_t set = 0, begin = 0, end = 0;
  std::string row, config;  // keys: "set coll bytes" and "set coll bytes config"
};

std::vector<BlockRef> Blocks(const std::vector<RecordedSet>& sets) {
  std::vector<BlockRef> out;
  for (size_t s = 0; s < sets.size(); s++) {
    const auto& calls = sets[s].calls;
    for (size_t i = 0; i < calls.size();) {
      const RecordedCall& c = calls[i];
      size_t j = i + 1;
      while (j < calls.size() && calls[j].coll == c.coll && calls[j].bytes == c.bytes && calls[j].config == c.config &&
             calls[j].round == c.round && calls[j].pos == c.pos)
        j++;
      BlockRef b;
      b.set = s, b.begin = i, b.end = j;
      b.row = std::to_string(s) + " " + c.coll + " " + std::to_string(c.bytes);
      b.config = b.row + " " + c.config;
      out.push_back(b);
      i = j;
    }
  }
  return out;
}

template <typename Fn>
std::vector<double> Values(const std::vector<RecordedSet>& sets, const BlockRef& b, Fn fn) {
  std::vector<double> v;
  for (size_t i = b.begin; i < b.end; i++) v.push_back(fn(sets[b.set].calls[i]));
  return v;
}
double MinUs(const RecordedCall& c) { return c.minUs; }
double MaxUs(const RecordedCall& c) { return c.maxUs; }
// The algorithm and protocol a call ran ("ring/simple/nc2"), (-1, -1) when unknown; and its channels, 1 when unknown.
std::pair<int, int> CallRan(const RecordedCall& c) {
  int algo = -1, proto = -1, nc = 0;
  return ParseRan(c.ran, &algo, &proto, &nc) ? std::make_pair(algo, proto) : std::make_pair(-1, -1);
}
int CallChannels(const RecordedCall& c) {
  int algo = -1, proto = -1, nc = 1;
  ParseRan(c.ran, &algo, &proto, &nc);
  return nc;
}

std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size(); i++) r[idx[i]] = static_cast<double>(i);
  return r;
}

double Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  if (x.size() < 3) return 0;
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n, my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); i++) {
    sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx), syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

// The least-squares slope of y on x; NaN when x does not vary.
double Slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n, my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); i++) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  return sxx > 0 ? sxy / sxx : std::nan("");
}

std::vector<double> QuantileGrid(std::vector<double> v, int n) {
  std::sort(v.begin(), v.end());
  std::vector<double> q(n);
  for (int i = 0; i < n; i++) q[i] = Quantile(v, static_cast<double>(i) / (n - 1));
  return q;
}

// The config's modelled time in a simulation of the schedule: its recorded median of max_us (the table's us).
std::map<std::string, double> TableUs(const std::vector<RecordedSet>& sets, const std::vector<BlockRef>& blocks) {
  std::map<std::string, std::vector<double>> all;
  for (const BlockRef& b : blocks) {
    auto v = Values(sets, b, MaxUs);
    all[b.config].insert(all[b.config].end(), v.begin(), v.end());
  }
  std::map<std::string, double> out;
  for (auto& [k, v] : all) out[k] = Median(v);
  return out;
}

}  // namespace

double Quantile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double x = std::clamp(p, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const size_t i = std::min(static_cast<size_t>(x), v.size() - 1);
  if (i + 1 >= v.size()) return v[i];
  return v[i] + (x - static_cast<double>(i)) * (v[i + 1] - v[i]);
}

bool ReadRecordedSet(const std::string& path, RecordedSet* out, std::string* err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot open " + path;
    return false;
  }
  RecordedSet set;
  set.name = path;
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    lineNo++;
    if (line.empty()) continue;
    if (line[0] == '#') {
      int n = 0;
      if (std::sscanf(line.c_str(), "# ranks %d", &n) == 1) set.ranks = n;
      const std::string warm = "warm-up calls per block ";
      if (size_t at = line.find(warm); at != std::string::npos)
        set.warmupCalls = std::atoi(line.c_str() + at + warm.size());
      continue;
    }
    std::istringstream ls(line);
    RecordedCall c;
    if (!(ls >> c.coll >> c.bytes >> c.config >> c.round >> c.pos >> c.seq >> c.minUs >> c.maxUs >> c.ran) ||
        !(c.minUs > 0) || c.maxUs < c.minUs) {
      *err = path + ":" + std::to_string(lineNo) +
             ": expected `collective bytes config round pos seq min_us max_us ran` with 0 < min_us <= max_us";
      return false;
    }
    set.calls.push_back(std::move(c));
  }
  if (set.ranks < 2) {
    *err = path + ": no `# ranks N` header line with N >= 2";
    return false;
  }
  if (set.calls.empty()) {
    *err = path + ": no samples";
    return false;
  }
  *out = std::move(set);
  return true;
}

std::string FormatRecordedSet(const RecordedSet& set) {
  std::ostringstream o;
  o << "# ranks " << set.ranks << ", simulated\n"
    << "# warm-up calls per block " << set.warmupCalls << "\n"
    << "# collective bytes config round pos seq min_us max_us ran\n";
  char buf[256];
  for (const RecordedCall& c : set.calls) {
    std::snprintf(buf, sizeof buf, "%s %llu %s %d %d %d %.3f %.3f %s\n", c.coll.c_str(),
                  static_cast<unsigned long long>(c.bytes), c.config.c_str(), c.round, c.pos, c.seq, c.minUs, c.maxUs,
                  c.ran.c_str());
    o << buf;
  }
  return o.str();
}

NoiseStats ComputeNoiseStats(const std::vector<RecordedSet>& sets) {
  NoiseStats st;
  const std::vector<BlockRef> blocks = Blocks(sets);
  std::vector<double> cv, ratio, spread, minSpread;
  std::map<std::string, std::vector<double>> maxMedians, minMedians;
  std::vector<double> logMinMedian(blocks.size()), blockCvs(blocks.size(), 0.0), blockSpread(blocks.size(), 0.0);
  std::map<std::string, std::vector<double>> spreadMedians;
  for (size_t i = 0; i < blocks.size(); i++) {
    const BlockRef& b = blocks[i];
    const std::vector<double> mx = Values(sets, b, MaxUs), mn = Values(sets, b, MinUs);
    for (size_t k = 0; k < mx.size(); k++) ratio.push_back(mx[k] / mn[k]);
    st.calls += static_cast<int>(mx.size());
    const double med = Median(mx);
    if (mx.size() >= 4) {
      std::vector<double> dev, spreadOverRanks;
      for (double x : mx) dev.push_back(std::fabs(x - med));
      cv.push_back(1.4826 * Median(dev) / med);
      blockCvs[i] = cv.back();
      for (size_t k = 0; k < mx.size(); k++) spreadOverRanks.push_back(mx[k] - mn[k]);
      if (const double slope = Slope(spreadOverRanks, mn); std::isfinite(slope)) minSpread.push_back(slope);
      blockSpread[i] = Median(spreadOverRanks);
      if (blockSpread[i] > 0) spreadMedians[b.config].push_back(blockSpread[i]);
    }
    maxMedians[b.config].push_back(med);
    minMedians[b.config].push_back(Median(mn));
    logMinMedian[i] = std::log(minMedians[b.config].back());
  }
  for (auto& [k, v] : maxMedians)
    if (v.size() >= 2)
      spread.push_back(*std::max_element(v.begin(), v.end()) / *std::min_element(v.begin(), v.end()) - 1);
  std::map<std::string, double> configLog;
  for (auto& [k, v] : minMedians) configLog[k] = std::log(Median(v));
  std::vector<double> blockDev, blockCv;  // per block of 4+ calls: log median of min_us - its config's, robust CV
  for (size_t i = 0; i < blocks.size(); i++)
    if (blocks[i].end - blocks[i].begin >= 4) {
      blockDev.push_back(logMinMedian[i] - configLog[blocks[i].config]);
      blockCv.push_back(blockCvs[i]);
    }
  st.slowCvCorr = Pearson(Ranks(blockDev), Ranks(blockCv));
  std::vector<double> lagDev;
  for (size_t i = 0; i < blocks.size(); i++)
    if (blockSpread[i] > 0) lagDev.push_back(std::log(blockSpread[i] / Median(spreadMedians[blocks[i].config])));
  st.lagBlockSpread = Quantile(lagDev, 0.9) - Quantile(lagDev, 0.1);
  std::vector<double> x, y;
  for (size_t i = 0; i + 1 < blocks.size(); i++) {
    if (blocks[i].row != blocks[i + 1].row) continue;
    x.push_back(logMinMedian[i] - configLog[blocks[i].config]);
    y.push_back(logMinMedian[i + 1] - configLog[blocks[i + 1].config]);
  }
  st.blockLag1 = Pearson(Ranks(x), Ranks(y));
  st.cvMedian = Median(cv), st.cvP90 = Quantile(cv, 0.9);
  st.spreadMedian = Median(spread), st.spreadP90 = Quantile(spread, 0.9);
  st.ratioMedian = Median(ratio), st.ratioP90 = Quantile(ratio, 0.9);
  st.minSpreadSlope = Median(minSpread);
  st.blocks = static_cast<int>(blocks.size()), st.configs = static_cast<int>(spread.size());
  return st;
}

std::vector<StatCheck> CompareNoiseStats(const NoiseStats& r, const std::vector<NoiseStats>& runs) {
  // One row per statistic: its name, how to read it, its tolerance and the scale the tolerance is relative to (0:
  // absolute). Tolerances are what a second recording of the same testbed could differ by: the seed-to-seed
  // spread of the simulated statistic (docs/simulated-cluster.md). The tail statistic of block medians is the
  // widest: 15 rows of 9 default blocks decide it.
  struct Row {
    const char* name;
    double NoiseStats::*field;
    double tolerance;
    bool excess;    // relative to recorded - 1 (a ratio's excess)
    bool absolute;  // an absolute tolerance (correlations)
  };
  const Row rows[] = {
      {"robust_cv_median", &NoiseStats::cvMedian, 0.15, false, false},
      {"robust_cv_p90", &NoiseStats::cvP90, 0.25, false, false},
      {"block_spread_median", &NoiseStats::spreadMedian, 0.30, false, false},
      {"block_spread_p90", &NoiseStats::spreadP90, 0.50, false, false},
      {"max_min_ratio_median", &NoiseStats::ratioMedian, 0.25, true, false},
      {"max_min_ratio_p90", &NoiseStats::ratioP90, 0.25, true, false},
      {"block_lag1_corr", &NoiseStats::blockLag1, 0.15, false, true},
      {"min_on_spread_slope", &NoiseStats::minSpreadSlope, 0.10, false, true},
      {"slow_cv_corr", &NoiseStats::slowCvCorr, 0.15, false, true},
  };
  std::vector<StatCheck> out;
  for (const Row& row : rows) {
    StatCheck c;
    c.name = row.name;
    c.recorded = r.*row.field;
    std::vector<double> sim;
    for (const NoiseStats& s : runs) sim.push_back(s.*row.field);
    c.simulated = Median(sim);
    c.simulatedMin = sim.empty() ? 0 : *std::min_element(sim.begin(), sim.end());
    c.simulatedMax = sim.empty() ? 0 : *std::max_element(sim.begin(), sim.end());
    c.tolerance = row.tolerance;
    c.relative = !row.absolute;
    const double scale = row.absolute ? 1 : std::fabs(row.excess ? c.recorded - 1 : c.recorded);
    c.pass = !sim.empty() && std::fabs(c.simulated - c.recorded) <= row.tolerance * scale;
    out.push_back(c);
  }
  return out;
}

std::vector<StatCheck> CheckAgainstRecorded(const FittedNoise& noise, const std::vector<RecordedSet>& sets, int seeds) {
  std::vector<NoiseStats> runs;
  for (int seed = 1; seed <= seeds; seed++) {
    std::vector<RecordedSet> sim;
    for (size_t s = 0; s < sets.size(); s++) sim.push_back(SimulateSet(noise, sets[s], seed, s + 1));
    runs.push_back(ComputeNoiseStats(sim));
  }
  return CompareNoiseStats(ComputeNoiseStats(sets), runs);
}

std::string FormatChecks(const std::vector<StatCheck>& checks, const std::string& simulated) {
  std::ostringstream o;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-23s %9s %10s %19s %10s  %s\n", "statistic", "recorded", "simulated", "(min - max)",
                "tolerance", "pass");
  o << buf;
  for (const StatCheck& c : checks) {
    std::snprintf(buf, sizeof buf, "%-23s %9.3f %10.3f %9.3f - %7.3f %9s%.2f  %s\n", c.name.c_str(), c.recorded,
                  c.simulated, c.simulatedMin, c.simulatedMax, c.relative ? "x" : "+-", c.tolerance,
                  c.pass ? "yes" : "NO");
    o << buf;
  }
  o << "(simulated: " << simulated << "; tolerance x: relative to the recorded value, to recorded - 1 for ratios)\n";
  return o.str();
}

RecordedSet SimulateSet(const FittedNoise& noise, const RecordedSet& schedule, uint64_t seed, uint64_t key,
                        uint64_t block_key, uint64_t block_seq0) {
  if (block_key == UINT64_MAX) block_key = key;
  const std::vector<RecordedSet> one{schedule};
  const std::vector<BlockRef> blocks = Blocks(one);
  const std::map<std::string, double> table = TableUs(one, blocks);
  RecordedSet out;
  out.name = schedule.name + " (simulated)";
  out.ranks = schedule.ranks;
  out.warmupCalls = schedule.warmupCalls;
  out.calls.reserve(schedule.calls.size());
  std::vector<double> clock(static_cast<size_t>(schedule.ranks), 0.0), measured(clock.size());
  uint64_t seq = 0, block = UINT64_MAX;
  FittedNoise::BlockFactors f;
  for (const BlockRef& b : blocks) {
    const auto [algo, proto] = CallRan(schedule.calls[b.begin]);
    const int channels = CallChannels(schedule.calls[b.begin]);
    const double base = noise.BaseUs(table.at(b.config), algo, proto, channels);
    const size_t timed = b.end - b.begin;
    for (size_t k = 0; k < static_cast<size_t>(schedule.warmupCalls) + timed; k++) {
      seq++;
      if (noise.Block(block_seq0 + seq) != block)
        block = noise.Block(block_seq0 + seq), f = noise.ForBlock(seed, block_key, block);
      const double t = base * f.slow * noise.CallFactor(seed, key, seq, f.volatility);
      const auto [first, last] = std::minmax_element(clock.begin(), clock.end());
      const double end = *last + t - noise.Params().overlap * std::min(*last - *first, t);
      for (size_t r = 0; r < clock.size(); r++) {
        measured[r] = end - clock[r];  // a timer from this rank's arrival to the end
        clock[r] = end + noise.RankLagUs(seed, key, seq, static_cast<int>(r), t, algo, proto, channels, f.lag);
      }
      if (k < static_cast<size_t>(schedule.warmupCalls)) continue;
      RecordedCall c = schedule.calls[b.begin + k - schedule.warmupCalls];
      c.minUs = *std::min_element(measured.begin(), measured.end());
      c.maxUs = *std::max_element(measured.begin(), measured.end());
      out.calls.push_back(std::move(c));
    }
  }
  return out;
}

namespace {

// The collective's own time of a recorded call under overlap kappa: its min over ranks plus the head start the
// early ranks gave it (noise_model.hpp).
double OwnUs(const RecordedCall& c, double kappa) { return c.minUs + kappa * (c.maxUs - c.minUs); }

// The parameters that follow directly from the recorded calls, given the overlap: the two quantile tables, the lag
// scales and the lag shape. False with *err when the data do not have what they need.
bool FitDirect(const std::vector<RecordedSet>& sets, const std::vector<BlockRef>& blocks, const FitOptions& options,
               double kappa, NoiseParams* p, FitReport* rep, std::string* err) {
  auto own = [&](const RecordedCall& c) { return OwnUs(c, kappa); };
  // Within a stretch of calls: log(call / its block's median), of the collective's own time.
  // Each block's values scaled to the median block's spread (the robust sd of its log values), so the volatility
  // alone makes blocks differ.
  std::vector<std::vector<double>> perBlock;
  std::vector<double> spreads;
  for (const BlockRef& b : blocks) {
    const std::vector<double> v = Values(sets, b, own);
    if (v.size() < 4) continue;
    const double med = Median(v);
    std::vector<double> logs, dev;
    for (double x : v) logs.push_back(std::log(x / med)), dev.push_back(std::fabs(logs.back()));
    perBlock.push_back(logs);
    spreads.push_back(Median(dev));
  }
  const double typical = Median(spreads);
  std::vector<double> calls;
  for (size_t i = 0; i < perBlock.size(); i++)
    for (double x : perBlock[i]) calls.push_back(spreads[i] > 0 ? x * typical / spreads[i] : x);
  if (calls.size() < 20 || !(typical > 0)) {
    *err = "fewer than 20 calls in blocks of 4 or more, or no spread";
    return false;
  }
  p->callQ = QuantileGrid(calls, options.callQuantiles);

  // Slow periods: NCCL's default's block medians over its row's median.
  std::map<std::string, std::vector<double>> rowDefault;
  for (const BlockRef& b : blocks)
    if (sets[b.set].calls[b.begin].config == "default") {
      const std::vector<double> v = Values(sets, b, own);
      rowDefault[b.row].insert(rowDefault[b.row].end(), v.begin(), v.end());
    }
  std::vector<double> slow;
  for (const BlockRef& b : blocks)
    if (sets[b.set].calls[b.begin].config == "default")
      slow.push_back(std::log(Median(Values(sets, b, own)) / Median(rowDefault[b.row])));
  if (slow.size() < 5) {
    *err = "fewer than 5 blocks of NCCL's default (config `default`)";
    return false;
  }
  p->slowQ = QuantileGrid(slow, options.slowQuantiles);

  // Rank lags: per (algorithm, protocol) run, median (max - min) of each config against its median own time and
  // channels, A + B T + C (nc - 1), is the lag scale times the median range of `ranks` lags; every other pair gets
  // the fit of all configs pooled. The lognormal shape: the spread of (max - min) around its block's median, pooled.
  struct Cell {
    std::vector<double> t, d;
    std::pair<int, int> ran{-1, -1};
    int channels = 1;
  };
  std::map<std::string, Cell> cells;
  for (const BlockRef& b : blocks)
    for (size_t i = b.begin; i < b.end; i++) {
      const RecordedCall& c = sets[b.set].calls[i];
      Cell& cell = cells[b.config];
      cell.t.push_back(own(c)), cell.d.push_back(c.maxUs - c.minUs);
      cell.ran = CallRan(c), cell.channels = CallChannels(c);
    }
  // Non-negative least squares of the relative error of A + B T + C (nc - 1) over the configs `in` accepts (a
  // coefficient that comes out negative is dropped and the rest fitted again); false with fewer than 2 configs.
  auto fitScale = [&](auto in, LagScale* out) {
    std::vector<std::array<double, 3>> x;
    std::vector<double> y;
    for (auto& [k, cell] : cells) {
      const double md = Median(cell.d);
      if (!in(cell.ran) || !(md > 0)) continue;
      x.push_back({1 / md, Median(cell.t) / md, (cell.channels - 1) / md}), y.push_back(1);
    }
    if (x.size() < 2) return false;
    bool use[3] = {true, true, true};
    double coef[3] = {0, 0, 0};
    for (int round = 0; round < 3; round++) {
      // Normal equations over the features in use (Gaussian elimination with partial pivoting).
      std::vector<int> f;
      for (int j = 0; j < 3; j++)
        if (use[j]) f.push_back(j);
      const size_t n = f.size();
      std::vector<std::vector<double>> m(n, std::vector<double>(n + 1, 0.0));
      for (size_t r = 0; r < x.size(); r++)
        for (size_t i = 0; i < n; i++) {
          for (size_t j = 0; j < n; j++) m[i][j] += x[r][f[i]] * x[r][f[j]];
          m[i][n] += x[r][f[i]] * y[r];
        }
      bool singular = false;
      for (size_t col = 0; col < n && !singular; col++) {
        size_t piv = col;
        for (size_t r = col + 1; r < n; r++)
          if (std::fabs(m[r][col]) > std::fabs(m[piv][col])) piv = r;
        std::swap(m[col], m[piv]);
        if (std::fabs(m[col][col]) < 1e-12 * (1 + std::fabs(m[col][n]))) singular = true;
        for (size_t r = 0; r < n && !singular; r++) {
          if (r == col) continue;
          const double fct = m[r][col] / m[col][col];
          for (size_t j = col; j <= n; j++) m[r][j] -= fct * m[col][j];
        }
      }
      int worst = -1;
      for (size_t i = 0; i < n; i++) {
        coef[f[i]] = singular ? -1 : m[i][n] / m[i][i];
        if (coef[f[i]] < 0 && (worst < 0 || f[i] > worst)) worst = f[i];
      }
      if (worst < 0) break;
      use[worst] = false, coef[worst] = 0;  // drop the channel term first, then the per-µs one
      if (!use[0] && !use[1] && !use[2]) return false;
    }
    out->a = std::max(0.0, coef[0]), out->b = std::max(0.0, coef[1]), out->c = std::max(0.0, coef[2]);
    return out->a + out->b + out->c > 0;
  };
  std::set<std::pair<int, int>> pairs;
  for (auto& [k, cell] : cells)
    if (cell.ran.first >= 0) pairs.insert(cell.ran);
  std::map<std::pair<int, int>, LagScale> scales;
  for (const auto& pair : pairs) {
    LagScale l;
    if (fitScale([&](const std::pair<int, int>& r) { return r == pair; }, &l)) scales[pair] = l;
  }
  LagScale other;
  if (!fitScale([](const std::pair<int, int>&) { return true; }, &other)) {
    *err = "fewer than 2 configs with a spread over ranks";
    return false;
  }
  std::vector<double> d;  // (max - min) over its block's median: the lags' own spread, not the slow periods'
  for (const BlockRef& b : blocks) {
    std::vector<double> v;
    for (size_t i = b.begin; i < b.end; i++) v.push_back(sets[b.set].calls[i].maxUs - sets[b.set].calls[i].minUs);
    const double md = Median(v);
    if (v.size() >= 4 && md > 0)
      for (double x : v) d.push_back(x / md);
  }
  const double target = Quantile(d, 0.9) / std::max(1e-12, Median(d));
  auto ratio90 = [&](double sigma) {
    const std::vector<double> r = LagRangeSample(p->ranks, sigma);
    return Quantile(r, 0.9) / Quantile(r, 0.5);
  };
  double lo = 0.01, hi = 3;
  for (int it = 0; it < 40; it++) {
    const double mid = 0.5 * (lo + hi);
    (ratio90(mid) < target ? lo : hi) = mid;
  }
  p->lagSigma = 0.5 * (lo + hi);
  const double m = LagRangeMedian(p->ranks, p->lagSigma);
  p->lag.clear();
  for (auto& [k, l] : scales) p->lag[k] = LagScale{l.a / m, l.b / m, l.c / m};
  p->lagOther = LagScale{other.a / m, other.b / m, other.c / m};
  rep->lagRatio90 = target;
  rep->callValues = static_cast<int>(calls.size()), rep->slowValues = static_cast<int>(slow.size());
  return true;
}

// The mean over seeds 1..seeds of a statistic of the simulated runs of every set's schedule with `p`.
template <typename Stat>
double Simulated(const std::vector<RecordedSet>& sets, const NoiseParams& p, int seeds, Stat stat) {
  const FittedNoise noise(p);
  double sum = 0;
  for (int seed = 1; seed <= seeds; seed++) {
    std::vector<RecordedSet> sim;
    for (size_t s = 0; s < sets.size(); s++) sim.push_back(SimulateSet(noise, sets[s], seed, s + 1));
    sum += stat(ComputeNoiseStats(sim));
  }
  return sum / seeds;
}

// Indirect inference of one parameter on a grid: the value in [lo, hi] whose simulated statistic equals the
// recorded one (linear between grid points; the grid's end where none does). The statistic must grow with it.
template <typename Set, typename Stat>
double Calibrate(double lo, double hi, double step, double recorded, Set set, Stat simulated, double* atChosen) {
  double prevX = lo, prev = simulated(set(lo)), chosen = lo;
  if (recorded > prev) {
    for (double x = lo + step; x <= hi + 1e-9; x += step) {
      const double cur = simulated(set(x));
      chosen = x;
      if (cur >= recorded) {
        chosen = cur > prev ? prevX + (x - prevX) * (recorded - prev) / (cur - prev) : x;
        break;
      }
      prevX = x, prev = cur;
    }
  }
  *atChosen = simulated(set(chosen));
  return chosen;
}

}  // namespace

bool FitNoise(const std::vector<RecordedSet>& sets, const FitOptions& options, NoiseParams* out, FitReport* report,
              std::string* err) {
  if (sets.empty()) {
    *err = "no samples to fit";
    return false;
  }
  for (const RecordedSet& s : sets)
    if (s.ranks != sets[0].ranks) {
      *err = s.name + " has " + std::to_string(s.ranks) + " ranks, " + sets[0].name + " " +
             std::to_string(sets[0].ranks) + ": fit each rank count on its own";
      return false;
    }
  if (options.blockCalls < 1 || options.callQuantiles < 2 || options.slowQuantiles < 2 || options.rhoSeeds < 1) {
    *err = "bad fit options";
    return false;
  }
  FitReport rep;
  NoiseParams p;
  p.ranks = sets[0].ranks;
  p.blockCalls = options.blockCalls;
  const std::vector<BlockRef> blocks = Blocks(sets);
  const NoiseStats recorded = ComputeNoiseStats(sets);
  if (!FitDirect(sets, blocks, options, 0, &p, &rep, err)) return false;

  // Indirect inference, one parameter at a time: the value whose simulated runs of the same schedules give the
  // recorded statistic (both sides estimated alike, so the estimator's biases cancel). sign -1: the statistic falls
  // as the parameter grows.
  auto calibrate = [&](const char* parameter, const char* statistic, double lo, double hi, double step, double sign,
                       double (*stat)(const NoiseStats&), auto set) {
    double atChosen = 0;
    const double x = Calibrate(
        lo, hi, step, sign * stat(recorded),
        [&](double v) {
          NoiseParams q = p;
          set(q, v);
          return q;
        },
        [&](const NoiseParams& q) { return sign * Simulated(sets, q, options.rhoSeeds, stat); }, &atChosen);
    set(p, x);
    rep.calibrations.push_back({parameter, statistic, x, stat(recorded), sign * atChosen});
  };
  // Overlap: the slope of min on (max - min) within blocks is -kappa for calls in step; then the direct parameters
  // again with the own times it implies.
  calibrate(
      "overlap", "min_on_spread_slope", 0, 0.9, 0.1, -1, [](const NoiseStats& s) { return s.minSpreadSlope; },
      [](NoiseParams& q, double v) { q.overlap = v; });
  if (!FitDirect(sets, blocks, options, p.overlap, &p, &rep, err)) return false;
  // Lags per block: the spread of the blocks' median (max - min).
  calibrate(
      "lag_block", "lag_block_spread", 0, 1, 0.05, 1, [](const NoiseStats& s) { return s.lagBlockSpread; },
      [](NoiseParams& q, double v) { q.lagBlock = v; });
  // Volatility: the spread of the blocks' robust CV (its p90 over its median), then the correlation of a block's
  // CV with its slowness.
  calibrate(
      "volatility eta", "robust_cv_p90 / median", 0, 1.5, 0.1, 1,
      [](const NoiseStats& s) { return s.cvP90 / s.cvMedian; }, [](NoiseParams& q, double v) { q.volatility = v; });
  calibrate(
      "volatility lambda", "slow_cv_corr", 0, 1, 0.1, 1, [](const NoiseStats& s) { return s.slowCvCorr; },
      [](NoiseParams& q, double v) { q.volatilitySlow = v; });
  // Within-stretch level: the rank lags add to the spread of the maximum over ranks, so the call quantiles are
  // scaled to give the recorded median robust CV.
  const std::vector<double> callShape = p.callQ;
  calibrate(
      "call quantiles x", "robust_cv_median", 0.5, 1.5, 0.05, 1, [](const NoiseStats& s) { return s.cvMedian; },
      [&](NoiseParams& q, double v) {
        for (size_t i = 0; i < q.callQ.size(); i++) q.callQ[i] = v * callShape[i];
      });
  // Slow periods' core: the recorded default's block medians include each block's own sampling noise (and some
  // rows' defaults vary more than the other configs), which the simulation adds again. So the slow quantiles
  // between their 10th and 90th percentile are scaled to give the recorded median block spread, and those beyond
  // are moved by as much as the 10th and 90th (the tails keep their shape).
  const std::vector<double> slowShape = p.slowQ;
  const double q10 = QuantileAt(slowShape, 0.1), q90 = QuantileAt(slowShape, 0.9);
  calibrate(
      "slow quantiles' core x", "block_spread_median", 0.2, 2, 0.05, 1,
      [](const NoiseStats& s) { return s.spreadMedian; },
      [&](NoiseParams& q, double c) {
        for (size_t i = 0; i < q.slowQ.size(); i++) {
          const double v = slowShape[i];
          q.slowQ[i] = v > q90 ? v - (1 - c) * q90 : v < q10 ? v - (1 - c) * q10 : c * v;
        }
      });
  // Persistence of slow periods: the lag-1 correlation of consecutive blocks.
  calibrate(
      "slow_rho", "block_lag1_corr", 0, 0.95, 0.05, 1, [](const NoiseStats& s) { return s.blockLag1; },
      [](NoiseParams& q, double v) { q.slowRho = v; });
  if (std::string bad = ValidateNoiseParams(p); !bad.empty()) {
    *err = "fitted parameters out of range: " + bad;
    return false;
  }
  *out = std::move(p);
  if (report) *report = rep;
  return true;
}

}  // namespace simnccl
