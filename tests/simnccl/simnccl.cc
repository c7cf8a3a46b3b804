// simnccl: a stand-in libnccl.so.2 for N processes on one host (DESIGN.md §8). Ranks are processes sharing a POSIX
// shared-memory segment per communicator; collectives run synchronously on the host with real data movement
// (through bounded staging), tuner and profiler plugins are loaded and called as NCCL 2.28/2.30 does
// (profiler_host.hpp), collectives run on the channels NCCL's planner gives them (channels.hpp), time is virtual
// (model.hpp) and every collective's configuration is compared across ranks.
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <nccl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "channels.hpp"
#include "model.hpp"
#include "noise_model.hpp"
#include "plugin_support.hpp"
#include "profiler_host.hpp"
#include "tuner_abi.h"

namespace {

using simnccl::CallPlugin;

constexpr int kMaxRanks = 64;
constexpr uint32_t kMagic = 0x51ec1a55;

// ------------------------------------------------------------------------------------------------ settings
struct Settings {
  int version = 22809;
  double timeoutS = 120;
  enum { kFirst, kAlways, kNever, kRequested } move = kFirst;
  int channels = 24;
  bool channelsSet = false;  // SIMNCCL_CHANNELS given (else a recorded table's channels, or 24)
  double noise = 0.04;
  unsigned long long seed = 1;
  size_t stageBytes = 2 << 20;
  std::string trace, modelFile, noiseModelFile;
  // Drift: from call driftAfter of each communicator on, durations (of algorithm driftAlgo only, or of
  // every algorithm when -1) are multiplied by driftFactor: a landscape that jumps mid-run.
  uint64_t driftAfter = 0;
  double driftFactor = 1;
  int driftAlgo = -1;
  double interference = 0;  // SIMNCCL_INTERFERENCE: the compute load's share of SM time (model.hpp)
  // SIMNCCL_SWITCH=FACTOR: a collective that follows one of the same workload (collective, type, op, count, root)
  // on its communicator but runs another config (algorithm, protocol, channels) takes FACTOR times as long, as a
  // change of config costs the next call on real NCCL (one-GPU testbed, `ccltune-bench --landscape-switch 1`: a
  // geomean 1.035 over 88 configs, up to 1.2). 1: no switch cost.
  double switchFactor = 1;
  // SIMNCCL_AFTER_OTHER=ALGO/PROTO=FACTOR,...: a collective right after one of another workload on its communicator
  // (or its first) takes its pair's FACTOR times as long (noise_model.hpp: AfterOther). On real NCCL (one-GPU
  // testbed, all-reduce 64-256 KiB, docs/results/search-testbed.md, fortieth session) every call of a search with a
  // sync op after each unit read 3-16% over the same search's calls with one every 8 units, by pair: tree/simple
  // 1.13-1.16, ring/simple 1.03-1.09, ring/ll 1.03-1.05. Unset: none.
  simnccl::AfterOther afterOther;
  // SIMNCCL_RANKS_PER_NODE: ranks per node, as the tuner's init is told (nNodes, the NVLink domains); 0 = all
  // ranks on one node. 1 is the one-GPU testbed (scripts/gpu-testbed.sh): one rank per NCCL_HOSTID.
  int ranksPerNode = 0;
  // SIMNCCL_HOST_AHEAD=1: the simulated GPU finishes the host's work only when the host waits for it (simncclHostSync,
  // or a wait on an event), as a GPU does whose host launches a training step's collectives long before they run.
  // The simulated device reads it through simncclHostSyncs. 0: the work is done when the call returns.
  bool hostAhead = false;

  static const char* Get(const char* n) { return std::getenv(n); }
  Settings() {
    if (auto v = Get("SIMNCCL_VERSION")) version = std::atoi(v);
    if (auto v = Get("SIMNCCL_TIMEOUT_S")) timeoutS = std::atof(v);
    if (auto v = Get("SIMNCCL_MOVE_DATA")) {
      std::string s = v;
      if (s == "first")
        move = kFirst;
      else if (s == "always")
        move = kAlways;
      else if (s == "never")
        move = kNever;
      else if (s == "requested")
        move = kRequested;
      else
        std::fprintf(stderr, "simnccl: WARN SIMNCCL_MOVE_DATA=%s invalid (first|always|never|requested); using first\n",
                     v);
    }
    if (auto v = Get("SIMNCCL_CHANNELS"))
      channels = std::clamp(std::atoi(v), 1, simnccl::kMaxChannels), channelsSet = true;
    if (auto v = Get("SIMNCCL_RANKS_PER_NODE")) ranksPerNode = std::max(0, std::atoi(v));
    if (auto v = Get("SIMNCCL_HOST_AHEAD")) hostAhead = std::atoi(v) != 0;
    if (auto v = Get("SIMNCCL_NOISE")) {
      noise = std::atof(v);
      if (noise < 0.03) {
        std::fprintf(stderr, "simnccl: WARN SIMNCCL_NOISE=%s below the 0.03 minimum; using 0.03\n", v);
        noise = 0.03;
      }
    }
    if (auto v = Get("SIMNCCL_SEED")) seed = std::strtoull(v, nullptr, 10);
    if (auto v = Get("SIMNCCL_STAGE_BYTES")) stageBytes = std::max<size_t>(4096, std::strtoull(v, nullptr, 10));
    stageBytes = (stageBytes + 4095) / 4096 * 4096;
    if (auto v = Get("SIMNCCL_TRACE")) trace = v;
    if (auto v = Get("SIMNCCL_MODEL_FILE")) modelFile = v;
    if (auto v = Get("SIMNCCL_NOISE_MODEL")) noiseModelFile = v;
    if (auto v = Get("SIMNCCL_DRIFT")) {
      unsigned long long after = 0;
      double factor = 0;
      int algo = -1;
      int n = std::sscanf(v, "%llu,%lf,%d", &after, &factor, &algo);
      if (n >= 2 && factor > 0 && algo >= -1 && algo < simnccl::kNumAlgos) {
        driftAfter = after, driftFactor = factor, driftAlgo = n == 3 ? algo : -1;
      } else {
        std::fprintf(stderr, "simnccl: WARN SIMNCCL_DRIFT=%s invalid (CALL,FACTOR[,ALGO]); no drift\n", v);
      }
    }
    if (auto v = Get("SIMNCCL_SWITCH")) {
      char* end = nullptr;
      const double f = std::strtod(v, &end);
      if (end != v && *end == '\0' && f >= 1 && f <= 10) {
        switchFactor = f;
      } else {
        std::fprintf(stderr, "simnccl: WARN SIMNCCL_SWITCH=%s invalid (a factor in [1, 10]); no switch cost\n", v);
      }
    }
    if (auto v = Get("SIMNCCL_AFTER_OTHER")) {
      std::string err;
      if (!simnccl::ParseAfterOther(v, &afterOther, &err))
        std::fprintf(stderr, "simnccl: WARN SIMNCCL_AFTER_OTHER=%s invalid (%s); no cost after another workload\n", v,
                     err.c_str());
    }
    if (auto v = Get("SIMNCCL_INTERFERENCE")) {
      if (!simnccl::ParseInterferenceLevel(v, &interference)) {
        std::fprintf(stderr, "simnccl: WARN SIMNCCL_INTERFERENCE=%s invalid (a level in [0, 1)); no interference\n", v);
      }
    }
  }
};

// ------------------------------------------------------------------------------------------------ shared segment
struct Record {
  uint64_t seq, count;
  int32_t coll, dtype, op, root, algo, proto, nc, nChunks;
  uint64_t chunks[simnccl::kMaxChannels];
  bool operator==(const Record& o) const {
    return seq == o.seq && count == o.count && coll == o.coll && dtype == o.dtype && op == o.op && root == o.root &&
           algo == o.algo && proto == o.proto && nc == o.nc && nChunks == o.nChunks &&
           std::equal(chunks, chunks + nChunks, o.chunks);
  }
};
struct alignas(64) Slot {
  Record rec;
  double clock;
  int32_t move, color, key;
  int64_t pid;
  uint64_t ordinal;  // how many communicators this process attached before this one
};
struct alignas(64) Mbox {
  std::atomic<uint64_t> sent, acked;
  uint64_t bytes;
  double clock;
};
struct Header {
  std::atomic<uint32_t> ready;
  uint32_t magic;
  int32_t nranks;
  uint64_t stageBytes, mboxBytes;
  std::atomic<int32_t> registered, released, abortCode;
  alignas(64) std::atomic<uint64_t> barrier;
  // Doorbell: bumped after every change a rank may wait for; waiters sleep on it (futex) once a short
  // spin has not seen the change, so N ranks on fewer cores hand the CPU to the rank that must move.
  alignas(64) std::atomic<uint32_t> bell;
  std::atomic<uint32_t> sleepers;
  Slot slots[kMaxRanks];
};
size_t MboxOffset() { return (sizeof(Header) + 4095) / 4096 * 4096; }
size_t StageOffset(int n) { return (MboxOffset() + sizeof(Mbox) * n * n + 4095) / 4096 * 4096; }
size_t MboxDataOffset(int n, size_t stage) { return StageOffset(n) + stage * n; }
size_t SegmentBytes(int n, size_t stage, size_t mbox) { return MboxDataOffset(n, stage) + mbox * n * n; }

// ------------------------------------------------------------------------------------------------ runtime
struct TunerPlugin {
  int version = 0;  // 4, 5 or 6
  void* lib = nullptr;
  const char* name = "";
  ncclTuner_v4_t* v4 = nullptr;
  ncclTuner_v5_t* v5 = nullptr;
  ncclTuner_v6_t* v6 = nullptr;
};

// The one per-process runtime object.
// NCCL_ALGO and NCCL_PROTO as NCCL reads them (src/graph/tuning.cc, parseList): "[^]name[,name...]" for every
// collective, or "coll:[^]list;coll:[^]list" per collective, names in any case. What they leave out gets the cost
// -1 in the table the tuner plugin sees, and NCCL's own pick is among the rest. A value that does not parse is
// an error in NCCL (the communicator fails); here it is fatal.
struct EnvLimits {
  bool algo[simnccl::kNumColls][simnccl::kNumAlgos];
  bool proto[simnccl::kNumColls][simnccl::kNumProtos];
  bool Allows(int coll, int a, int p) const { return algo[coll][a] && proto[coll][p]; }
};

int NameIndex(const std::string& name, const char* const* names, int n) {
  for (int i = 0; i < n; i++)
    if (strcasecmp(name.c_str(), names[i]) == 0) return i;
  return -1;
}

template <int N>
void ParseNcclList(const char* var, const char* const* names, bool (&out)[simnccl::kNumColls][N]) {
  static const char* const kFuncs[simnccl::kNumColls] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                                         "AllReduce"};
  for (auto& row : out)
    for (bool& b : row) b = true;
  const char* value = std::getenv(var);
  if (value == nullptr) return;
  auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "simnccl: %s=%s: %s\n", var, value, what.c_str());
    std::exit(2);
  };
  std::string all(value);
  size_t start = 0;
  while (start <= all.size()) {
    const size_t end = std::min(all.find(';', start), all.size());
    std::string seg = all.substr(start, end - start);
    start = end + 1;
    if (seg.empty()) continue;
    int coll = -1;
    if (const size_t colon = seg.find(':'); colon != std::string::npos) {
      coll = NameIndex(seg.substr(0, colon), kFuncs, simnccl::kNumColls);
      if (coll < 0) fail("unknown collective " + seg.substr(0, colon));
      seg = seg.substr(colon + 1);
    }
    const bool exclude = !seg.empty() && seg[0] == '^';
    if (exclude) seg.erase(0, 1);
    bool listed[N] = {};
    size_t at = 0;
    while (at <= seg.size()) {
      const size_t comma = std::min(seg.find(',', at), seg.size());
      const std::string name = seg.substr(at, comma - at);
      at = comma + 1;
      if (name.empty()) continue;
      const int i = NameIndex(name, names, N);
      if (i < 0) fail("unknown name " + name);
      listed[i] = true;
    }
    for (int c = 0; c < simnccl::kNumColls; c++) {
      if (coll >= 0 && c != coll) continue;
      for (int i = 0; i < N; i++) out[c][i] = exclude ? !listed[i] : listed[i];
    }
  }
}

EnvLimits ReadEnvLimits() {
  static const char* const kAlgos[simnccl::kNumAlgos] = {"Tree",     "Ring", "CollNetDirect", "CollNetChain", "NVLS",
                                                         "NVLSTree", "PAT"};
  static const char* const kProtos[simnccl::kNumProtos] = {"LL", "LL128", "Simple"};
  EnvLimits l;
  ParseNcclList("NCCL_ALGO", kAlgos, l.algo);
  ParseNcclList("NCCL_PROTO", kProtos, l.proto);
  return l;
}

struct Runtime {
  Settings env;
  EnvLimits limits = ReadEnvLimits();
  std::unique_ptr<simnccl::Model> model;
  simnccl::RecordedMachine machine;              // the model's recorded machine (all defaults for the built-in one)
  std::unique_ptr<simnccl::FittedNoise> fitted;  // SIMNCCL_NOISE_MODEL's noise, else the lognormal SIMNCCL_NOISE
  std::mutex mu;
  bool tunerLoaded = false;
  TunerPlugin tuner;
  std::unique_ptr<simnccl::ProfilerHost> profiler;
  FILE* trace = nullptr;
  std::atomic<long long> movedCalls{0}, mismatches{0};
  double clockUs = 0;
  // The application synchronized with the device (simncclHostSync) and launched nothing since: a timed call's
  // start now finds the stream idle (simncclStreamIdle), as the first collective of a training step does on a GPU.
  bool hostSynced = false;
  long long hostSyncs = 0;     // simncclHostSync calls so far
  double lastModelUs = 0;      // the model's time (before noise) of the last collective this process ran
  simnccl::Config lastConfig;  // what the last collective ran (algorithm, protocol, channels run)
  // Fitted noise: this rank's lag after its last collective, added to the clock at the first clock read after it or
  // at the next launch, whichever comes first (noise_model.hpp).
  double pendingLagUs = 0;
  // Fitted noise's slow periods belong to the process, not to a communicator (on a real machine a slow
  // stretch - clocks, the proxy thread, a neighbour on the GPU - hits every communicator the rank runs): their
  // blocks count this process's collectives on every communicator, drawn with kProcessNoiseKey.
  uint64_t collectives = 0;
  uint64_t noiseBlock = UINT64_MAX;  // the block of collectives noiseFactors belong to
  simnccl::FittedNoise::BlockFactors noiseFactors;
  void ApplyPendingLag() { clockUs += pendingLagUs, pendingLagUs = 0; }
  std::vector<std::pair<ncclDataType_t, double>> preMul;  // index = op - ncclNumOps
  std::vector<const void*> preMulDevPtr;

  Runtime() {
    if (!env.modelFile.empty()) {
      std::string err;
      model = simnccl::LoadTableModel(env.modelFile, &err);
      if (!model) {
        std::fprintf(stderr, "simnccl: SIMNCCL_MODEL_FILE: %s\n", err.c_str());
        std::exit(2);
      }
    } else {
      model = simnccl::MakeBuiltinModel();
    }
    model = simnccl::WithInterference(std::move(model), env.interference);
    machine = model->Machine();
    if (!env.channelsSet && machine.channels > 0) env.channels = machine.channels;  // the recorded communicator's
    if (!env.noiseModelFile.empty()) {
      simnccl::NoiseParams p;
      std::string err;
      if (!simnccl::LoadNoiseParams(env.noiseModelFile, &p, &err)) {
        std::fprintf(stderr, "simnccl: SIMNCCL_NOISE_MODEL: %s\n", err.c_str());
        std::exit(2);
      }
      fitted = std::make_unique<simnccl::FittedNoise>(std::move(p));
    }
    if (!env.trace.empty()) trace = std::fopen(env.trace.c_str(), "a");
    simnccl::ProfilerHost::TraceFn traceFn;
    if (trace) traceFn = [this](const std::string& line) { Trace("%s", line.c_str()); };
    profiler = std::make_unique<simnccl::ProfilerHost>(env.version, std::move(traceFn));
  }

  void LoadTunerOnce() {
    std::lock_guard<std::mutex> lock(mu);
    if (tunerLoaded) return;
    tunerLoaded = true;
    const char* name = std::getenv("NCCL_TUNER_PLUGIN");
    if (name && strcasecmp(name, "none") == 0) return;
    std::string tried;
    void* lib = simnccl::OpenPluginLib("libnccl-tuner", name, &tried);
    if (!lib) {
      if (name) std::fprintf(stderr, "simnccl: WARN NCCL_TUNER_PLUGIN: could not load %s; no tuner\n", tried.c_str());
      return;
    }
    if (env.version >= 23000) tuner.v6 = (ncclTuner_v6_t*)dlsym(lib, "ncclTunerPlugin_v6");
    if (tuner.v6) {
      tuner.version = 6, tuner.name = tuner.v6->name;
    } else if ((tuner.v5 = (ncclTuner_v5_t*)dlsym(lib, "ncclTunerPlugin_v5"))) {
      tuner.version = 5, tuner.name = tuner.v5->name;
    } else if ((tuner.v4 = (ncclTuner_v4_t*)dlsym(lib, "ncclTunerPlugin_v4"))) {
      tuner.version = 4, tuner.name = tuner.v4->name;
    } else {
      if (name) std::fprintf(stderr, "simnccl: WARN tuner plugin %s exports no supported symbol\n", name);
      dlclose(lib);
      return;
    }
    tuner.lib = lib;
    if (std::getenv("SIMNCCL_DEBUG"))
      std::fprintf(stderr, "simnccl: loaded tuner plugin %s (v%d)\n", tuner.name, tuner.version);
  }

  void Trace(const char* fmt, ...) {
    if (!trace) return;
    std::lock_guard<std::mutex> lock(mu);
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(trace, "%d %ld ", (int)getpid(), (long)syscall(SYS_gettid));
    std::vfprintf(trace, fmt, ap);
    std::fputc('\n', trace);
    std::fflush(trace);
    va_end(ap);
  }
};

Runtime& RT() {
  static Runtime* rt = new Runtime();  // never destroyed: comms may be torn down from atexit handlers
  return *rt;
}

thread_local std::string tLastError;
ncclResult_t Fail(ncclResult_t rc, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  tLastError = buf;
  std::fprintf(stderr, "simnccl: WARN %s\n", buf);
  return rc;
}

}  // namespace

// ------------------------------------------------------------------------------------------------ communicator
struct ncclComm {
  std::string name;
  Header* hdr = nullptr;
  size_t mapBytes = 0;
  int rank = 0, nranks = 0, budget = 24;
  // The channels of NCCL's topology graphs (the machine's, capped by max): NCCL's cost model reads these,
  // and a raised min (copies of channels) leaves them alone. `budget` is what the communicator runs.
  int graphBudget = 24;
  uint64_t hash = 0, barrierGen = 0, seq = 0;
  uint64_t noiseKey = 0;  // rank 0's communicator ordinal: reproducible across runs, unlike the name
  int splitCount = 0;
  void* tunerCtx = nullptr;
  std::optional<std::string> commName;  // ncclConfig_t's commName (a split without a config: its parent's)
  simnccl::ProfilerComm prof;
  std::set<uint64_t> seenKeys;
  uint64_t lastWorkload = 0;  // the workload key of the communicator's latest collective (SIMNCCL_SWITCH)
  simnccl::Config lastRan;    // and what it ran
  std::vector<uint64_t> sendCount, recvCount;  // per peer, for mailbox matching

  char* Stage(int r) const { return (char*)hdr + StageOffset(nranks) + hdr->stageBytes * r; }
  Mbox& Box(int src, int dst) const { return ((Mbox*)((char*)hdr + MboxOffset()))[src * nranks + dst]; }
  char* BoxData(int src, int dst) const {
    return (char*)hdr + MboxDataOffset(nranks, hdr->stageBytes) + hdr->mboxBytes * (src * nranks + dst);
  }
};

namespace {

// Rings the doorbell of a segment after a change others may wait for (see WaitFor).
void Ring(Header* h) {
  h->bell.fetch_add(1, std::memory_order_seq_cst);
  if (h->sleepers.load(std::memory_order_seq_cst) > 0)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&h->bell), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Waits for pred() with sched_yield, then on the segment's doorbell (futex, 2 ms at most per sleep, so a
// change on another segment is still seen soon); exits loudly on abort or timeout (never hangs silently).
// A change is always made before the bell rings, and a waiter reads the bell before its last look at
// pred(), so a wake-up cannot be lost.
// The timeout counts the time this process spent waiting, not the wall clock: a check comes every 16
// sleeps (about 32 ms), so a longer gap between two checks is time the process did not run (a stalled or
// paused machine) and counts as kMaxCheckGapS. A peer that stopped is still reported after the timeout.
void WaitFor(ncclComm* comm, uint64_t op, const std::function<bool()>& pred) {
  constexpr double kMaxCheckGapS = 1.0;
  const auto start = std::chrono::steady_clock::now();
  auto last_check = start;
  double waited = 0;  // seconds, each gap between checks clipped to kMaxCheckGapS
  Header* h = comm->hdr;
  for (long spins = 0;; spins++) {
    if (pred()) return;
    int code = h->abortCode.load(std::memory_order_acquire);
    if (code != 0) {
      std::fflush(stdout);
      std::fflush(stderr);
      if (comm->rank != 0) usleep(200000);  // let rank 0 finish its report first
      _exit(code);
    }
    if (spins < 100) {
      sched_yield();
      continue;
    }
    const uint32_t seen = h->bell.load(std::memory_order_seq_cst);
    if (pred()) return;
    h->sleepers.fetch_add(1, std::memory_order_seq_cst);
    struct timespec ts = {0, 2000000};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&h->bell), FUTEX_WAIT, seen, &ts, nullptr, 0);
    h->sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if ((spins & 15) == 0) {
      const auto now = std::chrono::steady_clock::now();
      waited += std::min(kMaxCheckGapS, std::chrono::duration<double>(now - last_check).count());
      last_check = now;
      if (waited > RT().env.timeoutS) {
        std::fprintf(stderr, "simnccl: HANG rank %d comm %s op %llu waited %.0f s (%.0f s of wall time)\n", comm->rank,
                     comm->name.c_str(), (unsigned long long)op, waited,
                     std::chrono::duration<double>(now - start).count());
        std::fflush(stderr);
        comm->hdr->abortCode.store(4);
        Ring(comm->hdr);
        _exit(4);
      }
    }
  }
}

void Barrier(ncclComm* comm, uint64_t op) {
  uint64_t target = ++comm->barrierGen * comm->nranks;
  comm->hdr->barrier.fetch_add(1, std::memory_order_acq_rel);
  Ring(comm->hdr);
  WaitFor(comm, op, [&] { return comm->hdr->barrier.load(std::memory_order_acquire) >= target; });
}

uint64_t Fnv(const void* p, size_t n, uint64_t h = 1469598103934665603ULL) {
  for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char*)p)[i]) * 1099511628211ULL;
  return h;
}

std::optional<std::string> ConfigCommName(const ncclConfig_t* config) {
  if (!config || !config->commName) return std::nullopt;  // NCCL_CONFIG_UNDEF_PTR is NULL
  return std::string(config->commName);
}

ncclResult_t Attach(ncclComm** out, const std::string& name, int nranks, int rank, const ncclConfig_t* config,
                    const std::optional<std::string>& commName) {
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks)
    return Fail(ncclInvalidArgument, "ncclCommInitRank: invalid nranks %d / rank %d (max %d ranks)", nranks, rank,
                kMaxRanks);
  Runtime& rt = RT();
  rt.LoadTunerOnce();
  size_t stage = rt.env.stageBytes;
  size_t mbox = std::max<size_t>(16384, std::min<size_t>(262144, (16u << 20) / (nranks * nranks))) / 4096 * 4096;
  size_t bytes = SegmentBytes(nranks, stage, mbox);
  std::string shmName = "/" + name;
  bool creator = true;
  int fd = shm_open(shmName.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 && errno == EEXIST) {
    creator = false;
    fd = shm_open(shmName.c_str(), O_RDWR, 0600);
  }
  if (fd < 0) return Fail(ncclSystemError, "shm_open(%s) failed: %s", shmName.c_str(), std::strerror(errno));
  if (creator) {
    if (ftruncate(fd, bytes) != 0) {
      close(fd);
      return Fail(ncclSystemError, "ftruncate(%s, %zu) failed: %s", shmName.c_str(), bytes, std::strerror(errno));
    }
  } else {
    auto t0 = std::chrono::steady_clock::now();
    struct stat st;
    while (fstat(fd, &st) == 0 && (size_t)st.st_size < bytes) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(30)) {
        close(fd);
        return Fail(ncclSystemError, "segment %s never reached its size (nranks differ between ranks?)",
                    shmName.c_str());
      }
      usleep(1000);
    }
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return Fail(ncclSystemError, "mmap(%s) failed: %s", shmName.c_str(), std::strerror(errno));
  Header* hdr = (Header*)p;
  if (creator) {
    hdr->magic = kMagic;
    hdr->nranks = nranks;
    hdr->stageBytes = stage;
    hdr->mboxBytes = mbox;
    hdr->ready.store(1, std::memory_order_release);
    Ring(hdr);
  }
  auto comm = new ncclComm();
  comm->name = name;
  comm->hdr = hdr;
  comm->mapBytes = bytes;
  comm->rank = rank;
  comm->nranks = nranks;
  comm->hash = Fnv(name.data(), name.size());
  comm->sendCount.assign(nranks, 0);
  comm->recvCount.assign(nranks, 0);
  WaitFor(comm, 0, [&] { return hdr->ready.load(std::memory_order_acquire) == 1; });
  if (hdr->magic != kMagic || hdr->nranks != nranks || hdr->stageBytes != stage) {
    munmap(p, bytes);
    delete comm;
    return Fail(ncclInvalidUsage, "communicator %s: ranks disagree on nranks or SIMNCCL_STAGE_BYTES", name.c_str());
  }
  static std::atomic<uint64_t> attached{0};
  hdr->slots[rank].pid = getpid();
  hdr->slots[rank].ordinal = attached.fetch_add(1);
  hdr->registered.fetch_add(1, std::memory_order_acq_rel);
  Ring(hdr);
  WaitFor(comm, 0, [&] { return hdr->registered.load(std::memory_order_acquire) >= nranks; });
  // Noise follows (seed, communicator, sequence): the name holds a pid and random bits, so the
  // communicator is identified by rank 0's creation order, the same in every run of a program.
  const uint64_t key_parts[2] = {hdr->slots[0].ordinal, static_cast<uint64_t>(nranks)};
  comm->noiseKey = Fnv(key_parts, sizeof(key_parts));
  if (rank == 0) shm_unlink(shmName.c_str());  // everyone has it mapped: no leak even if the run crashes later

  // Channel budget as NCCL derives it: SIMNCCL_CHANNELS stands for the machine's default, min raises, max caps.
  int budget = rt.env.channels;
  int minC = 0, maxC = 0;
  if (auto v = std::getenv("NCCL_MIN_NCHANNELS")) minC = std::atoi(v);
  if (auto v = std::getenv("NCCL_MAX_NCHANNELS")) maxC = std::atoi(v);
  if (config && config->minCTAs != NCCL_CONFIG_UNDEF_INT) minC = config->minCTAs;
  if (config && config->maxCTAs != NCCL_CONFIG_UNDEF_INT) maxC = config->maxCTAs;
  if (maxC > 0) budget = std::min(budget, maxC);
  comm->graphBudget = std::clamp(budget, 1, simnccl::kMaxChannels);
  if (minC > 0) budget = std::max(budget, std::min(minC, simnccl::kMaxChannels));
  if (maxC > 0) budget = std::min(budget, maxC);
  comm->budget = std::clamp(budget, 1, simnccl::kMaxChannels);
  comm->commName = commName;
  if (rank == 0 && nranks > 1 && rt.machine.ranks > 0 && rt.machine.ranks != nranks)
    std::fprintf(stderr,
                 "simnccl: WARN SIMNCCL_MODEL_FILE was recorded on %d ranks; this communicator has %d (its times are "
                 "used as they are)\n",
                 rt.machine.ranks, nranks);
  if (rank == 0 && nranks > 1 && rt.fitted && rt.fitted->Params().ranks != nranks)
    std::fprintf(stderr,
                 "simnccl: WARN SIMNCCL_NOISE_MODEL was fitted on %d ranks; this communicator has %d (each rank lags "
                 "as fitted, so the spread over ranks is not the recorded one)\n",
                 rt.fitted->Params().ranks, nranks);

  // As in NCCL's init: the profiler plugin's init, then the tuner's.
  rt.profiler->InitComm(&comm->prof, comm->hash, comm->commName ? comm->commName->c_str() : nullptr, nranks, rank);
  TunerPlugin& t = rt.tuner;
  ncclResult_t rc = ncclSuccess;
  // Nodes as NCCL counts them: ranks per node from SIMNCCL_RANKS_PER_NODE (every node one NVLink domain).
  const int perNode = rt.env.ranksPerNode > 0 ? std::min(rt.env.ranksPerNode, nranks) : nranks;
  const int nNodes = (nranks + perNode - 1) / perNode;
  if (t.version == 6) {
    ncclNvlDomainInfo_v5_t nvl{nNodes, perNode, perNode};
    ncclTunerConstants_v5_t consts{};
    rc = CallPlugin(t.v6->init, &comm->tunerCtx, comm->hash, nranks, nNodes, simnccl::PluginLog, &nvl, &consts);
  } else if (t.version == 5) {
    ncclNvlDomainInfo_v5_t nvl{nNodes, perNode, perNode};
    ncclTunerConstants_v5_t consts{};
    rc = CallPlugin(t.v5->init, &comm->tunerCtx, comm->hash, nranks, nNodes, simnccl::PluginLog, &nvl, &consts);
  } else if (t.version == 4) {
    rc = CallPlugin(t.v4->init, nranks, nNodes, simnccl::PluginLog, &comm->tunerCtx);
  }
  if (rc != ncclSuccess) return Fail(rc, "tuner plugin %s init failed (%d)", t.name, (int)rc);
  *out = comm;
  return ncclSuccess;
}

void Release(ncclComm* comm, bool callFinalize) {
  if (!comm) return;
  TunerPlugin& t = RT().tuner;
  if (callFinalize && comm->tunerCtx) {
    if (t.version == 6) CallPlugin(t.v6->finalize, comm->tunerCtx);
    if (t.version == 5) CallPlugin(t.v5->finalize, comm->tunerCtx);
    if (t.version == 4) CallPlugin(t.v4->destroy, comm->tunerCtx);
  }
  if (callFinalize) RT().profiler->FinalizeComm(&comm->prof);  // after the tuner's, as in NCCL's commFree
  comm->hdr->released.fetch_add(1);
  munmap(comm->hdr, comm->mapBytes);
  delete comm;
}

// ------------------------------------------------------------------------------------------------ data types
float HalfToFloat(uint16_t h) {
  uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? std::ldexp((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024.0f + m, e - 25);
  return s ? -v : v;
}
uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t s = (x >> 16) & 0x8000;
  if (std::isnan(f)) return s | 0x7e00;
  float a = std::fabs(f);
  if (a >= 65520.0f) return s | 0x7c00;
  if (a < std::ldexp(1.0f, -14)) return s | (uint16_t)std::nearbyint(a * std::ldexp(1.0f, 24));
  int e;
  float m = std::frexp(a, &e);                            // a = m * 2^e, m in [0.5,1)
  uint32_t mant = (uint32_t)std::nearbyint(m * 2048.0f);  // 11 bits incl. implicit
  if (mant == 2048) mant = 1024, e++;
  return s | (uint16_t)(((e + 14) << 10) | (mant - 1024));
}
float Bf16ToFloat(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
uint16_t FloatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return 0x7fc0;
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}
float Fp8ToFloat(uint8_t v, bool e4m3) {
  int s = v >> 7, eb = e4m3 ? 4 : 5, mb = 7 - eb, bias = e4m3 ? 7 : 15;
  int e = (v >> mb) & ((1 << eb) - 1), m = v & ((1 << mb) - 1);
  float r;
  if (e4m3 && e == 15 && m == 7)
    r = NAN;
  else if (!e4m3 && e == 31)
    r = m ? NAN : INFINITY;
  else if (e == 0)
    r = std::ldexp((float)m, 1 - bias - mb);
  else
    r = std::ldexp((float)((1 << mb) + m), e - bias - mb);
  return s ? -r : r;
}
uint8_t FloatToFp8(float f, bool e4m3) {  // nearest finite value (saturating); rare type, so a plain search
  uint8_t best = 0;
  float bestD = INFINITY;
  for (int v = 0; v < 256; v++) {
    float g = Fp8ToFloat((uint8_t)v, e4m3);
    if (!std::isfinite(g)) continue;
    float d = std::fabs(g - f);
    if (d < bestD) bestD = d, best = (uint8_t)v;
  }
  return best;
}

size_t TypeSize(ncclDataType_t t) {
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

// Loads/stores element i of a buffer of type t as a double (exact for all integer values ccltune tests use).
double Load(ncclDataType_t t, const void* p, size_t i) {
  switch (t) {
    case ncclInt8:
      return ((const int8_t*)p)[i];
    case ncclUint8:
      return ((const uint8_t*)p)[i];
    case ncclInt32:
      return ((const int32_t*)p)[i];
    case ncclUint32:
      return ((const uint32_t*)p)[i];
    case ncclInt64:
      return (double)((const int64_t*)p)[i];
    case ncclUint64:
      return (double)((const uint64_t*)p)[i];
    case ncclFloat16:
      return HalfToFloat(((const uint16_t*)p)[i]);
    case ncclBfloat16:
      return Bf16ToFloat(((const uint16_t*)p)[i]);
    case ncclFloat8e4m3:
      return Fp8ToFloat(((const uint8_t*)p)[i], true);
    case ncclFloat8e5m2:
      return Fp8ToFloat(((const uint8_t*)p)[i], false);
    case ncclFloat32:
      return ((const float*)p)[i];
    default:
      return ((const double*)p)[i];
  }
}
void Store(ncclDataType_t t, void* p, size_t i, double v) {
  switch (t) {
    case ncclInt8:
      ((int8_t*)p)[i] = (int8_t)(int64_t)v;
      break;
    case ncclUint8:
      ((uint8_t*)p)[i] = (uint8_t)(int64_t)v;
      break;
    case ncclInt32:
      ((int32_t*)p)[i] = (int32_t)(int64_t)v;
      break;
    case ncclUint32:
      ((uint32_t*)p)[i] = (uint32_t)(int64_t)v;
      break;
    case ncclInt64:
      ((int64_t*)p)[i] = (int64_t)v;
      break;
    case ncclUint64:
      ((uint64_t*)p)[i] = (uint64_t)v;
      break;
    case ncclFloat16:
      ((uint16_t*)p)[i] = FloatToHalf((float)v);
      break;
    case ncclBfloat16:
      ((uint16_t*)p)[i] = FloatToBf16((float)v);
      break;
    case ncclFloat8e4m3:
      ((uint8_t*)p)[i] = FloatToFp8((float)v, true);
      break;
    case ncclFloat8e5m2:
      ((uint8_t*)p)[i] = FloatToFp8((float)v, false);
      break;
    case ncclFloat32:
      ((float*)p)[i] = (float)v;
      break;
    default:
      ((double*)p)[i] = v;
  }
}
bool IsInt(ncclDataType_t t) { return t <= ncclUint64; }

// One step of a reduction; sum, avg and premulsum (already scaled) all add.
template <typename T>
T Combine(ncclRedOp_t op, T acc, T v) {
  switch (op) {
    case ncclProd:
      return acc * v;
    case ncclMax:
      return std::max(acc, v);
    case ncclMin:
      return std::min(acc, v);
    default:
      return acc + v;
  }
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SIMNCCL_TSAN 1
extern "C" void __tsan_read_range(void* addr, unsigned long size);   // the TSan runtime's interface
extern "C" void __tsan_write_range(void* addr, unsigned long size);  // (what its memcpy interceptor checks)
#endif
#endif

// dst[i] = sum over srcs[k][i] in float32, the common case. Under TSan the loop's own accesses are not
// instrumented: each buffer is checked once as a range, as TSan checks a memcpy. The same shadow cells are
// checked, but not per element: element by element, TSan spent about half of the simulated bench's time here.
#ifdef SIMNCCL_TSAN
__attribute__((no_sanitize("thread")))
#endif
// Plain pointers only: an uninstrumented function does not inline the instrumented std::vector accessors.
void SumFloat(float* dst, const char* const* srcs, size_t nSrcs, size_t count) {
#ifdef SIMNCCL_TSAN
  for (size_t k = 0; k < nSrcs; k++) __tsan_read_range(const_cast<char*>(srcs[k]), count * sizeof(float));
  __tsan_write_range(dst, count * sizeof(float));
#endif
  for (size_t i = 0; i < count; i++) {
    float acc = 0;
    for (size_t k = 0; k < nSrcs; k++) acc += reinterpret_cast<const float*>(srcs[k])[i];
    dst[i] = acc;
  }
}

// dst[i] = op over srcs[k][i]; 16-bit and 8-bit floats reduce in float, like NCCL's device code.
void Reduce(ncclDataType_t t, ncclRedOp_t op, void* dst, const std::vector<const char*>& srcs, size_t count) {
  if (t == ncclFloat32 && op == ncclSum) {  // fast path for the common case
    SumFloat(static_cast<float*>(dst), srcs.data(), srcs.size(), count);
    return;
  }
  if ((t == ncclUint64 || t == ncclInt64) && op < ncclNumOps) {
    // 64-bit integers reduce exactly (a double holds only 53 bits: ccltune's sync payloads need all 64).
    auto reduce64 = [&](auto tag) {
      using T = decltype(tag);
      for (size_t i = 0; i < count; i++) {
        T acc = ((const T*)srcs[0])[i];
        for (size_t k = 1; k < srcs.size(); k++) acc = Combine(op, acc, ((const T*)srcs[k])[i]);
        if (op == ncclAvg) acc /= static_cast<T>(srcs.size());
        ((T*)dst)[i] = acc;
      }
    };
    if (t == ncclUint64) {
      reduce64(uint64_t{});
    } else {
      reduce64(int64_t{});
    }
    return;
  }
  bool narrowFloat = t == ncclFloat16 || t == ncclBfloat16 || t >= ncclFloat8e4m3;
  for (size_t i = 0; i < count; i++) {
    double acc = Load(t, srcs[0], i);
    for (size_t k = 1; k < srcs.size(); k++) {
      acc = Combine(op, acc, Load(t, srcs[k], i));
      if (narrowFloat) acc = (float)acc;
    }
    if (op == ncclAvg) acc = IsInt(t) ? (double)((int64_t)acc / (int64_t)srcs.size()) : acc / srcs.size();
    Store(t, dst, i, acc);
  }
}

// Copies `count` elements to the staging slot, applying this rank's PreMulSum scalar if op is one.
void CopyIn(char* stage, const char* src, size_t count, ncclDataType_t t, ncclRedOp_t op) {
  if (op < ncclNumOps) {
    std::memcpy(stage, src, count * TypeSize(t));
    return;
  }
  Runtime& rt = RT();
  size_t idx = op - ncclNumOps;
  double s = rt.preMul[idx].second;
  if (rt.preMulDevPtr[idx]) s = Load(rt.preMul[idx].first, rt.preMulDevPtr[idx], 0);
  for (size_t i = 0; i < count; i++) Store(t, stage, i, Load(t, src, i) * s);
}

// ------------------------------------------------------------------------------------------------ tasks
enum TaskKind { kColl, kSend, kRecv };
struct Task {
  TaskKind kind = kColl;
  int coll = 0;  // simnccl::Coll
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int root = 0, peer = 0;
  ncclComm* comm = nullptr;
  void* stream = nullptr;
  simnccl::ProfilerTag prof;  // from its API events
  // Filled by the tuning step and the planner.
  simnccl::Config cfg;  // cfg.nc: the channels it really runs on
  int asked = 0;        // the tuner's nChannels (0: none asked)
  int nWarps = 0;
  bool overridden = false;  // the tuner changed anything: the model times the config, not NCCL's default
  simnccl::ChannelSpan span;
  std::vector<uint64_t> chunks;  // one per channel it runs on (one entry without tuner v6)
  double durUs = 0;
  size_t traffic = 0;
};

thread_local int tGroupDepth = 0;
thread_local std::vector<Task> tGroupTasks;
thread_local bool tMoveNext = false;

size_t NBytes(const Task& t) {  // NCCL's nBytes handed to the tuner
  size_t b = t.count * TypeSize(t.dtype);
  return t.coll == simnccl::kAllGather || t.coll == simnccl::kReduceScatter ? b * t.comm->nranks : b;
}
size_t Traffic(const Task& t) {
  size_t b = t.count * TypeSize(t.dtype);
  if (t.coll == simnccl::kAllReduce) return 2 * b;
  if (t.coll == simnccl::kAllGather || t.coll == simnccl::kReduceScatter) return b * t.comm->nranks;
  return b;
}
// The task as NCCL's planner holds it (allgather and broadcast in bytes), with its protocol and channel bound.
simnccl::ChannelTask PlannerTask(const Task& t) {
  return simnccl::MakeChannelTask(t.coll, t.count, TypeSize(t.dtype), t.cfg.proto, t.cfg.nc);
}

// NCCL's task sorter bins a task's traffic in units of 1 KiB (capped at 1 GiB) on a scale with four bins per power
// of two: below 4 units the bin is the unit count, from there on it is 4 * (log2 - 1) plus the two bits below the
// leading one. Larger traffic, larger bin.
uint32_t SorterBin(size_t traffic) {
  const uint32_t units = static_cast<uint32_t>(std::min<size_t>(traffic, size_t{1} << 30) >> 10);
  if (units < 4) return units;
  const int log2 = 31 - __builtin_clz(units);
  return static_cast<uint32_t>(log2 - 1) * 4 + ((units >> (log2 - 2)) & 3u);
}

// What getAlgoInfo decides for a bin of tasks: algorithm, protocol, the channel bound the planner gets (the
// tuner's nChannels, not clamped, or NCCL's own choice) and the warps.
struct Decision {
  simnccl::Config cfg;  // cfg.nc: the channel bound
  int asked = 0;        // the tuner's nChannels
  int nWarps = 0;
  bool overridden = false;
};

// One tuning decision for a bin, exactly where NCCL makes it: cost table, getCollInfo (unless !callTuner), then
// NCCL's own choice for what the tuner left open.
ncclResult_t Decide(ncclComm* comm, int coll, size_t nBytes, int numPipeOps, bool callTuner, Decision* d) {
  Runtime& rt = RT();
  const simnccl::Model& m = *rt.model;
  float table[simnccl::kNumAlgos][simnccl::kNumProtos], orig[simnccl::kNumAlgos][simnccl::kNumProtos];
  // NCCL's cost model works on its topology graphs, which a raised channel minimum leaves as they are
  // (graph/tuning.cc: bandwidth = the graph's channels x per-channel bandwidth; minCTAs copies channels of
  // the communicator only): a raised budget changes the channels NCCL starts from, not its algorithm/protocol.
  m.CostTable(coll, nBytes, comm->nranks, comm->graphBudget, table);
  simnccl::Config def = m.DefaultConfig(coll, nBytes, comm->nranks, comm->graphBudget);
  // NCCL_ALGO / NCCL_PROTO: what they leave out costs -1, and NCCL's own pick is the cheapest of the rest.
  bool limited = false;
  for (int a = 0; a < simnccl::kNumAlgos; a++)
    for (int p = 0; p < simnccl::kNumProtos; p++)
      if (!rt.limits.Allows(coll, a, p) && table[a][p] >= 0) table[a][p] = -1, limited = true;
  if (limited && (def.algo < 0 || !rt.limits.Allows(coll, def.algo, def.proto))) {
    float best = INFINITY;
    for (int a = 0; a < simnccl::kNumAlgos; a++)
      for (int p = 0; p < simnccl::kNumProtos; p++)
        if (table[a][p] >= 0 && table[a][p] < best) best = table[a][p], def.algo = a, def.proto = p;
  }
  std::memcpy(orig, table, sizeof table);
  *d = Decision{};
  d->cfg.algo = def.algo, d->cfg.proto = def.proto;
  // A one-rank communicator's collectives are a local copy in NCCL, launched without the tuner (recorded on 2xH200
  // with NCCL 2.28.9: the 1-rank communicators of a split make no getCollInfo call) and on no channel.
  if (comm->nranks == 1) return ncclSuccess;
  TunerPlugin& t = rt.tuner;
  int nChannels = 0;
  if (callTuner && t.version != 0 && comm->tunerCtx) {
    auto fn = t.version == 6 ? t.v6->getCollInfo : t.version == 5 ? t.v5->getCollInfo : t.v4->getCollInfo;
    const ncclResult_t rc = CallPlugin(fn, comm->tunerCtx, (ncclFunc_t)coll, nBytes, numPipeOps, (float**)table,
                                       simnccl::kNumAlgos, simnccl::kNumProtos, 0, &nChannels);
    unsigned validMask = 0;
    for (int a = 0; a < simnccl::kNumAlgos; a++)
      for (int p = 0; p < simnccl::kNumProtos; p++)
        if (orig[a][p] >= 0) validMask |= 1u << (a * simnccl::kNumProtos + p);
    if (rc != ncclSuccess) {
      rt.Trace("getCollInfo func %d nBytes %zu numPipeOps %d valid 0x%x -> error %d", coll, nBytes, numPipeOps,
               validMask, (int)rc);
      return Fail(rc, "tuner getCollInfo returned %d: the collective fails, as in NCCL", (int)rc);
    }
    float best = INFINITY;
    for (int a = 0; a < simnccl::kNumAlgos; a++)
      for (int p = 0; p < simnccl::kNumProtos; p++)
        if (table[a][p] >= 0 && table[a][p] < best) best = table[a][p], d->cfg.algo = a, d->cfg.proto = p;
    rt.Trace("getCollInfo func %d nBytes %zu numPipeOps %d valid 0x%x -> algo %d proto %d nChannels %d", coll, nBytes,
             numPipeOps, validMask, d->cfg.algo, d->cfg.proto, nChannels);
    if (nChannels < 0)
      return Fail(ncclInvalidArgument, "tuner nChannels %d is negative: real NCCL would plan garbage", nChannels);
    d->overridden = std::memcmp(orig, table, sizeof table) != 0 || nChannels != 0;
  }
  const simnccl::AlgoChannels own = simnccl::NcclAlgoChannels(d->cfg.algo, d->cfg.proto, nBytes, comm->nranks,
                                                              comm->budget, rt.machine.ringSimpleThreads);
  d->cfg.nc = nChannels != 0 ? nChannels : own.nMaxChannels;  // NCCL keeps the tuner's bound as it is
  d->asked = nChannels;
  d->nWarps = own.nWarps;
  return ncclSuccess;
}

// Tuner v6's chunk sizes for a planned task, called where NCCL calls them (calcCollChunking, once per part of the
// task's channel span: first channel, last channel, middle channels, each with that channel's bytes and
// nChannels 1). Without tuner v6 the protocol's default chunk.
ncclResult_t ChunkSizes(Task* task) {
  Runtime& rt = RT();
  ncclComm* comm = task->comm;
  const int proto = task->cfg.proto;
  const size_t defChunk = simnccl::ProtoDefaultChunk(proto);
  task->chunks.assign(1, defChunk);
  TunerPlugin& t = rt.tuner;
  if (t.version != 6 || !t.v6->getChunkSize || !comm->tunerCtx || comm->nranks == 1) return ncclSuccess;
  const simnccl::ChannelTask pt = PlannerTask(*task);
  const size_t bytesPerElement =
      pt.elemSize * (task->coll == simnccl::kAllGather || task->coll == simnccl::kReduceScatter ? comm->nranks : 1);
  auto ask = [&](size_t count, uint64_t* chunkOut) -> ncclResult_t {
    size_t chunk = defChunk;
    const size_t nBytes = bytesPerElement * count;
    ncclResult_t rc = CallPlugin(t.v6->getChunkSize, comm->tunerCtx, (ncclFunc_t)task->coll, nBytes, task->cfg.algo,
                                 proto, 1, &chunk);
    if (rc != ncclSuccess) return Fail(rc, "tuner getChunkSize returned %d: the collective fails", (int)rc);
    chunk = std::min(chunk, simnccl::ProtoMaxChunk(proto));
    rt.Trace("getChunkSize func %d nBytes %zu algo %d proto %d nChannels 1 -> chunk %zu", task->coll, nBytes,
             task->cfg.algo, proto, chunk);
    if (chunk < simnccl::ProtoGrain(proto)) {
      std::fprintf(stderr,
                   "simnccl: ERROR tuner chunk size %zu is below protocol %d's grain %zu: real NCCL would divide "
                   "by zero here\n",
                   chunk, proto, simnccl::ProtoGrain(proto));
      return Fail(ncclInternalError, "tuner chunk size %zu below grain", chunk);
    }
    if (chunk != defChunk) task->overridden = true;
    *chunkOut = chunk;
    return ncclSuccess;
  };
  const simnccl::ChannelSpan& s = task->span;
  uint64_t lo = defChunk, mid = defChunk, hi = defChunk;
  ncclResult_t rc = ncclSuccess;
  if (s.countLo != 0 && (rc = ask(s.countLo, &lo)) != ncclSuccess) return rc;
  if (s.countHi != 0 && (rc = ask(s.countHi, &hi)) != ncclSuccess) return rc;
  if (s.nMidChannels != 0 && (rc = ask(s.countMid, &mid)) != ncclSuccess) return rc;
  task->chunks.clear();  // per channel: first, middle ones, last
  if (s.countLo != 0) task->chunks.push_back(lo);
  task->chunks.insert(task->chunks.end(), s.nMidChannels, mid);
  if (s.nChannels > (s.countLo != 0 ? 1 : 0) + s.nMidChannels) task->chunks.push_back(hi);
  return ncclSuccess;
}

std::string Describe(const Record& r) {
  char b[256];
  int n = std::snprintf(b, sizeof b, "coll %s dtype %d op %d count %llu root %d algo %d proto %d nc %d chunk",
                        simnccl::CollName(r.coll), r.dtype, r.op, (unsigned long long)r.count, r.root, r.algo, r.proto,
                        r.nc);
  for (int i = 0; i < r.nChunks && n < (int)sizeof b - 12; i++)
    n += std::snprintf(b + n, sizeof b - n, "%s%llu", i ? "," : " ", (unsigned long long)r.chunks[i]);
  return b;
}

// Executes one collective: publish + compare records, advance virtual time, move data if agreed.
void RunColl(Task& t, bool moveRequested) {
  ncclComm* c = t.comm;
  Runtime& rt = RT();
  Header* h = c->hdr;
  uint64_t seq = ++c->seq;
  Record rec{};
  rec.seq = seq;
  rec.count = t.count;
  rec.coll = t.coll;
  rec.dtype = t.dtype;
  rec.op = t.op < ncclNumOps ? t.op : ncclNumOps;  // PreMulSum handles are per rank
  rec.root = t.coll == simnccl::kBroadcast || t.coll == simnccl::kReduce ? t.root : -1;
  rec.algo = t.cfg.algo;
  rec.proto = t.cfg.proto;
  rec.nc = t.cfg.nc;
  rec.nChunks = (int)std::min<size_t>(t.chunks.size(), simnccl::kMaxChannels);
  std::copy(t.chunks.begin(), t.chunks.begin() + rec.nChunks, rec.chunks);
  uint64_t key = Fnv(&rec.count, sizeof(Record) - sizeof(uint64_t));
  bool move = rt.env.move == Settings::kAlways ||
              (rt.env.move == Settings::kFirst && (moveRequested || !c->seenKeys.count(key))) ||
              (rt.env.move == Settings::kRequested && moveRequested);
  c->seenKeys.insert(key);
  Slot& mine = h->slots[c->rank];
  mine.rec = rec;
  mine.clock = rt.clockUs;
  mine.move = move;
  Barrier(c, seq);
  double start = 0, first = INFINITY;
  bool anyMove = false;
  for (int r = 0; r < c->nranks; r++) {
    const Slot& s = h->slots[r];
    start = std::max(start, s.clock);
    first = std::min(first, s.clock);
    anyMove |= s.move != 0;
    if (!(s.rec == h->slots[0].rec)) {
      rt.mismatches++;
      if (c->rank == 0) {
        std::fprintf(stderr, "simnccl: CONSISTENCY MISMATCH comm %s op %llu: rank 0 ran %s; rank %d ran %s\n",
                     c->name.c_str(), (unsigned long long)seq, Describe(h->slots[0].rec).c_str(), r,
                     Describe(s.rec).c_str());
        std::fflush(stderr);
      }
      h->abortCode.store(3);
      Ring(h);
    }
  }
  if (h->abortCode.load() == 3) {
    if (c->rank != 0) usleep(200000);
    _exit(3);
  }
  const bool drifted = seq > rt.env.driftAfter && (rt.env.driftAlgo < 0 || rt.env.driftAlgo == t.cfg.algo);
  double ranUs;
  if (!rt.fitted) {
    ranUs = t.durUs * simnccl::NoiseFactor(rt.env.seed, c->noiseKey, seq, rt.env.noise);
    if (drifted) ranUs *= rt.env.driftFactor;
  } else {
    // Fitted noise (noise_model.hpp): the collective's own time, shortened by the early ranks' head start; then
    // this rank's lag before its next call.
    const simnccl::FittedNoise& n = *rt.fitted;
    const uint64_t pseq = ++rt.collectives;
    if (n.Block(pseq) != rt.noiseBlock)
      rt.noiseBlock = n.Block(pseq),
      rt.noiseFactors = n.ForBlock(rt.env.seed, simnccl::kProcessNoiseKey, rt.noiseBlock);
    const simnccl::FittedNoise::BlockFactors& f = rt.noiseFactors;
    double own = n.BaseUs(t.durUs, t.cfg.algo, t.cfg.proto, t.cfg.nc) * f.slow *
                 n.CallFactor(rt.env.seed, c->noiseKey, seq, f.volatility);
    if (drifted) own *= rt.env.driftFactor;
    ranUs = own - n.Params().overlap * std::min(start - first, own);
    if (c->nranks > 1)
      rt.pendingLagUs =
          n.RankLagUs(rt.env.seed, c->noiseKey, seq, c->rank, own, t.cfg.algo, t.cfg.proto, t.cfg.nc, f.lag);
  }
  // The same workload right after itself on another config pays for the switch (every rank alike: the records agree).
  const uint64_t workload = Fnv(&rec.count, offsetof(Record, algo) - offsetof(Record, count));
  const bool switched = workload == c->lastWorkload &&
                        (t.cfg.algo != c->lastRan.algo || t.cfg.proto != c->lastRan.proto || t.cfg.nc != c->lastRan.nc);
  if (switched) ranUs *= rt.env.switchFactor;
  // Right after another workload (or first on the communicator): the pair's SIMNCCL_AFTER_OTHER factor.
  if (workload != c->lastWorkload) ranUs *= rt.env.afterOther.Factor(t.cfg.algo, t.cfg.proto);
  c->lastWorkload = workload;
  c->lastRan = t.cfg;
  rt.clockUs = start + ranUs;
  rt.hostSynced = false;
  rt.lastModelUs = t.durUs;
  rt.lastConfig = t.cfg;
  if (c->rank == 0)
    rt.Trace("ran comm %s op %llu %s asked %d model %.3f us %.3f", c->name.c_str(), (unsigned long long)seq,
             Describe(h->slots[0].rec).c_str(), t.asked, t.durUs, ranUs);
  if (anyMove && rt.env.move != Settings::kNever) {
    rt.movedCalls++;
    const size_t es = TypeSize(t.dtype), n = c->nranks, me = c->rank;
    const size_t perChunk = h->stageBytes / es;
    std::vector<const char*> srcs(n);
    for (size_t r = 0; r < n; r++) srcs[r] = c->Stage(r);
    auto rounds = [&](size_t total, const std::function<void(size_t off, size_t len)>& body) {
      for (size_t off = 0; off < total; off += perChunk) body(off, std::min(perChunk, total - off));
    };
    const char* sb = (const char*)t.send;
    char* rb = (char*)t.recv;
    switch (t.coll) {
      case simnccl::kAllReduce:
      case simnccl::kReduce:
        rounds(t.count, [&](size_t off, size_t len) {
          CopyIn(c->Stage(me), sb + off * es, len, t.dtype, t.op);
          Barrier(c, seq);
          if (t.coll == simnccl::kAllReduce || (int)me == t.root) Reduce(t.dtype, t.op, rb + off * es, srcs, len);
          Barrier(c, seq);
        });
        break;
      case simnccl::kReduceScatter:
        for (size_t d = 0; d < n; d++)
          rounds(t.count, [&](size_t off, size_t len) {
            CopyIn(c->Stage(me), sb + (d * t.count + off) * es, len, t.dtype, t.op);
            Barrier(c, seq);
            if (d == me) Reduce(t.dtype, t.op, rb + off * es, srcs, len);
            Barrier(c, seq);
          });
        break;
      case simnccl::kAllGather:
        rounds(t.count, [&](size_t off, size_t len) {
          std::memcpy(c->Stage(me), sb + off * es, len * es);
          Barrier(c, seq);
          for (size_t r = 0; r < n; r++) std::memcpy(rb + (r * t.count + off) * es, c->Stage(r), len * es);
          Barrier(c, seq);
        });
        break;
      case simnccl::kBroadcast:
        rounds(t.count, [&](size_t off, size_t len) {
          if ((int)me == t.root) std::memcpy(c->Stage(me), sb + off * es, len * es);
          Barrier(c, seq);
          if (rb + off * es != c->Stage(t.root)) std::memmove(rb + off * es, c->Stage(t.root), len * es);
          Barrier(c, seq);
        });
        break;
    }
  }
  Barrier(c, seq);  // records and staging may be reused only after everyone has read them
}

// Point-to-point: per ordered pair mailboxes, progressed together so grouped send/recv pairs never deadlock.
void RunP2P(std::vector<Task*>& ops) {
  struct St {
    Task* t;
    size_t bytes, off = 0;
    bool done = false, started = false;
  };
  std::vector<St> st;
  for (Task* t : ops) st.push_back(St{t, t->count * TypeSize(t->dtype)});
  for (auto& s : st)
    if (s.bytes == 0) s.done = true;
  Runtime& rt = RT();
  size_t left = std::count_if(st.begin(), st.end(), [](const St& s) { return !s.done; });
  while (left > 0) {
    bool progress = false;
    for (auto& s : st) {
      if (s.done) continue;
      ncclComm* c = s.t->comm;
      if (s.t->kind == kSend) {
        Mbox& mb = c->Box(c->rank, s.t->peer);
        if (mb.sent.load(std::memory_order_acquire) != mb.acked.load(std::memory_order_acquire)) continue;
        size_t len = std::min<size_t>(c->hdr->mboxBytes, s.bytes - s.off);
        std::memcpy(c->BoxData(c->rank, s.t->peer), (const char*)s.t->send + s.off, len);
        mb.bytes = len;
        mb.clock = rt.clockUs;
        mb.sent.fetch_add(1, std::memory_order_release);
        Ring(c->hdr);
        s.off += len;
      } else {
        Mbox& mb = c->Box(s.t->peer, c->rank);
        if (mb.sent.load(std::memory_order_acquire) == mb.acked.load(std::memory_order_acquire)) continue;
        size_t len = std::min<size_t>(mb.bytes, s.bytes - s.off);
        std::memcpy((char*)s.t->recv + s.off, c->BoxData(s.t->peer, c->rank), len);
        if (!s.started) rt.clockUs = std::max(rt.clockUs, mb.clock);
        s.started = true;
        mb.acked.fetch_add(1, std::memory_order_release);
        Ring(c->hdr);
        s.off += len;
      }
      progress = true;
      if (s.off >= s.bytes) {
        s.done = true;
        left--;
        rt.clockUs += 5.0 + s.bytes / 20000.0;
        rt.hostSynced = false;
      }
    }
    if (!progress && left > 0) {
      // Nothing could move: wait (with the hang check) until any mailbox we need changes.
      St* first = nullptr;
      for (auto& s : st)
        if (!s.done) first = &s;
      ncclComm* c = first->t->comm;
      WaitFor(c, c->seq, [&] {
        for (auto& s : st) {
          if (s.done) continue;
          ncclComm* cc = s.t->comm;
          Mbox& mb = s.t->kind == kSend ? cc->Box(cc->rank, s.t->peer) : cc->Box(s.t->peer, cc->rank);
          bool empty = mb.sent.load(std::memory_order_acquire) == mb.acked.load(std::memory_order_acquire);
          if (s.t->kind == kSend ? empty : !empty) return true;
        }
        return false;
      });
    }
  }
}

// One communicator's part of a closed group, as NCCL's planner holds it: collective tasks binned for the tuner,
// the broadcasts NCCL >= 2.29 runs as one AllGatherV, send/receive tasks.
struct CommPlan {
  ncclComm* comm = nullptr;
  std::vector<Task*> colls, agv, p2p;
  std::vector<std::vector<Task*>> bins;  // NCCL's queue order: per (func, op, type), ascending sizes merged in 4x
  std::vector<int> binColl;
  std::vector<Decision> decisions;  // one per bin
  void* stream = nullptr;           // the launch stream: the first call's
};

// NCCL's task sorter and binning (ncclPrepareTasks). Sorted by traffic descending as the task sorter does: into
// coarse size bins (SorterBin), largest bin first, and within a bin the task enqueued last first (each bin is a
// LIFO). Then per (func, op, type) ascending; aggregate within 4x of the bin's first. Recorded on 2xH200 with NCCL
// 2.28.9: a group of equal-sized allgather, reducescatter, broadcast, reduce reaches the tuner in the reverse of
// the order of the calls.
void BinTasks(CommPlan* p) {
  std::vector<std::pair<uint32_t, size_t>> order(p->colls.size());  // (bin, enqueue index)
  for (size_t i = 0; i < p->colls.size(); i++) order[i] = {SorterBin(p->colls[i]->traffic), i};
  std::vector<size_t> idx(p->colls.size());
  for (size_t i = 0; i < idx.size(); i++) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return order[a].first != order[b].first ? order[a].first > order[b].first : order[a].second > order[b].second;
  });
  std::vector<std::tuple<int, int, int>> keys;
  std::map<std::tuple<int, int, int>, std::vector<Task*>> byKey;
  for (size_t i : idx) {
    Task* t = p->colls[i];
    auto k = std::make_tuple(t->coll, (int)std::min<int>(t->op, ncclNumOps), (int)t->dtype);
    if (!byKey.count(k)) keys.push_back(k);
    byKey[k].insert(byKey[k].begin(), t);  // LIFO: ascending size
  }
  for (auto& k : keys) {
    auto& v = byKey[k];
    for (size_t i = 0; i < v.size();) {
      size_t j = i + 1;
      while (j < v.size() && v[j]->traffic < 4 * v[i]->traffic) j++;
      p->bins.emplace_back(v.begin() + i, v.begin() + j);
      p->binColl.push_back(std::get<0>(k));
      i = j;
    }
  }
}

// The model's time for a bin of tasks run as `cfg`: NCCL's default time when the tuner changed nothing.
double BinDuration(ncclComm* c, int coll, size_t nBytes, const simnccl::Config& cfg, bool overridden) {
  const simnccl::Model& m = *RT().model;
  return overridden ? m.Duration(coll, nBytes, c->nranks, cfg, c->budget)
                    : m.DefaultDuration(coll, nBytes, c->nranks, c->budget);
}

// NCCL's launch preparation and launch for one communicator (ncclLaunchPrepare, ncclLaunchKernel): the planner
// spreads the tasks over channels (scheduleCollTasksToPlan), tuner v6 gives chunk sizes, the AllGatherV of NCCL
// >= 2.29 gets its tuner call; then the model times each bin at the channels its tasks really run on, and the
// profiler sees the plans' launches. simulate (ncclGroupSimulateEnd): the plan only, no plugin call.
ncclResult_t PlanComm(CommPlan* p, bool simulate, double* simTime) {
  Runtime& rt = RT();
  ncclComm* c = p->comm;
  std::vector<Task*> queue;
  for (size_t b = 0; b < p->bins.size(); b++)
    for (Task* t : p->bins[b]) {
      const Decision& d = p->decisions[b];
      t->cfg = d.cfg, t->asked = d.asked, t->nWarps = d.nWarps, t->overridden = d.overridden;
      queue.push_back(t);
    }
  if (c->nranks > 1 && !queue.empty()) {
    std::vector<simnccl::ChannelTask> planned;
    for (Task* t : queue) planned.push_back(PlannerTask(*t));
    const std::vector<simnccl::ChannelSpan> spans =
        simnccl::ScheduleChannels(planned, c->nranks, c->budget, rt.env.version);
    for (size_t i = 0; i < queue.size(); i++) queue[i]->span = spans[i], queue[i]->cfg.nc = spans[i].nChannels;
  }
  for (Task* t : queue) {
    if (c->nranks == 1) t->cfg.nc = 0;  // a local copy
    if (simulate) {
      t->chunks.assign(1, simnccl::ProtoDefaultChunk(t->cfg.proto));
    } else if (ncclResult_t rc = ChunkSizes(t); rc != ncclSuccess) {
      return rc;
    }
    t->cfg.chunk = t->chunks[0];
  }
  for (size_t b = 0; b < p->bins.size(); b++) {
    size_t nBytes = 0, traffic = 0;
    std::set<int> channels;
    bool overridden = false;
    for (Task* t : p->bins[b]) {
      nBytes += NBytes(*t), traffic += std::max<size_t>(1, t->traffic);
      for (int ch = 0; ch < t->cfg.nc; ch++) channels.insert(t->span.channelLo + ch);
      overridden |= t->overridden;
    }
    simnccl::Config cfg = p->decisions[b].cfg;
    cfg.nc = static_cast<int>(channels.size()), cfg.chunk = p->bins[b][0]->cfg.chunk;
    const double dur = BinDuration(c, p->binColl[b], nBytes, cfg, overridden);
    *simTime += dur;
    for (Task* t : p->bins[b]) t->durUs = dur * std::max<size_t>(1, t->traffic) / traffic;
  }
  if (!p->agv.empty()) {
    // One AllGatherV kernel on Ring, each broadcast cut into as many parts as the tuner's or NCCL's channel bound
    // (NCCL does not clamp a tuner's bound here; the simulation does, to the communicator's channels).
    size_t maxBytes = 0, sumBytes = 0;
    std::vector<size_t> bytes;
    for (Task* t : p->agv) {
      bytes.push_back(t->count * TypeSize(t->dtype));
      maxBytes = std::max(maxBytes, bytes.back()), sumBytes += bytes.back();
    }
    Decision d;
    if (ncclResult_t rc = Decide(c, simnccl::kAllGather, maxBytes * c->nranks, 1, !simulate, &d); rc != ncclSuccess)
      return rc;
    simnccl::Config cfg{simnccl::kAlgoRing, d.cfg.proto, 0, 0};
    cfg.nc = simnccl::AllGatherVChannels(bytes, std::clamp(d.cfg.nc, 1, c->budget));
    const double dur = BinDuration(c, simnccl::kAllGather, sumBytes, cfg, d.overridden);
    *simTime += dur;
    for (size_t i = 0; i < p->agv.size(); i++) {
      Task* t = p->agv[i];
      t->cfg = cfg, t->asked = d.asked, t->nWarps = d.nWarps, t->overridden = d.overridden;
      t->chunks.assign(1, simnccl::ProtoDefaultChunk(cfg.proto));
      t->durUs = dur * std::max<size_t>(1, bytes[i]) / std::max<size_t>(1, sumBytes);
    }
  }
  if (simulate) return ncclSuccess;
  // The plans' launches. NCCL makes no task for a one-rank communicator's collective; its AllGatherV plan has no
  // task events (and, with other collectives, is a plan of its own, with the group's sends and receives).
  std::vector<simnccl::ProfilerColl> colls;
  if (c->nranks > 1)
    for (Task* t : queue) {
      const simnccl::ChannelTask pt = PlannerTask(*t);
      simnccl::ProfilerColl pc;
      pc.tag = t->prof, pc.func = t->coll, pc.sendBuff = t->send, pc.recvBuff = t->recv, pc.count = pt.count;
      pc.root = t->root, pc.dtype = pt.elemSize == TypeSize(t->dtype) ? t->dtype : ncclInt8;
      pc.nChannels = t->cfg.nc, pc.nWarps = t->nWarps, pc.algo = t->cfg.algo, pc.proto = t->cfg.proto;
      colls.push_back(pc);
    }
  std::vector<simnccl::ProfilerTag> p2ps;
  for (Task* t : p->p2p) p2ps.push_back(t->prof);
  simnccl::ProfilerHost& prof = *rt.profiler;
  if (p->agv.empty() || colls.empty()) {
    if (!colls.empty() || !p2ps.empty()) prof.LaunchPlan(&c->prof, p->stream, colls, p2ps);
  } else {
    prof.LaunchPlan(&c->prof, p->stream, colls, {});
    if (!p2ps.empty()) prof.LaunchPlan(&c->prof, p->stream, {}, p2ps);
  }
  return ncclSuccess;
}

// Launches a closed group (or one ungrouped call) as NCCL's groupLaunch does: every communicator's tuner calls
// (ncclPrepareTasks), then per communicator the plan and its launch, then execution.
ncclResult_t Launch(std::vector<Task>& tasks, ncclSimInfo_t* simInfo) {
  Runtime& rt = RT();
  bool move = tMoveNext;
  tMoveNext = false;
  // NCCL's list of the group's communicators (ncclGroupCommJoin), the order of their tuner calls and launches.
  // Before 2.26 a communicator joins at the end: the order of their first task (a one-rank communicator's
  // collective is no task in NCCL, a copy at the call: those last, they call no tuner). From 2.26 one with no
  // sibling in the list (another rank of the same communicator in this process; none with one rank per process)
  // goes in by ascending commHash, whatever the call order. A communicator made from a unique id has a random
  // hash, a split's is derived from its parent's, its split count and its color (here: the names hashed), so
  // which of a world and its split the tuner sees first changes from run to run, as on real NCCL 2.28.9 (the
  // one-GPU testbed, 5 runs: the split first in 1, each time as the hashes said).
  std::vector<CommPlan> plans;
  auto planOf = [&](ncclComm* c) -> CommPlan& {
    for (CommPlan& p : plans)
      if (p.comm == c) return p;
    plans.emplace_back();
    plans.back().comm = c;
    return plans.back();
  };
  for (int pass = 0; pass < 2; pass++)
    for (Task& t : tasks)
      if ((t.kind == kColl && t.comm->nranks == 1) == (pass == 1)) {
        CommPlan& p = planOf(t.comm);
        if (p.colls.empty() && p.p2p.empty() && p.agv.empty()) p.stream = t.stream;
        if (t.kind != kColl) {
          p.p2p.push_back(&t);
          continue;
        }
        t.traffic = Traffic(t);
        p.colls.push_back(&t);
      }
  if (rt.env.version >= 22600)
    std::stable_sort(plans.begin(), plans.end(),
                     [](const CommPlan& a, const CommPlan& b) { return a.comm->hash < b.comm->hash; });
  for (CommPlan& p : plans) {
    // NCCL >= 2.29: broadcasts from several roots in one group run as one AllGatherV.
    std::set<int> roots;
    for (Task* t : p.colls)
      if (t->coll == simnccl::kBroadcast) roots.insert(t->root);
    if (rt.env.version >= 22900 && roots.size() > 1) {
      auto isBcast = [](Task* t) { return t->coll == simnccl::kBroadcast; };
      std::copy_if(p.colls.begin(), p.colls.end(), std::back_inserter(p.agv), isBcast);
      p.colls.erase(std::remove_if(p.colls.begin(), p.colls.end(), isBcast), p.colls.end());
    }
    BinTasks(&p);
    const int numPipeOps = (static_cast<int>(p.colls.size()) + p.comm->budget - 1) / p.comm->budget;
    p.decisions.resize(p.bins.size());
    for (size_t b = 0; b < p.bins.size(); b++) {
      size_t nBytes = 0;
      for (Task* t : p.bins[b]) nBytes += NBytes(*t);
      if (ncclResult_t rc = Decide(p.comm, p.binColl[b], nBytes, numPipeOps, true, &p.decisions[b]); rc != ncclSuccess)
        return rc;
    }
  }
  double simTime = 0;
  for (CommPlan& p : plans)
    if (ncclResult_t rc = PlanComm(&p, simInfo != nullptr, &simTime); rc != ncclSuccess) return rc;
  if (simInfo) {
    simInfo->estimatedTime = (float)simTime;
    return ncclSuccess;
  }
  rt.ApplyPendingLag();  // the rank's lag after its last collective, if no clock read took it yet
  for (auto& t : tasks)
    if (t.kind == kColl) RunColl(t, move);
  std::vector<Task*> p2p;
  for (auto& t : tasks)
    if (t.kind != kColl) p2p.push_back(&t);
  if (!p2p.empty()) RunP2P(p2p);
  return ncclSuccess;
}

// One API call, with the profiler's API events around it as ncclEnqueueCheck makes them.
ncclResult_t Enqueue(Task t) {
  if (!t.comm) return Fail(ncclInvalidArgument, "NULL communicator");
  if (t.kind == kColl && (t.coll == simnccl::kBroadcast || t.coll == simnccl::kReduce) &&
      (t.root < 0 || t.root >= t.comm->nranks))
    return Fail(ncclInvalidArgument, "invalid root %d", t.root);
  if (t.kind != kColl && (t.peer < 0 || t.peer >= t.comm->nranks))
    return Fail(ncclInvalidArgument, "invalid peer %d", t.peer);
  if (t.dtype < 0 || t.dtype >= ncclNumTypes) return Fail(ncclInvalidArgument, "invalid datatype %d", (int)t.dtype);
  if (t.op < 0 || (t.op >= ncclNumOps && (size_t)(t.op - ncclNumOps) >= RT().preMul.size()))
    return Fail(ncclInvalidArgument, "invalid reduction op %d", (int)t.op);
  // NCCL drops a collective of zero elements once its arguments are checked: no task, no tuner call (recorded on
  // 2xH200 with NCCL 2.28.9, grouped and ungrouped), no profiler event.
  if (t.kind == kColl && t.count == 0) return ncclSuccess;
  simnccl::ProfilerHost& prof = *RT().profiler;
  const int depth = tGroupDepth + 1;  // NCCL's group depth inside the call: its own implicit group included
  prof.EnqueueBegin();
  if (t.kind != kColl) {
    t.prof = prof.P2pApi(&t.comm->prof, depth, t.kind == kSend, t.count, t.dtype, t.stream);
  } else if (t.comm->nranks > 1) {
    t.prof = prof.CollApi(&t.comm->prof, depth, t.coll, t.count, t.dtype, t.root, t.stream);
  }
  prof.GroupEndBegin();
  if (tGroupDepth > 0) {
    tGroupTasks.push_back(t);
    prof.GroupEndExit();
    return ncclSuccess;
  }
  std::vector<Task> one{t};
  const ncclResult_t rc = Launch(one, nullptr);
  prof.GroupEndExit();
  return rc;
}

Task Coll(int coll, const void* s, void* r, size_t count, ncclDataType_t dt, ncclRedOp_t op, int root, ncclComm_t comm,
          cudaStream_t stream) {
  Task t;
  t.coll = coll, t.send = s, t.recv = r, t.count = count, t.dtype = dt, t.op = op, t.root = root, t.comm = comm;
  t.stream = stream;
  return t;
}

}  // namespace

// ------------------------------------------------------------------------------------------------ public API
#define SIM_ALIAS(ret, name, params) extern "C" __attribute__((weak, alias("p" #name))) ret name params;

extern "C" {

ncclResult_t pncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = RT().env.version;
  return ncclSuccess;
}

ncclResult_t pncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return ncclInvalidArgument;
  std::memset(id, 0, sizeof *id);
  std::random_device rd;
  std::snprintf(id->internal, sizeof id->internal, "simnccl-%d-%08x%08x", (int)getpid(), rd(), rd());
  return ncclSuccess;
}

ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config) {
  if (!comm) return ncclInvalidArgument;
  *comm = nullptr;
  commId.internal[NCCL_UNIQUE_ID_BYTES - 1] = 0;
  if (std::strncmp(commId.internal, "simnccl-", 8) != 0)
    return Fail(ncclInvalidArgument, "ncclCommInitRank: unique id was not made by simnccl's ncclGetUniqueId");
  return Attach(comm, commId.internal, nranks, rank, config, ConfigCommName(config));
}

ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return pncclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

ncclResult_t pncclCommInitAll(ncclComm_t*, int, const int*) {
  return Fail(ncclInvalidUsage, "ncclCommInitAll: simnccl runs one rank per process; use ncclCommInitRank");
}

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  if (!comm || !newcomm) return ncclInvalidArgument;
  *newcomm = nullptr;
  Header* h = comm->hdr;
  uint64_t op = comm->seq;
  int splitNo = comm->splitCount++;
  h->slots[comm->rank].color = color;
  h->slots[comm->rank].key = key;
  Barrier(comm, op);
  std::vector<std::pair<int, int>> members;  // (key, parent rank)
  for (int r = 0; r < comm->nranks; r++)
    if (h->slots[r].color == color) members.emplace_back(h->slots[r].key, r);
  Barrier(comm, op);
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  std::sort(members.begin(), members.end());
  int myRank = 0;
  for (size_t i = 0; i < members.size(); i++)
    if (members[i].second == comm->rank) myRank = (int)i;
  std::string name = comm->name + ".s" + std::to_string(splitNo) + "c" + std::to_string(color);
  if (name.size() > 200) name = "simnccl-h" + std::to_string(Fnv(name.data(), name.size()));
  // Without a config NCCL copies the parent's, its name included.
  return Attach(newcomm, name, (int)members.size(), myRank, config, config ? ConfigCommName(config) : comm->commName);
}

ncclResult_t pncclCommFinalize(ncclComm_t comm) { return comm ? ncclSuccess : ncclInvalidArgument; }
ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  Release(comm, true);
  return ncclSuccess;
}
ncclResult_t pncclCommAbort(ncclComm_t comm) {
  Release(comm, true);
  return ncclSuccess;
}
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !count) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !rank) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm || !device) return ncclInvalidArgument;
  *device = comm->rank;
  return ncclSuccess;
}
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (!comm || !asyncError) return ncclInvalidArgument;
  *asyncError = comm->hdr->abortCode.load() ? ncclRemoteError : ncclSuccess;
  return ncclSuccess;
}
const char* pncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}
const char* pncclGetLastError(ncclComm_t) { return tLastError.c_str(); }

ncclResult_t pncclAllReduce(const void* s, void* r, size_t count, ncclDataType_t dt, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream) {
  return Enqueue(Coll(simnccl::kAllReduce, s, r, count, dt, op, 0, comm, stream));
}
ncclResult_t pncclAllGather(const void* s, void* r, size_t count, ncclDataType_t dt, ncclComm_t comm,
                            cudaStream_t stream) {
  return Enqueue(Coll(simnccl::kAllGather, s, r, count, dt, ncclSum, 0, comm, stream));
}
ncclResult_t pncclReduceScatter(const void* s, void* r, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                                ncclComm_t comm, cudaStream_t stream) {
  return Enqueue(Coll(simnccl::kReduceScatter, s, r, count, dt, op, 0, comm, stream));
}
ncclResult_t pncclBroadcast(const void* s, void* r, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                            cudaStream_t stream) {
  return Enqueue(Coll(simnccl::kBroadcast, s, r, count, dt, ncclSum, root, comm, stream));
}
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t dt, int root, ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, dt, root, comm, stream);  // through the PLT, as NCCL does
}
ncclResult_t pncclReduce(const void* s, void* r, size_t count, ncclDataType_t dt, ncclRedOp_t op, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  return Enqueue(Coll(simnccl::kReduce, s, r, count, dt, op, root, comm, stream));
}
ncclResult_t pncclSend(const void* s, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm, cudaStream_t stream) {
  Task t = Coll(0, s, nullptr, count, dt, ncclSum, 0, comm, stream);
  t.kind = kSend, t.peer = peer;
  return Enqueue(t);
}
ncclResult_t pncclRecv(void* r, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm, cudaStream_t stream) {
  Task t = Coll(0, nullptr, r, count, dt, ncclSum, 0, comm, stream);
  t.kind = kRecv, t.peer = peer;
  return Enqueue(t);
}

ncclResult_t pncclGroupStart() {
  tGroupDepth++;
  return ncclSuccess;
}
static ncclResult_t GroupEnd(ncclSimInfo_t* simInfo) {
  if (tGroupDepth <= 0) return Fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  simnccl::ProfilerHost& prof = *RT().profiler;
  prof.GroupEndBegin();
  ncclResult_t rc = ncclSuccess;
  if (--tGroupDepth == 0) {
    std::vector<Task> tasks;
    tasks.swap(tGroupTasks);
    rc = Launch(tasks, simInfo);
  }
  prof.GroupEndExit();
  return rc;
}
ncclResult_t pncclGroupEnd() { return GroupEnd(nullptr); }
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  ncclSimInfo_t local = NCCL_SIM_INFO_INITIALIZER;
  return GroupEnd(simInfo ? simInfo : &local);
}

ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t dt,
                                       ncclScalarResidence_t residence, ncclComm_t comm) {
  if (!op || !scalar || !comm) return ncclInvalidArgument;
  Runtime& rt = RT();
  std::lock_guard<std::mutex> lock(rt.mu);
  rt.preMul.emplace_back(dt, Load(dt, scalar, 0));
  rt.preMulDevPtr.push_back(residence == ncclScalarDevice ? scalar : nullptr);
  *op = (ncclRedOp_t)(ncclNumOps + rt.preMul.size() - 1);
  return ncclSuccess;
}
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t) {
  return op >= ncclNumOps ? ncclSuccess : ncclInvalidArgument;
}
ncclResult_t pncclMemAlloc(void** ptr, size_t size) {
  if (!ptr) return ncclInvalidArgument;
  return posix_memalign(ptr, 4096, std::max<size_t>(size, 1)) == 0 ? ncclSuccess : ncclSystemError;
}
ncclResult_t pncclMemFree(void* ptr) {
  std::free(ptr);
  return ncclSuccess;
}
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t, void** handle) {
  if (!comm || !handle) return ncclInvalidArgument;
  *handle = buff ? buff : (void*)comm;
  return ncclSuccess;
}
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void*) { return comm ? ncclSuccess : ncclInvalidArgument; }

// simnccl extensions.
__attribute__((visibility("default"))) void simncclSetMoveData(int on) { tMoveNext = on != 0; }
__attribute__((visibility("default"))) long long simncclMovedCalls(void) { return RT().movedCalls.load(); }
__attribute__((visibility("default"))) long long simncclMismatchCount(void) { return RT().mismatches.load(); }
// The application waited for its stream (a training step's end): the streams are idle until the next launch. The
// simulated device's Device::StreamIdle reads it through simncclStreamIdle.
__attribute__((visibility("default"))) void simncclHostSync(void) {
  Runtime& rt = RT();
  rt.hostSynced = true;
  ++rt.hostSyncs;
}
__attribute__((visibility("default"))) int simncclStreamIdle(void) { return RT().hostSynced ? 1 : 0; }
// SIMNCCL_HOST_AHEAD: the application's host syncs so far (the simulated device's events recorded before one are
// done); -1 when unset (every event is done when recorded).
__attribute__((visibility("default"))) long long simncclHostSyncs(void) {
  Runtime& rt = RT();
  return rt.env.hostAhead ? rt.hostSyncs : -1;
}
// The virtual clock. With SIMNCCL_NOISE_MODEL the first read after a collective returns its end, and the rank's
// lag before its next call starts then (the stop of a timer around the call does not see it; the next start does).
__attribute__((visibility("default"))) double simncclVirtualTimeUs(void) {
  Runtime& rt = RT();
  const double now = rt.clockUs;
  rt.ApplyPendingLag();
  return now;
}
// The clock for the start of a timed region: the rank's lag after its last collective has passed (a stream reaches
// a start event once the work before it is done; without a timer around the last collective, a plain read here would
// still return that collective's end, and the next call's timer would count the rank's lag as the call's own time).
__attribute__((visibility("default"))) double simncclVirtualStartTimeUs(void) {
  Runtime& rt = RT();
  rt.ApplyPendingLag();
  return rt.clockUs;
}
__attribute__((visibility("default"))) double simncclLastModelUs(void) { return RT().lastModelUs; }
// The key of a communicator's seeded noise (rank 0's communicator ordinal and the rank count, hashed): what
// noise_fit.hpp's SimulateSet needs to reproduce its calls.
__attribute__((visibility("default"))) unsigned long long simncclCommNoiseKey(ncclComm_t comm) {
  return comm ? comm->noiseKey : 0;
}
// The key of the process's slow periods (noise_model.hpp's kProcessNoiseKey), SimulateSet's block_key.
__attribute__((visibility("default"))) unsigned long long simncclProcessNoiseKey(void) {
  return simnccl::kProcessNoiseKey;
}
// Collectives this process ran so far, on every communicator (the count the slow-period blocks follow).
__attribute__((visibility("default"))) unsigned long long simncclProcessCollectives(void) { return RT().collectives; }
// The operations (collectives and point-to-point) this rank ran on `comm` so far.
__attribute__((visibility("default"))) unsigned long long simncclCommOps(ncclComm_t comm) {
  return comm != nullptr ? comm->seq : 0;
}
// What the last collective of this process ran: algorithm, protocol and the channels it ran on.
__attribute__((visibility("default"))) void simncclLastConfig(int* algo, int* proto, int* channels) {
  const simnccl::Config& c = RT().lastConfig;
  if (algo) *algo = c.algo;
  if (proto) *proto = c.proto;
  if (channels) *channels = c.nc;
}

}  // extern "C"

SIM_ALIAS(ncclResult_t, ncclGetVersion, (int*))
SIM_ALIAS(ncclResult_t, ncclGetUniqueId, (ncclUniqueId*))
SIM_ALIAS(ncclResult_t, ncclCommInitRankConfig, (ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*))
SIM_ALIAS(ncclResult_t, ncclCommInitRank, (ncclComm_t*, int, ncclUniqueId, int))
SIM_ALIAS(ncclResult_t, ncclCommInitAll, (ncclComm_t*, int, const int*))
SIM_ALIAS(ncclResult_t, ncclCommSplit, (ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))
SIM_ALIAS(ncclResult_t, ncclCommFinalize, (ncclComm_t))
SIM_ALIAS(ncclResult_t, ncclCommDestroy, (ncclComm_t))
SIM_ALIAS(ncclResult_t, ncclCommAbort, (ncclComm_t))
SIM_ALIAS(ncclResult_t, ncclCommCount, (const ncclComm_t, int*))
SIM_ALIAS(ncclResult_t, ncclCommUserRank, (const ncclComm_t, int*))
SIM_ALIAS(ncclResult_t, ncclCommCuDevice, (const ncclComm_t, int*))
SIM_ALIAS(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t, ncclResult_t*))
SIM_ALIAS(const char*, ncclGetErrorString, (ncclResult_t))
SIM_ALIAS(const char*, ncclGetLastError, (ncclComm_t))
SIM_ALIAS(ncclResult_t, ncclAllReduce,
          (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
SIM_ALIAS(ncclResult_t, ncclAllGather, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
SIM_ALIAS(ncclResult_t, ncclReduceScatter,
          (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
SIM_ALIAS(ncclResult_t, ncclBroadcast, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
SIM_ALIAS(ncclResult_t, ncclBcast, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
SIM_ALIAS(ncclResult_t, ncclReduce,
          (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t))
SIM_ALIAS(ncclResult_t, ncclSend, (const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
SIM_ALIAS(ncclResult_t, ncclRecv, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
SIM_ALIAS(ncclResult_t, ncclGroupStart, ())
SIM_ALIAS(ncclResult_t, ncclGroupEnd, ())
SIM_ALIAS(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t*))
SIM_ALIAS(ncclResult_t, ncclRedOpCreatePreMulSum,
          (ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t, ncclComm_t))
SIM_ALIAS(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t, ncclComm_t))
SIM_ALIAS(ncclResult_t, ncclMemAlloc, (void**, size_t))
SIM_ALIAS(ncclResult_t, ncclMemFree, (void*))
SIM_ALIAS(ncclResult_t, ncclCommRegister, (const ncclComm_t, void*, size_t, void**))
SIM_ALIAS(ncclResult_t, ncclCommDeregister, (const ncclComm_t, void*))
