// ccltune-bench: one benchmark row's collective: nccl-tests geometry (sizes -> counts), the NCCL
// launch, and the buffers of the data check (pattern in, expected result out, mismatches counted).
#pragma once

#include <nccl.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/data.hpp"
#include "executor/executor.hpp"
#include "vocab/types.hpp"

namespace ccltune::bench {

struct Geometry {
  uint64_t bytes = 0;  // the nccl-tests size actually run (rounded down to whole elements)
  size_t count = 0;    // the count passed to NCCL (per-rank count for allgather / reducescatter)
  size_t send_elems = 0;
  size_t recv_elems = 0;
  uint64_t workload_bytes = 0;  // count * element size: the bytes of ccltune's workload key
  int op = -1;                  // ncclRedOp_t, -1 for allgather and broadcast
};

// nccl-tests sizes: allgather `bytes` is the output size, reducescatter the input size, the others
// the buffer size. count is 0 when `bytes` is too small for one element per rank.
Geometry ComputeGeometry(Coll coll, uint64_t bytes, int dtype, int op, int nranks);

ncclResult_t Launch(Coll coll, const Geometry& g, const void* send, void* recv, int dtype, int root, ncclComm_t comm,
                    executor::Stream stream);

// The device and host buffers of one row, with the data pattern and the expected result.
class RowBuffers {
 public:
  static absl::StatusOr<std::unique_ptr<RowBuffers>> Create(executor::Device* device, Coll coll, const Geometry& g,
                                                            int dtype, int root, int rank, int nranks, uint64_t seed);
  ~RowBuffers();
  RowBuffers(const RowBuffers&) = delete;
  RowBuffers& operator=(const RowBuffers&) = delete;

  void* send() const { return send_; }
  void* recv() const { return recv_; }
  // Enqueues: send buffer <- pattern, receive buffer <- poison (so stale correct data cannot pass).
  absl::Status Prepare(executor::Stream s);
  // Copies the result back (synchronizing `s`) and counts the elements that differ from the expected.
  absl::StatusOr<int64_t> Verify(executor::Stream s);

 private:
  RowBuffers() = default;
  double Expected(size_t j) const;

  executor::Device* device_ = nullptr;
  Coll coll_ = Coll::kAllReduce;
  Geometry g_;
  int dtype_ = 0;
  int elem_ = 0;
  int root_ = 0;
  int rank_ = 0;
  std::unique_ptr<Pattern> pattern_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  void* send_host_ = nullptr;
  void* recv_host_ = nullptr;
  bool checked_ = true;            // false on non-root ranks of reduce
  std::vector<uint8_t> expected_;  // encoded expected result (exact patterns)
};

}  // namespace ccltune::bench
