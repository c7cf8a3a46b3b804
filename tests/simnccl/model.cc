// Time model of the simulated NCCL (see model.hpp): a built-in analytic landscape and a table-driven one.
#include "model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "channels.hpp"
#include "noise_model.hpp"
#include "rng.hpp"

namespace simnccl {

namespace {
const char* kCollNames[kNumColls] = {"broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce"};
}  // namespace

const char* CollName(int coll) { return coll >= 0 && coll < kNumColls ? kCollNames[coll] : "unknown"; }
int CollFromName(const std::string& name) {
  for (int c = 0; c < kNumColls; c++)
    if (name == kCollNames[c]) return c;
  return -1;
}

size_t ProtoGrain(int proto) { return proto == 0 ? 16 : proto == 1 ? 1920 : 512; }
size_t ProtoMaxChunk(int proto) { return proto == 0 ? 32768 : proto == 1 ? 576000 : 1048576; }
size_t ProtoDefaultChunk(int proto) { return proto == 0 ? 32768 : proto == 1 ? 576000 : 524288; }

double NoiseFactor(unsigned long long seed, unsigned long long commHash, unsigned long long seq, double sigma) {
  uint64_t h1 = SplitMix(seed ^ SplitMix(commHash ^ SplitMix(seq)));
  uint64_t h2 = SplitMix(h1), h3 = SplitMix(h2);
  double z = std::sqrt(-2.0 * std::log(Uniform(h1))) * std::cos(2 * M_PI * Uniform(h2));
  double f = std::exp(sigma * z - 0.5 * sigma * sigma);
  double u = Uniform(h3);
  if (u < 0.005) f *= 1.5 + 200.0 * u;  // rare outliers: 1.5x..2.5x
  return f;
}

Model::Best Model::Exhaustive(int coll, size_t nBytes, int nranks, int budget, bool withChunk) const {
  Best best{Config{}, DefaultDuration(coll, nBytes, nranks, budget)};  // "no override" is part of the space
  for (int a = 0; a < kNumAlgos; a++)
    for (int p = 0; p < kNumProtos; p++) {
      if (!Valid(coll, a, p)) continue;
      for (int nc = 1; nc <= budget; nc++) {
        std::vector<size_t> chunks{0};
        if (withChunk)
          for (size_t c = 4096; c <= ProtoMaxChunk(p); c *= 2) chunks.push_back(std::max(c, ProtoGrain(p)));
        for (size_t c : chunks) {
          Config cfg{a, p, nc, c};
          double t = Duration(coll, nBytes, nranks, cfg, budget);
          if (t < best.us) best = Best{cfg, t};
        }
      }
    }
  return best;
}

// ---------------------------------------------------------------------------------------------------------------
// Built-in model: latency per pipeline step, per-channel launch/sync cost, per-channel bandwidth saturating at the
// link bandwidth, and a chunk term (pipeline bubble vs per-step overhead). NCCL's own pick comes from a cruder
// estimate (no per-channel cost, LL128 underestimated, always the full budget), so it is off at mid sizes.
namespace {
// The built-in model's validity: Ring for every collective with every protocol, Tree for all-reduce only (NCCL
// runs broadcast and reduce on Ring alone).
bool BuiltinValid(int coll, int algo, int proto) {
  if (proto < 0 || proto >= kNumProtos) return false;
  if (algo == kAlgoRing) return true;
  return algo == kAlgoTree && coll == kAllReduce;
}
}  // namespace

class BuiltinModel : public Model {
 public:
  bool Valid(int coll, int algo, int proto) const override { return BuiltinValid(coll, algo, proto); }

  double Duration(int coll, size_t nBytes, int nranks, const Config& cfg, int budget) const override {
    int nc = std::clamp(cfg.nc > 0 ? cfg.nc : DefaultChannels(nBytes, budget), 1, budget);
    int p = cfg.proto;
    double n = std::max(nranks, 2);
    double steps, moved;
    Shape(coll, cfg.algo, n, &steps, &moved);
    double perCh = kPerChBw[p] * (cfg.algo == 0 ? 0.8 : 1.0);
    double agg = nc * perCh;
    double bw = 1.0 / std::pow(std::pow(agg, -4) + std::pow(kMaxBw[p], -4), 0.25);  // bytes per µs
    double bytes = (double)nBytes * moved;
    double t = kLaunch + steps * kLat[p] + nc * kPerCh[p] + bytes / bw;
    // Chunking: each channel moves its slice in chunk-sized steps.
    double slice = (double)nBytes / nc;
    double chunk = (double)(cfg.chunk ? cfg.chunk : ProtoDefaultChunk(p));
    double cEff = std::min(chunk, std::max(slice, (double)ProtoGrain(p)));
    double nSteps = std::ceil(slice / cEff);
    t += nSteps * kStepCost[p] + kBubble[p] * (n - 1) * cEff / perCh;
    return t;
  }

  Config DefaultConfig(int coll, size_t nBytes, int nranks, int budget) const override {
    float table[kNumAlgos][kNumProtos];
    CostTable(coll, nBytes, nranks, budget, table);
    Config best;
    float bestCost = std::numeric_limits<float>::max();
    for (int a = 0; a < kNumAlgos; a++)
      for (int p = 0; p < kNumProtos; p++)
        if (table[a][p] >= 0 && table[a][p] < bestCost) bestCost = table[a][p], best.algo = a, best.proto = p;
    best.nc = DefaultChannels(nBytes, budget);
    return best;
  }

  void CostTable(int coll, size_t nBytes, int nranks, int budget, float table[kNumAlgos][kNumProtos]) const override {
    double n = std::max(nranks, 2);
    for (int a = 0; a < kNumAlgos; a++)
      for (int p = 0; p < kNumProtos; p++) {
        table[a][p] = -1.0f;
        if (!Valid(coll, a, p)) continue;
        double steps, moved;
        Shape(coll, a, n, &steps, &moved);
        int nc = DefaultChannels(nBytes, budget);
        double bw = std::min(nc * kEstPerChBw[p] * (a == 0 ? 0.8 : 1.0), kMaxBw[p]);
        table[a][p] = (float)(kLaunch + steps * kLat[p] * (a == 0 ? 1.3 : 1.0) + nBytes * moved / bw);
      }
  }

 private:
  static int DefaultChannels(size_t nBytes, int budget) {
    // Like NCCL, fewer channels for small messages (one channel per 32 KiB), else the whole budget.
    return std::clamp((int)(nBytes / 32768), 1, budget);
  }
  static void Shape(int coll, int algo, double n, double* steps, double* moved) {
    switch (coll) {
      case kAllReduce:
        *steps = algo == 0 ? 2 * std::ceil(std::log2(n)) : 2 * (n - 1);
        *moved = 2 * (n - 1) / n;
        break;
      case kAllGather:
      case kReduceScatter:
        *steps = n - 1;
        *moved = (n - 1) / n;
        break;
      default:
        *steps = n - 1;
        *moved = 1;
    }
  }
  static constexpr double kLaunch = 9.0;                          // µs
  static constexpr double kLat[3] = {0.9, 1.5, 3.2};              // µs per pipeline step
  static constexpr double kPerCh[3] = {0.15, 1.0, 0.8};           // µs per channel (launch/sync)
  static constexpr double kStepCost[3] = {0.01, 0.05, 0.3};       // µs per chunk step
  static constexpr double kBubble[3] = {0.02, 0.05, 0.85};        // pipeline fill, in chunk transfer times per hop
  static constexpr double kPerChBw[3] = {4000, 24000, 28000};     // bytes/µs per channel
  static constexpr double kEstPerChBw[3] = {4000, 10500, 28000};  // NCCL's estimate: LL128 underrated
  static constexpr double kMaxBw[3] = {50000, 330000, 360000};    // bytes/µs aggregate
};

std::unique_ptr<Model> MakeBuiltinModel() { return std::make_unique<BuiltinModel>(); }

// ---------------------------------------------------------------------------------------------------------------
// Table model: rows `collective config bytes time_us busbw`. A collective the table has no forced rows for (a
// landscape records all-reduce, all-gather and reduce-scatter; NCCL also runs broadcast and reduce) is not left
// without an algorithm: it gets the built-in model's validity rules restricted to the pairs a recorded collective
// (its stand-in) ran on this machine, which hold the protocols the topology allows (the testbed's rings: LL and
// Simple), and the stand-in's times at equal bus bandwidth.
class TableModel : public Model {
 public:
  using Curve = std::map<double, double>;  // bytes -> µs
  struct CollData {
    std::map<std::tuple<int, int, int>, Curve> forced;  // (algo, proto, nc)
    Curve def, def32;
    std::map<double, std::pair<int, int>> defaultRan;  // bytes -> (algo, proto) NCCL's default ran, when recorded
  };
  CollData data[kNumColls];
  RecordedMachine machine;
  int standIn[kNumColls] = {-1, -1, -1, -1, -1};  // per collective without forced rows: the one timing it, or -1

  RecordedMachine Machine() const override { return machine; }

  bool Covered(int coll) const { return !data[coll].forced.empty(); }

  // The stand-ins, once the table is read: for each collective without rows, the first recorded one of those with
  // its traffic pattern (broadcast: all-gather's ring pipeline; reduce: reduce-scatter's), then the others.
  void ChooseStandIns() {
    static constexpr int kPreference[kNumColls][kNumColls - 1] = {
        {kAllGather, kReduceScatter, kAllReduce, kReduce},     // broadcast
        {kReduceScatter, kAllGather, kAllReduce, kBroadcast},  // reduce
        {kReduceScatter, kBroadcast, kReduce, kAllReduce},     // all-gather
        {kAllGather, kReduce, kBroadcast, kAllReduce},         // reduce-scatter
        {kReduceScatter, kAllGather, kReduce, kBroadcast}};    // all-reduce
    for (int c = 0; c < kNumColls; c++) {
      if (Covered(c)) continue;
      for (int s : kPreference[c])
        if (Covered(s)) {
          standIn[c] = s;
          break;
        }
    }
  }

  bool Recorded(int coll, int algo, int proto) const {
    for (auto& [k, c] : data[coll].forced)
      if (std::get<0>(k) == algo && std::get<1>(k) == proto) return true;
    return false;
  }

  bool Valid(int coll, int algo, int proto) const override {
    if (Covered(coll)) return Recorded(coll, algo, proto);
    return standIn[coll] >= 0 && BuiltinValid(coll, algo, proto) && Recorded(standIn[coll], algo, proto);
  }

  static double Interp(const Curve& c, double b) {
    if (c.empty()) return std::numeric_limits<double>::quiet_NaN();
    if (c.size() == 1) return c.begin()->second;
    auto hi = c.lower_bound(b);
    if (hi != c.end() && hi->first == b) return hi->second;
    auto lo = hi;
    bool below = hi == c.begin(), above = hi == c.end();
    if (below) {
      lo = c.begin();
      hi = std::next(lo);
    } else if (above) {
      hi = std::prev(c.end());
      lo = std::prev(hi);
    } else {
      lo = std::prev(hi);
    }
    double s = std::log(hi->second / lo->second) / std::log(hi->first / lo->first);
    if (below) s = std::clamp(s, 0.0, 1.0);
    if (above) s = std::clamp(s, 0.5, 1.1);
    return lo->second * std::exp(s * std::log(b / lo->first));
  }

  double Forced(int coll, double nBytes, int algo, int proto, int nc) const {
    std::vector<std::pair<int, double>> pts;  // (nc, µs at nBytes)
    for (auto& [k, c] : data[coll].forced)
      if (std::get<0>(k) == algo && std::get<1>(k) == proto) pts.emplace_back(std::get<2>(k), Interp(c, nBytes));
    if (pts.empty()) return std::numeric_limits<double>::infinity();
    std::sort(pts.begin(), pts.end());
    if (nc >= pts.back().first) return pts.back().second;
    if (nc <= pts.front().first) {
      if (pts.size() < 2 || nc == pts.front().first) return pts.front().second;
      // Fit t = a + b/nc through the two smallest channel counts.
      double n0 = pts[0].first, n1 = pts[1].first, t0 = pts[0].second, t1 = pts[1].second;
      double b = (t0 - t1) / (1 / n0 - 1 / n1);
      if (b <= 0) return t0;
      return t1 + b * (1.0 / nc - 1 / n1);
    }
    for (size_t i = 1; i < pts.size(); i++)
      if (nc <= pts[i].first) {
        double f = double(nc - pts[i - 1].first) / (pts[i].first - pts[i - 1].first);
        return pts[i - 1].second + f * (pts[i].second - pts[i - 1].second);
      }
    return pts.back().second;
  }

  // Bus bandwidth per algorithm bandwidth (nccl-tests): what a rank's links carry per byte of nBytes.
  static double BusFactor(int coll, int nranks) {
    const double n = std::max(nranks, 2);
    if (coll == kAllReduce) return 2 * (n - 1) / n;
    if (coll == kAllGather || coll == kReduceScatter) return (n - 1) / n;
    return 1;
  }

  // A forced config's time: from the collective's own rows, or its stand-in's at the size that puts as many bytes
  // on each link (equal bus bandwidth: a broadcast of N bytes as an all-gather of N n/(n-1)).
  double Timed(int coll, size_t nBytes, int nranks, int algo, int proto, int nc) const {
    if (Covered(coll) || standIn[coll] < 0) return Forced(coll, (double)nBytes, algo, proto, nc);
    const int s = standIn[coll];
    return Forced(s, (double)nBytes * BusFactor(coll, nranks) / BusFactor(s, nranks), algo, proto, nc);
  }

  double Duration(int coll, size_t nBytes, int nranks, const Config& cfg, int budget) const override {
    if (cfg.algo < 0 || !Valid(coll, cfg.algo, cfg.proto)) return DefaultDuration(coll, nBytes, nranks, budget);
    int nc = std::clamp(cfg.nc > 0 ? cfg.nc : budget, 1, budget);
    return Timed(coll, nBytes, nranks, cfg.algo, cfg.proto, nc);
  }

  double DefaultDuration(int coll, size_t nBytes, int nranks, int budget) const override {
    const Curve& c = budget >= 32 && !data[coll].def32.empty() ? data[coll].def32 : data[coll].def;
    if (!c.empty()) return Interp(c, nBytes);
    Config d = DefaultConfig(coll, nBytes, nranks, budget);
    return Timed(coll, nBytes, nranks, d.algo, d.proto, d.nc);
  }

  // The channels NCCL runs (algo, proto) on at nBytes without a tuner (float32 elements, as recorded).
  int OwnChannels(int coll, size_t nBytes, int nranks, int algo, int proto, int budget) const {
    const size_t perRank = coll == kAllGather || coll == kReduceScatter ? (size_t)std::max(nranks, 1) : 1;
    const size_t count = std::max<size_t>(1, nBytes / 4 / perRank);
    return ChannelsRun(coll, count, 4, nranks, algo, proto, 0, budget, 22809, machine.ringSimpleThreads);
  }

  Config DefaultConfig(int coll, size_t nBytes, int nranks, int budget) const override {
    const auto& ran = data[coll].defaultRan;
    if (!ran.empty()) {
      // What NCCL's default ran at the recorded size nearest in log scale, on the channels NCCL gives it.
      auto it = ran.lower_bound((double)nBytes);
      if (it == ran.end() ||
          (it != ran.begin() && std::log(it->first / nBytes) > std::log(nBytes / std::prev(it)->first)))
        it = std::prev(it);
      Config d;
      d.algo = it->second.first, d.proto = it->second.second;
      d.nc = OwnChannels(coll, nBytes, nranks, d.algo, d.proto, budget);
      return d;
    }
    if (!Covered(coll)) {
      // Nothing recorded of it: NCCL's pick is taken to be the fastest valid pair, on the channels NCCL gives it.
      Config best;
      double bestUs = std::numeric_limits<double>::infinity();
      for (int a = 0; a < kNumAlgos; a++)
        for (int p = 0; p < kNumProtos; p++) {
          if (!Valid(coll, a, p)) continue;
          const double t = Timed(coll, nBytes, nranks, a, p, budget);
          if (t < bestUs) bestUs = t, best.algo = a, best.proto = p;
        }
      if (best.algo >= 0) best.nc = OwnChannels(coll, nBytes, nranks, best.algo, best.proto, budget);
      return best;
    }
    // The forced pair whose time at the full budget is closest to the default row: NCCL's likely own pick.
    const Curve& c = budget >= 32 && !data[coll].def32.empty() ? data[coll].def32 : data[coll].def;
    double target = c.empty() ? 0 : Interp(c, nBytes);
    Config best;
    double bestDiff = std::numeric_limits<double>::infinity();
    for (int a = 0; a < kNumAlgos; a++)
      for (int p = 0; p < kNumProtos; p++) {
        if (!Valid(coll, a, p)) continue;
        double d = std::fabs(Forced(coll, (double)nBytes, a, p, budget) - target);
        if (d < bestDiff) bestDiff = d, best.algo = a, best.proto = p;
      }
    best.nc = budget;
    return best;
  }

  void CostTable(int coll, size_t nBytes, int nranks, int budget, float table[kNumAlgos][kNumProtos]) const override {
    Config d = DefaultConfig(coll, nBytes, nranks, budget);
    float lowest = std::numeric_limits<float>::max();
    for (int a = 0; a < kNumAlgos; a++)
      for (int p = 0; p < kNumProtos; p++) {
        table[a][p] = Valid(coll, a, p) ? (float)Timed(coll, nBytes, nranks, a, p, budget) : -1.0f;
        if (table[a][p] >= 0) lowest = std::min(lowest, table[a][p]);
      }
    if (d.algo >= 0) table[d.algo][d.proto] = std::max(0.001f, lowest * 0.99f);  // argmin = NCCL's own pick
  }
};

// ---------------------------------------------------------------------------------------------------------------
// Interference: the base model's landscape with a channel-count penalty (model.hpp).
class InterferenceModel : public Model {
 public:
  InterferenceModel(std::unique_ptr<Model> base, double level) : base_(std::move(base)), level_(level) {}

  bool Valid(int coll, int algo, int proto) const override { return base_->Valid(coll, algo, proto); }
  double Duration(int coll, size_t nBytes, int nranks, const Config& cfg, int budget) const override {
    // Without an override (or with nc 0) NCCL runs its own channel count: the default config's.
    const bool own = cfg.algo < 0 || !Valid(coll, cfg.algo, cfg.proto) || cfg.nc <= 0;
    const int nc = own ? DefaultConfig(coll, nBytes, nranks, budget).nc : std::clamp(cfg.nc, 1, budget);
    return base_->Duration(coll, nBytes, nranks, cfg, budget) * Factor(nc);
  }
  double DefaultDuration(int coll, size_t nBytes, int nranks, int budget) const override {
    return base_->DefaultDuration(coll, nBytes, nranks, budget) *
           Factor(DefaultConfig(coll, nBytes, nranks, budget).nc);
  }
  Config DefaultConfig(int coll, size_t nBytes, int nranks, int budget) const override {
    return base_->DefaultConfig(coll, nBytes, nranks, budget);
  }
  void CostTable(int coll, size_t nBytes, int nranks, int budget, float table[kNumAlgos][kNumProtos]) const override {
    base_->CostTable(coll, nBytes, nranks, budget, table);
  }
  RecordedMachine Machine() const override { return base_->Machine(); }

 private:
  double Factor(int nc) const { return 1 + level_ * nc / kInterferenceChannels; }
  std::unique_ptr<Model> base_;
  double level_;
};

std::unique_ptr<Model> WithInterference(std::unique_ptr<Model> base, double level) {
  if (level <= 0) return base;
  return std::make_unique<InterferenceModel>(std::move(base), level);
}

bool ParseInterferenceLevel(const std::string& text, double* level) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != 0 || !(v >= 0 && v < 1)) return false;
  *level = v;
  return true;
}

std::unique_ptr<Model> LoadTableModel(const std::string& path, std::string* err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot open model file " + path;
    return nullptr;
  }
  auto m = std::make_unique<TableModel>();
  std::string line;
  int lineNo = 0, rows = 0, channelsRun = 0;
  bool channelTruth = false;
  while (std::getline(in, line)) {
    lineNo++;
    if (line.empty()) continue;
    if (line[0] == '#') {
      // ccltune-bench's landscape header and alias lines (bench/landscape.hpp).
      int n = 0;
      char ran[64];
      if (std::sscanf(line.c_str(), "# ranks %d", &n) == 1) m->machine.ranks = n;
      if (line.rfind("# environment", 0) == 0 && line.find("NCCL_HOSTID=") != std::string::npos)
        m->machine.ringSimpleThreads = kRingSimpleThreadsPcie;
      int algo = -1, proto = -1, nc = 0;
      if (const size_t at = line.find("(NCCL ran "); line.rfind("# alias ", 0) == 0 && at != std::string::npos &&
                                                     std::sscanf(line.c_str() + at, "(NCCL ran %63[^)])", ran) == 1 &&
                                                     ParseRan(ran, &algo, &proto, &nc)) {
        channelTruth = true;
        channelsRun = std::max(channelsRun, nc);
      }
      continue;
    }
    std::istringstream ls(line);
    std::string coll, cfg;
    double bytes, us, busbw;
    if (!(ls >> coll >> cfg >> bytes >> us >> busbw)) {
      *err = path + ":" + std::to_string(lineNo) + ": expected `collective config bytes time_us busbw`";
      return nullptr;
    }
    int c = CollFromName(coll);
    if (c < 0) {
      *err = path + ":" + std::to_string(lineNo) + ": unknown collective '" + coll + "'";
      return nullptr;
    }
    int a, p, nc;
    if (cfg == "default") {
      m->data[c].def[bytes] = us;
    } else if (cfg == "default_min32") {
      m->data[c].def32[bytes] = us;
    } else if (cfg == "default_again") {
      // run-to-run noise sample; not used by the model
    } else if (std::sscanf(cfg.c_str(), "a%d.p%d.nc%d", &a, &p, &nc) == 3 && a >= 0 && a < kNumAlgos && p >= 0 &&
               p < kNumProtos && nc > 0) {
      m->data[c].forced[{a, p, nc}][bytes] = us;
      channelsRun = std::max(channelsRun, nc);
    } else {
      *err = path + ":" + std::to_string(lineNo) + ": unknown config '" + cfg + "'";
      return nullptr;
    }
    rows++;
  }
  if (rows == 0) {
    *err = "model file " + path + " has no rows";
    return nullptr;
  }
  // The recorded calls beside a landscape table: what NCCL's default ran (`collective bytes config round pos seq
  // min_us max_us ran`, ran = algo/proto/ncN).
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".txt") == 0) {
    std::ifstream samples(path.substr(0, path.size() - 4) + ".samples");
    while (samples && std::getline(samples, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ls(line);
      std::string coll, cfg, round, pos, seq, lo, hi, ran;
      double bytes = 0;
      if (!(ls >> coll >> bytes >> cfg >> round >> pos >> seq >> lo >> hi >> ran)) continue;
      const int c = CollFromName(coll);
      int algo = -1, proto = -1, nc = 0;
      if (c < 0 || !ParseRan(ran, &algo, &proto, &nc)) continue;
      channelTruth = true;
      channelsRun = std::max(channelsRun, nc);
      if (cfg == "default") m->data[c].defaultRan[bytes] = {algo, proto};
    }
  }
  if (channelTruth) m->machine.channels = std::min(channelsRun, kMaxChannels);
  m->ChooseStandIns();
  return m;
}

}  // namespace simnccl
