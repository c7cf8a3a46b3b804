// ccltune-bench: data-check pattern and host codecs for NCCL's datatypes.
#include "bench/data.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ccltune::bench {
namespace {

enum Dtype {
  kInt8 = 0,
  kUint8,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat16,
  kFloat32,
  kFloat64,
  kBfloat16,
  kFp8E4M3,
  kFp8E5M2
};
enum Op { kSum = 0, kProd, kMax, kMin, kAvg };

struct MiniFloat {
  int exp_bits;
  int man_bits;
  bool ieee_specials;  // all-ones exponent is inf/NaN (fp16, bf16, e5m2); e4m3 only has NaN = all ones
};

MiniFloat FormatOf(int dtype) {
  switch (dtype) {
    case kFloat16:
      return {5, 10, true};
    case kBfloat16:
      return {8, 7, true};
    case kFp8E4M3:
      return {4, 3, false};
    default:
      return {5, 2, true};  // kFp8E5M2
  }
}

// Encodes a value that the format represents exactly as a normal number or zero.
uint32_t EncodeMini(double v, MiniFloat f) {
  uint32_t sign = 0;
  if (v < 0) {
    sign = 1u << (f.exp_bits + f.man_bits);
    v = -v;
  }
  if (v == 0) return sign;
  int e = 0;
  double m = std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
  int bias = (1 << (f.exp_bits - 1)) - 1;
  uint32_t biased = static_cast<uint32_t>(e - 1 + bias);
  uint32_t mantissa = static_cast<uint32_t>(std::lround((m * 2 - 1) * (1 << f.man_bits)));
  return sign | (biased << f.man_bits) | mantissa;
}

double DecodeMini(uint32_t bits, MiniFloat f) {
  uint32_t man = bits & ((1u << f.man_bits) - 1);
  uint32_t exp = (bits >> f.man_bits) & ((1u << f.exp_bits) - 1);
  bool negative = (bits >> (f.exp_bits + f.man_bits)) & 1u;
  uint32_t max_exp = (1u << f.exp_bits) - 1;
  int bias = (1 << (f.exp_bits - 1)) - 1;
  if (f.ieee_specials && exp == max_exp) return std::numeric_limits<double>::quiet_NaN();
  if (!f.ieee_specials && exp == max_exp && man == (1u << f.man_bits) - 1)
    return std::numeric_limits<double>::quiet_NaN();
  double v = exp == 0 ? std::ldexp(static_cast<double>(man), 1 - bias - f.man_bits)
                      : std::ldexp(1.0 + static_cast<double>(man) / (1 << f.man_bits), static_cast<int>(exp) - bias);
  return negative ? -v : v;
}

// Largest L such that every integer in [0, L] is exact in the type (and sums stay in range).
double ExactLimit(int dtype) {
  switch (dtype) {
    case kInt8:
      return 127;
    case kUint8:
      return 255;
    case kFloat16:
      return 2048;
    case kBfloat16:
      return 256;
    case kFp8E4M3:
      return 16;
    case kFp8E5M2:
      return 8;
    default:
      return 1 << 20;  // 32/64-bit types: far more than the pattern needs
  }
}

bool IsFloat(int dtype) {
  return dtype == kFloat16 || dtype == kFloat32 || dtype == kFloat64 || dtype == kBfloat16 || dtype == kFp8E4M3 ||
         dtype == kFp8E5M2;
}

uint64_t Mix(uint64_t x) {  // splitmix64 finalizer: cheap, deterministic, well spread
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

void EncodeValue(int dtype, double v, void* dst) {
  switch (dtype) {
    case kInt8: {
      int8_t x = static_cast<int8_t>(v);
      std::memcpy(dst, &x, 1);
      break;
    }
    case kUint8: {
      uint8_t x = static_cast<uint8_t>(v);
      std::memcpy(dst, &x, 1);
      break;
    }
    case kInt32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(dst, &x, 4);
      break;
    }
    case kUint32: {
      uint32_t x = static_cast<uint32_t>(v);
      std::memcpy(dst, &x, 4);
      break;
    }
    case kInt64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(dst, &x, 8);
      break;
    }
    case kUint64: {
      uint64_t x = static_cast<uint64_t>(v);
      std::memcpy(dst, &x, 8);
      break;
    }
    case kFloat32: {
      float x = static_cast<float>(v);
      std::memcpy(dst, &x, 4);
      break;
    }
    case kFloat64: {
      std::memcpy(dst, &v, 8);
      break;
    }
    case kFloat16:
    case kBfloat16: {
      uint16_t x = static_cast<uint16_t>(EncodeMini(v, FormatOf(dtype)));
      std::memcpy(dst, &x, 2);
      break;
    }
    default: {
      uint8_t x = static_cast<uint8_t>(EncodeMini(v, FormatOf(dtype)));
      std::memcpy(dst, &x, 1);
      break;
    }
  }
}

double DecodeValue(int dtype, const void* src) {
  switch (dtype) {
    case kInt8: {
      int8_t x;
      std::memcpy(&x, src, 1);
      return x;
    }
    case kUint8: {
      uint8_t x;
      std::memcpy(&x, src, 1);
      return x;
    }
    case kInt32: {
      int32_t x;
      std::memcpy(&x, src, 4);
      return x;
    }
    case kUint32: {
      uint32_t x;
      std::memcpy(&x, src, 4);
      return x;
    }
    case kInt64: {
      int64_t x;
      std::memcpy(&x, src, 8);
      return static_cast<double>(x);
    }
    case kUint64: {
      uint64_t x;
      std::memcpy(&x, src, 8);
      return static_cast<double>(x);
    }
    case kFloat32: {
      float x;
      std::memcpy(&x, src, 4);
      return std::isfinite(x) ? x : std::nan("");
    }
    case kFloat64: {
      double x;
      std::memcpy(&x, src, 8);
      return std::isfinite(x) ? x : std::nan("");
    }
    case kFloat16:
    case kBfloat16: {
      uint16_t x;
      std::memcpy(&x, src, 2);
      return DecodeMini(x, FormatOf(dtype));
    }
    default: {
      uint8_t x;
      std::memcpy(&x, src, 1);
      return DecodeMini(x, FormatOf(dtype));
    }
  }
}

Pattern::Pattern(int dtype, int op, int nranks, uint64_t seed) : dtype_(dtype), op_(op), nranks_(nranks), seed_(seed) {
  const double limit = ExactLimit(dtype);
  // Sums (and averages) of nranks values in [0, modulus) stay within the exact range.
  if (op == kSum || op == kAvg) {
    modulus_ = static_cast<uint64_t>(std::min(limit / nranks + 1, 4096.0));
  } else {
    modulus_ = static_cast<uint64_t>(std::min(limit + 1, 4096.0));
  }
  modulus_ = std::max<uint64_t>(modulus_, 1);
  inexact_ = op == kAvg && IsFloat(dtype);  // NCCL averages floats as a pre-multiplied sum
}

double Pattern::Value(int rank, uint64_t index) const {
  uint64_t h = Mix(seed_ * 0x100000001B3ull + index);
  if (op_ == kProd) {
    // One rank per element contributes a 2, the others 1: the product is 2, exact in every type.
    return (h % static_cast<uint64_t>(nranks_)) == static_cast<uint64_t>(rank) ? 2.0 : 1.0;
  }
  return static_cast<double>((h + static_cast<uint64_t>(rank) * 0x9E37ull) % modulus_);
}

double Pattern::Reduced(uint64_t index) const {
  double acc = Value(0, index);
  for (int k = 1; k < nranks_; ++k) {
    double v = Value(k, index);
    switch (op_) {
      case kProd:
        acc *= v;
        break;
      case kMax:
        acc = std::max(acc, v);
        break;
      case kMin:
        acc = std::min(acc, v);
        break;
      default:
        acc += v;
        break;  // sum, avg
    }
  }
  if (op_ == kAvg) acc = IsFloat(dtype_) ? acc / nranks_ : std::floor(acc / nranks_);
  return acc;
}

}  // namespace ccltune::bench
