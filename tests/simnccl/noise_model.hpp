// The simulated NCCL's fitted noise model (SIMNCCL_NOISE_MODEL=FILE): call-time noise fitted to calls recorded on
// real NCCL (tests/data/landscapes, noise_fit.hpp fits it). Three parts, each drawn from a hash of the seed, the
// communicator and the call's sequence number, so every rank computes the same shared values without talking:
//
//   call k of a communicator, modelled time M (the table's median of the per-call maximum over ranks):
//     T_k   = Base(M) * S(b) * F_k                   the collective's own time, the same on every rank; b the
//                                                    block of call k (blockCalls calls each)
//     F_k   = exp(V_b * Qcall(u_k))                  within-stretch spread: the empirical quantiles of
//                                                    log(call / its block's median), each block's scaled to the
//                                                    median block's spread, u_k uniform
//     V_b   = exp(eta * (lambda Z_b + sqrt(1 - lambda^2) y_b))
//                                                    the block's volatility: some stretches are noisier, more so
//                                                    in slow periods
//     S_b   = exp(Qslow(Phi(Z_b))), Z_b = rho Z_{b-1} + sqrt(1 - rho^2) e_b
//                                                    slow periods: an AR(1) Gaussian copula over blocks with the
//                                                    empirical marginal of the default's block medians over its
//                                                    row's median
//     L_rk  = W_b (a + b T_k + c (nc_k - 1)) exp(sigma z_rk)
//                                                    rank r's host lag after call k, before its next call; a, b, c
//                                                    per (algorithm, protocol) of call k, as recorded, nc_k its
//                                                    channels; W_b = exp(omega w_b): stretches where ranks drift
//                                                    apart more
//   Base(M) = (M - (1 - kappa) (a + c (nc - 1)) m) / (1 + (1 - kappa) b m), m the median of the range of `ranks` lags
//   of unit scale, so the median of the per-call maximum over ranks stays about M.
//
// The simulated NCCL starts a collective at the latest arrival, and it ends T_k - kappa * min(R, T_k) after it, R
// the spread of the arrivals: the ranks that came early have done part of it (kappa fitted to the correlation of
// min and max - min within blocks). Rank r's clock after call k is its end plus L_rk,
// added right after the first clock read that follows the call (the stop of a timer around it) or at the next
// call, whichever comes first. A timer around each call so measures T_k on the rank that arrived last and
// T_k + (its wait for the last one) on the others: the max/min over ranks of real calls.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace simnccl {

struct LagScale {
  double a = 0;  // µs
  double b = 0;  // µs per µs of the call's own time
  double c = 0;  // µs per channel above one
  double At(double durUs, int channels) const { return a + b * durUs + c * (channels > 1 ? channels - 1 : 0); }
};

struct NoiseParams {
  int ranks = 0;              // ranks of the recorded communicator (the lag range depends on it)
  int blockCalls = 14;        // calls per slow-period block (the recorded blocks: 2 warm-up + 12 timed calls)
  std::vector<double> callQ;  // quantiles of log(call / block median) at p = i / (n - 1)
  std::vector<double> slowQ;  // quantiles of log(default block median / row median) at p = i / (n - 1)
  double slowRho = 0;         // correlation of consecutive blocks' Z (0 <= rho < 1)
  double lagBlock = 0;        // omega >= 0
  double volatility = 0;      // eta >= 0
  double volatilitySlow = 0;  // lambda in [0, 1]
  double overlap = 0;         // kappa: a call ends T - kappa * min(R, T) after the last arrival, R the arrival
                              // spread (the early ranks' head start), 0 <= kappa < 1
  std::map<std::pair<int, int>, LagScale> lag;  // lag scale per (algorithm, protocol) recorded
  LagScale lagOther;                            // every other (algorithm, protocol): all configs pooled
  double lagSigma = 0.5;                        // lognormal shape of the lag
  std::vector<std::string> notes;               // comment lines written after the header (source files, fit checks)
};

// Reads a parameter file (FormatNoiseParams' format). False with *err set on any error.
bool LoadNoiseParams(const std::string& path, NoiseParams* out, std::string* err);
std::string FormatNoiseParams(const NoiseParams& p);
// Checks the parameters' ranges; an empty string when usable.
std::string ValidateNoiseParams(const NoiseParams& p);

// NCCL's algorithm and protocol indices of names as the `.samples` files spell them ("ring/simple/nc2"): "tree" 0,
// "ring" 1, ..., "pat" 6; "ll" 0, "ll128" 1, "simple" 2; -1 otherwise. AlgoName/ProtoName: the reverse.
int AlgoIndex(const std::string& name);
int ProtoIndex(const std::string& name);
const char* AlgoName(int algo);
const char* ProtoName(int proto);
// SIMNCCL_AFTER_OTHER: how much longer a collective takes right after a collective of another workload on its
// communicator (ccltune's sync op after every unit of a search, another size of a training loop) than after one of
// its own workload, per algorithm/protocol. Spec: comma-separated `ALGO/PROTO=FACTOR`, `ALGO/*=FACTOR` or `*=FACTOR`
// (every other pair), each FACTOR in [1, 10]; a pair without an entry: 1.
struct AfterOther {
  std::map<std::pair<int, int>, double> pair;
  std::map<int, double> algo;
  double rest = 1;
  double Factor(int algorithm, int protocol) const;
};
// False with *err set (and *out untouched) on any malformed entry.
bool ParseAfterOther(const std::string& spec, AfterOther* out, std::string* err);

// A `ran` column ("ring/simple/nc2"): false (outputs untouched) unless it names a known algorithm, protocol and a
// channel count above 0.
bool ParseRan(const std::string& ran, int* algo, int* proto, int* channels);

// Linear interpolation in quantiles at p = i / (n - 1).
double QuantileAt(const std::vector<double>& q, double u);

// The range (max - min) over `ranks` draws of exp(sigma z), z standard normal: a fixed, sorted Monte Carlo sample
// (20001 draws), and its median.
std::vector<double> LagRangeSample(int ranks, double sigma);
double LagRangeMedian(int ranks, double sigma);

// The key of the slow-period blocks the simulated NCCL draws per process (not per communicator).
inline constexpr uint64_t kProcessNoiseKey = 0x70726f63657373ULL;  // "process"

class FittedNoise {
 public:
  explicit FittedNoise(NoiseParams p);
  const NoiseParams& Params() const { return p_; }

  // The collective's own time for a modelled time read as the median of the per-call maximum over ranks.
  double BaseUs(double modelUs, int algo, int proto, int channels) const;
  // The block of call `seq` (0 for seq 0 and 1), and a block's slow factor S_b and volatility V_b.
  uint64_t Block(uint64_t seq) const;
  struct BlockFactors {
    double slow = 1, volatility = 1, lag = 1;  // S_b, V_b, W_b
  };
  BlockFactors ForBlock(uint64_t seed, uint64_t key, uint64_t block) const;
  // F_k for call `seq` (numbered from 1) of the communicator with key `key`, in a block of volatility V_b.
  double CallFactor(uint64_t seed, uint64_t key, uint64_t seq, double volatility) const;
  // L_rk: rank `rank`'s lag after call `seq` whose own time was durUs, run as (algo, proto) on `channels`, in a
  // block whose lag factor is W_b.
  double RankLagUs(uint64_t seed, uint64_t key, uint64_t seq, int rank, double durUs, int algo, int proto, int channels,
                   double blockLag) const;
  const LagScale& Scale(int algo, int proto) const;
  double RangeMedian() const { return rangeMedian_; }

 private:
  NoiseParams p_;
  double rangeMedian_ = 0;
  int slowTerms_ = 0;  // terms of the AR(1) sum kept (rho^terms below 1e-9)
};

}  // namespace simnccl
