// ccltune-bench: the data check's values. A rank- and index-dependent pattern chosen so that every
// input and every reduced result is exactly representable in the datatype (small integers within the
// type's exact range), host-side encoding of NCCL's datatypes (fp16, bf16 and fp8 included), and the
// expected reduction over ranks. Pure C++: no CUDA, NCCL or MPI.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ccltune::bench {

// Writes v (exactly representable) as one element of ncclDataType_t `dtype`.
void EncodeValue(int dtype, double v, void* dst);
// Reads one element of `dtype` (NaN for a NaN or infinity of a float type).
double DecodeValue(int dtype, const void* src);

class Pattern {
 public:
  // `op` is the ncclRedOp_t of the collective, or -1 (no reduction: any exact values will do).
  Pattern(int dtype, int op, int nranks, uint64_t seed);
  // The element `index` of rank `rank`'s send buffer.
  double Value(int rank, uint64_t index) const;
  // The reduction over all ranks of Value(k, index), as NCCL computes it.
  double Reduced(uint64_t index) const;
  // Whether a result may differ from Reduced() by rounding (average of a float type).
  bool inexact() const { return inexact_; }

 private:
  int dtype_;
  int op_;
  int nranks_;
  uint64_t seed_;
  uint64_t modulus_;
  bool inexact_ = false;
};

}  // namespace ccltune::bench
