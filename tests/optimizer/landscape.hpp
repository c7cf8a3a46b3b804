// Synthetic cost landscapes for the optimizer tests: several subspaces,
// each unimodal in channels (a latency/bandwidth trade-off with a small ripple), an optional chunk
// axis, winners that depend on the message-size class, NCCL's default not always best, and seeded
// multiplicative noise with occasional slow outliers. Everything is reproducible from a seed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "optimizer/optimizer.hpp"
#include "tests/optimizer/replay.hpp"

namespace ccltune::optimizer::testing {

enum class SizeClass {
  kSmall,        // few channels win; NCCL's pick either fine (<= 3%) or 10-60% off
  kMid,          // NCCL's default 10-60% slower than the optimum
  kLarge,        // many channels win; NCCL's pick within 3% of the optimum
  kDefaultBest,  // NCCL's pick at its own channel count is the optimum
  kFlat,         // every configuration costs the same
};

inline const char* SizeClassName(SizeClass c) {
  switch (c) {
    case SizeClass::kSmall:
      return "Small";
    case SizeClass::kMid:
      return "Mid";
    case SizeClass::kLarge:
      return "Large";
    case SizeClass::kDefaultBest:
      return "DefaultBest";
    case SizeClass::kFlat:
      return "Flat";
  }
  return "?";
}

struct Sub {
  int algo = 0, proto = 0;
  double tstar = 1;          // time at the optimum (best channels, best chunk)
  double cstar = 8;          // optimal channel count (real-valued)
  double sharp = 1;          // curvature of the channel trade-off
  double phase = 0;          // ripple phase
  double chunk_star = 0;     // optimal chunk (bytes), 0 = chunk has no effect
  double chunk_default = 0;  // the chunk NCCL picks by itself (what chunk 0 costs)
};

class Landscape {
 public:
  SearchSpace space;
  std::vector<Sub> subs;
  int nccl_sub = 0;
  int nccl_channels = 24;
  double scale_us = 100;
  double ripple = 0.01;
  bool flat = false;

  double True(const Config& c) const {
    if (flat) return scale_us;
    if (c.IsDefault()) return Cost(subs[nccl_sub], nccl_channels, 0);
    for (const Sub& s : subs)
      if (s.algo == c.algo && s.proto == c.proto) return Cost(s, c.channels, c.chunk_bytes);
    return 1e9;
  }

  double Cost(const Sub& s, int ch, int64_t chunk) const {
    const double x = ch / s.cstar;
    double t = s.tstar * (1 + s.sharp * ((x + 1 / x) / 2 - 1));
    t *= 1 + ripple * std::sin(1.7 * ch + s.phase);
    if (s.chunk_star > 0) {
      const double v = chunk > 0 ? static_cast<double>(chunk) : s.chunk_default;
      const double l = std::log2(v / s.chunk_star);
      t *= 1 + 0.03 * l * l;
    }
    return t * scale_us;
  }

  // The oracle: the best configuration of the whole space (default included).
  double Optimum() const {
    double best = True(Config{});
    for (const Config& c : EnumerateSpace(space)) best = std::min(best, True(c));
    return best;
  }
};

// Six subspaces (tree/ring x LL/LL128/Simple), 24 channels unless told otherwise.
inline Landscape MakeLandscape(SizeClass cls, uint64_t seed, bool chunk = false, int max_channels = 24) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(cls) * 7919 + 1);
  auto uni = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  auto logu = [&](double a, double b) { return std::exp(uni(std::log(a), std::log(b))); };
  Landscape L;
  L.space.max_channels = max_channels;
  L.space.channel_truth = true;  // DriveLandscape reports what NCCL runs
  L.space.chunk_dim = chunk;
  for (int p = 0; p < kNumProtos; ++p) {
    const int64_t grain = p == kProtoLL ? 4096 : p == kProtoLL128 ? 8192 : 16384;
    L.space.chunk_grain[p] = grain;
    L.space.chunk_min[p] = grain;
    L.space.chunk_max[p] = grain << 8;
  }
  for (int attempt = 0;; ++attempt) {
    L.subs.clear();
    L.space.subspaces = SubspaceSet{};
    const int n = 6;
    const int winner = static_cast<int>(rng() % n);
    for (int i = 0; i < n; ++i) {
      Sub s;
      s.algo = i / 3;
      s.proto = i % 3;
      L.space.subspaces.valid_mask |= 1u << (s.algo * kNumProtos + s.proto);
      // One close runner-up, the rest spread out: pruning has something to do and something to spare.
      s.tstar = i == winner ? 1.0 : (i == (winner + 1) % n ? 1 + uni(0.02, 0.12) : 1 + uni(0.1, 1.5));
      switch (cls) {
        case SizeClass::kSmall:
          s.cstar = logu(1, 6);
          break;
        case SizeClass::kLarge:
          s.cstar = logu(12, 40);
          break;
        default:
          s.cstar = logu(1.5, 40);
          break;
      }
      s.sharp = uni(0.5, 1.5);
      s.phase = uni(0, 6.3);
      if (chunk) {
        const double g = static_cast<double>(L.space.chunk_grain[s.proto]);
        s.chunk_star = g * std::exp2(uni(1, 7));
        s.chunk_default = g * std::exp2(uni(1, 7));
      }
      L.subs.push_back(s);
    }
    L.nccl_sub = rng() % 2 ? winner : static_cast<int>(rng() % n);
    // NCCL itself uses fewer channels for small messages.
    L.nccl_channels = cls == SizeClass::kSmall ? std::max(1, max_channels / 4) : max_channels;
    if (cls == SizeClass::kDefaultBest) {
      L.nccl_sub = winner;
      L.subs[winner].cstar = max_channels * 1.6;
      if (chunk) L.subs[winner].chunk_default = L.subs[winner].chunk_star;
      L.ripple = 0;
    }
    L.space.subspaces.nccl_algo = L.subs[L.nccl_sub].algo;
    L.space.subspaces.nccl_proto = L.subs[L.nccl_sub].proto;
    if (cls == SizeClass::kFlat) {
      L.flat = true;
      return L;
    }
    const double gap = L.True(Config{}) / L.Optimum() - 1;
    bool ok = false;
    switch (cls) {
      case SizeClass::kSmall:
        ok = gap <= 0.03 || (gap >= 0.10 && gap <= 0.60);
        break;
      case SizeClass::kMid:
        ok = gap >= 0.10 && gap <= 0.60;
        break;
      case SizeClass::kLarge:
        ok = gap <= 0.03;
        break;
      case SizeClass::kDefaultBest:
        ok = gap <= 1e-9;
        break;
      case SizeClass::kFlat:
        ok = true;
        break;
    }
    if (ok || attempt > 10000) return L;
  }
}

// Multiplicative Gaussian noise of relative sigma, plus slow outliers (interference).
class Noise {
 public:
  Noise(uint64_t seed, double sigma, double outlier_p = 0.02)
      : rng_(seed ^ 0xA5A5A5A5u), sigma_(sigma), p_(outlier_p) {}
  double operator()(double t) {
    // Box-Muller by hand: std::normal_distribution is not specified bit-for-bit across libraries.
    const double u1 = (static_cast<double>(rng_() >> 11) + 0.5) / 9007199254740992.0;
    const double u2 = (static_cast<double>(rng_() >> 11) + 0.5) / 9007199254740992.0;
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    double v = t * std::max(0.5, 1 + sigma_ * z);
    const double u3 = (static_cast<double>(rng_() >> 11) + 0.5) / 9007199254740992.0;
    if (u3 < p_) v *= 1.3 + 1.2 * u3 / p_;
    return v;
  }

 private:
  std::mt19937_64 rng_;
  double sigma_, p_;
};

// Drives `s` on the synthetic landscape with `noise`, the way the leader does (replay.hpp's DriveWith),
// with channel truth: NCCL runs at most `L.space.max_channels` channels; its default runs its own pick.
inline DriveResult DriveLandscape(Search& s, const Landscape& L, Noise& noise, const DriveOptions& o = {}) {
  return DriveWith(
      s, [&](const Config& c, int64_t) { return noise(L.True(c)); },
      [&](const Config& c) {
        if (c.IsDefault()) return Config{L.subs[L.nccl_sub].algo, L.subs[L.nccl_sub].proto, L.nccl_channels, 0};
        return Config{c.algo, c.proto, std::min(c.channels, L.space.max_channels), c.chunk_bytes};
      },
      o);
}

}  // namespace ccltune::optimizer::testing
