// Multi-rank checks of simnccl, run as `mpirun -np 4 simnccl_mpi_test <mode>`: data of every collective, groups,
// split, move-data policy, virtual time, tuner-plugin calls, the tuner's order over a group's communicators, table
// model, and the failure paths (mismatch, hang).
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test_tuner_stats.hpp"

extern "C" {
void simncclSetMoveData(int on);
long long simncclMovedCalls(void);
long long simncclMismatchCount(void);
double simncclVirtualTimeUs(void);
}

static int gRank, gSize, gFailures;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "rank %d FAIL %s:%d: ", gRank, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                       \
      std::fprintf(stderr, "\n");                                              \
      gFailures++;                                                             \
    }                                                                          \
  } while (0)
#define NCCLOK(call)                                                                          \
  do {                                                                                        \
    ncclResult_t r_ = (call);                                                                 \
    if (r_ != ncclSuccess) {                                                                  \
      std::fprintf(stderr, "rank %d: %s failed: %s\n", gRank, #call, ncclGetErrorString(r_)); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                           \
    }                                                                                         \
  } while (0)

// ---- element helpers (double <-> any ncclDataType_t) for building inputs and checking outputs
static size_t Size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}
static float Bf(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
static uint16_t ToBf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return (uint16_t)(x >> 16);
}  // exact inputs
static float Half(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? std::ldexp((float)m, -24) : std::ldexp(1024.0f + m, e - 25);
  return (h >> 15) ? -v : v;
}
static uint16_t ToHalf(float f) {  // exact for the small integers used here
  if (f == 0) return 0;
  int e;
  float m = std::frexp(f, &e);
  return (uint16_t)(((e + 14) << 10) | ((int)(m * 2048) - 1024));
}
static float F8(uint8_t v, bool e4) {
  int eb = e4 ? 4 : 5, mb = 7 - eb, bias = e4 ? 7 : 15, e = (v >> mb) & ((1 << eb) - 1), m = v & ((1 << mb) - 1);
  float r = e == 0 ? std::ldexp((float)m, 1 - bias - mb) : std::ldexp((float)((1 << mb) + m), e - bias - mb);
  return (v >> 7) ? -r : r;
}
static uint8_t ToF8(float f, bool e4) {
  uint8_t best = 0;
  float bd = 1e30f;
  for (int v = 0; v < 128; v++) {
    float d = std::fabs(F8(v, e4) - f);
    if (d < bd) bd = d, best = v;
  }
  return best;
}
static double Get(ncclDataType_t t, const void* p, size_t i) {
  switch (t) {
    case ncclInt8:
      return ((int8_t*)p)[i];
    case ncclUint8:
      return ((uint8_t*)p)[i];
    case ncclInt32:
      return ((int32_t*)p)[i];
    case ncclUint32:
      return ((uint32_t*)p)[i];
    case ncclInt64:
      return ((int64_t*)p)[i];
    case ncclUint64:
      return ((uint64_t*)p)[i];
    case ncclFloat16:
      return Half(((uint16_t*)p)[i]);
    case ncclBfloat16:
      return Bf(((uint16_t*)p)[i]);
    case ncclFloat8e4m3:
      return F8(((uint8_t*)p)[i], true);
    case ncclFloat8e5m2:
      return F8(((uint8_t*)p)[i], false);
    case ncclFloat32:
      return ((float*)p)[i];
    default:
      return ((double*)p)[i];
  }
}
static void Set(ncclDataType_t t, void* p, size_t i, double v) {
  switch (t) {
    case ncclInt8:
      ((int8_t*)p)[i] = (int8_t)v;
      break;
    case ncclUint8:
      ((uint8_t*)p)[i] = (uint8_t)v;
      break;
    case ncclInt32:
      ((int32_t*)p)[i] = (int32_t)v;
      break;
    case ncclUint32:
      ((uint32_t*)p)[i] = (uint32_t)v;
      break;
    case ncclInt64:
      ((int64_t*)p)[i] = (int64_t)v;
      break;
    case ncclUint64:
      ((uint64_t*)p)[i] = (uint64_t)v;
      break;
    case ncclFloat16:
      ((uint16_t*)p)[i] = ToHalf((float)v);
      break;
    case ncclBfloat16:
      ((uint16_t*)p)[i] = ToBf((float)v);
      break;
    case ncclFloat8e4m3:
      ((uint8_t*)p)[i] = ToF8((float)v, true);
      break;
    case ncclFloat8e5m2:
      ((uint8_t*)p)[i] = ToF8((float)v, false);
      break;
    case ncclFloat32:
      ((float*)p)[i] = (float)v;
      break;
    default:
      ((double*)p)[i] = v;
  }
}
static double Val(int rank, size_t i, ncclRedOp_t op) { return op == ncclProd ? 1 + (i + rank) % 2 : rank + 1 + i % 3; }
static bool Close(ncclDataType_t t, double got, double want) {
  double tol = (t == ncclFloat8e4m3 || t == ncclFloat8e5m2) ? 0.15 * std::fabs(want) + 0.01 : 1e-6 * std::fabs(want);
  return std::fabs(got - want) <= tol;
}
static double Expect(ncclDataType_t t, ncclRedOp_t op, size_t i, int n) {
  double acc = Val(0, i, op);
  for (int r = 1; r < n; r++) {
    double v = Val(r, i, op);
    acc = op == ncclProd ? acc * v : op == ncclMax ? std::max(acc, v) : op == ncclMin ? std::min(acc, v) : acc + v;
  }
  if (op == ncclAvg) acc = t <= ncclUint64 ? std::floor(acc / n) : acc / n;
  return acc;
}

static ncclComm_t InitWorld() {
  ncclUniqueId id;
  if (gRank == 0) NCCLOK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  NCCLOK(ncclCommInitRank(&comm, gSize, id, gRank));
  return comm;
}

static void CheckReductions(ncclComm_t comm, size_t count) {
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  for (int ti = 0; ti < ncclNumTypes; ti++) {
    ncclDataType_t t = (ncclDataType_t)ti;
    size_t es = Size(t);
    for (ncclRedOp_t op : ops) {
      std::vector<char> in(count * gSize * es), out(count * gSize * es);
      for (size_t i = 0; i < count * gSize; i++) Set(t, in.data(), i, Val(gRank, i % count, op));
      NCCLOK(ncclAllReduce(in.data(), out.data(), count, t, op, comm, nullptr));
      for (size_t i = 0; i < count; i++)
        if (!Close(t, Get(t, out.data(), i), Expect(t, op, i, gSize))) {
          CHECK(false, "allreduce type %d op %d elem %zu got %g want %g", ti, op, i, Get(t, out.data(), i),
                Expect(t, op, i, gSize));
          break;
        }
      int root = 2 % gSize;
      std::fill(out.begin(), out.end(), 0);
      NCCLOK(ncclReduce(in.data(), out.data(), count, t, op, root, comm, nullptr));
      if (gRank == root)
        for (size_t i = 0; i < count; i++)
          if (!Close(t, Get(t, out.data(), i), Expect(t, op, i, gSize))) {
            CHECK(false, "reduce type %d op %d elem %zu", ti, op, i);
            break;
          }
      NCCLOK(ncclReduceScatter(in.data(), out.data(), count, t, op, comm, nullptr));
      for (size_t i = 0; i < count; i++)
        if (!Close(t, Get(t, out.data(), i), Expect(t, op, i, gSize))) {
          CHECK(false, "reducescatter type %d op %d elem %zu", ti, op, i);
          break;
        }
    }
  }
}

static void ModeData(ncclComm_t comm) {
  CheckReductions(comm, 257);
  // Large float buffers cross the staging size (chunked rounds); in-place variants.
  size_t big = 1536 * 1024;
  std::vector<float> a(big * gSize), b(big * gSize);
  for (size_t i = 0; i < big; i++) a[i] = gRank + 1 + i % 3;
  NCCLOK(ncclAllReduce(a.data(), a.data(), big, ncclFloat32, ncclSum, comm, nullptr));
  for (size_t i = 0; i < big; i += 997) CHECK(a[i] == Expect(ncclFloat32, ncclSum, i, gSize), "big allreduce %zu", i);
  for (size_t i = 0; i < big; i++) b[gRank * big + i] = gRank * 10.0f + i % 7;
  NCCLOK(ncclAllGather(b.data() + gRank * big, b.data(), big, ncclFloat32, comm, nullptr));
  for (int r = 0; r < gSize; r++)
    for (size_t i = 0; i < big; i += 991) CHECK(b[r * big + i] == r * 10.0f + i % 7, "allgather r%d %zu", r, i);
  // Broadcast (out of place) and Bcast (in place, through ncclBroadcast).
  std::vector<int64_t> c(100000, gRank), d(100000, -1);
  NCCLOK(ncclBroadcast(c.data(), d.data(), c.size(), ncclInt64, 1, comm, nullptr));
  CHECK(d[0] == 1 && d.back() == 1, "broadcast");
  for (auto& x : c) x = gRank * 3;
  NCCLOK(ncclBcast(c.data(), c.size(), ncclInt64, 3 % gSize, comm, nullptr));
  CHECK(c[5] == (3 % gSize) * 3, "bcast got %lld", (long long)c[5]);
  // PreMulSum: each rank scales its contribution by its own scalar.
  float scalar = gRank + 1.0f;
  ncclRedOp_t pm;
  NCCLOK(ncclRedOpCreatePreMulSum(&pm, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  std::vector<float> e(64, 2.0f), f(64);
  NCCLOK(ncclAllReduce(e.data(), f.data(), e.size(), ncclFloat32, pm, comm, nullptr));
  CHECK(f[7] == 2.0f * gSize * (gSize + 1) / 2, "premulsum got %g", f[7]);
  NCCLOK(ncclRedOpDestroy(pm, comm));
  // Ring of send/recv inside a group (large: several mailbox rounds both ways).
  std::vector<int32_t> s(300000, gRank), r(300000, -1);
  NCCLOK(ncclGroupStart());
  NCCLOK(ncclSend(s.data(), s.size(), ncclInt32, (gRank + 1) % gSize, comm, nullptr));
  NCCLOK(ncclRecv(r.data(), r.size(), ncclInt32, (gRank + gSize - 1) % gSize, comm, nullptr));
  NCCLOK(ncclGroupEnd());
  CHECK(r[0] == (gRank + gSize - 1) % gSize && r.back() == r[0], "sendrecv got %d", r[0]);
}

static void ModeGroup(ncclComm_t comm) {
  std::vector<float> a(1000, gRank + 1), b(1500, gRank + 2), c(3000, 1), ag(50 * gSize);
  std::vector<float> ra(1000), rb(1500), rc(3000);
  std::vector<float> agIn(50, (float)gRank);
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  NCCLOK(ncclGroupStart());
  NCCLOK(ncclAllReduce(a.data(), ra.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  NCCLOK(ncclGroupSimulateEnd(&sim));
  CHECK(sim.estimatedTime > 0, "simulate estimatedTime %g", sim.estimatedTime);
  CHECK(ra[0] == 0, "simulated group must not execute");
  NCCLOK(ncclGroupStart());
  NCCLOK(ncclGroupStart());  // nested: only the outermost end launches
  NCCLOK(ncclAllReduce(a.data(), ra.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  NCCLOK(ncclAllReduce(b.data(), rb.data(), b.size(), ncclFloat32, ncclSum, comm, nullptr));
  NCCLOK(ncclGroupEnd());
  CHECK(ra[0] == 0, "inner group end must not execute");
  NCCLOK(ncclAllReduce(c.data(), rc.data(), c.size(), ncclFloat32, ncclMax, comm, nullptr));
  NCCLOK(ncclAllGather(agIn.data(), ag.data(), agIn.size(), ncclFloat32, comm, nullptr));
  NCCLOK(ncclGroupEnd());
  double n = gSize;
  CHECK(ra[999] == n * (n + 1) / 2, "group allreduce a %g", ra[999]);
  CHECK(rb[0] == n * (n + 3) / 2, "group allreduce b %g", rb[0]);
  CHECK(rc[5] == 1, "group allreduce max");
  for (int r = 0; r < gSize; r++) CHECK(ag[r * 50 + 3] == r, "group allgather");
}

static void ModeSplit(ncclComm_t comm) {
  ncclComm_t sub;
  NCCLOK(ncclCommSplit(comm, gRank % 2, -gRank, &sub, nullptr));
  int n, me;
  NCCLOK(ncclCommCount(sub, &n));
  NCCLOK(ncclCommUserRank(sub, &me));
  int expectN = (gSize + 1 - gRank % 2) / 2;
  CHECK(n == expectN, "split count %d", n);
  CHECK(me == (expectN - 1 - gRank / 2), "split rank %d (key reverses order)", me);
  std::vector<int32_t> v(100, gRank), w(100);
  NCCLOK(ncclAllReduce(v.data(), w.data(), v.size(), ncclInt32, ncclSum, sub, nullptr));
  int want = 0;
  for (int r = gRank % 2; r < gSize; r += 2) want += r;
  CHECK(w[0] == want, "split allreduce %d want %d", w[0], want);
  ncclComm_t sub2;
  NCCLOK(ncclCommSplit(comm, gRank == 0 ? NCCL_SPLIT_NOCOLOR : 7, 0, &sub2, nullptr));
  CHECK((gRank == 0) == (sub2 == nullptr), "NOCOLOR gives NULL");
  if (sub2) {
    NCCLOK(ncclAllReduce(v.data(), w.data(), v.size(), ncclInt32, ncclSum, sub2, nullptr));
    CHECK(w[0] == gSize * (gSize - 1) / 2, "split2 allreduce");
    NCCLOK(ncclCommDestroy(sub2));
  }
  NCCLOK(ncclCommDestroy(sub));
}

static void ModeMoveData(ncclComm_t comm) {
  std::vector<float> a(4096, 1), b(4096);
  long long m0 = simncclMovedCalls();
  for (int i = 0; i < 5; i++) NCCLOK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  CHECK(simncclMovedCalls() - m0 == 1, "moved %lld calls, want 1", simncclMovedCalls() - m0);
  CHECK(b[0] == gSize, "first call moved data");
  std::fill(a.begin(), a.end(), 2.0f);
  NCCLOK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  CHECK(b[0] == gSize, "repeat call must not move data");
  simncclSetMoveData(1);
  NCCLOK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  CHECK(b[0] == 2 * gSize, "simncclSetMoveData(1) moves the next call");
  NCCLOK(ncclAllReduce(a.data(), b.data(), 100, ncclFloat32, ncclSum, comm, nullptr));  // new count: moves
  CHECK(simncclMovedCalls() - m0 == 3, "moved %lld calls, want 3", simncclMovedCalls() - m0);
}

static void ModeVtime(ncclComm_t comm) {
  std::vector<float> a(4 << 20), b(4 << 20);  // 16 MiB
  double t0 = simncclVirtualTimeUs();
  for (int i = 0; i < 20; i++) NCCLOK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  double t1 = simncclVirtualTimeUs(), lo, hi;
  MPI_Allreduce(&t1, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&t1, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lo == hi, "ranks disagree on virtual time %g vs %g", lo, hi);
  double per = (t1 - t0) / 20;
  CHECK(per > 30 && per < 1000, "16 MiB allreduce took %g us per call", per);
  if (gRank == 0) std::printf("vtime: %.2f us per 16 MiB allreduce\n", per);
  CHECK(simncclMismatchCount() == 0, "mismatches");
}

// SIMNCCL_AFTER_OTHER (the test sets `*=AFTER_OTHER_WANT`): a 16 MiB all-reduce right after a 4-byte one (another
// workload) takes that factor times as long as one right after itself; the small calls are timed apart.
static void ModeAfterOther(ncclComm_t comm) {
  const char* want_s = std::getenv("AFTER_OTHER_WANT");
  CHECK(want_s != nullptr, "AFTER_OTHER_WANT unset");
  const double want = std::atof(want_s);
  std::vector<float> a(4 << 20), b(4 << 20), x(1), y(1);
  std::vector<double> own, other;
  NCCLOK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  for (int i = 0; i < 31; i++) {
    const bool after_other = i % 2 == 1;
    if (after_other) NCCLOK(ncclAllReduce(x.data(), y.data(), 1, ncclFloat32, ncclSum, comm, nullptr));
    const double t0 = simncclVirtualTimeUs();
    NCCLOK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
    (after_other ? other : own).push_back(simncclVirtualTimeUs() - t0);
  }
  std::sort(own.begin(), own.end());
  std::sort(other.begin(), other.end());
  const double ratio = other[other.size() / 2] / own[own.size() / 2];
  CHECK(std::fabs(ratio - want) < 0.1 * want, "after another workload / after itself %.3f, want %.3f", ratio, want);
  if (gRank == 0) std::printf("afterother: %.3f (want %.3f)\n", ratio, want);
  CHECK(simncclMismatchCount() == 0, "mismatches");
}

// The test tuner's statistics (test_tuner.cc), from the library simnccl loaded as NCCL_TUNER_PLUGIN; null if none.
static const SimTunerStats* TunerStats() {
  const char* plug = std::getenv("NCCL_TUNER_PLUGIN");
  void* lib = dlopen(plug, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = dlopen((std::string("libnccl-tuner-") + plug + ".so").c_str(), RTLD_NOW | RTLD_NOLOAD);
  CHECK(lib != nullptr, "plugin %s not loaded by simnccl", plug);
  return lib ? reinterpret_cast<SimTunerStatsFn>(dlsym(lib, "simtunerStats"))() : nullptr;
}

static void ModePlugin(ncclComm_t comm) {
  const SimTunerStats* stats = TunerStats();
  if (!stats) return;
  const char* ver = std::getenv("SIMNCCL_VERSION");
  bool v6 = ver && std::atoi(ver) >= 23000;
  CHECK(stats->inits == 1, "init calls %ld", stats->inits);
  std::vector<float> a(1000, 1), b(1500, 1), c(3000, 1), ra(1000), rb(1500), rc(3000), g(10 * gSize);
  NCCLOK(ncclAllReduce(a.data(), ra.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  CHECK(stats->collInfos == 1 && stats->lastNumPipeOps == 1 && stats->lastNBytes == 4000, "ungrouped call");
  CHECK(stats->lastValidMask == 0x3f, "allreduce valid mask 0x%lx (Tree,Ring x LL,LL128,Simple)", stats->lastValidMask);
  // 4000 bytes are below one channel's minimum traffic: the task runs on one channel, one getChunkSize call.
  CHECK(stats->chunkCalls == (v6 ? 1 : 0), "getChunkSize calls %ld (one channel)", stats->chunkCalls);
  if (v6) CHECK(stats->lastChunkNBytes == 4000, "slice bytes %lu", stats->lastChunkNBytes);
  // 256 KiB spread over both channels: first and last channel, 128 KiB each, a call for each.
  std::vector<float> quarter(1 << 16, 1), rquarter(1 << 16);
  long chunkBefore = stats->chunkCalls;
  NCCLOK(ncclAllReduce(quarter.data(), rquarter.data(), quarter.size(), ncclFloat32, ncclSum, comm, nullptr));
  CHECK(stats->chunkCalls - chunkBefore == (v6 ? 2 : 0), "getChunkSize calls %ld (two channels)",
        stats->chunkCalls - chunkBefore);
  if (v6) CHECK(stats->lastChunkNBytes == 131072, "slice bytes %lu", stats->lastChunkNBytes);
  NCCLOK(ncclAllGather(a.data(), g.data(), 10, ncclFloat32, comm, nullptr));
  CHECK(stats->lastValidMask == 0x38 && stats->lastNBytes == 40ul * gSize && stats->lastFunc == 2,
        "allgather mask 0x%lx nBytes %lu", stats->lastValidMask, stats->lastNBytes);
  // Group of 3 allreduces within 4x: one merged bin, summed bytes, numPipeOps = ceil(3 tasks / 2 channels).
  long before = stats->collInfos;
  NCCLOK(ncclGroupStart());
  NCCLOK(ncclAllReduce(a.data(), ra.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  NCCLOK(ncclAllReduce(b.data(), rb.data(), b.size(), ncclFloat32, ncclSum, comm, nullptr));
  NCCLOK(ncclAllReduce(c.data(), rc.data(), c.size(), ncclFloat32, ncclSum, comm, nullptr));
  CHECK(stats->collInfos == before, "tuner must not be called before ncclGroupEnd");
  NCCLOK(ncclGroupEnd());
  CHECK(stats->collInfos == before + 1, "merged group: %ld getCollInfo calls", stats->collInfos - before);
  CHECK(stats->lastNBytes == 22000 && stats->lastNumPipeOps == 2, "merged bin nBytes %lu numPipeOps %ld",
        stats->lastNBytes, stats->lastNumPipeOps);
  CHECK(rc[0] == gSize && ra[0] == gSize, "group data");
  // Sizes more than 4x apart: two bins.
  std::vector<float> big(20000, 1), rbig(20000);
  before = stats->collInfos;
  NCCLOK(ncclGroupStart());
  NCCLOK(ncclAllReduce(a.data(), ra.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  NCCLOK(ncclAllReduce(big.data(), rbig.data(), big.size(), ncclFloat32, ncclSum, comm, nullptr));
  NCCLOK(ncclGroupEnd());
  CHECK(stats->collInfos == before + 2, "two bins: %ld calls", stats->collInfos - before);
  // Broadcasts from two roots: one AllGather on NCCL >= 2.29.
  before = stats->collInfos;
  NCCLOK(ncclGroupStart());
  NCCLOK(ncclBroadcast(a.data(), ra.data(), 100, ncclFloat32, 0, comm, nullptr));
  NCCLOK(ncclBroadcast(b.data(), rb.data(), 100, ncclFloat32, 1, comm, nullptr));
  NCCLOK(ncclGroupEnd());
  if (v6) CHECK(stats->collInfos == before + 1 && stats->lastFunc == 2, "bcast group as allgather");
  CHECK(simncclMismatchCount() == 0, "mismatches");
}

// The order in which a group over several communicators reaches the tuner: from NCCL 2.26 by ascending commHash
// (the commId the tuner's init gets), whatever the order of the calls; before, the order of the communicators'
// first calls. The world and six splits of all ranks (split count and color give each its own hash), one
// all-reduce on each in a group, the calls in creation order and then reversed: no one order of the hashes
// matches both call orders, so a simulation that followed the calls fails one of the two groups.
static void ModeCommOrder(ncclComm_t world) {
  const SimTunerStats* stats = TunerStats();
  if (!stats) return;
  const char* ver = std::getenv("SIMNCCL_VERSION");
  const bool byHash = !ver || std::atoi(ver) >= 22600;
  constexpr int kSplits = 6;
  std::vector<ncclComm_t> comms{world};
  for (int i = 0; i < kSplits; i++) {
    ncclComm_t c;
    NCCLOK(ncclCommSplit(world, i, gRank, &c, nullptr));
    comms.push_back(c);
  }
  const int n = static_cast<int>(comms.size());
  CHECK(stats->inits == n, "init calls %ld, want %d", stats->inits, n);
  if (stats->inits != n) return;
  std::vector<unsigned long long> hashes(stats->initComms, stats->initComms + n);  // comms[i]'s commId
  std::vector<float> in(1024, 1), out(1024 * n);
  for (bool reversed : {false, true}) {
    std::vector<int> calls(n);  // the order of the calls in the group
    for (int i = 0; i < n; i++) calls[i] = reversed ? n - 1 - i : i;
    const long before = stats->collInfos;
    NCCLOK(ncclGroupStart());
    for (int i : calls)
      NCCLOK(ncclAllReduce(in.data(), out.data() + 1024 * i, 64 * (i + 1), ncclFloat32, ncclSum, comms[i], nullptr));
    NCCLOK(ncclGroupEnd());
    CHECK(stats->collInfos - before == n, "%ld getCollInfo calls for %d communicators", stats->collInfos - before, n);
    if (stats->collInfos - before != n) return;
    std::vector<unsigned long long> want;
    for (int i : calls) want.push_back(hashes[i]);
    if (byHash) std::sort(want.begin(), want.end());
    for (int k = 0; k < n; k++) {
      const unsigned long long got = stats->callComms[(before + k) % SimTunerStats::kHistory];
      CHECK(got == want[k], "%s group, tuner call %d: communicator 0x%llx, want 0x%llx (%s)",
            reversed ? "reversed" : "forward", k, got, want[k], byHash ? "ascending commId" : "call order");
    }
    for (int i = 0; i < n; i++)
      CHECK(out[1024 * i] == gSize && out[1024 * i + 64 * (i + 1) - 1] == gSize, "communicator %d's data", i);
  }
  for (int i = 1; i < n; i++) NCCLOK(ncclCommDestroy(comms[i]));
  CHECK(simncclMismatchCount() == 0, "mismatches");
}

static void ModeTable(ncclComm_t comm) {
  std::vector<float> a(1 << 20), b(1 << 20);  // 4 MiB: table default 42.70 us
  double t0 = simncclVirtualTimeUs();
  for (int i = 0; i < 20; i++) NCCLOK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  double per = (simncclVirtualTimeUs() - t0) / 20;
  CHECK(per > 42.70 * 0.85 && per < 42.70 * 1.3, "table default 4 MiB allreduce %g us", per);
}

static void ModeMismatch(ncclComm_t comm) {
  // 1 MiB: enough traffic that 3 and 4 requested channels really run on 3 and 4 (a small message would run on one
  // channel either way, and the difference would not exist).
  std::vector<float> a(1 << 18, 1), b(1 << 18);
  for (int i = 0; i < 10; i++) NCCLOK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  std::printf("rank %d: mismatch run finished without being stopped\n", gRank);
}

static void ModeHang(ncclComm_t comm) {
  std::vector<float> a(1000, 1), b(1000);
  if (gRank != gSize - 1) NCCLOK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
}

// A stalled process is not a hang: rank 0 waits in an all-reduce for its peers, is stopped (SIGSTOP, as a paused
// or starved machine would stop it) for longer than the hang timeout (SIMNCCL_TIMEOUT_S, 3 s in the test), then
// continued, and the peers join 0.3 s later. It ran about 0.8 s of its wait, so the all-reduce must complete without
// the HANG message (the peers do not wait: they enter after the stall, together).
static void ModeStall(ncclComm_t comm) {
  constexpr int kStoppedS = 6;
  const char* timeout = std::getenv("SIMNCCL_TIMEOUT_S");
  CHECK(timeout && std::atof(timeout) < kStoppedS, "SIMNCCL_TIMEOUT_S must be below %d s", kStoppedS);
  int pid0 = gRank == 0 ? static_cast<int>(getpid()) : 0;
  MPI_Bcast(&pid0, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Comm peers;
  MPI_Comm_split(MPI_COMM_WORLD, gRank == 0 ? 0 : 1, gRank, &peers);
  std::vector<float> a(1000, 1), b(1000);
  if (gRank == 1) {
    usleep(500000);  // rank 0 is in the all-reduce's wait by now
    CHECK(kill(pid0, SIGSTOP) == 0, "SIGSTOP rank 0");
    sleep(kStoppedS);
    CHECK(kill(pid0, SIGCONT) == 0, "SIGCONT rank 0");
    usleep(300000);  // rank 0 checks its wait time (every ~32 ms) before the peers let it through
  }
  if (gRank != 0) MPI_Barrier(peers);
  NCCLOK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  CHECK(b[0] == gSize && b[999] == gSize, "all-reduce result %g", b[0]);
  MPI_Comm_free(&peers);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &gRank);
  MPI_Comm_size(MPI_COMM_WORLD, &gSize);
  std::string mode = argc > 1 ? argv[1] : "data";
  int version = 0;
  NCCLOK(ncclGetVersion(&version));
  ncclComm_t comm = InitWorld();
  if (mode == "data")
    ModeData(comm);
  else if (mode == "group")
    ModeGroup(comm);
  else if (mode == "split")
    ModeSplit(comm);
  else if (mode == "movedata")
    ModeMoveData(comm);
  else if (mode == "afterother")
    ModeAfterOther(comm);
  else if (mode == "vtime")
    ModeVtime(comm);
  else if (mode == "plugin")
    ModePlugin(comm);
  else if (mode == "commorder")
    ModeCommOrder(comm);
  else if (mode == "table")
    ModeTable(comm);
  else if (mode == "mismatch")
    ModeMismatch(comm);
  else if (mode == "hang")
    ModeHang(comm);
  else if (mode == "stall")
    ModeStall(comm);
  else
    CHECK(false, "unknown mode %s", mode.c_str());
  MPI_Barrier(MPI_COMM_WORLD);
  NCCLOK(ncclCommDestroy(comm));
  int total = 0;
  MPI_Allreduce(&gFailures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (gRank == 0)
    std::printf("simnccl %s (version %d): %s (%d failures)\n", mode.c_str(), version, total ? "FAILED" : "passed",
                total);
  MPI_Finalize();
  return total ? 1 : 0;
}
