// Multi-rank tests of the whole path on the simulated cluster: this MPI program runs under
// `mpirun -np 4` against the simulated libnccl.so.2 with libccltune.so preloaded. Every rank runs
// the same GoogleTest case (chosen with --gtest_filter); the simulated NCCL's consistency checker
// aborts the run on any cross-rank mismatch, so a passing run also proves lockstep decisions.
#include <dlfcn.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ccltune/ccltune.h"
#include "nccl.h"

namespace {

int g_rank = 0;
int g_size = 1;

// The public API, resolved at run time like ccltune-bench does (the program runs without it too).
struct Api {
  decltype(&ccltuneIsActive) is_active = nullptr;
  decltype(&ccltuneSetMode) set_mode = nullptr;
  decltype(&ccltuneGetMode) get_mode = nullptr;
  decltype(&ccltuneGetWorkloadStats) stats = nullptr;
  decltype(&ccltuneListWorkloads) list = nullptr;
  decltype(&ccltuneExport) export_now = nullptr;
  decltype(&ccltuneGetSummary) summary = nullptr;
  void (*sim_move_data)(int) = nullptr;
  long long (*sim_mismatches)() = nullptr;
  void (*sim_host_sync)() = nullptr;  // simncclHostSync: the streams are idle until the next launch
  Api() {
    is_active = reinterpret_cast<decltype(is_active)>(dlsym(RTLD_DEFAULT, "ccltuneIsActive"));
    set_mode = reinterpret_cast<decltype(set_mode)>(dlsym(RTLD_DEFAULT, "ccltuneSetMode"));
    get_mode = reinterpret_cast<decltype(get_mode)>(dlsym(RTLD_DEFAULT, "ccltuneGetMode"));
    stats = reinterpret_cast<decltype(stats)>(dlsym(RTLD_DEFAULT, "ccltuneGetWorkloadStats"));
    list = reinterpret_cast<decltype(list)>(dlsym(RTLD_DEFAULT, "ccltuneListWorkloads"));
    export_now = reinterpret_cast<decltype(export_now)>(dlsym(RTLD_DEFAULT, "ccltuneExport"));
    summary = reinterpret_cast<decltype(summary)>(dlsym(RTLD_DEFAULT, "ccltuneGetSummary"));
    sim_move_data = reinterpret_cast<decltype(sim_move_data)>(dlsym(RTLD_DEFAULT, "simncclSetMoveData"));
    sim_mismatches = reinterpret_cast<decltype(sim_mismatches)>(dlsym(RTLD_DEFAULT, "simncclMismatchCount"));
    sim_host_sync = reinterpret_cast<decltype(sim_host_sync)>(dlsym(RTLD_DEFAULT, "simncclHostSync"));
  }
  bool present() const { return is_active != nullptr && stats != nullptr; }
};
const Api& api() {
  static Api a;
  return a;
}

ncclComm_t MakeComm(MPI_Comm mpi) {
  int rank = 0, size = 0;
  MPI_Comm_rank(mpi, &rank);
  MPI_Comm_size(mpi, &size);
  ncclUniqueId id;
  if (rank == 0) EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, size, id, rank), ncclSuccess);
  return comm;
}

// Buffers are host memory in the simulated NCCL.
struct Buffers {
  std::vector<float> send, recv;
  explicit Buffers(size_t n) : send(n), recv(n * 8) {}
};

// A float sum all-reduce whose result is checked (data moves on this call).
void CheckedAllReduce(ncclComm_t comm, size_t count, int nranks, int rank) {
  Buffers b(count);
  for (size_t i = 0; i < count; ++i) b.send[i] = static_cast<float>((rank + 1) * ((i % 13) + 1));
  if (api().sim_move_data) api().sim_move_data(1);
  ASSERT_EQ(ncclAllReduce(b.send.data(), b.recv.data(), count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  const float ranks_sum = static_cast<float>(nranks * (nranks + 1) / 2);
  for (size_t i = 0; i < count; i += 97) ASSERT_EQ(b.recv[i], ranks_sum * ((i % 13) + 1)) << "element " << i;
}

ccltuneWorkloadStats_t Stats(ncclComm_t comm, int coll, int dtype, int op, size_t bytes) {
  ccltuneWorkloadStats_t s{};
  EXPECT_EQ(api().stats(comm, coll, dtype, op, bytes, &s), ccltuneSuccess);
  return s;
}

// Runs `calls` all-reduces of `count` floats.
void Loop(ncclComm_t comm, size_t count, int calls) {
  Buffers b(count);
  for (int i = 0; i < calls; ++i) {
    ASSERT_EQ(ncclAllReduce(b.send.data(), b.recv.data(), count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  }
}

const char* Env(const char* name) {
  const char* v = getenv(name);
  return v != nullptr ? v : "";
}

TEST(Sim, TunesAndConvergesInLockstep) {
  ASSERT_TRUE(api().present()) << "run with LD_PRELOAD=libccltune.so";
  ASSERT_EQ(api().is_active(), 1);
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  const std::vector<size_t> counts = {16 * 1024, 256 * 1024, 4 * 1024 * 1024};  // 64 KiB, 1 MiB, 16 MiB
  ASSERT_NE(api().summary, nullptr);
  int64_t changes_before = 0;
  for (size_t count : counts) {
    CheckedAllReduce(comm, count, g_size, g_rank);
    Loop(comm, count, 600);
    CheckedAllReduce(comm, count, g_size, g_rank);  // with the converged config
    // The process summary: this workload settled, schedule updates were applied, and every rank
    // reports the same (updates apply at the same unit everywhere).
    ccltuneSummary_t sum{};
    ASSERT_EQ(api().summary(&sum), ccltuneSuccess);
    EXPECT_EQ(sum.communicators, 1);
    EXPECT_EQ(sum.searching, 0) << "count " << count;
    EXPECT_GT(sum.changes, changes_before) << "count " << count;
    changes_before = sum.changes;
    const long long mine[4] = {sum.workloads, sum.converged, sum.pending, sum.changes};
    long long lo[4], hi[4];
    MPI_Allreduce(mine, lo, 4, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(mine, hi, 4, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(lo[i], hi[i]) << "summary field " << i << " differs across ranks";
    if (g_rank == 0) {
      auto s = Stats(comm, 4, ncclFloat32, ncclSum, count * 4);
      EXPECT_EQ(s.state, ccltuneStateConverged) << "count " << count;
      EXPECT_GT(s.convergeCalls, 0);
      EXPECT_LE(s.convergeCalls, 400);
      EXPECT_GT(s.samples, 0);
      EXPECT_NE(s.validSubspaces, 0u);
      if (s.config.algorithm >= 0) EXPECT_LT(s.tunedUs, s.defaultUs);
    }
  }
  if (api().sim_mismatches) EXPECT_EQ(api().sim_mismatches(), 0);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Where the sync ops run (CCLTUNE_SYNC_COMM): on the tuned communicator by default, so that it runs more
// operations than the user issued; with EXPECT_SYNC_SPLIT=1 (CCLTUNE_SYNC_COMM=split) on a communicator split
// off it, so that it runs the user's calls only. Either way the search converges in lockstep and the data is
// right.
TEST(Sim, SyncOpsRunOnTheCommunicatorTheSettingNames) {
  ASSERT_TRUE(api().present()) << "run with LD_PRELOAD=libccltune.so";
  auto comm_ops = reinterpret_cast<unsigned long long (*)(ncclComm_t)>(dlsym(RTLD_DEFAULT, "simncclCommOps"));
  ASSERT_NE(comm_ops, nullptr);
  const bool split = std::string(Env("EXPECT_SYNC_SPLIT")) == "1";
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  const size_t count = 256 * 1024;  // 1 MiB
  constexpr int kLoop = 600;
  CheckedAllReduce(comm, count, g_size, g_rank);
  Loop(comm, count, kLoop);
  CheckedAllReduce(comm, count, g_size, g_rank);
  const unsigned long long ops = comm_ops(comm);
  const unsigned long long user_calls = kLoop + 2;
  if (split) {
    EXPECT_EQ(ops, user_calls) << "the tuned communicator ran operations the user did not issue";
  } else {
    EXPECT_GT(ops, user_calls + 50) << "no sync ops on the tuned communicator";
  }
  ccltuneSummary_t sum{};
  ASSERT_EQ(api().summary(&sum), ccltuneSuccess);
  EXPECT_EQ(sum.communicators, 1);
  EXPECT_EQ(sum.searching, 0);
  EXPECT_GT(sum.changes, 0);
  const long long mine[4] = {sum.workloads, sum.converged, sum.pending, sum.changes};
  long long lo[4], hi[4];
  MPI_Allreduce(mine, lo, 4, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(mine, hi, 4, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(lo[i], hi[i]) << "summary field " << i << " differs across ranks";
  if (g_rank == 0) EXPECT_EQ(Stats(comm, 4, ncclFloat32, ncclSum, count * 4).state, ccltuneStateConverged);
  if (api().sim_mismatches) EXPECT_EQ(api().sim_mismatches(), 0);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// One call of `coll` of `bytes` (the bytes the user passes: per rank for all-gather's send side).
void Collective(ncclComm_t comm, int coll, size_t bytes, Buffers& b) {
  const size_t count = bytes / sizeof(float);
  switch (coll) {
    case 2:  // all-gather: count per rank
      ASSERT_EQ(ncclAllGather(b.send.data(), b.recv.data(), count, ncclFloat32, comm, nullptr), ncclSuccess);
      break;
    case 3:  // reduce-scatter: count per rank
      ASSERT_EQ(ncclReduceScatter(b.send.data(), b.recv.data(), count, ncclFloat32, ncclSum, comm, nullptr),
                ncclSuccess);
      break;
    default:
      ASSERT_EQ(ncclAllReduce(b.send.data(), b.recv.data(), count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  }
}

// A training loop: every iteration runs each workload TRAIN_REPEAT times, then synchronises the host
// (the loss). Workloads: 16 size classes (all-reduce, all-gather and reduce-scatter at several sizes),
// plus, with TRAIN_BUCKETS=N, N DDP-style gradient buckets of one size class (all-reduces of 20-30 MB
// floats, one each per iteration). Every workload must converge within TRAIN_MAX_ITERS iterations; the
// iteration at which all did is printed. The buckets must end on one config (one search).
TEST(Sim, TrainingLoopConverges) {
  ASSERT_TRUE(api().present()) << "run with LD_PRELOAD=libccltune.so";
  ASSERT_NE(api().summary, nullptr);
  const int repeat = std::max(1, atoi(Env("TRAIN_REPEAT")));
  const int max_iters = std::max(1, atoi(Env("TRAIN_MAX_ITERS")));
  const int buckets = atoi(Env("TRAIN_BUCKETS"));
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  struct W {
    int coll;
    size_t bytes;
  };
  std::vector<W> ws;
  for (size_t kib : {64, 128, 256, 512, 1024, 2048}) ws.push_back({4, kib << 10});
  for (size_t kib : {64, 256, 1024, 4096, 16384}) ws.push_back({2, kib << 10});
  for (size_t kib : {64, 256, 1024, 4096, 16384}) ws.push_back({3, kib << 10});
  const size_t n_classes = ws.size();
  for (int b = 0; b < buckets; ++b) ws.push_back({4, (20u << 20) + static_cast<size_t>(b) * (3u << 20)});
  size_t largest = 0;
  for (const W& w : ws) largest = std::max(largest, w.bytes);
  // Reduce-scatter reads count x ranks elements, all-gather writes them.
  Buffers buf(largest / sizeof(float) * static_cast<size_t>(g_size));
  int converged_at = 0;
  for (int it = 1; it <= 4 * max_iters && converged_at == 0; ++it) {
    for (const W& w : ws)
      for (int r = 0; r < repeat; ++r) Collective(comm, w.coll, w.bytes, buf);
    // The loss: the host waits for the step once per iteration, so the next iteration's first call starts on an idle
    // stream.
    if (api().sim_host_sync) api().sim_host_sync();
    MPI_Barrier(MPI_COMM_WORLD);
    ccltuneSummary_t sum{};
    ASSERT_EQ(api().summary(&sum), ccltuneSuccess);
    int all = sum.workloads == static_cast<int>(ws.size()) && sum.converged == sum.workloads ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) converged_at = it;
  }
  if (g_rank == 0) {
    std::printf(
        "[ training loop ] %zu workloads (%zu classes + %d buckets), each %d per iteration: all converged "
        "at iteration %d (limit %d)\n",
        ws.size(), n_classes, buckets, repeat, converged_at, max_iters);
  }
  EXPECT_GT(converged_at, 0) << "not every workload converged";
  EXPECT_LE(converged_at, max_iters);
  if (g_rank == 0 && buckets > 1) {
    std::vector<ccltuneWorkloadStats_t> all(64);
    int count = 0;
    ASSERT_EQ(api().list(comm, all.data(), 64, &count), ccltuneSuccess);
    std::vector<ccltuneConfig_t> bucket_configs;
    for (int i = 0; i < count; ++i)
      if (all[i].bytes >= (16u << 20) && all[i].collective == 4) bucket_configs.push_back(all[i].config);
    ASSERT_EQ(static_cast<int>(bucket_configs.size()), buckets);
    for (const ccltuneConfig_t& c : bucket_configs) {
      EXPECT_EQ(c.algorithm, bucket_configs[0].algorithm);
      EXPECT_EQ(c.protocol, bucket_configs[0].protocol);
      EXPECT_EQ(c.channels, bucket_configs[0].channels);
    }
  }
  if (api().sim_mismatches) EXPECT_EQ(api().sim_mismatches(), 0);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(Sim, GroupsAreOneWorkload) {
  ASSERT_TRUE(api().present());
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  Buffers a(256 * 1024), g(64 * 1024 * 8);
  for (int it = 0; it < 500; ++it) {
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclAllReduce(a.send.data(), a.recv.data(), 256 * 1024, ncclFloat32, ncclSum, comm, nullptr),
              ncclSuccess);
    ASSERT_EQ(ncclAllGather(g.send.data(), g.recv.data(), 64 * 1024, ncclFloat32, comm, nullptr), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    // An ungrouped broadcast between groups (ncclBcast re-enters ncclBroadcast inside NCCL).
    ASSERT_EQ(ncclBcast(a.send.data(), 1024, ncclFloat32, 0, comm, nullptr), ncclSuccess);
  }
  if (g_rank == 0) {
    std::vector<ccltuneWorkloadStats_t> all(16);
    int n = 0;
    ASSERT_EQ(api().list(comm, all.data(), 16, &n), ccltuneSuccess);
    ASSERT_EQ(n, 2);  // the group, the broadcast
    int grouped = 0;
    for (int i = 0; i < n; ++i) {
      if (all[i].grouped) {
        ++grouped;
        EXPECT_EQ(all[i].state, ccltuneStateConverged);
        EXPECT_EQ(all[i].calls, 500);
      }
    }
    EXPECT_EQ(grouped, 1);
  }
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Run with NCCL_ALGO=^Tree NCCL_PROTO=^LL: NCCL gives what they leave out the cost -1, and ccltune searches
// among the rest: algorithms and protocols are still tuned (PyTorch's deterministic mode sets NCCL_ALGO=^NVLS),
// and no workload ends on tree or LL.
TEST(Sim, NcclAlgoAndProtoLimitTheSearch) {
  ASSERT_TRUE(api().present());
  ASSERT_STREQ(Env("NCCL_ALGO"), "^Tree");
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  auto last_config = reinterpret_cast<void (*)(int*, int*, int*)>(dlsym(RTLD_DEFAULT, "simncclLastConfig"));
  ASSERT_NE(last_config, nullptr) << "run against the simulated NCCL";
  int applied = 0;
  for (size_t count : {16 * 1024, 256 * 1024, 4 * 1024 * 1024}) {
    CheckedAllReduce(comm, count, g_size, g_rank);
    Loop(comm, count, 500);
    // What NCCL ran for the converged config's next call: never what the variables leave out, and the
    // algorithm/protocol ccltune chose where it chose one (applied, not only recorded).
    const auto s = Stats(comm, 4, ncclFloat32, ncclSum, count * sizeof(float));
    Loop(comm, count, 1);
    int algo = -1, proto = -1, channels = 0;
    last_config(&algo, &proto, &channels);
    EXPECT_NE(algo, 0) << count;
    EXPECT_NE(proto, 0) << count;
    if (s.config.algorithm >= 0) {
      EXPECT_EQ(algo, s.config.algorithm) << count;
      EXPECT_EQ(proto, s.config.protocol) << count;
      ++applied;
    }
  }
  if (g_rank == 0) EXPECT_GT(applied, 0) << "ccltune chose no algorithm/protocol: it left them to NCCL";
  // A forced config (every rank alike) runs as asked where the variables allow it, whatever NCCL would pick
  // itself; tree, which NCCL_ALGO leaves out, is never applied: NCCL picks among the rest.
  for (int want_proto : {1, 2}) {  // ring/LL128, ring/Simple: at least one is not NCCL's own pick
    const ccltuneConfig_t f{1, want_proto, 0, 0};
    ASSERT_EQ(api().set_mode(comm, ccltuneModeForced, &f), ccltuneSuccess);
    Loop(comm, 256 * 1024, 1);
    int algo = -1, proto = -1, channels = 0;
    last_config(&algo, &proto, &channels);
    EXPECT_EQ(algo, 1);
    EXPECT_EQ(proto, want_proto);
  }
  const ccltuneConfig_t tree{0, 2, 0, 0};
  ASSERT_EQ(api().set_mode(comm, ccltuneModeForced, &tree), ccltuneSuccess);
  Loop(comm, 256 * 1024, 1);
  int algo = -1, proto = -1, channels = 0;
  last_config(&algo, &proto, &channels);
  EXPECT_NE(algo, 0);
  ASSERT_EQ(api().set_mode(comm, ccltuneModeTune, nullptr), ccltuneSuccess);
  if (g_rank == 0) {
    std::vector<ccltuneWorkloadStats_t> all(16);
    int n = 0;
    ASSERT_EQ(api().list(comm, all.data(), 16, &n), ccltuneSuccess);
    ASSERT_EQ(n, 3);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(all[i].state, ccltuneStateConverged) << all[i].bytes;
      EXPECT_NE(all[i].config.algorithm, 0) << all[i].bytes << ": tree, which NCCL_ALGO leaves out";
      EXPECT_NE(all[i].config.protocol, 0) << all[i].bytes << ": LL, which NCCL_PROTO leaves out";
      EXPECT_NE(all[i].ncclAlgorithm, 0);
    }
  }
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Run with CCLTUNE_TRACE=FILE: the leader writes one CSV line per timed call whose timing came back
// (config_table/trace_format.hpp): the header, then lines of nine fields naming the communicator, the
// workload, its call index, the unit, the config, the time, the role, and the minimum and maximum over
// ranks, the time being one of those two and the minimum no more than the maximum; the search's
// candidates and NCCL's default both appear, and the call indices stay within the calls made.
TEST(Sim, TuningTraceIsWritten) {
  ASSERT_TRUE(api().present());
  const std::string path = Env("CCLTUNE_TRACE");
  ASSERT_FALSE(path.empty());
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  // TRACE_CALLS: how many calls (300 unless set; the chunk tests give the search room to reach its
  // refinement, where chunk sizes join, on a loaded machine too).
  const uint64_t calls = Env("TRACE_CALLS")[0] != '\0' ? std::stoull(Env("TRACE_CALLS")) : 300;
  Loop(comm, 256 * 1024, static_cast<int>(calls));
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  if (g_rank != 0) return;
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "comm,workload,call,unit,config,us,role,min_us,max_us");
  std::map<std::string, int> roles;
  std::map<std::string, std::pair<double, double>> range;  // config -> fastest, slowest sample
  int lines = 0, chunked = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 9u) << line;
    EXPECT_EQ(f[1], "allreduce/float32/sum/1048576") << line;
    EXPECT_LT(std::stoull(f[2]), calls) << line;
    EXPECT_GT(std::stod(f[5]), 0.0) << line;
    EXPECT_GT(std::stod(f[7]), 0.0) << line;
    EXPECT_LE(std::stod(f[7]), std::stod(f[8])) << line;
    EXPECT_TRUE(f[5] == f[7] || f[5] == f[8]) << line;
    ++roles[f[6]];
    ++lines;
    if (f[4].find("/chunk") != std::string::npos) ++chunked;
    // The search's own samples: what it asked for and what ran while it waited (not the monitoring's or the
    // guard's calls after convergence).
    if (f[6] == "candidate" || f[6] == "incumbent") {
      const double us = std::stod(f[5]);
      auto [it, first] = range.try_emplace(f[4], us, us);
      it->second = {std::min(it->second.first, us), std::max(it->second.second, us)};
    }
  }
  EXPECT_GT(lines, 30);
  // MAX_SPREAD=R: no config's slowest search sample is more than R times its fastest (with SIMNCCL_AFTER_OTHER
  // charging a large factor to a call right after ccltune's sync op: no such call was a sample).
  if (const std::string spread = Env("MAX_SPREAD"); !spread.empty()) {
    for (const auto& [config, r] : range)
      EXPECT_LE(r.second, std::stod(spread) * r.first)
          << config << ": samples " << r.first << " to " << r.second << " us";
  }
  // EXPECT_CHUNK=1: some measured config set a chunk size (tuner v6 searches it); 0: none did.
  if (const std::string want = Env("EXPECT_CHUNK"); !want.empty()) {
    EXPECT_EQ(chunked > 0, want == "1") << chunked << " timed calls ran a config with a chunk size";
  }
  EXPECT_GT(roles["candidate"], 0);
  EXPECT_GT(roles["default"], 0);
  for (const auto& [role, n] : roles)
    EXPECT_TRUE(role == "candidate" || role == "incumbent" || role == "default" || role == "monitor") << role;
}

// nccl-tests' way: the communicator is created inside ncclGroupStart/End (NCCL initializes it at the
// group's end) and every collective is a group of one. One communicator created in a group on its
// thread is the ordinary case: tuned, and the group of one is the collective's own workload.
TEST(Sim, CommunicatorCreatedInAGroupIsTuned) {
  ASSERT_TRUE(api().present());
  ncclUniqueId id;
  if (g_rank == 0) ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclCommInitRank(&comm, g_size, id, g_rank), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_NE(comm, nullptr);
  ccltuneMode_t mode = ccltuneModeForced;
  ASSERT_EQ(api().get_mode(comm, &mode), ccltuneSuccess) << "the communicator is not known to ccltune";
  EXPECT_EQ(mode, ccltuneModeTune);
  // Not passed through: a passed-through communicator refuses a mode (ccltuneUnavailable).
  EXPECT_EQ(api().set_mode(comm, ccltuneModeTune, nullptr), ccltuneSuccess);
  const size_t count = 256 * 1024;  // 1 MiB of floats
  Buffers b(count);
  for (int it = 0; it < 400; ++it) {
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclAllReduce(b.send.data(), b.recv.data(), count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  }
  CheckedAllReduce(comm, count, g_size, g_rank);  // ungrouped: the same workload, its converged config
  if (g_rank == 0) {
    const auto s = Stats(comm, 4, ncclFloat32, ncclSum, count * sizeof(float));
    EXPECT_EQ(s.state, ccltuneStateConverged);
    EXPECT_EQ(s.grouped, 0);
    EXPECT_EQ(s.calls, 401);
    EXPECT_GT(s.samples, 0);
  }
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// One thread creating two communicators in one group drives several communicators from one thread
// (as ncclCommInitAll does): both pass through, and the collectives run on NCCL's defaults, in lockstep.
TEST(Sim, SeveralCommunicatorsCreatedInOneGroupPassThrough) {
  ASSERT_TRUE(api().present());
  ncclUniqueId ids[2];
  if (g_rank == 0) {
    ASSERT_EQ(ncclGetUniqueId(&ids[0]), ncclSuccess);
    ASSERT_EQ(ncclGetUniqueId(&ids[1]), ncclSuccess);
  }
  MPI_Bcast(ids, sizeof(ids), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclCommInitRank(&comms[0], g_size, ids[0], g_rank), ncclSuccess);
  ASSERT_EQ(ncclCommInitRank(&comms[1], g_size, ids[1], g_rank), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (ncclComm_t comm : comms) {
    ASSERT_NE(comm, nullptr);
    EXPECT_EQ(api().set_mode(comm, ccltuneModeTune, nullptr), ccltuneUnavailable);
    Loop(comm, 64 * 1024, 50);
    CheckedAllReduce(comm, 64 * 1024, g_size, g_rank);
  }
  // A communicator created afterwards, outside a group, is tuned as usual.
  ncclComm_t later = MakeComm(MPI_COMM_WORLD);
  EXPECT_EQ(api().set_mode(later, ccltuneModeTune, nullptr), ccltuneSuccess);
  EXPECT_EQ(ncclCommDestroy(later), ncclSuccess);
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(Sim, TwoCommunicatorsASplitAndDestroyDuringTuning) {
  ASSERT_TRUE(api().present());
  ncclComm_t world = MakeComm(MPI_COMM_WORLD);
  ncclComm_t half = nullptr;
  ASSERT_EQ(ncclCommSplit(world, g_rank % 2, g_rank, &half, nullptr), ncclSuccess);
  ASSERT_NE(half, nullptr);
  // Interleave the two communicators; each has its own units and sync ops.
  Buffers b(1 << 20);
  for (int it = 0; it < 300; ++it) {
    ASSERT_EQ(ncclAllReduce(b.send.data(), b.recv.data(), 1 << 18, ncclFloat32, ncclSum, world, nullptr), ncclSuccess);
    ASSERT_EQ(ncclAllReduce(b.send.data(), b.recv.data(), 1 << 16, ncclFloat32, ncclSum, half, nullptr), ncclSuccess);
  }
  // Destroy the split in the middle of tuning a new workload, then make a fresh one.
  for (int it = 0; it < 40; ++it) {
    ASSERT_EQ(ncclAllReduce(b.send.data(), b.recv.data(), 1 << 19, ncclFloat32, ncclSum, half, nullptr), ncclSuccess);
  }
  ASSERT_EQ(ncclCommDestroy(half), ncclSuccess);
  ASSERT_EQ(ncclCommSplit(world, g_rank / 2, g_rank, &half, nullptr), ncclSuccess);
  for (int it = 0; it < 300; ++it) {
    ASSERT_EQ(ncclAllReduce(b.send.data(), b.recv.data(), 1 << 19, ncclFloat32, ncclSum, half, nullptr), ncclSuccess);
    ASSERT_EQ(ncclAllReduce(b.send.data(), b.recv.data(), 1 << 18, ncclFloat32, ncclSum, world, nullptr), ncclSuccess);
  }
  CheckedAllReduce(world, 1 << 18, g_size, g_rank);
  if (g_rank == 0) EXPECT_EQ(Stats(world, 4, ncclFloat32, ncclSum, 1 << 20).state, ccltuneStateConverged);
  EXPECT_EQ(ncclCommDestroy(half), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(world), ncclSuccess);
}

// Tuning was stopped at the agreement point (by a fault the test injects): every rank stays on
// NCCL's default, in lockstep (the checker), with correct data.
void ExpectAllStayOnDefault() {
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  Loop(comm, 256 * 1024, 400);
  CheckedAllReduce(comm, 256 * 1024, g_size, g_rank);
  auto s = Stats(comm, 4, ncclFloat32, ncclSum, 1 << 20);
  EXPECT_EQ(s.state, ccltuneStateDefault);
  EXPECT_EQ(s.config.algorithm, -1);
  EXPECT_EQ(s.config.channels, 0);
  EXPECT_EQ(s.samples, 0);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Run with CCLTUNE_TEST_FAIL_SETUP_RANK=<r>: every rank must stay on NCCL's default.
TEST(Sim, OneRankCannotTuneAllStayOnDefault) {
  ASSERT_TRUE(api().present());
  ASSERT_STRNE(Env("CCLTUNE_TEST_FAIL_SETUP_RANK"), "");
  ExpectAllStayOnDefault();
}

// Run with one rank preloading a ccltune built with another protocol version (its payload is a
// foreign one to the others): every rank rejects the reduced payload and stays on NCCL's default.
TEST(Sim, ForeignVersionOnOneRankAllStayOnDefault) {
  ASSERT_TRUE(api().present());
  ExpectAllStayOnDefault();
}

// Run with CCLTUNE_EXPORT=<file>: tunes three workloads and exports at exit (and now, explicitly).
TEST(Sim, ExportWritesConvergedConfigs) {
  ASSERT_TRUE(api().present());
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  for (size_t count : {64 * 1024, 1024 * 1024}) Loop(comm, count, 500);
  if (g_rank == 0) {
    ASSERT_EQ(api().export_now(nullptr), ccltuneSuccess);
    std::ifstream in(Env("CCLTUNE_EXPORT"));
    nlohmann::json j = nlohmann::json::parse(in);
    ASSERT_EQ(j["configs"].size(), 1u);
    EXPECT_EQ(j["configs"][0]["workloads"].size(), 2u);
  }
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Run with CCLTUNE_IMPORT=<file from the export test>: no tuning, same configs.
TEST(Sim, ImportSkipsTuning) {
  ASSERT_TRUE(api().present());
  std::ifstream in(Env("CCLTUNE_IMPORT"));
  ASSERT_TRUE(in.good()) << "CCLTUNE_IMPORT must name the export of ExportWritesConvergedConfigs";
  nlohmann::json j = nlohmann::json::parse(in);
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  for (size_t count : {64 * 1024, 1024 * 1024}) Loop(comm, count, 300);
  if (g_rank == 0) {
    for (const auto& w : j["configs"][0]["workloads"]) {
      const uint64_t bytes = w["key"]["calls"][0]["bytes"];
      auto s = Stats(comm, 4, ncclFloat32, ncclSum, bytes);
      EXPECT_EQ(s.state, ccltuneStateImported) << bytes;
      // Only the agreement interval runs before the imported config applies; nothing is searched.
      EXPECT_LE(s.convergeCalls, 200) << bytes;
      EXPECT_EQ(s.config.channels, w["config"]["channels"].get<int>()) << bytes;
      const std::string algo = w["config"]["algorithm"];
      EXPECT_EQ(s.config.algorithm, algo == "default" ? -1 : algo == "tree" ? 0 : 1) << bytes;
    }
  }
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Run with CCLTUNE_IMPORT naming a file that does not parse: the leader says so in one line and
// tuning goes on from NCCL's defaults, in lockstep.
TEST(Sim, BadImportIsIgnoredAndTuningGoesOn) {
  ASSERT_TRUE(api().present());
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  Loop(comm, 256 * 1024, 500);
  CheckedAllReduce(comm, 256 * 1024, g_size, g_rank);
  if (g_rank == 0) {
    auto s = Stats(comm, 4, ncclFloat32, ncclSum, 1 << 20);
    EXPECT_EQ(s.state, ccltuneStateConverged);
    EXPECT_GT(s.samples, 0);
  }
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Run with CCLTUNE_IMPORT naming the CSV of ExportWritesConvergedConfigs: each workload that has a
// line there starts with that line's config (imported, not searched); the others are tuned as usual.
TEST(Sim, CsvImportSkipsTuning) {
  ASSERT_TRUE(api().present());
  std::ifstream in(Env("CCLTUNE_IMPORT"));
  ASSERT_TRUE(in.good()) << "CCLTUNE_IMPORT must name the CSV export of ExportWritesConvergedConfigs";
  std::map<uint64_t, std::vector<std::string>> lines;  // nBytes -> fields
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 10u) << line;
    ASSERT_EQ(f[0], "allreduce") << line;
    lines[std::stoull(f[1])] = f;
  }
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  for (size_t count : {64 * 1024, 1024 * 1024}) Loop(comm, count, 300);
  CheckedAllReduce(comm, 64 * 1024, g_size, g_rank);
  if (g_rank == 0) {
    for (size_t count : {64 * 1024, 1024 * 1024}) {
      const size_t bytes = count * 4;
      auto s = Stats(comm, 4, ncclFloat32, ncclSum, bytes);
      auto it = lines.find(bytes);
      if (it == lines.end()) {  // NCCL's default won in the exporting run: no line, tuned again
        EXPECT_EQ(s.state, ccltuneStateConverged) << bytes;
        continue;
      }
      const std::vector<std::string>& f = it->second;
      EXPECT_EQ(s.state, ccltuneStateImported) << bytes;
      EXPECT_LE(s.convergeCalls, 200) << bytes;
      EXPECT_EQ(s.config.algorithm, f[3] == "tree" ? 0 : f[3] == "ring" ? 1 : -2) << bytes;
      EXPECT_EQ(s.config.protocol, f[4] == "ll" ? 0 : f[4] == "ll128" ? 1 : f[4] == "simple" ? 2 : -2) << bytes;
      EXPECT_EQ(s.config.channels, f[5] == "-1" ? 0 : std::stoi(f[5])) << bytes;
    }
    // The test means something only if the exporting run found a non-default config.
    EXPECT_FALSE(lines.empty()) << "the CSV has no config line";
  }
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Run with CCLTUNE_EXPORT=<file> CCLTUNE_EXPORT_INTERVAL=1: the running job's converged configs
// reach the file without an exit or an explicit ccltuneExport.
TEST(Sim, PeriodicExportWhileRunning) {
  ASSERT_TRUE(api().present());
  ASSERT_STREQ(Env("CCLTUNE_EXPORT_INTERVAL"), "1");
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  Loop(comm, 256 * 1024, 500);
  if (g_rank == 0) {
    ASSERT_EQ(Stats(comm, 4, ncclFloat32, ncclSum, 1 << 20).state, ccltuneStateConverged);
    bool found = false;
    for (int i = 0; i < 100 && !found; ++i) {  // at most 10 s; the flusher writes every second
      usleep(100 * 1000);
      std::ifstream f(Env("CCLTUNE_EXPORT"));
      if (!f.good()) continue;
      nlohmann::json j = nlohmann::json::parse(f);  // never a half file: it is replaced atomically
      for (const auto& w : j["configs"][0]["workloads"]) found |= w["state"] == "converged";
    }
    EXPECT_TRUE(found) << "no periodic export with the converged workload within 10 s";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Driven by export_kill.sh with CCLTUNE_EXPORT=<file> CCLTUNE_TEST_EXPORT_PAUSE=2: rank 0 exports
// one tuned workload (export 1, copied to <file>.first), tunes a second, and its export 2 pauses
// once the new file is written and before the rename; the script kills rank 0 with SIGKILL there.
TEST(Sim, ExportKilledMidWay) {
  ASSERT_TRUE(api().present());
  ASSERT_STREQ(Env("CCLTUNE_TEST_EXPORT_PAUSE"), "2");
  const std::string path = Env("CCLTUNE_EXPORT");
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  Loop(comm, 64 * 1024, 500);
  if (g_rank == 0) {
    ASSERT_EQ(api().export_now(nullptr), ccltuneSuccess);
    std::ifstream src(path, std::ios::binary);
    std::ofstream dst(path + ".first", std::ios::binary);
    dst << src.rdbuf();
  }
  Loop(comm, 1024 * 1024, 500);
  if (g_rank == 0) {
    api().export_now(nullptr);  // pauses for good; reaching the next line is a failure
    ADD_FAILURE() << "export 2 did not pause (CCLTUNE_TEST_EXPORT_PAUSE)";
  }
  MPI_Barrier(MPI_COMM_WORLD);  // the other ranks wait here until the kill ends the job
}

// Run with CCLTUNE_DISABLE=1: a pure pass-through.
TEST(Sim, DisableIsPassThrough) {
  ASSERT_TRUE(api().present());
  EXPECT_EQ(api().is_active(), 0);
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  Loop(comm, 1024, 100);
  CheckedAllReduce(comm, 1024, g_size, g_rank);
  ccltuneWorkloadStats_t s{};
  EXPECT_EQ(api().stats(comm, 4, ncclFloat32, ncclSum, 4096, &s), ccltuneUnavailable);
  ccltuneSummary_t sum{};
  EXPECT_EQ(api().summary(&sum), ccltuneUnavailable);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// CCLTUNE_CHANNEL_BUDGET=8 on a machine where NCCL gives a communicator 4 channels (SIMNCCL_CHANNELS=4):
// the communicator has 8 (a config forced on 8 channels runs on 8), and NCCL's default runs exactly as on
// a communicator NCCL created on its own 4 (one whose config sets maxCTAs, which ccltune leaves alone):
// the same algorithm, protocol and channels at every size, small messages on fewer. So does a split of
// the raised communicator made without a config.
TEST(Sim, RaisedChannelBudgetKeepsNcclsDefault) {
  ASSERT_TRUE(api().present());
  ASSERT_STREQ(Env("CCLTUNE_CHANNEL_BUDGET"), "8");
  ncclUniqueId id;
  if (g_rank == 0) ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclConfig_t own = NCCL_CONFIG_INITIALIZER;
  own.maxCTAs = 4;
  ncclComm_t ref = nullptr;
  ASSERT_EQ(ncclCommInitRankConfig(&ref, g_size, id, g_rank, &own), ncclSuccess);
  ncclComm_t raised = MakeComm(MPI_COMM_WORLD);
  ncclComm_t child = nullptr;
  ASSERT_EQ(ncclCommSplit(raised, 0, g_rank, &child, nullptr), ncclSuccess);
  const std::vector<ncclComm_t> comms = {ref, raised, child};
  for (ncclComm_t c : comms) ASSERT_EQ(api().set_mode(c, ccltuneModeDefault, nullptr), ccltuneSuccess);
  const size_t counts[] = {1 << 10, 1 << 14, 1 << 16, 1 << 18, 1 << 22};  // 4 KiB .. 16 MiB
  for (size_t count : counts) {
    for (ncclComm_t c : comms) Loop(c, count, 3);
    const ccltuneConfig_t want = Stats(ref, 4, ncclFloat32, ncclSum, count * 4).lastRan;
    ASSERT_GT(want.channels, 0) << "no channel truth";
    EXPECT_LE(want.channels, 4);
    for (ncclComm_t c : {raised, child}) {
      const ccltuneConfig_t ran = Stats(c, 4, ncclFloat32, ncclSum, count * 4).lastRan;
      EXPECT_EQ(ran.algorithm, want.algorithm) << count * 4 << " bytes";
      EXPECT_EQ(ran.protocol, want.protocol) << count * 4 << " bytes";
      EXPECT_EQ(ran.channels, want.channels) << count * 4 << " bytes";
    }
  }
  // What the communicators have: 8 channels where raised, 4 where NCCL chose.
  const ccltuneConfig_t ring8{1, 2, 8, 0};
  const int want_channels[] = {4, 8, 8};
  for (size_t i = 0; i < comms.size(); ++i) {
    ASSERT_EQ(api().set_mode(comms[i], ccltuneModeForced, &ring8), ccltuneSuccess);
    Loop(comms[i], 1 << 22, 2);
    EXPECT_EQ(Stats(comms[i], 4, ncclFloat32, ncclSum, 16 << 20).lastRan.channels, want_channels[i]) << i;
  }
  CheckedAllReduce(raised, 1 << 18, g_size, g_rank);
  CheckedAllReduce(child, 1 << 18, g_size, g_rank);
  for (ncclComm_t c : {child, raised, ref}) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// On a raised communicator the search measures NCCL's own pick on the raised channels (the default runs it
// on NCCL's original count): the space reaches the budget, and NCCL's default untouched on a workload's first
// call, which runs that very config, is not taken for the default's run (it would make it the default's twin).
TEST(Sim, RaisedChannelBudgetSearchesNcclsPickOnTheRaisedChannels) {
  ASSERT_TRUE(api().present());
  ASSERT_STREQ(Env("CCLTUNE_CHANNEL_BUDGET"), "8");
  const std::string path = Env("CCLTUNE_TRACE");
  ASSERT_FALSE(path.empty());
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  Loop(comm, 1 << 22, 300);
  const ccltuneWorkloadStats_t st = Stats(comm, 4, ncclFloat32, ncclSum, 16 << 20);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  if (g_rank != 0) return;
  static const char* const kAlgo[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
  static const char* const kProto[] = {"ll", "ll128", "simple"};
  ASSERT_GE(st.ncclAlgorithm, 0);
  ASSERT_GE(st.ncclProtocol, 0);
  const std::string own = std::string(kAlgo[st.ncclAlgorithm]) + "/" + kProto[st.ncclProtocol] + "/nc8";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  int measured = 0;
  for (std::string line; std::getline(in, line);)
    if (line.find("," + own + ",") != std::string::npos) ++measured;
  EXPECT_GT(measured, 0) << own << " was never measured";
}

// Used with the deliberately broken build (one rank applies updates one call late): the simulated
// NCCL must abort the run. The test itself only tunes; the failure comes from the checker.
TEST(Sim, PlantedLateApply) {
  ncclComm_t comm = MakeComm(MPI_COMM_WORLD);
  Loop(comm, 256 * 1024, 600);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  ::testing::InitGoogleTest(&argc, argv);
  if (g_rank != 0) {
    // One rank prints the results; the others only report failures.
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int rc = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
