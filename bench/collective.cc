// ccltune-bench: collective geometry, launch and data-check buffers.
#include "bench/collective.hpp"

#include <cmath>
#include <cstring>

#include "absl/status/status.h"

namespace ccltune::bench {

Geometry ComputeGeometry(Coll coll, uint64_t bytes, int dtype, int op, int nranks) {
  Geometry g;
  const uint64_t elem = static_cast<uint64_t>(DtypeSize(dtype));
  const uint64_t n = static_cast<uint64_t>(nranks);
  switch (coll) {
    case Coll::kAllGather:
    case Coll::kReduceScatter:
      g.count = bytes / (elem * n);
      g.bytes = g.count * n * elem;
      g.send_elems = coll == Coll::kAllGather ? g.count : g.count * n;
      g.recv_elems = coll == Coll::kAllGather ? g.count * n : g.count;
      break;
    default:
      g.count = bytes / elem;
      g.bytes = g.count * elem;
      g.send_elems = g.recv_elems = g.count;
      break;
  }
  g.workload_bytes = g.count * elem;
  g.op = (coll == Coll::kAllGather || coll == Coll::kBroadcast) ? -1 : op;
  return g;
}

ncclResult_t Launch(Coll coll, const Geometry& g, const void* send, void* recv, int dtype, int root, ncclComm_t comm,
                    executor::Stream stream) {
  auto dt = static_cast<ncclDataType_t>(dtype);
  auto op = static_cast<ncclRedOp_t>(g.op < 0 ? 0 : g.op);
  auto s = static_cast<cudaStream_t>(stream);
  switch (coll) {
    case Coll::kAllReduce:
      return ncclAllReduce(send, recv, g.count, dt, op, comm, s);
    case Coll::kAllGather:
      return ncclAllGather(send, recv, g.count, dt, comm, s);
    case Coll::kReduceScatter:
      return ncclReduceScatter(send, recv, g.count, dt, op, comm, s);
    case Coll::kBroadcast:
      return ncclBroadcast(send, recv, g.count, dt, root, comm, s);
    case Coll::kReduce:
      return ncclReduce(send, recv, g.count, dt, op, root, comm, s);
  }
  return ncclInvalidArgument;
}

absl::StatusOr<std::unique_ptr<RowBuffers>> RowBuffers::Create(executor::Device* device, Coll coll, const Geometry& g,
                                                               int dtype, int root, int rank, int nranks,
                                                               uint64_t seed) {
  std::unique_ptr<RowBuffers> b(new RowBuffers);
  b->device_ = device;
  b->coll_ = coll;
  b->g_ = g;
  b->dtype_ = dtype;
  b->elem_ = DtypeSize(dtype);
  b->root_ = root;
  b->rank_ = rank;
  b->pattern_ = std::make_unique<Pattern>(dtype, g.op, nranks, seed);
  const size_t send_bytes = g.send_elems * b->elem_;
  const size_t recv_bytes = g.recv_elems * b->elem_;
  auto alloc = [](absl::StatusOr<void*> r, void** out) {
    if (r.ok()) *out = *r;
    return r.status();
  };
  if (absl::Status st = alloc(device->Alloc(send_bytes), &b->send_); !st.ok()) return st;
  if (absl::Status st = alloc(device->Alloc(recv_bytes), &b->recv_); !st.ok()) return st;
  if (absl::Status st = alloc(device->AllocHost(send_bytes), &b->send_host_); !st.ok()) return st;
  if (absl::Status st = alloc(device->AllocHost(recv_bytes), &b->recv_host_); !st.ok()) return st;

  auto* send_host = static_cast<uint8_t*>(b->send_host_);
  for (size_t i = 0; i < g.send_elems; ++i) EncodeValue(dtype, b->pattern_->Value(rank, i), send_host + i * b->elem_);
  b->checked_ = !(coll == Coll::kReduce && rank != root);
  if (b->checked_ && !b->pattern_->inexact()) {
    b->expected_.resize(recv_bytes);
    for (size_t j = 0; j < g.recv_elems; ++j) EncodeValue(dtype, b->Expected(j), b->expected_.data() + j * b->elem_);
  }
  return b;
}

RowBuffers::~RowBuffers() {
  if (device_ == nullptr) return;
  device_->Free(send_);
  device_->Free(recv_);
  device_->FreeHost(send_host_);
  device_->FreeHost(recv_host_);
}

double RowBuffers::Expected(size_t j) const {
  switch (coll_) {
    case Coll::kAllGather:
      return pattern_->Value(static_cast<int>(j / g_.count), j % g_.count);
    case Coll::kReduceScatter:
      return pattern_->Reduced(static_cast<uint64_t>(rank_) * g_.count + j);
    case Coll::kBroadcast:
      return pattern_->Value(root_, j);
    default:  // allreduce, reduce (root)
      return pattern_->Reduced(j);
  }
}

absl::Status RowBuffers::Prepare(executor::Stream s) {
  if (absl::Status st = device_->CopyToDeviceAsync(send_, send_host_, g_.send_elems * elem_, s); !st.ok()) return st;
  return device_->MemsetAsync(recv_, 0xA5, g_.recv_elems * elem_, s);
}

absl::StatusOr<int64_t> RowBuffers::Verify(executor::Stream s) {
  const size_t recv_bytes = g_.recv_elems * elem_;
  if (absl::Status st = device_->CopyToHostAsync(recv_host_, recv_, recv_bytes, s); !st.ok()) return st;
  if (absl::Status st = device_->StreamSynchronize(s); !st.ok()) return st;
  if (!checked_) return 0;
  const auto* got = static_cast<const uint8_t*>(recv_host_);
  int64_t errors = 0;
  if (!pattern_->inexact()) {
    if (std::memcmp(got, expected_.data(), recv_bytes) == 0) return 0;
    for (size_t j = 0; j < g_.recv_elems; ++j) {
      if (std::memcmp(got + j * elem_, expected_.data() + j * elem_, elem_) != 0) ++errors;
    }
    return errors;
  }
  // Float averages: NCCL multiplies by 1/nranks before summing, so allow the type's rounding.
  const double tol = elem_ >= 8 ? 1e-12 : elem_ == 4 ? 1e-6 : elem_ == 2 ? 1.6e-2 : 0.26;
  for (size_t j = 0; j < g_.recv_elems; ++j) {
    double want = Expected(j);
    double have = DecodeValue(dtype_, got + j * elem_);
    if (!(std::fabs(have - want) <= tol * std::max(1.0, std::fabs(want)))) ++errors;
  }
  return errors;
}

}  // namespace ccltune::bench
