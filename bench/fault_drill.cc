// ccltune-drill: a training-like loop on one NCCL communicator for fault drills on real NCCL
// (scripts/gpu-faults.sh): a killed peer, ncclCommAbort during tuning, ranks set up differently. It
// waits for its GPU work the way frameworks do (PyTorch's watchdog): polling the step's event and
// ncclCommGetAsyncError, so a failed communicator is reported with NCCL's own error instead of a hang,
// and a watchdog thread reports a step that makes no progress (a hang) and where it is stuck: inside an
// NCCL call that has not returned, or waiting for the GPU.
//
// No MPI: the ranks are plain processes (so a launcher never kills the survivors of a killed rank), the
// rank and size come from the environment (RANK/WORLD_SIZE, LOCAL_RANK, or Open MPI's variables), and
// rank 0 hands NCCL's unique id to the others through a file (--id-file).
//
//   ccltune-drill --id-file F [--steps N] [--abort-at-step K] [--hang-s S] [--watchdog-abort] [--pid-dir D]
//
// --watchdog-abort: the watchdog thread also asks ncclCommGetAsyncError every 100 ms and, on an error,
// calls ncclCommAbort itself, as PyTorch's watchdog does; the main thread, if it was blocked inside a
// call, then reports that the call returned (exit 3).
//
// Each step runs all-reduce 64 KiB and 1 MiB, all-gather 1 MiB and reduce-scatter 4 MiB (fp32, sum).
// Output: one "drill rank R: ..." line per event; exit status 0 after --steps steps (or after the abort
// asked for), 3 when NCCL reported an error (a call's return code or the asynchronous error; the
// communicator is then aborted), 4 when the watchdog saw no progress for --hang-s seconds, 2 on bad
// arguments, 1 when set-up failed.
#include <dlfcn.h>
#include <execinfo.h>
#include <nccl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ccltune/ccltune.h"
#include "executor/executor.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string id_file;
  std::string pid_dir;
  long steps = 10000;
  long abort_at_step = -1;
  double hang_s = 20;
  bool watchdog_abort = false;
};

int EnvInt(const char* const* names, int fallback) {
  for (const char* const* n = names; *n != nullptr; ++n) {
    if (const char* v = std::getenv(*n); v != nullptr && *v != '\0') return std::atoi(v);
  }
  return fallback;
}

// Where the process is, for the watchdog's report.
enum Phase : int { kSetUp, kInCall, kWaitingForGpu, kBetweenSteps, kAborting };
const char* PhaseName(int p) {
  switch (p) {
    case kSetUp:
      return "setting up the communicator";
    case kInCall:
      return "inside an NCCL call that has not returned";
    case kWaitingForGpu:
      return "waiting for the step's GPU work";
    case kAborting:
      return "inside ncclCommAbort";
    default:
      return "between steps";
  }
}

std::atomic<int> g_phase{kSetUp};
std::atomic<long> g_step{-1};
std::atomic<int64_t> g_progress_ns{0};
// The communicator for the watchdog, once it exists; the watchdog uses it, and the main thread takes it
// away before destroying or aborting it, only under g_comm_mu.
std::mutex g_comm_mu;
ncclComm_t g_comm = nullptr;
std::atomic<bool> g_watchdog_aborted{false};
int g_rank = 0;

pthread_t g_main_thread;

// SIGUSR1, sent by the watchdog to the main thread: its stack, so that a hang says where it is (frames
// in libccltune.so or libnccl.so as library+offset; `addr2line -f -e LIB OFFSET` names them).
void DumpStack(int) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  static const char kHead[] = "drill: stack of the main thread:\n";
  if (write(STDOUT_FILENO, kHead, sizeof(kHead) - 1) < 0) return;
  backtrace_symbols_fd(frames, n, STDOUT_FILENO);
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

__attribute__((format(printf, 1, 2))) void Say(const char* fmt, ...) {
  char buf[768];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  std::printf("drill rank %d: %s\n", g_rank, buf);
  std::fflush(stdout);
}

// ccltune's summary when it is in the process: how many workloads are searching.
std::string TuningState() {
  using GetSummary = int (*)(ccltuneSummary_t*);
  auto fn = reinterpret_cast<GetSummary>(dlsym(RTLD_DEFAULT, "ccltuneGetSummary"));
  if (fn == nullptr) return "ccltune not in the process";
  ccltuneSummary_t s{};
  if (fn(&s) != 0) return "ccltune summary unavailable";
  return "ccltune: " + std::to_string(s.workloads) + " workloads, " + std::to_string(s.searching) + " searching, " +
         std::to_string(s.converged) + " converged";
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--id-file" && (v = value())) {
      o->id_file = v;
    } else if (a == "--pid-dir" && (v = value())) {
      o->pid_dir = v;
    } else if (a == "--steps" && (v = value())) {
      o->steps = std::atol(v);
    } else if (a == "--abort-at-step" && (v = value())) {
      o->abort_at_step = std::atol(v);
    } else if (a == "--hang-s" && (v = value())) {
      o->hang_s = std::atof(v);
    } else if (a == "--watchdog-abort") {
      o->watchdog_abort = true;
    } else {
      std::fprintf(stderr,
                   "usage: ccltune-drill --id-file F [--steps N] [--abort-at-step K] [--hang-s S] [--watchdog-abort] "
                   "[--pid-dir D]\n");
      return false;
    }
  }
  return !o->id_file.empty() && o->steps > 0 && o->hang_s > 0;
}

// Rank 0 writes the id (to a temporary name, then renamed: readers never see half of it); the others
// wait for it.
bool ShareId(const std::string& path, int rank, ncclUniqueId* id) {
  if (rank == 0) {
    if (ncclGetUniqueId(id) != ncclSuccess) return false;
    const std::string tmp = path + ".tmp" + std::to_string(getpid());
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(id), sizeof(*id));
    return std::rename(tmp.c_str(), path.c_str()) == 0;
  }
  const auto start = Clock::now();
  while (Since(start) < 60) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(reinterpret_cast<char*>(id), sizeof(*id)) && in.gcount() == sizeof(*id)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!ParseArgs(argc, argv, &opt)) return 2;
  static const char* kRank[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "LOCAL_RANK", nullptr};
  static const char* kSize[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "LOCAL_WORLD_SIZE", nullptr};
  g_rank = EnvInt(kRank, 0);
  const int nranks = EnvInt(kSize, 1);
  if (!opt.pid_dir.empty()) {
    std::ofstream(opt.pid_dir + "/pid." + std::to_string(g_rank)) << getpid() << "\n";
  }

  g_main_thread = pthread_self();
  std::signal(SIGUSR1, DumpStack);
  void* warm[2];
  backtrace(warm, 2);  // loads the unwinder now, not inside the signal handler
  // The watchdog: a step without progress for --hang-s seconds is a hang; say where, and end.
  g_progress_ns = NowNs();
  std::thread([hang_ns = static_cast<int64_t>(opt.hang_s * 1e9), abort_on_error = opt.watchdog_abort] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (abort_on_error && !g_watchdog_aborted.load()) {
        std::lock_guard<std::mutex> lock(g_comm_mu);
        ncclResult_t async = ncclSuccess;
        if (g_comm != nullptr && ncclCommGetAsyncError(g_comm, &async) == ncclSuccess && async != ncclSuccess &&
            async != ncclInProgress) {
          Say("watchdog: NCCL error at step %ld: %s; ncclCommAbort from the watchdog thread (main thread %s)",
              g_step.load(), ncclGetErrorString(async), PhaseName(g_phase.load()));
          g_watchdog_aborted = true;
          const auto t = Clock::now();
          ncclCommAbort(g_comm);
          g_comm = nullptr;
          Say("watchdog: ncclCommAbort returned after %.3f s", Since(t));
          g_progress_ns = NowNs();  // the main thread gets hang_s from now to return
        }
      }
      const int64_t idle = NowNs() - g_progress_ns.load();
      if (idle > hang_ns) {
        pthread_kill(g_main_thread, SIGUSR1);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        Say("HANG: no progress for %.0f s at step %ld, %s", idle / 1e9, g_step.load(), PhaseName(g_phase.load()));
        _exit(4);
      }
    }
  }).detach();

  auto device = ccltune::executor::OpenDevice();
  if (!device.ok()) {
    Say("no device: %s", std::string(device.status().message()).c_str());
    return 1;
  }
  ccltune::executor::Device& dev = **device;
  if (auto st = dev.SetDevice(0); !st.ok()) {
    Say("SetDevice: %s", std::string(st.message()).c_str());
    return 1;
  }
  ncclUniqueId id;
  if (!ShareId(opt.id_file, g_rank, &id)) {
    Say("cannot share NCCL's unique id through %s", opt.id_file.c_str());
    return 1;
  }
  ncclComm_t comm = nullptr;
  g_phase = kInCall;
  if (ncclResult_t r = ncclCommInitRank(&comm, nranks, id, g_rank); r != ncclSuccess) {
    Say("ncclCommInitRank: %s", ncclGetErrorString(r));
    return 3;
  }
  auto stream = dev.CreateStream();
  auto event = dev.CreateEvent();
  auto send = dev.Alloc(4 << 20);
  auto recv = dev.Alloc(16 << 20);
  if (!stream.ok() || !event.ok() || !send.ok() || !recv.ok()) {
    Say("device set-up failed");
    return 1;
  }
  auto* s = static_cast<cudaStream_t>(*stream);
  {
    std::lock_guard<std::mutex> lock(g_comm_mu);
    g_comm = comm;
  }
  // The main thread takes the communicator back before destroying or aborting it: false when the
  // watchdog aborted it already (it is gone).
  auto take_back = [] {
    std::lock_guard<std::mutex> lock(g_comm_mu);
    const bool had = g_comm != nullptr;
    g_comm = nullptr;
    return had;
  };
  auto release_device = [&] {
    dev.Free(*send);
    dev.Free(*recv);
    dev.DestroyEvent(*event);
    dev.DestroyStream(*stream);
  };
  Say("%d ranks, communicator ready; %s", nranks, TuningState().c_str());

  const auto start = Clock::now();
  auto last_report = start;
  long step = 0;
  auto fail = [&](const char* what, ncclResult_t r) {
    if (g_watchdog_aborted.load() || !take_back()) {
      Say("the main thread's %s returned %s at step %ld after the watchdog's abort; exit 3", what,
          ncclGetErrorString(r), step);
      std::fflush(stdout);
      _exit(3);
    }
    Say("NCCL error at step %ld after %.1f s: %s: %s (%s); %s; aborting the communicator", step, Since(start), what,
        ncclGetErrorString(r), ncclGetLastError(comm), TuningState().c_str());
    g_phase = kAborting;
    const auto t = Clock::now();
    ncclCommAbort(comm);
    Say("ncclCommAbort returned after %.3f s; exit 3", Since(t));
    std::fflush(stdout);
    _exit(3);
  };
  for (; step < opt.steps; ++step) {
    g_step = step;
    if (g_watchdog_aborted.load()) fail("the loop", ncclSuccess);  // the communicator is gone
    g_phase = kInCall;
    void* sb = *send;
    void* rb = *recv;
    ncclResult_t r = ncclAllReduce(sb, rb, (64 << 10) / 4, ncclFloat32, ncclSum, comm, s);
    if (r == ncclSuccess) r = ncclAllReduce(sb, rb, (1 << 20) / 4, ncclFloat32, ncclSum, comm, s);
    if (r == ncclSuccess) r = ncclAllGather(sb, rb, (1 << 20) / 4, ncclFloat32, comm, s);
    if (r == ncclSuccess) r = ncclReduceScatter(rb, sb, (1 << 20) / 4, ncclFloat32, ncclSum, comm, s);
    if (r != ncclSuccess) fail("a collective returned", r);
    if (step == opt.abort_at_step) {
      // ncclCommAbort with this step's collectives possibly still in flight (during tuning).
      Say("calling ncclCommAbort at step %ld as asked; %s", step, TuningState().c_str());
      g_phase = kAborting;
      if (!take_back()) fail("ncclCommAbort as asked", ncclSuccess);
      const auto t = Clock::now();
      r = ncclCommAbort(comm);
      Say("ncclCommAbort returned %s after %.3f s; exit 0", ncclGetErrorString(r), Since(t));
      release_device();
      return r == ncclSuccess ? 0 : 3;
    }
    g_phase = kWaitingForGpu;
    if (!dev.RecordEvent(*event, *stream).ok()) fail("recording the step's event", ncclSystemError);
    for (;;) {
      auto q = dev.QueryEvent(*event);
      if (!q.ok()) fail("querying the step's event", ncclUnhandledCudaError);
      if (*q == ccltune::executor::EventState::kDone) break;
      ncclResult_t async = ncclSuccess;
      bool gone = false;
      {
        std::lock_guard<std::mutex> lock(g_comm_mu);
        if (g_comm == nullptr) {
          gone = true;
        } else if (ncclCommGetAsyncError(comm, &async) != ncclSuccess) {
          async = ncclSuccess;
        }
      }
      if (gone) fail("waiting for the step", ncclSuccess);
      if (async != ncclSuccess && async != ncclInProgress) fail("ncclCommGetAsyncError", async);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    g_phase = kBetweenSteps;
    g_progress_ns = NowNs();
    // A line every 0.2 s for the first 3 s (a fault drill acts while ccltune is still searching), then
    // every second.
    if (Since(last_report) >= (Since(start) < 3 ? 0.2 : 1.0)) {
      last_report = Clock::now();
      Say("step %ld, %.1f s; %s", step, Since(start), TuningState().c_str());
    }
  }
  Say("%ld steps done in %.1f s; %s", step, Since(start), TuningState().c_str());
  g_phase = kInCall;
  if (!take_back()) fail("ncclCommDestroy", ncclSuccess);
  const ncclResult_t r = ncclCommDestroy(comm);
  Say("ncclCommDestroy: %s; exit 0", ncclGetErrorString(r));
  release_device();
  return r == ncclSuccess ? 0 : 3;
}
