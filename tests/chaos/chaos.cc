// ccltune-chaos: the chaos suite on the simulated cluster (docs/simulated-cluster.md, "Chaos suite").
//
// Launcher (default): for every seed of --seeds A-B, draws a random program (program.hpp), forks its
// ranks as separate processes that exec this binary again as workers with libccltune.so preloaded
// (LD_PRELOAD, as in the other simulated-cluster tests), and judges the run: the simulated NCCL's
// consistency checker (exit 3, "CONSISTENCY MISMATCH"), its hang detector (exit 4) and a per-run
// wall-clock limit decide, with the workers' own data checks. Every failure prints its seed and the
// command that reproduces it; the last lines are the totals and the classes of faults and features
// the runs exercised.
//
// Worker (--worker, started by the launcher): runs one rank's part of the program.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ccltune/ccltune.h"
#include "nccl.h"
#include "program.hpp"

extern "C" void simncclSetMoveData(int on);  // tests/simnccl: data moves on the next launch

namespace chaos {
namespace {

// ================================================================================================ worker

constexpr int kExitDataMismatch = 5;
constexpr int kExitExpectation = 6;
constexpr int kExitNcclError = 7;

[[noreturn]] void Die(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void Die(int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "chaos: ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}

#define NCCL_OK(call)                                                                           \
  do {                                                                                          \
    ncclResult_t r_ = (call);                                                                   \
    if (r_ != ncclSuccess) Die(kExitNcclError, "%s failed: %s", #call, ncclGetErrorString(r_)); \
  } while (0)

// Small integers in every checked type (exact: the largest result is 2 * 16 = 32).
void StoreSmall(int dtype, void* p, size_t i, int v) {
  switch (dtype) {
    case 0:
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v);
      break;
    case 1:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      break;
    case 2:
      static_cast<int32_t*>(p)[i] = v;
      break;
    case 3:
      static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v);
      break;
    case 4:
      static_cast<int64_t*>(p)[i] = v;
      break;
    case 5:
      static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v);
      break;
    case 6: {  // float16: v < 2048 is exact
      uint16_t h = 0;
      if (v > 0) {
        int e = 0;
        while ((v >> (e + 1)) != 0) ++e;  // v = 2^e * 1.m
        const uint32_t mant = (static_cast<uint32_t>(v) << (10 - e)) & 0x3ff;
        h = static_cast<uint16_t>(((e + 15) << 10) | mant);
      }
      static_cast<uint16_t*>(p)[i] = h;
      break;
    }
    case 7:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case 8:
      static_cast<double*>(p)[i] = v;
      break;
    case 9: {  // bfloat16: the high half of the float
      const float f = static_cast<float>(v);
      uint32_t x;
      std::memcpy(&x, &f, 4);
      static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(x >> 16);
      break;
    }
    default:
      Die(kExitExpectation, "dtype %d is not checkable", dtype);
  }
}

bool EqualsSmall(int dtype, const void* p, size_t i, int v) {
  const size_t es = DtypeSize(dtype);
  unsigned char want[8];
  StoreSmall(dtype, want, 0, v);
  return std::memcmp(static_cast<const char*>(p) + i * es, want, es) == 0;
}

int Value(int rank, size_t i) { return static_cast<int>((static_cast<size_t>(rank) + i) % 3); }

int Combine(int op, int a, int b) { return op == 2 ? std::max(a, b) : op == 3 ? std::min(a, b) : a + b; }

int Reduced(int op, int n, size_t i) {
  int acc = Value(0, i);
  for (int r = 1; r < n; ++r) acc = Combine(op, acc, Value(r, i));
  return acc;
}

struct ApiFns {
  decltype(&ccltuneListWorkloads) list =
      reinterpret_cast<decltype(&ccltuneListWorkloads)>(dlsym(RTLD_DEFAULT, "ccltuneListWorkloads"));
  decltype(&ccltuneSetMode) set_mode =
      reinterpret_cast<decltype(&ccltuneSetMode)>(dlsym(RTLD_DEFAULT, "ccltuneSetMode"));
};

struct Worker {
  const Program& p;
  int me;
  std::vector<ncclUniqueId> ids;
  std::vector<ncclComm_t> comms;
  Rng delay_rng;
  ApiFns api;
  // Results (this process's share: the communicators it leads).
  long workloads = 0, tuned = 0, converged = 0, checked = 0, p2p_ops = 0;
  // Buffers per (op, call): send and receive, sized for the call.
  std::vector<std::vector<std::vector<char>>> send, recv;
  std::vector<char> p2p_send, p2p_recv;
  int stream_a = 0, stream_b = 0;  // the simulated NCCL never dereferences streams: distinct addresses suffice

  Worker(const Program& prog, int rank, std::vector<ncclUniqueId> idv)
      : p(prog), me(rank), ids(std::move(idv)), comms(prog.comms.size(), nullptr), delay_rng(prog.seed * 31 + rank) {}

  cudaStream_t CollStream() { return reinterpret_cast<cudaStream_t>(&stream_a); }
  cudaStream_t P2PStream() { return reinterpret_cast<cudaStream_t>(&stream_b); }

  void Create(int c, int id) {
    const CommSpec& s = p.comms[c];
    if (me == p.slow_create_rank && c == p.slow_create_comm) usleep(p.slow_create_ms * 1000);
    if (s.kind == CommKind::kWorld) {
      NCCL_OK(ncclCommInitRank(&comms[c], p.nranks, ids[id], me));
    } else if (s.kind == CommKind::kSplit) {
      if (comms[0] == nullptr) Die(kExitExpectation, "split of communicator %d without world", c);
      NCCL_OK(ncclCommSplit(comms[0], s.color[me] < 0 ? NCCL_SPLIT_NOCOLOR : s.color[me],
                            s.reverse_key ? p.nranks - me : me, &comms[c], nullptr));
    } else {
      auto it = std::find(s.members.begin(), s.members.end(), me);
      if (it != s.members.end()) {
        NCCL_OK(ncclCommInitRank(&comms[c], static_cast<int>(s.members.size()), ids[id],
                                 static_cast<int>(it - s.members.begin())));
      }
    }
  }

  int Size(ncclComm_t c) {
    int n = 0;
    NCCL_OK(ncclCommCount(c, &n));
    return n;
  }
  int Rank(ncclComm_t c) {
    int r = 0;
    NCCL_OK(ncclCommUserRank(c, &r));
    return r;
  }

  // The leader's statistics of communicator c, and what a set-up failure must have caused.
  void Report(int c) {
    ncclComm_t h = comms[c];
    if (h == nullptr || Rank(h) != 0 || api.list == nullptr) return;
    std::vector<ccltuneWorkloadStats_t> all(256);
    int n = 0;
    if (api.list(h, all.data(), static_cast<int>(all.size()), &n) != ccltuneSuccess) return;
    long t = 0;
    for (int i = 0; i < std::min<int>(n, static_cast<int>(all.size())); ++i) {
      t += all[i].state == ccltuneStateSearching || all[i].state == ccltuneStateConverged ||
           all[i].state == ccltuneStateImported;
      converged += all[i].state == ccltuneStateConverged;
    }
    workloads += n;
    tuned += t;
    if (p.fail_setup_rank >= 0 && p.fail_setup_rank < Size(h) && t > 0) {
      Die(kExitExpectation,
          "EXPECTATION FAILED: rank %d of communicator c%d reported a failed set-up, yet %ld workloads were tuned",
          p.fail_setup_rank, c, t);
    }
  }

  void End(int c, bool abort) {
    if (comms[c] == nullptr) return;
    Report(c);
    if (abort) {
      NCCL_OK(ncclCommAbort(comms[c]));
    } else {
      NCCL_OK(ncclCommDestroy(comms[c]));
    }
    comms[c] = nullptr;
  }

  void Fill(const Call& c, int n, int r, std::vector<char>& s) {
    const size_t elems = c.count * (c.coll == kReduceScatter ? n : 1);
    for (size_t i = 0; i < elems; ++i) StoreSmall(c.dtype, s.data(), i, Value(r, i));
  }

  void Verify(const Call& c, int n, int r, const std::vector<char>& out, int oi) {
    auto fail = [&](size_t i, int want) {
      Die(kExitDataMismatch, "DATA MISMATCH: op %d %s on c%d (rank %d of %d) element %zu: expected %d", oi,
          CollName(c.coll), c.comm, r, n, i, want);
    };
    const int root = c.root % n;
    switch (c.coll) {
      case kAllReduce:
      case kReduce:
        if (c.coll == kReduce && r != root) return;
        for (size_t i = 0; i < c.count; ++i)
          if (!EqualsSmall(c.dtype, out.data(), i, Reduced(c.op, n, i))) fail(i, Reduced(c.op, n, i));
        break;
      case kBroadcast:
        for (size_t i = 0; i < c.count; ++i)
          if (!EqualsSmall(c.dtype, out.data(), i, Value(root, i))) fail(i, Value(root, i));
        break;
      case kAllGather:
        for (int q = 0; q < n; ++q)
          for (size_t i = 0; i < c.count; ++i)
            if (!EqualsSmall(c.dtype, out.data(), q * c.count + i, Value(q, i))) fail(q * c.count + i, Value(q, i));
        break;
      case kReduceScatter:
        for (size_t i = 0; i < c.count; ++i) {
          const int want = Reduced(c.op, n, r * c.count + i);
          if (!EqualsSmall(c.dtype, out.data(), i, want)) fail(i, want);
        }
        break;
    }
  }

  void Issue(const Call& c, std::vector<char>& s, std::vector<char>& r) {
    ncclComm_t h = comms[c.comm];
    const int n = Size(h);
    const auto dt = static_cast<ncclDataType_t>(c.dtype);
    const auto op = static_cast<ncclRedOp_t>(std::max(c.op, 0));
    switch (c.coll) {
      case kAllReduce:
        NCCL_OK(ncclAllReduce(s.data(), r.data(), c.count, dt, op, h, CollStream()));
        break;
      case kReduce:
        NCCL_OK(ncclReduce(s.data(), r.data(), c.count, dt, op, c.root % n, h, CollStream()));
        break;
      case kBroadcast:
        NCCL_OK(ncclBroadcast(s.data(), r.data(), c.count, dt, c.root % n, h, CollStream()));
        break;
      case kAllGather:
        NCCL_OK(ncclAllGather(s.data(), r.data(), c.count, dt, h, CollStream()));
        break;
      case kReduceScatter:
        NCCL_OK(ncclReduceScatter(s.data(), r.data(), c.count, dt, op, h, CollStream()));
        break;
    }
  }

  // Point-to-point on another stream; the bytes carry the sender's rank and the iteration.
  void FillP2P(int r, int it, size_t bytes) {
    for (size_t j = 0; j < bytes; ++j) p2p_send[j] = static_cast<char>(r * 31 + j * 7 + it);
  }
  void VerifyP2P(int from, int it, size_t bytes, int oi) {
    for (size_t j = 0; j < bytes; ++j) {
      if (p2p_recv[j] != static_cast<char>(from * 31 + j * 7 + it)) {
        Die(kExitDataMismatch, "DATA MISMATCH: p2p op %d from rank %d byte %zu", oi, from, j);
      }
    }
  }
  // pattern 1 inside a group the caller opened: post both directions. Returns the peer received from.
  int PostRing(const P2P& q, ncclComm_t h) {
    const int n = Size(h), r = Rank(h);
    const auto dt = static_cast<ncclDataType_t>(q.dtype);
    NCCL_OK(ncclSend(p2p_send.data(), q.count, dt, (r + 1) % n, h, P2PStream()));
    NCCL_OK(ncclRecv(p2p_recv.data(), q.count, dt, (r + n - 1) % n, h, P2PStream()));
    return (r + n - 1) % n;
  }
  void RunP2P(const P2P& q, int it, int oi) {
    ncclComm_t h = comms[q.comm];
    if (h == nullptr || Size(h) < 2) return;
    const int n = Size(h), r = Rank(h);
    const size_t bytes = q.count * DtypeSize(q.dtype);
    const auto dt = static_cast<ncclDataType_t>(q.dtype);
    FillP2P(r, it, bytes);
    std::memset(p2p_recv.data(), 0, bytes);
    ++p2p_ops;
    if (q.pattern == 0) {  // pipeline: receive from the previous stage, send to the next
      if (r > 0) {
        NCCL_OK(ncclRecv(p2p_recv.data(), q.count, dt, r - 1, h, P2PStream()));
        VerifyP2P(r - 1, it, bytes, oi);
      }
      if (r < n - 1) NCCL_OK(ncclSend(p2p_send.data(), q.count, dt, r + 1, h, P2PStream()));
    } else {
      NCCL_OK(ncclGroupStart());
      const int from = PostRing(q, h);
      NCCL_OK(ncclGroupEnd());
      VerifyP2P(from, it, bytes, oi);
    }
  }

  void RunOp(int oi, int it) {
    const Op& op = p.body[oi];
    if (op.kind == Op::kP2P) {
      RunP2P(op.p2p, it, oi);
      return;
    }
    // A rank in none of the group's communicators still posts the group's point-to-point part.
    bool any = op.with_p2p && comms[op.p2p.comm] != nullptr;
    for (const Call& c : op.calls) any |= comms[c.comm] != nullptr;
    if (!any) return;
    const bool check = op.checked && (it % kCheckEvery == 0 || it == p.iters - 1);
    if (check) {
      for (size_t k = 0; k < op.calls.size(); ++k) {
        const Call& c = op.calls[k];
        if (comms[c.comm] == nullptr) continue;
        Fill(c, Size(comms[c.comm]), Rank(comms[c.comm]), send[oi][k]);
        std::fill(recv[oi][k].begin(), recv[oi][k].end(), 0);
      }
      simncclSetMoveData(1);
    }
    int ring_from = -1;
    ncclComm_t ring = op.with_p2p ? comms[op.p2p.comm] : nullptr;
    const bool ring_on = ring != nullptr && Size(ring) >= 2;
    size_t ring_bytes = 0;
    if (op.kind == Op::kGroup) NCCL_OK(ncclGroupStart());
    for (size_t k = 0; k < op.calls.size(); ++k) {
      const Call& c = op.calls[k];
      if (comms[c.comm] != nullptr) Issue(c, send[oi][k], recv[oi][k]);
    }
    if (ring_on) {
      ring_bytes = op.p2p.count * DtypeSize(op.p2p.dtype);
      FillP2P(Rank(ring), it, ring_bytes);
      std::memset(p2p_recv.data(), 0, ring_bytes);
      ring_from = PostRing(op.p2p, ring);
      ++p2p_ops;
    }
    if (op.kind == Op::kGroup) NCCL_OK(ncclGroupEnd());
    if (ring_on) VerifyP2P(ring_from, it, ring_bytes, oi);
    if (check) {
      for (size_t k = 0; k < op.calls.size(); ++k) {
        const Call& c = op.calls[k];
        if (comms[c.comm] == nullptr) continue;
        Verify(c, Size(comms[c.comm]), Rank(comms[c.comm]), recv[oi][k], oi);
      }
      ++checked;
    }
  }

  void SetMode(const ModeSwitch& m) {
    if (comms[m.comm] == nullptr || api.set_mode == nullptr) return;
    const ccltuneConfig_t forced{m.algo, m.proto, m.channels, m.chunk};
    const int rc = api.set_mode(comms[m.comm], static_cast<ccltuneMode_t>(m.mode), m.mode == 3 ? &forced : nullptr);
    if (rc != ccltuneSuccess && rc != ccltuneUnavailable) {
      Die(kExitExpectation, "EXPECTATION FAILED: ccltuneSetMode(c%d, %d) returned %d", m.comm, m.mode, rc);
    }
  }

  void Delay() {
    if (me == 0 && p.slow_leader_us > 0) usleep(p.slow_leader_us);
    if (p.delay_max_us[me] > 0 && delay_rng.Below(100) < static_cast<uint64_t>(p.delay_pct)) {
      usleep(static_cast<useconds_t>(delay_rng.Below(p.delay_max_us[me] + 1)));
    }
  }

  int Run() {
    // Buffers: the largest any communicator could need (world size).
    send.resize(p.body.size());
    recv.resize(p.body.size());
    size_t p2p_bytes = 0;
    for (size_t oi = 0; oi < p.body.size(); ++oi) {
      const Op& op = p.body[oi];
      for (const Call& c : op.calls) {
        const size_t b = c.count * DtypeSize(c.dtype);
        send[oi].emplace_back(b * (c.coll == kReduceScatter ? p.nranks : 1));
        recv[oi].emplace_back(b * (c.coll == kAllGather ? p.nranks : 1));
      }
      if (op.kind == Op::kP2P || op.with_p2p) p2p_bytes = std::max(p2p_bytes, op.p2p.count * DtypeSize(op.p2p.dtype));
    }
    p2p_send.resize(p2p_bytes);
    p2p_recv.resize(p2p_bytes);

    for (size_t c = 0; c < p.comms.size(); ++c) Create(static_cast<int>(c), p.comms[c].id);
    size_t next_event = 0, next_mode = 0;
    for (int it = 0; it < p.iters; ++it) {
      for (int oi = 0; oi < static_cast<int>(p.body.size()); ++oi) {
        while (next_event < p.events.size() && p.events[next_event].iter == it &&
               p.events[next_event].before_op == oi) {
          const Event& e = p.events[next_event++];
          End(e.comm, e.abort);
          if (e.recreate) Create(e.comm, p.comms[e.comm].kind == CommKind::kSplit ? 0 : e.new_id);
        }
        while (next_mode < p.modes.size() && p.modes[next_mode].iter == it && p.modes[next_mode].before_op == oi) {
          SetMode(p.modes[next_mode++]);
        }
        Delay();
        RunOp(oi, it);
      }
    }
    // Splits first, world last (as frameworks tear down).
    for (size_t c = p.comms.size(); c-- > 0;) End(static_cast<int>(c), p.abort_at_end);
    std::printf("CHAOS-RESULT rank %d workloads %ld tuned %ld converged %ld checked %ld p2p %ld\n", me, workloads,
                tuned, converged, checked, p2p_ops);
    std::fflush(stdout);
    return 0;
  }
};

std::vector<ncclUniqueId> ParseIds(const char* hex) {
  std::vector<ncclUniqueId> out;
  std::string s = hex != nullptr ? hex : "";
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    ncclUniqueId id{};
    for (size_t i = 0; i + 1 < item.size() && i / 2 < sizeof(id.internal); i += 2)
      id.internal[i / 2] = static_cast<char>(std::stoi(item.substr(i, 2), nullptr, 16));
    out.push_back(id);
  }
  return out;
}

int WorkerMain(uint64_t seed, int rank) {
  const Program p = Generate(seed);
  std::vector<ncclUniqueId> ids = ParseIds(std::getenv("CHAOS_IDS"));
  if (static_cast<int>(ids.size()) < p.ids)
    Die(kExitExpectation, "CHAOS_IDS holds %zu ids, need %d", ids.size(), p.ids);
  Worker w(p, rank, std::move(ids));
  return w.Run();
}

// ================================================================================================ launcher

struct Options {
  uint64_t first = 1, last = 1;
  int jobs = 1;
  std::string lib;
  double timeout_s = 60;
  int hang_s = 10;
  int stop_after = 0;  // stop after this many failed runs (0: never)
  int progress = 0;    // a progress line every this many runs (0: none)
  bool verbose = false;
  bool keep = false;
  std::string self;
};

enum Outcome { kPass, kMismatch, kHang, kCrash };

struct Run {
  uint64_t seed = 0;
  Program prog;
  std::string dir;
  pid_t pgid = 0;
  std::vector<pid_t> pids;
  std::vector<int> status;  // per rank, -1 while running
  int live = 0;
  std::chrono::steady_clock::time_point start, first_bad;
  bool any_bad = false, killed_timeout = false, killed_after_failure = false;
};

std::string Hex(const ncclUniqueId& id) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    const unsigned char b = static_cast<unsigned char>(id.internal[i]);
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// The import file the leader will be given (every rank names the same path).
void MakeImport(const Program& p, const std::string& path) {
  Rng r(p.seed ^ 0x5eed1e55ull);
  const std::string valid_prefix =
      "{\"schema\": 1, \"producer\": \"ccltune 0.1.0\", \"configs\": [{\"fingerprint\": {\"gpu\": \"simulated\", "
      "\"nranks\": " +
      std::to_string(p.nranks) +
      ", \"nnodes\": 1, \"nccl_version\": 22809, \"plugin_version\": 5, \"channel_budget\": 32, "
      "\"ccltune_version\": \"0.1.0\"}, \"workloads\": [{\"key\": {\"grouped\": false, \"calls\": [{\"collective\": "
      "\"allreduce\", \"dtype\": \"float32\", \"op\": \"sum\", \"bytes\": 65536}]}, \"config\": {\"algorithm\": "
      "\"ring\", \"protocol\": \"ll\", \"channels\": 4, \"chunk_bytes\": 0}, \"state\": \"converged\"}]}]}";
  switch (p.import_kind) {
    case kTruncated:
      WriteFile(path, valid_prefix.substr(0, 1 + r.Below(valid_prefix.size() - 2)));
      break;
    case kGarbage: {
      std::string g(1 + r.Below(4096), '\0');
      for (char& c : g) c = static_cast<char>(r.Next());
      WriteFile(path, g);
      break;
    }
    case kEmpty:
      WriteFile(path, "");
      break;
    case kWrongSchema: {
      std::string s = valid_prefix;
      s.replace(s.find("\"schema\": 1"), 11, "\"schema\": " + std::to_string(2 + r.Below(1000)));
      WriteFile(path, s);
      break;
    }
    case kWrongFingerprint: {
      std::string s = valid_prefix;
      s.replace(s.find("\"gpu\": \"simulated\""), 18, "\"gpu\": \"NVIDIA H200\"");
      WriteFile(path, s);
      break;
    }
    case kMissing:
      break;  // the path names nothing
    case kDirectory:
      mkdir(path.c_str(), 0700);
      break;
  }
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void RemoveTree(const std::string& dir) {
  const std::string cmd = "rm -rf '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "chaos: could not remove %s\n", dir.c_str());
}

bool Start(const Options& o, uint64_t seed, Run* run) {
  run->seed = seed;
  run->prog = Generate(seed);
  const Program& p = run->prog;
  char tmpl[] = "/tmp/ccltune-chaos-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::perror("chaos: mkdtemp");
    return false;
  }
  run->dir = tmpl;
  std::string ids;
  for (int i = 0; i < p.ids; ++i) {
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) {
      std::fprintf(stderr, "chaos: ncclGetUniqueId failed\n");
      return false;
    }
    ids += (i ? "," : "") + Hex(id);
  }
  std::vector<std::pair<std::string, std::string>> env = {
      {"LD_PRELOAD", o.lib},
      {"SIMNCCL_TIMEOUT_S", std::to_string(o.hang_s)},
      {"CCLTUNE_SUMMARY", "0"},
      {"CHAOS_IDS", ids},
  };
  for (auto [k, v] : p.env) {
    if (auto at = v.find("@RUN@"); at != std::string::npos) v.replace(at, 5, run->dir);
    env.emplace_back(k, v);
  }
  if (!p.drift.empty()) env.emplace_back("SIMNCCL_DRIFT", p.drift);
  if (p.fail_setup_rank >= 0) env.emplace_back("CCLTUNE_TEST_FAIL_SETUP_RANK", std::to_string(p.fail_setup_rank));
  if (p.import_kind != kNoImport) {
    const std::string path = run->dir + "/import.json";
    MakeImport(p, path);
    env.emplace_back("CCLTUNE_IMPORT", path);
  }
  const std::string seed_s = std::to_string(seed);
  run->start = std::chrono::steady_clock::now();
  run->status.assign(p.nranks, -1);
  for (int r = 0; r < p.nranks; ++r) {
    const std::string log = run->dir + "/rank" + std::to_string(r) + ".log";
    const std::string rank_s = std::to_string(r);
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("chaos: fork");
      return false;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // no orphaned ranks if the launcher is killed
      setpgid(0, run->pgid);
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
      }
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      execl(o.self.c_str(), o.self.c_str(), "--worker", seed_s.c_str(), rank_s.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    setpgid(pid, run->pgid);
    if (run->pgid == 0) run->pgid = pid;
    run->pids.push_back(pid);
    ++run->live;
  }
  return true;
}

struct Totals {
  long runs = 0, mismatches = 0, hangs = 0, crashes = 0, tuned_runs = 0, ranks_total = 0;
  std::map<std::string, long> classes;
  std::vector<uint64_t> failed;
};

std::string Repro(const Options& o, uint64_t seed) {
  return o.self.substr(0, o.self.rfind('/') + 1) + "ccltune-chaos --seeds " + std::to_string(seed) + "-" +
         std::to_string(seed) + " --lib " + o.lib + " -v";
}

Outcome Judge(const Options& o, Run& run, Totals* t, double secs) {
  const Program& p = run.prog;
  std::string all;
  long tuned = 0;
  bool data_bad = false, expectation_bad = false;
  std::vector<std::string> logs(p.nranks);
  for (int r = 0; r < p.nranks; ++r) {
    logs[r] = ReadAll(run.dir + "/rank" + std::to_string(r) + ".log");
    all += logs[r];
    std::istringstream in(logs[r]);
    std::string line;
    while (std::getline(in, line)) {
      long v = 0;
      if (std::sscanf(line.c_str(), "CHAOS-RESULT rank %*d workloads %*d tuned %ld", &v) == 1) tuned += v;
    }
  }
  data_bad = all.find("DATA MISMATCH") != std::string::npos;
  expectation_bad = all.find("EXPECTATION FAILED") != std::string::npos;
  bool any_exit3 = false, any_exit4 = false, any_bad = false;
  for (int st : run.status) {
    if (WIFEXITED(st) && WEXITSTATUS(st) == 3) any_exit3 = true;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 4) any_exit4 = true;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) any_bad = true;
  }
  Outcome out = kPass;
  if (any_exit3 || all.find("CONSISTENCY MISMATCH") != std::string::npos || data_bad || expectation_bad) {
    out = kMismatch;
  } else if (any_exit4 || run.killed_timeout || all.find("simnccl: HANG") != std::string::npos) {
    out = kHang;
  } else if (any_bad) {
    out = kCrash;
  }
  ++t->runs;
  t->ranks_total += p.nranks;
  for (const std::string& c : p.Classes()) ++t->classes[c];
  if (tuned > 0) ++t->tuned_runs, ++t->classes["tuned"];
  static const char* const names[] = {"pass", "MISMATCH", "HANG", "CRASH"};
  if (out == kPass) {
    if (o.verbose) {
      std::printf("chaos: seed %" PRIu64 " pass (%d ranks, %.2f s, %ld tuned workloads)\n", run.seed, p.nranks, secs,
                  tuned);
    }
    return out;
  }
  if (out == kMismatch) ++t->mismatches;
  if (out == kHang) ++t->hangs;
  if (out == kCrash) ++t->crashes;
  t->failed.push_back(run.seed);
  std::printf("chaos: FAIL seed %" PRIu64 ": %s (%d ranks, %.2f s)%s\n", run.seed, names[out], p.nranks, secs,
              run.killed_timeout ? " [killed at the per-run limit]" : "");
  std::printf("chaos:   program: %s\n", p.Describe().c_str());
  for (int r = 0; r < p.nranks; ++r) {
    const int st = run.status[r];
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) continue;
    std::printf("chaos:   rank %d %s %d\n", r, WIFEXITED(st) ? "exit" : "signal",
                WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  }
  // The lines that say what happened, from every rank's log.
  for (int r = 0; r < p.nranks; ++r) {
    std::istringstream in(logs[r]);
    std::string line;
    int shown = 0;
    while (std::getline(in, line) && shown < 8) {
      if (line.find("MISMATCH") != std::string::npos || line.find("HANG") != std::string::npos ||
          line.find("EXPECTATION") != std::string::npos || line.find("chaos:") != std::string::npos ||
          line.find("WARN") != std::string::npos || line.find("rror") != std::string::npos) {
        std::printf("chaos:   [rank %d] %s\n", r, line.c_str());
        ++shown;
      }
    }
  }
  std::printf("chaos:   reproduce: %s\n", Repro(o, run.seed).c_str());
  std::printf("chaos:   logs: %s\n", o.keep ? run.dir.c_str() : "(removed; add --keep to keep them)");
  std::fflush(stdout);
  return out;
}

bool ParseSeeds(const std::string& s, uint64_t* a, uint64_t* b) {
  unsigned long long x = 0, y = 0;
  if (std::sscanf(s.c_str(), "%llu-%llu", &x, &y) == 2 && x <= y) {
    *a = x, *b = y;
    return true;
  }
  if (std::sscanf(s.c_str(), "%llu", &x) == 1) {
    *a = *b = x;
    return true;
  }
  return false;
}

int Usage() {
  std::fprintf(stderr,
               "usage: ccltune-chaos --seeds A-B [-j N] [--lib libccltune.so] [--timeout S] [--hang S]\n"
               "                     [--stop-after N] [--progress N] [--keep] [-v] [--print-program]\n");
  return 2;
}

int LauncherMain(int argc, char** argv) {
  Options o;
  o.lib = CCLTUNE_CHAOS_DEFAULT_LIB;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 2;
  self[n] = 0;
  o.self = self;
  bool print_only = false;
  bool seeds_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--seeds") {
      if (!ParseSeeds(next(), &o.first, &o.last)) return Usage();
      seeds_given = true;
    } else if (a == "-j") {
      o.jobs = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--lib") {
      o.lib = next();
    } else if (a == "--timeout") {
      o.timeout_s = std::atof(next().c_str());
    } else if (a == "--hang") {
      o.hang_s = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--stop-after") {
      o.stop_after = std::atoi(next().c_str());
    } else if (a == "--progress") {
      o.progress = std::atoi(next().c_str());
    } else if (a == "--keep") {
      o.keep = true;
    } else if (a == "-v") {
      o.verbose = true;
    } else if (a == "--print-program") {
      print_only = true;
    } else {
      return Usage();
    }
  }
  if (!seeds_given) return Usage();
  if (print_only) {
    for (uint64_t s = o.first; s <= o.last; ++s) std::printf("%s\n", Generate(s).Describe().c_str());
    return 0;
  }
  if (access(o.lib.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "chaos: cannot read %s (--lib)\n", o.lib.c_str());
    return 2;
  }
  // The launcher itself runs without ccltune; a stray preload would tune it too.
  unsetenv("LD_PRELOAD");
  const auto t0 = std::chrono::steady_clock::now();
  Totals t;
  std::deque<Run> active;
  uint64_t next = o.first;
  bool stop = false;
  for (;;) {
    while (!stop && next <= o.last && static_cast<int>(active.size()) < o.jobs) {
      active.emplace_back();
      if (!Start(o, next, &active.back())) return 2;
      ++next;
    }
    if (active.empty()) break;
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    const auto now = std::chrono::steady_clock::now();
    if (pid > 0) {
      for (Run& run : active) {
        auto it = std::find(run.pids.begin(), run.pids.end(), pid);
        if (it == run.pids.end()) continue;
        run.status[it - run.pids.begin()] = st;
        --run.live;
        if ((!WIFEXITED(st) || WEXITSTATUS(st) != 0) && !run.any_bad) run.any_bad = true, run.first_bad = now;
      }
    } else {
      usleep(1000);
    }
    for (auto it = active.begin(); it != active.end();) {
      Run& run = *it;
      const double secs = std::chrono::duration<double>(now - run.start).count();
      if (run.live > 0 && secs > o.timeout_s && !run.killed_timeout) {
        run.killed_timeout = true;
        kill(-run.pgid, SIGKILL);
      }
      // A rank failed: the simulated NCCL ends the others (abort code) within moments; what remains
      // after a grace period would only wait for its hang timeout.
      if (run.live > 0 && run.any_bad && !run.killed_after_failure &&
          std::chrono::duration<double>(now - run.first_bad).count() > 3.0) {
        run.killed_after_failure = true;
        kill(-run.pgid, SIGKILL);
      }
      if (run.live > 0) {
        ++it;
        continue;
      }
      const Outcome out = Judge(o, run, &t, secs);
      if (o.progress > 0 && t.runs % o.progress == 0) {
        std::printf("chaos: progress: %ld runs, %ld mismatches, %ld hangs, %ld crashes, %.0f s\n", t.runs, t.mismatches,
                    t.hangs, t.crashes, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        std::fflush(stdout);
      }
      if (!o.keep) RemoveTree(run.dir);
      if (out != kPass && o.stop_after > 0 && static_cast<int>(t.failed.size()) >= o.stop_after) stop = true;
      it = active.erase(it);
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("chaos: seeds %" PRIu64 "-%" PRIu64 ", %.1f s wall (%.2f s per run), %ld ranks in all\n", o.first,
              std::min(o.last, next - 1), wall, t.runs ? wall / t.runs : 0.0, t.ranks_total);
  static const char* const kOrder[] = {"tuned",        "ranks>8",     "comms>1",        "comms=3",     "split",
                                       "init-subset",  "group",       "group-2-comms",  "p2p",         "p2p-in-group",
                                       "data-checked", "destroy",     "abort",          "recreate",    "tuner-v6",
                                       "export",       "mode-switch", "delays",         "slow-leader", "slow-create",
                                       "drift",        "setup-fail",  "corrupt-import", "sync-split"};
  std::string line = "chaos: classes:";
  for (const char* c : kOrder) line += std::string(" ") + c + "=" + std::to_string(t.classes[c]);
  std::printf("%s\n", line.c_str());
  if (!t.failed.empty()) {
    std::string s = "chaos: failed seeds:";
    for (uint64_t f : t.failed) s += " " + std::to_string(f);
    std::printf("%s\n", s.c_str());
  }
  std::printf("chaos: %ld runs, %ld mismatches, %ld hangs, %ld crashes\n", t.runs, t.mismatches, t.hangs, t.crashes);
  return t.failed.empty() ? 0 : 1;
}

}  // namespace
}  // namespace chaos

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--worker") == 0) {
    return chaos::WorkerMain(std::strtoull(argv[2], nullptr, 10), std::atoi(argv[3]));
  }
  return chaos::LauncherMain(argc, argv);
}
