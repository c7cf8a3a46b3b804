// The fitted noise model (noise_model.hpp): its parameter file and its seeded draws.
#include "noise_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "rng.hpp"

namespace simnccl {

namespace {
constexpr char kFormat[] = "simnccl-noise";
constexpr int kFormatVersion = 1;
// Hash streams: one per kind of draw, so the draws of one call are independent.
constexpr uint64_t kCallStream = 0x63616c6cULL;        // "call"
constexpr uint64_t kSlowStream = 0x736c6f77ULL;        // "slow"
constexpr uint64_t kVolatilityStream = 0x766f6cULL;    // "vol"
constexpr uint64_t kLagBlockStream = 0x6c6167626cULL;  // "lagbl"
constexpr uint64_t kLagStream = 0x6c616700000000ULL;   // "lag", plus the rank

uint64_t Hash(uint64_t seed, uint64_t key, uint64_t index, uint64_t stream) {
  return SplitMix(seed ^ SplitMix(key ^ SplitMix(index ^ SplitMix(stream))));
}

const char* const kAlgoNames[7] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
const char* const kProtoNames[3] = {"ll", "ll128", "simple"};

void WriteQuantiles(std::ostringstream& o, const char* name, const std::vector<double>& q) {
  o << name << ' ' << q.size() << '\n';
  char buf[32];
  for (size_t i = 0; i < q.size(); i++) {
    std::snprintf(buf, sizeof buf, "%.6g", q[i]);
    o << buf << (i + 1 == q.size() || i % 10 == 9 ? '\n' : ' ');
  }
}
}  // namespace

int AlgoIndex(const std::string& name) {
  for (int a = 0; a < 7; a++)
    if (name == kAlgoNames[a]) return a;
  return -1;
}
int ProtoIndex(const std::string& name) {
  for (int p = 0; p < 3; p++)
    if (name == kProtoNames[p]) return p;
  return -1;
}
bool ParseRan(const std::string& ran, int* algo, int* proto, int* channels) {
  const size_t s1 = ran.find('/');
  const size_t s2 = s1 == std::string::npos ? s1 : ran.find('/', s1 + 1);
  if (s2 == std::string::npos || ran.compare(s2, 3, "/nc") != 0) return false;
  const int a = AlgoIndex(ran.substr(0, s1)), p = ProtoIndex(ran.substr(s1 + 1, s2 - s1 - 1));
  const int nc = std::atoi(ran.c_str() + s2 + 3);
  if (a < 0 || p < 0 || nc <= 0) return false;
  *algo = a, *proto = p, *channels = nc;
  return true;
}

double AfterOther::Factor(int algorithm, int protocol) const {
  if (auto it = pair.find({algorithm, protocol}); it != pair.end()) return it->second;
  if (auto it = algo.find(algorithm); it != algo.end()) return it->second;
  return rest;
}

bool ParseAfterOther(const std::string& spec, AfterOther* out, std::string* err) {
  AfterOther a;
  std::stringstream ss(spec);
  std::string entry;
  bool any = false;
  while (std::getline(ss, entry, ',')) {
    const size_t eq = entry.find('=');
    char* end = nullptr;
    const std::string value = eq == std::string::npos ? "" : entry.substr(eq + 1);
    const double f = std::strtod(value.c_str(), &end);
    if (eq == std::string::npos || value.empty() || *end != '\0' || !(f >= 1 && f <= 10)) {
      *err = "entry '" + entry + "': want ALGO/PROTO=FACTOR, ALGO/*=FACTOR or *=FACTOR, FACTOR in [1, 10]";
      return false;
    }
    const std::string key = entry.substr(0, eq);
    if (key == "*" || key == "*/*") {
      a.rest = f;
    } else {
      const size_t slash = key.find('/');
      const int al = AlgoIndex(key.substr(0, slash));
      const std::string proto = slash == std::string::npos ? "" : key.substr(slash + 1);
      const bool any_proto = proto == "*";
      const int pr = any_proto ? -1 : ProtoIndex(proto);
      if (al < 0 || (!any_proto && pr < 0)) {
        *err = "entry '" + entry + "': unknown algorithm or protocol";
        return false;
      }
      if (any_proto) {
        a.algo[al] = f;
      } else {
        a.pair[{al, pr}] = f;
      }
    }
    any = true;
  }
  if (!any) {
    *err = "empty";
    return false;
  }
  *out = std::move(a);
  return true;
}

const char* AlgoName(int algo) { return algo >= 0 && algo < 7 ? kAlgoNames[algo] : "?"; }
const char* ProtoName(int proto) { return proto >= 0 && proto < 3 ? kProtoNames[proto] : "?"; }

double QuantileAt(const std::vector<double>& q, double u) {
  if (q.empty()) return 0;
  if (q.size() == 1) return q[0];
  const double x = std::clamp(u, 0.0, 1.0) * static_cast<double>(q.size() - 1);
  const size_t i = std::min(static_cast<size_t>(x), q.size() - 2);
  const double f = x - static_cast<double>(i);
  return q[i] + f * (q[i + 1] - q[i]);
}

std::vector<double> LagRangeSample(int ranks, double sigma) {
  constexpr int kDraws = 20001;
  std::vector<double> range(kDraws);
  for (int d = 0; d < kDraws; d++) {
    double lo = INFINITY, hi = -INFINITY;
    for (int r = 0; r < ranks; r++) {
      const double x = std::exp(sigma * StandardNormal(Hash(0, static_cast<uint64_t>(d), static_cast<uint64_t>(r), 0)));
      lo = std::min(lo, x), hi = std::max(hi, x);
    }
    range[d] = hi - lo;
  }
  std::sort(range.begin(), range.end());
  return range;
}

double LagRangeMedian(int ranks, double sigma) {
  const std::vector<double> range = LagRangeSample(ranks, sigma);
  return range[range.size() / 2];
}

std::string ValidateNoiseParams(const NoiseParams& p) {
  if (p.ranks < 2 || p.ranks > 64) return "ranks must be 2..64";
  if (p.blockCalls < 1) return "block_calls must be at least 1";
  if (p.callQ.size() < 2 || p.slowQ.size() < 2) return "call_quantiles and slow_quantiles need 2 values or more";
  for (const auto* q : {&p.callQ, &p.slowQ}) {
    if (!std::is_sorted(q->begin(), q->end())) return "quantiles must not decrease";
    for (double v : *q)
      if (!std::isfinite(v) || std::fabs(v) > 5) return "quantiles must be finite log factors within +-5";
  }
  if (!(p.slowRho >= 0 && p.slowRho < 1)) return "slow_rho must be in [0, 1)";
  if (!(p.overlap >= 0 && p.overlap < 1)) return "overlap must be in [0, 1)";
  if (!(p.volatility >= 0 && p.volatility <= 3) || !(p.volatilitySlow >= 0 && p.volatilitySlow <= 1))
    return "volatility must be in [0, 3], volatility_slow in [0, 1]";
  if (!(p.lagBlock >= 0 && p.lagBlock <= 3)) return "lag_block must be in [0, 3]";
  for (const auto& [k, l] : p.lag)
    if (!(l.a >= 0) || !(l.b >= 0) || !(l.c >= 0)) return "lag scales must be >= 0";
  if (!(p.lagOther.a >= 0) || !(p.lagOther.b >= 0) || !(p.lagOther.c >= 0)) return "lag scales must be >= 0";
  if (!(p.lagSigma > 0 && p.lagSigma <= 5)) return "lag_sigma must be in (0, 5]";
  return "";
}

bool LoadNoiseParams(const std::string& path, NoiseParams* out, std::string* err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot open noise model file " + path;
    return false;
  }
  std::ostringstream body;
  std::string line;
  while (std::getline(in, line))
    if (line.empty() || line[0] != '#') body << line << '\n';
  std::istringstream s(body.str());
  NoiseParams p;
  std::string key;
  int version = 0;
  bool sawFormat = false;
  auto fail = [&](const std::string& what) {
    *err = path + ": " + what;
    return false;
  };
  while (s >> key) {
    bool ok = true;
    if (key == kFormat) {
      ok = static_cast<bool>(s >> version);
      sawFormat = true;
    } else if (key == "ranks") {
      ok = static_cast<bool>(s >> p.ranks);
    } else if (key == "block_calls") {
      ok = static_cast<bool>(s >> p.blockCalls);
    } else if (key == "slow_rho") {
      ok = static_cast<bool>(s >> p.slowRho);
    } else if (key == "overlap") {
      ok = static_cast<bool>(s >> p.overlap);
    } else if (key == "volatility") {
      ok = static_cast<bool>(s >> p.volatility >> p.volatilitySlow);
    } else if (key == "lag_scale") {
      std::string algo, proto;
      LagScale l;
      ok = static_cast<bool>(s >> algo >> proto >> l.a >> l.b >> l.c);
      if (ok && algo == "*" && proto == "*") {
        p.lagOther = l;
      } else {
        ok = ok && AlgoIndex(algo) >= 0 && ProtoIndex(proto) >= 0;
        if (ok) p.lag[{AlgoIndex(algo), ProtoIndex(proto)}] = l;
      }
    } else if (key == "lag_block") {
      ok = static_cast<bool>(s >> p.lagBlock);
    } else if (key == "lag_sigma") {
      ok = static_cast<bool>(s >> p.lagSigma);
    } else if (key == "call_quantiles" || key == "slow_quantiles") {
      size_t n = 0;
      ok = static_cast<bool>(s >> n) && n <= 100000;
      std::vector<double>& q = key == "call_quantiles" ? p.callQ : p.slowQ;
      q.assign(ok ? n : 0, 0.0);
      for (size_t i = 0; ok && i < n; i++) ok = static_cast<bool>(s >> q[i]);
    } else {
      return fail("unknown key '" + key + "'");
    }
    if (!ok) return fail("bad value after '" + key + "'");
  }
  if (!sawFormat || version != kFormatVersion)
    return fail(std::string("not a noise model file (want a line `") + kFormat + " " + std::to_string(kFormatVersion) +
                "`)");
  if (std::string bad = ValidateNoiseParams(p); !bad.empty()) return fail(bad);
  *out = std::move(p);
  return true;
}

std::string FormatNoiseParams(const NoiseParams& p) {
  std::ostringstream o;
  o << "# simnccl fitted noise model (tests/simnccl/noise_model.hpp): SIMNCCL_NOISE_MODEL=this file.\n"
    << "# Call k in block b (block_calls calls): T = Base(M) S_b F_k, F_k = exp(V_b call_quantiles(u_k)),\n"
    << "# S_b = exp(slow_quantiles(Phi(Z_b))), Z an AR(1) over blocks with slow_rho, `volatility eta lambda`:\n"
    << "# V_b = exp(eta (lambda Z_b + sqrt(1 - lambda^2) y_b)). The call ends T - overlap min(R, T) after the last\n"
    << "# arrival (R: the arrivals' spread); then each rank lags W_b (a + b T + c (nc - 1)) exp(lag_sigma z),\n"
    << "# `lag_scale ALGO PROTO a b c` (* *: any other), W_b = exp(lag_block w_b).\n";
  for (const std::string& n : p.notes) o << "# " << n << '\n';
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s %d\nranks %d\nblock_calls %d\nslow_rho %.4f\nvolatility %.4f %.4f\noverlap %.4f\n",
                kFormat, kFormatVersion, p.ranks, p.blockCalls, p.slowRho, p.volatility, p.volatilitySlow, p.overlap);
  o << buf;
  for (const auto& [k, l] : p.lag) {
    std::snprintf(buf, sizeof buf, "lag_scale %s %s %.4g %.4g %.4g\n", AlgoName(k.first), ProtoName(k.second), l.a, l.b,
                  l.c);
    o << buf;
  }
  std::snprintf(buf, sizeof buf, "lag_scale * * %.4g %.4g %.4g\n", p.lagOther.a, p.lagOther.b, p.lagOther.c);
  o << buf;
  std::snprintf(buf, sizeof buf, "lag_sigma %.4f\nlag_block %.4f\n", p.lagSigma, p.lagBlock);
  o << buf;
  WriteQuantiles(o, "call_quantiles", p.callQ);
  WriteQuantiles(o, "slow_quantiles", p.slowQ);
  return o.str();
}

FittedNoise::FittedNoise(NoiseParams p) : p_(std::move(p)) {
  rangeMedian_ = LagRangeMedian(p_.ranks, p_.lagSigma);
  slowTerms_ = p_.slowRho <= 0 ? 0 : std::min(4000, static_cast<int>(std::ceil(std::log(1e-9) / std::log(p_.slowRho))));
}

const LagScale& FittedNoise::Scale(int algo, int proto) const {
  auto it = p_.lag.find({algo, proto});
  return it != p_.lag.end() ? it->second : p_.lagOther;
}

double FittedNoise::BaseUs(double modelUs, int algo, int proto, int channels) const {
  const LagScale& l = Scale(algo, proto);
  const double m = rangeMedian_;
  const double w = 1 - p_.overlap;  // the share of the arrival spread the first rank waits on top of T
  return std::max(0.25 * modelUs, (modelUs - w * l.At(0, channels) * m) / (1 + w * l.b * m));
}

uint64_t FittedNoise::Block(uint64_t seq) const {
  return seq == 0 ? 0 : (seq - 1) / static_cast<uint64_t>(p_.blockCalls);
}

FittedNoise::BlockFactors FittedNoise::ForBlock(uint64_t seed, uint64_t key, uint64_t block) const {
  // Z_b = rho^b e_0 + sqrt(1 - rho^2) sum_{i<b} rho^i e_{b-i}: a stationary AR(1) started at block 0, its terms
  // kept while rho^i >= 1e-9, computed from the block index alone.
  const double rho = p_.slowRho, innov = std::sqrt(1 - rho * rho);
  double z = 0, w = 1;
  for (uint64_t i = 0; i <= block && i <= static_cast<uint64_t>(slowTerms_); i++, w *= rho) {
    const double e = StandardNormal(Hash(seed, key, block - i, kSlowStream));
    z += i == block ? w * e : w * innov * e;
  }
  const double lambda = p_.volatilitySlow;
  const double y = StandardNormal(Hash(seed, key, block, kVolatilityStream));
  BlockFactors f;
  f.slow = std::exp(QuantileAt(p_.slowQ, NormalCdf(z)));
  f.volatility = std::exp(p_.volatility * (lambda * z + std::sqrt(1 - lambda * lambda) * y));
  f.lag = std::exp(p_.lagBlock * StandardNormal(Hash(seed, key, block, kLagBlockStream)));
  return f;
}

double FittedNoise::CallFactor(uint64_t seed, uint64_t key, uint64_t seq, double volatility) const {
  return std::exp(volatility * QuantileAt(p_.callQ, Uniform(Hash(seed, key, seq, kCallStream))));
}

double FittedNoise::RankLagUs(uint64_t seed, uint64_t key, uint64_t seq, int rank, double durUs, int algo, int proto,
                              int channels, double blockLag) const {
  const double z = StandardNormal(Hash(seed, key, seq, kLagStream + static_cast<uint64_t>(rank)));
  return blockLag * Scale(algo, proto).At(durUs, channels) * std::exp(p_.lagSigma * z);
}

}  // namespace simnccl
