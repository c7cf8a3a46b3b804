// A minimal C++ training program that uses ccltune through its public API (include/ccltune/ccltune.h):
// the gradient all-reduces of a few buckets per step, on one communicator per job, with ccltune linked
// before NCCL (find_package(ccltune) and target_link_libraries(... ccltune::ccltune nccl), see
// tests/install/consumer/CMakeLists.txt). It reports how tuning goes from ccltuneGetSummary once in a
// while and each workload's result at the end, and can export what ccltune learned.
//
//   mpirun -np 2 example_train [--steps N] [--export FILE] [--expect-converged]
//
// Buffers come from cudaMalloc when the CUDA runtime is in the process; on the simulated cluster (no
// CUDA, "device" memory is host memory) from the heap. Exit status 0; 1 on an NCCL or ccltune error, or
// with --expect-converged when some workload did not converge.
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ccltune/ccltune.h"

namespace {

void* DeviceBuffer(size_t bytes) {
  using CudaMalloc = int (*)(void**, size_t);
  if (auto fn = reinterpret_cast<CudaMalloc>(dlsym(RTLD_DEFAULT, "cudaMalloc"))) {
    void* p = nullptr;
    return fn(&p, bytes) == 0 ? p : nullptr;
  }
  return calloc(1, bytes);
}

void Synchronize() {
  using CudaSync = int (*)();
  if (auto fn = reinterpret_cast<CudaSync>(dlsym(RTLD_DEFAULT, "cudaDeviceSynchronize"))) fn();
}

#define CHECK_NCCL(call)                                                                     \
  do {                                                                                       \
    ncclResult_t r_ = (call);                                                                \
    if (r_ != ncclSuccess) {                                                                 \
      std::fprintf(stderr, "example_train: %s failed: %s\n", #call, ncclGetErrorString(r_)); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
    }                                                                                        \
  } while (0)

const char* StateName(int s) {
  static const char* kNames[] = {"default", "searching", "converged", "imported", "forced"};
  return s >= 0 && s < 5 ? kNames[s] : "?";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int steps = 300;
  std::string export_path;
  bool expect_converged = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--export") && i + 1 < argc)
      export_path = argv[++i];
    else if (!std::strcmp(argv[i], "--expect-converged"))
      expect_converged = true;
  }
  int major = 0, minor = 0, patch = 0;
  ccltuneGetVersion(&major, &minor, &patch);
  if (rank == 0) {
    std::printf("example_train: %d ranks, ccltune %d.%d.%d %s\n", size, major, minor, patch,
                ccltuneIsActive() ? "tuning" : "inactive (disabled, or no NCCL found)");
  }

  ncclUniqueId id;
  if (rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, size, id, rank));

  // Gradient buckets of a small model: a few sizes, every step, in the same order on every rank.
  const std::vector<size_t> buckets = {256 << 10, 1 << 20, 4 << 20};
  std::vector<float*> grads;
  for (size_t bytes : buckets) grads.push_back(static_cast<float*>(DeviceBuffer(bytes)));
  for (int step = 0; step < steps; ++step) {
    for (size_t b = 0; b < buckets.size(); ++b) {
      CHECK_NCCL(ncclAllReduce(grads[b], grads[b], buckets[b] / sizeof(float), ncclFloat32, ncclSum, comm, nullptr));
    }
    Synchronize();  // the step's loss / optimizer step
    ccltuneSummary_t s;
    if (rank == 0 && step % 100 == 99 && ccltuneGetSummary(&s) == ccltuneSuccess) {
      std::printf("example_train: step %d: %d workloads, %d converged, %d searching, %lld schedule changes\n", step + 1,
                  s.workloads, s.converged, s.searching, static_cast<long long>(s.changes));
    }
  }

  int status = 0;
  if (rank == 0) {
    ccltuneWorkloadStats_t stats[16];
    int count = 0;
    if (ccltuneListWorkloads(comm, stats, 16, &count) != ccltuneSuccess) {
      std::printf("example_train: ccltune has no statistics for this communicator\n");
      status = expect_converged ? 1 : 0;
    }
    for (int i = 0; i < count && i < 16; ++i) {
      const ccltuneWorkloadStats_t& w = stats[i];
      std::printf(
          "example_train: allreduce %zu bytes: %s, config algo %d proto %d channels %d, default %.2f us, "
          "tuned %.2f us, %lld samples\n",
          w.bytes, StateName(w.state), w.config.algorithm, w.config.protocol, w.config.channels, w.defaultUs, w.tunedUs,
          static_cast<long long>(w.samples));
      if (expect_converged && w.state != ccltuneStateConverged && w.state != ccltuneStateImported) status = 1;
    }
    if (!export_path.empty() && ccltuneExport(export_path.c_str()) != ccltuneSuccess) status = 1;
  }
  CHECK_NCCL(ncclCommDestroy(comm));
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
