// fidelity-programs: the scripted set of NCCL programs whose tuner-plugin calls the fidelity test compares
// between real NCCL and the simulated one. One process per GPU under mpirun; runs unchanged on either NCCL
// (device buffers through the executor's backends, as ccltune-bench). Before each program every rank appends
// "<rank> main mark program=<n> name=<name>" to its trace ($FIDELITY_TRACE.<rank>, trace_file.hpp), the file
// the recording plugin appends NCCL's calls to, so the trace splits into programs. Every collective's result
// is data-checked. Exit 0 when every program ran and checked, else non-zero with a message.
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench/collective.hpp"
#include "executor/executor.hpp"
#include "trace_file.hpp"
#include "vocab/types.hpp"

namespace {

using ccltune::Coll;
using ccltune::bench::Geometry;
using ccltune::bench::RowBuffers;
namespace executor = ccltune::executor;

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

int g_rank = 0;

[[noreturn]] void Fatal(const std::string& msg) {
  std::fprintf(stderr, "fidelity-programs: rank %d: %s\n", g_rank, msg.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::exit(3);
}
void Check(const absl::Status& st, const std::string& what) {
  if (!st.ok()) Fatal(what + ": " + std::string(st.message()));
}
void CheckNccl(ncclResult_t r, const std::string& what) {
  if (r != ncclSuccess) Fatal(what + " failed: " + ncclGetErrorString(r));
}

// One collective of a program: nccl-tests sizes (allgather: output bytes, reducescatter: input bytes).
struct Op {
  Coll coll;
  uint64_t bytes;
  int dtype = ncclFloat32;
  int root = 0;
};

// A communicator with its rank and size (rank -1: this process is not a member).
struct Comm {
  ncclComm_t comm = nullptr;
  int rank = -1, nranks = 0;
};

class Runner {
 public:
  Runner(int rank, int nranks, int traceFd, executor::Device* device, executor::Stream stream)
      : rank_(rank), nranks_(nranks), fd_(traceFd), device_(device), stream_(stream) {
    absl::StatusOr<void*> dummy = device_->Alloc(4096);
    Check(dummy.status(), "allocating the zero-count buffer");
    dummy_ = *dummy;
  }
  ~Runner() { device_->Free(dummy_); }

  // Starts program `name`: all ranks in step, then the marker line.
  void Mark(const std::string& name) {
    MPI_Barrier(MPI_COMM_WORLD);
    ++program_;
    if (!ccltune::fidelity::AppendLine(
            fd_, std::to_string(rank_) + " main mark program=" + std::to_string(program_) + " name=" + name))
      Fatal("cannot append to the trace file");
    name_ = name;
  }

  // Runs `ops` on `c`, one ncclGroupStart/End around them when `grouped`, and checks every result.
  void Run(const Comm& c, const std::vector<Op>& ops, bool grouped, const std::vector<int>& sendRecvPeers = {}) {
    std::vector<Item> items;
    for (const Op& op : ops) items.push_back({&c, op});
    Run(items, grouped, sendRecvPeers);
  }
  // The same for collectives on several communicators (skipping those this rank is not in); the optional
  // send/recv pair (to peer [0], from peer [1]) goes on the first item's communicator.
  struct Item {
    const Comm* c;
    Op op;
  };
  void Run(std::vector<Item> items, bool grouped, const std::vector<int>& sendRecvPeers = {}) {
    std::erase_if(items, [](const Item& it) { return it.c->rank < 0; });
    if (items.empty()) return;
    // Roots are written for 4 ranks; on fewer (2 GPUs) they wrap, so every program still runs.
    for (Item& it : items) it.op.root %= it.c->nranks;
    std::vector<std::unique_ptr<RowBuffers>> bufs(items.size());
    std::vector<Geometry> geo(items.size());
    for (size_t i = 0; i < items.size(); i++) {
      const Op& op = items[i].op;
      const Comm& c = *items[i].c;
      geo[i] = ccltune::bench::ComputeGeometry(op.coll, op.bytes, op.dtype, ncclSum, c.nranks);
      if (geo[i].count == 0) continue;  // launched on the dummy buffer, nothing to check
      auto b = RowBuffers::Create(device_, op.coll, geo[i], op.dtype, op.root, c.rank, c.nranks, 1000 + i);
      Check(b.status(), Where(i) + ": allocating buffers");
      bufs[i] = *std::move(b);
      Check(bufs[i]->Prepare(stream_), Where(i) + ": preparing buffers");
    }
    void* p2p = nullptr;
    const size_t p2pCount = 64 * 1024;
    if (!sendRecvPeers.empty()) {
      absl::StatusOr<void*> m = device_->Alloc(2 * p2pCount * sizeof(float));
      Check(m.status(), "allocating the send/recv buffers");
      p2p = *m;
    }
    if (grouped) CheckNccl(ncclGroupStart(), Where(0) + ": ncclGroupStart");
    for (size_t i = 0; i < items.size(); i++) {
      void* send = bufs[i] ? bufs[i]->send() : dummy_;
      void* recv = bufs[i] ? bufs[i]->recv() : dummy_;
      const Op& op = items[i].op;
      CheckNccl(ccltune::bench::Launch(op.coll, geo[i], send, recv, op.dtype, op.root, items[i].c->comm, stream_),
                Where(i));
    }
    if (p2p) {
      auto s = static_cast<cudaStream_t>(stream_);
      ncclComm_t comm = items[0].c->comm;
      CheckNccl(ncclSend(p2p, p2pCount, ncclFloat32, sendRecvPeers[0], comm, s), Where(0) + ": ncclSend");
      CheckNccl(ncclRecv(static_cast<float*>(p2p) + p2pCount, p2pCount, ncclFloat32, sendRecvPeers[1], comm, s),
                Where(0) + ": ncclRecv");
    }
    if (grouped) CheckNccl(ncclGroupEnd(), Where(0) + ": ncclGroupEnd");
    Check(device_->StreamSynchronize(stream_), Where(0) + ": stream synchronize");
    for (size_t i = 0; i < items.size(); i++) {
      if (!bufs[i]) continue;
      absl::StatusOr<int64_t> errors = bufs[i]->Verify(stream_);
      Check(errors.status(), Where(i) + ": reading the result");
      if (*errors != 0) Fatal(Where(i) + ": data check failed on " + std::to_string(*errors) + " element(s)");
    }
    if (p2p) device_->Free(p2p);
  }
  void Each(const Comm& c, const std::vector<Op>& ops) {
    for (const Op& op : ops) Run(c, {op}, false);
  }

 private:
  std::string Where(size_t i) const {
    return "program " + std::to_string(program_) + " " + name_ + " op " + std::to_string(i);
  }

  int rank_, nranks_, fd_;
  executor::Device* device_;
  executor::Stream stream_;
  void* dummy_ = nullptr;
  int program_ = 0;
  std::string name_;
};

Comm Split(const Comm& parent, int color, int key) {
  Comm c;
  CheckNccl(ncclCommSplit(parent.comm, color, key, &c.comm, nullptr), "ncclCommSplit");
  if (c.comm == nullptr) return c;
  CheckNccl(ncclCommUserRank(c.comm, &c.rank), "ncclCommUserRank");
  CheckNccl(ncclCommCount(c.comm, &c.nranks), "ncclCommCount");
  return c;
}

void Destroy(Comm* c) {
  if (c->comm) CheckNccl(ncclCommDestroy(c->comm), "ncclCommDestroy");
  c->comm = nullptr;
}

std::string NoSpaces(std::string s) {
  for (char& ch : s)
    if (ch == ' ' || ch == '=') ch = '_';
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  g_rank = rank;
  const std::string path = ccltune::fidelity::TracePath();
  if (path.empty()) Fatal("FIDELITY_TRACE is not set (the trace file prefix; rank r writes FIDELITY_TRACE.r)");
  if (ccltune::fidelity::LauncherRank() != rank)
    Fatal("the launcher's rank variable (OMPI_COMM_WORLD_RANK/PMI_RANK) is not the MPI rank " + std::to_string(rank) +
          ": the plugin would write another rank's file");
  // The programs are written for 4 ranks (roots 0-3, a split into halves and one leaving); on 2 ranks the
  // roots wrap and the splits give communicators of one rank, which NCCL handles without its tuner.
  if (nranks < 2) Fatal("needs at least 2 ranks, got " + std::to_string(nranks));
  const int fd = ccltune::fidelity::OpenTrace(path, true);
  if (fd < 0) Fatal("cannot create " + path);

  absl::StatusOr<std::unique_ptr<executor::Device>> opened = executor::OpenDevice();
  Check(opened.status(), "opening the device");
  std::unique_ptr<executor::Device> device = *std::move(opened);
  absl::StatusOr<int> ngpus = device->DeviceCount();
  Check(ngpus.status(), "counting devices");
  Check(device->SetDevice(rank % std::max(1, *ngpus)), "selecting the device");
  absl::StatusOr<executor::Stream> stream = device->CreateStream();
  Check(stream.status(), "creating a stream");
  int version = 0;
  CheckNccl(ncclGetVersion(&version), "ncclGetVersion");
  const bool cuda = device->backend() == executor::Backend::kCuda;
  ccltune::fidelity::AppendLine(
      fd, std::to_string(rank) + " main meta nccl=" + std::to_string(version) + " nranks=" + std::to_string(nranks) +
              " backend=" + (cuda ? "cuda" : "simulated") + " device=" + NoSpaces(device->name()));
  if (rank == 0)
    std::printf("fidelity-programs: %d ranks, NCCL %d, %s backend (%s), tuner plugin %s\n", nranks, version,
                cuda ? "cuda" : "simulated", device->name(),
                std::getenv("NCCL_TUNER_PLUGIN") ? std::getenv("NCCL_TUNER_PLUGIN") : "(unset)");

  {
    Runner run(rank, nranks, fd, device.get(), *stream);
    const Coll AR = Coll::kAllReduce, AG = Coll::kAllGather, RS = Coll::kReduceScatter, BC = Coll::kBroadcast,
               RD = Coll::kReduce;
    const int bf16 = ncclBfloat16, fp16 = ncclFloat16, fp64 = ncclFloat64;

    Comm world;
    run.Mark("init-world");
    ncclUniqueId id;
    if (rank == 0) CheckNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    CheckNccl(ncclCommInitRank(&world.comm, nranks, id, rank), "ncclCommInitRank");
    world.rank = rank, world.nranks = nranks;

    run.Mark("ungrouped-sizes");
    for (Coll coll : {AR, AG, RS, BC, RD})
      for (uint64_t bytes : {1 * kKiB, 64 * kKiB, 1 * kMiB, 16 * kMiB}) run.Run(world, {{coll, bytes}}, false);
    run.Mark("ungrouped-repeat");
    run.Each(world, {{AR, kMiB}, {AR, kMiB}, {AR, kMiB}});
    run.Mark("ungrouped-dtypes");
    run.Each(world, {{AR, kMiB, bf16}, {AR, kMiB, fp16}, {AR, kMiB, fp64}, {AG, kMiB, bf16}, {RS, kMiB, bf16}});
    run.Mark("ungrouped-roots");
    run.Each(world, {{BC, kMiB, ncclFloat32, 1},
                     {BC, kMiB, ncclFloat32, 2},
                     {BC, kMiB, ncclFloat32, 3},
                     {RD, kMiB, ncclFloat32, 1},
                     {RD, kMiB, ncclFloat32, 3}});
    run.Mark("ungrouped-zero-count");
    run.Each(world, {{AR, 0}, {BC, 0}});

    run.Mark("group-one");
    run.Run(world, {{AR, kMiB}}, true);
    run.Mark("group-same-size");
    run.Run(world, {{AR, kMiB}, {AR, kMiB}, {AR, kMiB}}, true);
    run.Mark("group-mixed-sizes");
    run.Run(world, {{AR, 64 * kKiB}, {AR, 128 * kKiB}, {AR, kMiB}, {AR, 2 * kMiB}, {AR, 16 * kMiB}}, true);
    run.Mark("group-mixed-colls");
    run.Run(world, {{AR, kMiB}, {AG, kMiB}, {RS, kMiB}, {BC, kMiB}, {RD, kMiB, ncclFloat32, 2}}, true);
    run.Mark("group-dtypes");
    run.Run(world, {{AR, kMiB}, {AR, kMiB, bf16}, {AR, 4 * kMiB}}, true);
    run.Mark("group-bcast-roots");
    run.Run(world,
            {{BC, kMiB, ncclFloat32, 0},
             {BC, kMiB, ncclFloat32, 1},
             {BC, kMiB, ncclFloat32, 2},
             {BC, kMiB, ncclFloat32, 3}},
            true);
    run.Mark("group-bcast-roots-mixed");
    run.Run(world,
            {{BC, 64 * kKiB, ncclFloat32, 0},
             {BC, kMiB, ncclFloat32, 1},
             {BC, 4 * kMiB, ncclFloat32, 2},
             {BC, kMiB, ncclFloat32, 3},
             {AR, kMiB}},
            true);
    run.Mark("group-bcast-one-root");
    run.Run(world, {{BC, 64 * kKiB, ncclFloat32, 1}, {BC, kMiB, ncclFloat32, 1}, {BC, 4 * kMiB, ncclFloat32, 1}}, true);
    run.Mark("group-many");
    run.Run(world, std::vector<Op>(50, Op{AR, 64 * kKiB}), true);
    run.Mark("group-many-mixed");
    {
      std::vector<Op> ops(20, Op{AG, 64 * kKiB});
      ops.insert(ops.end(), 20, Op{RS, 64 * kKiB});
      run.Run(world, ops, true);
    }
    run.Mark("group-p2p-and-coll");
    run.Run(world, {{AR, kMiB}}, true, {(rank + 1) % nranks, (rank + nranks - 1) % nranks});
    run.Mark("group-zero-count");
    run.Run(world, {{AR, 0}, {AR, kMiB}}, true);

    run.Mark("split-halves");
    Comm half = Split(world, rank % 2, rank);
    run.Mark("split-halves-ops");
    run.Each(half, {{AR, kMiB}, {AG, kMiB}});
    run.Run(half, {{BC, kMiB, ncclFloat32, 0}, {BC, kMiB, ncclFloat32, 1}}, true);
    run.Run(half, std::vector<Op>(3, Op{AR, 64 * kKiB}), true);
    run.Mark("split-halves-with-world");
    // One group over two communicators: the order in which NCCL consults the tuner per communicator.
    run.Run({{&world, {AR, kMiB}}, {&half, {AR, 2 * kMiB}}, {&world, {AG, kMiB}}}, true);
    run.Mark("split-halves-destroy");
    Destroy(&half);

    run.Mark("split-three");
    Comm three = Split(world, rank == nranks - 1 ? NCCL_SPLIT_NOCOLOR : 0, rank);
    run.Mark("split-three-ops");
    run.Run(three, {{AR, kMiB}}, false);
    run.Run(three, {{BC, kMiB, ncclFloat32, 0}, {BC, kMiB, ncclFloat32, 2}}, true);
    run.Mark("split-three-destroy");
    Destroy(&three);

    run.Mark("world-after-split");
    run.Run(world, {{AR, kMiB}}, false);
    run.Run(world, {{AG, kMiB}, {RS, kMiB}}, true);
    run.Mark("destroy-world");
    Destroy(&world);
    run.Mark("end");
  }
  device->DestroyStream(*stream);
  device.reset();
  close(fd);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::printf("fidelity-programs: all programs ran and their results checked\n");
  MPI_Finalize();
  return 0;
}
