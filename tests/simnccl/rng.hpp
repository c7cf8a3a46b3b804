// Seeded, stateless randomness of the simulated NCCL: every draw is a hash of (seed, communicator, call, ...), so
// each rank computes the same value for the same call without talking to the others, and a seed reproduces a run.
#pragma once

#include <cmath>
#include <cstdint>

namespace simnccl {

inline uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform draw in (0, 1) from the top 53 bits of a hash.
inline double Uniform(uint64_t h) { return ((h >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

// A standard normal draw from a hash (Box-Muller on the hash and its successor).
inline double StandardNormal(uint64_t h) {
  return std::sqrt(-2.0 * std::log(Uniform(h))) * std::cos(2 * M_PI * Uniform(SplitMix(h)));
}

// The standard normal distribution function.
inline double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace simnccl
