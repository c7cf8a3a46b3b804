// ccltune-bench: nccl-tests-like MPI program measuring NCCL's default against ccltune, one process
// per GPU. compare mode: communicator A runs NCCL's default (ccltuneModeDefault), B is tuned until
// ccltune reports convergence, then A and B calls alternate on one stream and each call is timed.
// oracle mode: every configuration of the workload's search space is forced on A and timed. Every
// configuration measured is data-checked. Runs unchanged on the real NCCL and the simulated one, with
// or without ccltune preloaded.
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench/api.hpp"
#include "bench/collective.hpp"
#include "bench/landscape.hpp"
#include "bench/load.hpp"
#include "bench/options.hpp"
#include "bench/overhead_mode.hpp"
#include "bench/report.hpp"
#include "executor/executor.hpp"
#include "optimizer/optimizer.hpp"

namespace ccltune::bench {
namespace {

int g_rank = 0;

[[noreturn]] void Fatal(const std::string& msg) {
  std::fprintf(stderr, "ccltune-bench: rank %d: %s\n", g_rank, msg.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::exit(3);
}

void Check(const absl::Status& st, const char* what) {
  if (!st.ok()) Fatal(std::string(what) + ": " + std::string(st.message()));
}

void CheckNccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) Fatal(std::string(what) + " failed: " + ncclGetErrorString(r));
}

// True on every rank iff `ok` is true on every rank.
bool AllRanks(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return v == 1;
}

std::optional<double> Median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return x < 0; }), v.end());
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool Settled(int state) {
  return state == ccltuneStateConverged || state == ccltuneStateImported || state == ccltuneStateForced;
}

struct Bench {
  Options opt;
  int rank = 0;
  int nranks = 1;
  std::unique_ptr<executor::Device> device;
  executor::Stream stream = nullptr;
  ncclComm_t a = nullptr;  // NCCL's default
  ncclComm_t b = nullptr;  // tuned by ccltune (compare and overhead modes)
  ncclComm_t c = nullptr;  // overhead mode: forced to B's converged config
  CcltuneApi api;
  SimHooks sim;
  bool tuning = false;                                 // ccltune loaded, active, and accepted the modes on every rank
  std::unique_ptr<GpuKernels> kernels;                 // CUDA backend, when built in and needed
  std::unique_ptr<BackgroundLoad> load;                // --interference-mode queue on the CUDA backend
  LoadStats load_alone;                                // the load's throughput with no collectives running
  std::unique_ptr<StepLoad> step_load;                 // --interference-mode step (the default) on the CUDA backend
  uint64_t steps = 0;                                  // step tags
  nlohmann::json sections = nlohmann::json::object();  // the modes' own sections of the report (rank 0)
  std::vector<LandscapeSample> landscape_samples;      // landscape mode (identical on every rank)
  std::vector<LandscapeAlias> landscape_aliases;

  // The background load runs while collectives are tuned (unless --interference-phase compare) and timed, and
  // never during data checks.
  bool load_paused = false;  // the step load skipped (tuning under --interference-phase compare)
  void LoadOn() {
    if (load) load->Resume();
  }
  void LoadOff() {
    if (load) Check(load->Pause(), "pausing the background load");
    if (step_load) Check(step_load->Drain(), "draining the step load");
  }

  struct Row {
    Coll coll;
    int dtype;
    Geometry g;
    RowBuffers* buffers;
  };

  void Run(const Row& row, ncclComm_t comm) {
    CheckNccl(Launch(row.coll, row.g, row.buffers->send(), row.buffers->recv(), row.dtype, opt.root, comm, stream),
              "collective");
  }

  // A tuning or timed call: one step of the step load around it when that load runs, else the call.
  // `timer`, when given, times the collective alone (from the step's start: waiting for SMs counts).
  void Call(const Row& row, ncclComm_t comm, uint64_t tag = 0, executor::Timer* timer = nullptr) {
    const bool step = step_load && !load_paused;
    if (step) Check(step_load->Begin(stream, tag), "step load: starting a step");
    const bool timed = timer != nullptr && timer->Begin(stream, tag);
    Run(row, comm);
    if (timed) timer->End(stream);
    if (step) Check(step_load->End(stream), "step load: ending a step");
  }

  // One data-checked call on `comm`; returns this rank's mismatched elements.
  int64_t DataCheck(const Row& row, ncclComm_t comm) {
    Check(row.buffers->Prepare(stream), "data check: preparing buffers");
    if (sim.SetMoveData) sim.SetMoveData(1);  // the simulated NCCL skips data movement on repeated configs
    Run(row, comm);
    if (sim.SetMoveData) sim.SetMoveData(0);
    absl::StatusOr<int64_t> errors = row.buffers->Verify(stream);
    Check(errors.status(), "data check: reading results");
    return *errors;
  }

  // This rank's time of each tag below `n` (-1: not measured here).
  static std::vector<double> PerTag(const std::vector<executor::Sample>& samples, size_t n) {
    std::vector<double> us(n, -1.0);
    for (const executor::Sample& s : samples)
      if (s.tag < us.size()) us[s.tag] = s.us;
    return us;
  }
  // Each entry's maximum over ranks (collective; -1 stays where no rank measured it).
  static void MaxOverRanks(std::vector<double>* us) {
    MPI_Allreduce(MPI_IN_PLACE, us->data(), static_cast<int>(us->size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  }

  // Medians per communicator of calls interleaved round by round (k communicators): the maximum over
  // ranks of each call first (the slowest rank is what a job waits for, as nccl-tests reports). With
  // `min_medians`, the same medians of each call's minimum over ranks (the rank that arrived last).
  std::vector<std::optional<double>> MediansOfMax(const std::vector<executor::Sample>& samples, size_t k,
                                                  std::vector<std::optional<double>>* min_medians = nullptr) {
    std::vector<double> per_call = PerTag(samples, opt.iters * k);
    std::vector<double> lowest;
    if (min_medians != nullptr) {
      lowest = per_call;
      for (double& x : lowest)
        if (x < 0) x = 1e300;  // not measured here: never the minimum
      MPI_Allreduce(MPI_IN_PLACE, lowest.data(), static_cast<int>(lowest.size()), MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
      for (double& x : lowest)
        if (x >= 1e300) x = -1.0;
      min_medians->clear();
    }
    MaxOverRanks(&per_call);
    std::vector<std::optional<double>> medians;
    for (size_t c = 0; c < k; ++c) {
      std::vector<double> mine, low;
      for (int i = 0; i < opt.iters; ++i) {
        mine.push_back(per_call[static_cast<size_t>(i) * k + c]);
        if (min_medians != nullptr) low.push_back(lowest[static_cast<size_t>(i) * k + c]);
      }
      medians.push_back(Median(mine));
      if (min_medians != nullptr) min_medians->push_back(Median(low));
    }
    return medians;
  }

  // Warm-up, then opt.iters rounds of one timed call per communicator (order reversed every round, on one
  // stream); medians per communicator (MediansOfMax). Under the step load, `step_medians` (when given)
  // receives the medians of the steps' makespans, compute and collective together.
  std::vector<std::optional<double>> TimeInterleaved(const Row& row, const std::vector<ncclComm_t>& comms,
                                                     std::vector<std::optional<double>>* step_medians = nullptr,
                                                     std::vector<std::optional<double>>* min_medians = nullptr) {
    const size_t k = comms.size();
    LoadOn();
    for (int i = 0; i < opt.warmup; ++i)
      for (ncclComm_t c : comms) Call(row, c);
    if (step_load) Check(step_load->Drain(), "draining the step load");
    executor::Timer timer(device.get(), static_cast<int>(opt.iters * k) + 1);
    // A B B A A B ...: every communicator as often first as last, so neither gains from its position (the
    // previous call's stragglers, a sync op queued after a tuned call).
    for (int i = 0; i < opt.iters; ++i)
      for (size_t j = 0; j < k; ++j) {
        const size_t c = i % 2 == 0 ? j : k - 1 - j;
        Call(row, comms[c], static_cast<uint64_t>(i) * k + c, &timer);
      }
    Check(device->StreamSynchronize(stream), "stream synchronize after timed calls");
    std::vector<executor::Sample> steps;
    if (step_load) Check(step_load->Drain(&steps), "draining the step load");
    LoadOff();
    std::vector<executor::Sample> samples;
    timer.Harvest(&samples);
    if (step_load && step_medians != nullptr) *step_medians = MediansOfMax(steps, k);
    return MediansOfMax(samples, k, min_medians);
  }

  // ccltune's statistics of the row's workload on `comm`, read on rank 0 only.
  std::optional<ccltuneWorkloadStats_t> Stats(const Row& row, ncclComm_t comm) {
    if (rank != 0 || !tuning || comm == nullptr) return std::nullopt;
    ccltuneWorkloadStats_t s{};
    int rc = api.GetWorkloadStats(comm, static_cast<int>(row.coll), row.dtype, row.g.op, row.g.workload_bytes, &s);
    if (rc != ccltuneSuccess) return std::nullopt;
    return s;
  }

  // One training step: `n` calls on `comm` (the tuned communicator B unless given), then the stream synchronized
  // (`sync_what` names it in an error) and the step load drained.
  void Step(const Row& row, int64_t n, const char* sync_what, ncclComm_t comm = nullptr) {
    for (int64_t i = 0; i < n; ++i) Call(row, comm != nullptr ? comm : b);
    Check(device->StreamSynchronize(stream), sync_what);
    if (step_load) Check(step_load->Drain(), "draining the step load");
  }

  // The host wall time (µs, the maximum over ranks) of `calls` calls on `comm` in steps of --tune-step, each
  // followed by the flag exchange Tune makes: what the tuning loop would have taken on NCCL's default.
  double StepLoopWall(const Row& row, ncclComm_t comm, int64_t calls) {
    Step(row, std::min<int64_t>(opt.tune_step, calls), "stream synchronize before the default's loop", comm);
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t done = 0; done < calls;) {
      const int64_t block = std::min<int64_t>(opt.tune_step, calls - done);
      Step(row, block, "stream synchronize in the default's loop", comm);
      done += block;
      int flag = 0;
      MPI_Allreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    return MaxWall(t0);
  }
  static double MaxWall(std::chrono::steady_clock::time_point t0) {
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return us;
  }

  // Calls B until rank 0 sees the workload settled, checking every --tune-step calls (8); every rank
  // leaves at the same call. The stream is synchronized at each check, as a training loop does once per
  // step.
  void Tune(const Row& row, RowResult* r) {
    int64_t calls = 0;
    load_paused = !opt.load.while_tuning;
    if (!load_paused) LoadOn();
    if (opt.search_cost) MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      const int64_t block = std::min<int64_t>(opt.tune_step, opt.max_tune_calls - calls);
      Step(row, block, "stream synchronize while tuning");
      calls += block;
      int flag = 0;  // 1: settled, 2: ccltune passes the communicator through, 3: cap reached
      if (rank == 0) {
        ccltuneWorkloadStats_t s{};
        int rc = api.GetWorkloadStats(b, static_cast<int>(row.coll), row.dtype, row.g.op, row.g.workload_bytes, &s);
        if (rc == ccltuneSuccess && Settled(s.state)) flag = 1;
        if (rc == ccltuneUnavailable) flag = 2;
      }
      if (calls >= opt.max_tune_calls) flag = std::max(flag, 3);
      MPI_Allreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (flag != 0) {
        r->converged = flag == 1;
        if (flag == 2 && rank == 0) std::printf("# note: ccltune reports the tuned communicator as unavailable\n");
        break;
      }
    }
    if (opt.search_cost) r->tune_wall_us = MaxWall(t0);
    // Settling: B goes on as a training loop would (ccltune monitors it, its guard probes), the same on every rank.
    for (int64_t done = 0; r->converged && done < opt.settle_calls;) {
      const int64_t block = std::min<int64_t>(opt.tune_step, opt.settle_calls - done);
      Step(row, block, "stream synchronize while settling");
      done += block;
    }
    // The same loop on A, NCCL's default without ccltune, for as many calls: what searching cost the job.
    if (opt.search_cost && calls > 0) r->default_wall_us = StepLoopWall(row, a, calls);
    LoadOff();
    load_paused = false;
    r->tune_calls = calls;
  }

  // The row's search space, as rank 0 reads it from ccltune, broadcast so every rank enumerates the
  // same list. nullopt (on every rank) when ccltune has no statistics for the workload.
  std::optional<optimizer::SearchSpace> Space(const Row& row) {
    std::optional<ccltuneWorkloadStats_t> s = Stats(row, a);
    if (!s && b != nullptr) s = Stats(row, b);  // same ranks and workload: same cost table
    int64_t f[6] = {0, 0, -1, -1, 0, 0};
    if (s)
      f[0] = 1, f[1] = s->validSubspaces, f[2] = s->ncclAlgorithm, f[3] = s->ncclProtocol, f[4] = s->channelBudget,
      f[5] = s->chunkTunable;
    MPI_Bcast(f, 6, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (f[0] == 0 || f[4] < 1) return std::nullopt;
    optimizer::SearchSpace space;
    space.subspaces.valid_mask = static_cast<uint32_t>(f[1]);
    space.subspaces.nccl_algo = static_cast<int>(f[2]);
    space.subspaces.nccl_proto = static_cast<int>(f[3]);
    space.max_channels = static_cast<int>(f[4]);
    // The C API does not report the protocols' chunk grains, so the oracle does not enumerate chunk
    // sizes (NCCL picks them); with chunkTunable the tuned side may still search them.
    space.chunk_dim = false;
    return space;
  }

  // Forces `cfg` on `comm` (NCCL's default for the default config) on every rank; false if any rank refused.
  // `after` is the mode `comm` is put back in on a refusal.
  bool ForceOn(ncclComm_t comm, const Config& cfg, ccltuneMode_t after) {
    ccltuneConfig_t c{cfg.algo, cfg.proto, cfg.channels, cfg.chunk_bytes};
    const bool is_default = cfg.IsDefault();
    int rc = api.SetMode(comm, is_default ? ccltuneModeDefault : ccltuneModeForced, is_default ? nullptr : &c);
    if (AllRanks(rc == ccltuneSuccess)) return true;
    if (rank == 0) std::printf("# note: ccltune refused to force %s: skipped\n", cfg.ToString().c_str());
    api.SetMode(comm, after, nullptr);
    return false;
  }
  bool ForceOnA(const Config& cfg) { return ForceOn(a, cfg, ccltuneModeDefault); }

  // Screening: forces every configuration of the space on A in turn, data-checks and times it.
  // Confirmation: the best opt.oracle_confirm configs and NCCL's default are timed again, kOracleRounds
  // rounds in turn; a config's figure is the median of its rounds, the oracle the best of those. The
  // minimum over a single pass of ~100-200 medians is biased low by the noise of each median (most at
  // small sizes); selecting on one pass and measuring on fresh ones is not. Returns this rank's
  // data-check errors.
  static constexpr int kOracleRounds = 3;
  int64_t Oracle(const Row& row, RowResult* r) {
    int64_t errors = 0;
    const bool both = opt.oracle_both && tuning && b != nullptr;
    std::optional<optimizer::SearchSpace> space = Space(row);
    if (!space) {
      if (rank == 0) std::printf("# note: no ccltune statistics for this workload: oracle skipped\n");
      return 0;
    }
    std::vector<std::pair<Config, double>> screened;
    std::set<std::string> ran_seen;
    for (const Config& cfg : optimizer::EnumerateSpace(*space)) {
      if (!ForceOnA(cfg)) continue;
      if (opt.check) {
        errors += DataCheck(row, a);
      } else {
        Run(row, a);
      }
      // With channel truth, a config NCCL runs exactly as one timed before (more channels than the
      // communicator has, or NCCL's default itself) is that config: not timed again, so the oracle's
      // minimum is not taken over many noisy copies of one config.
      if (const std::string ran = RanOnA(row); ran != "?" && !ran_seen.insert(ran).second) {
        ++r->oracle_aliases;
        continue;
      }
      std::optional<double> us = TimeInterleaved(row, {a})[0];
      ++r->oracle_configs;
      if (cfg.IsDefault() && !opt.compare) r->default_us = us;
      if (!us) continue;
      screened.emplace_back(cfg, *us);
      if (!r->oracle_screen_us || *us < *r->oracle_screen_us) r->oracle_screen_us = us;
    }
    // Every rank holds the same list in the same order: the timings are medians of the per-call
    // maximum over ranks (MediansOfMax), identical on every rank.
    std::stable_sort(screened.begin(), screened.end(),
                     [](const auto& x, const auto& y) { return x.second < y.second; });
    std::vector<std::pair<Config, double>> candidates;
    for (const auto& s : screened) {
      if (static_cast<int>(candidates.size()) < opt.oracle_confirm || s.first.IsDefault()) candidates.push_back(s);
    }
    std::vector<double> tuned_rounds;  // the tuned config's re-timed medians (when not a candidate)
    if (opt.oracle_confirm == 0) {
      if (!screened.empty()) {
        const Config& best = screened.front().first;
        r->oracle_us = screened.front().second;
        r->oracle_config = ccltuneConfig_t{best.algo, best.proto, best.channels, best.chunk_bytes};
      }
    } else {
      for (const auto& [cfg, screen_us] : candidates)
        r->oracle_candidates.push_back(
            {ccltuneConfig_t{cfg.algo, cfg.proto, cfg.channels, cfg.chunk_bytes}, screen_us, {}, std::nullopt, {}, {}});
      // The tuned config (compare mode) in the same rounds, unless it is one of the candidates. Rank 0
      // read it: every rank must force and time the same configs, so it goes to every rank first.
      std::optional<Config> tuned;
      int64_t f[5] = {r->config ? 1 : 0, 0, 0, 0, 0};
      if (r->config)
        f[1] = r->config->algorithm, f[2] = r->config->protocol, f[3] = r->config->channels,
        f[4] = r->config->chunkBytes;
      MPI_Bcast(f, 5, MPI_INT64_T, 0, MPI_COMM_WORLD);
      if (f[0] != 0) {
        const Config t{static_cast<int>(f[1]), static_cast<int>(f[2]), static_cast<int>(f[3]), f[4]};
        if (std::none_of(candidates.begin(), candidates.end(), [&](const auto& c) { return c.first == t; })) tuned = t;
      }
      for (int round = 0; round < kOracleRounds; ++round) {
        for (size_t i = 0; i < candidates.size(); ++i) {
          if (!ForceOnA(candidates[i].first)) continue;
          std::vector<std::optional<double>> lowest;
          if (std::optional<double> us = TimeInterleaved(row, {a}, nullptr, &lowest)[0]) {
            r->oracle_candidates[i].rounds.push_back(*us);
            if (lowest[0]) r->oracle_candidates[i].rounds_min.push_back(*lowest[0]);
          }
          if (both && ForceOn(b, candidates[i].first, ccltuneModeTune))
            if (std::optional<double> us = TimeInterleaved(row, {b})[0])
              r->oracle_candidates[i].rounds_b.push_back(*us);
        }
        if (tuned && ForceOnA(*tuned))
          if (std::optional<double> us = TimeInterleaved(row, {a})[0]) tuned_rounds.push_back(*us);
      }
      for (size_t i = 0; i < candidates.size(); ++i) {
        RowResult::OracleCandidate& c = r->oracle_candidates[i];
        if (c.rounds.empty()) continue;
        c.us = Median(c.rounds);
        if (candidates[i].first.IsDefault()) r->oracle_default_us = c.us;
        if (r->config && candidates[i].first == Config{r->config->algorithm, r->config->protocol, r->config->channels,
                                                       r->config->chunkBytes})
          r->tuned_same_comm_us = c.us;
        if (!r->oracle_us || *c.us < *r->oracle_us) {
          r->oracle_us = c.us;
          r->oracle_config = c.config;
        }
      }
    }
    if (both)
      Check(api.SetMode(b, ccltuneModeTune, nullptr) == ccltuneSuccess ? absl::OkStatus()
                                                                       : absl::InternalError("ccltuneSetMode"),
            "restoring ccltuneModeTune on B");
    if (!tuned_rounds.empty()) r->tuned_same_comm_us = Median(tuned_rounds);
    Check(api.SetMode(a, ccltuneModeDefault, nullptr) == ccltuneSuccess ? absl::OkStatus()
                                                                        : absl::InternalError("ccltuneSetMode"),
          "restoring ccltuneModeDefault on A");
    return errors;
  }

  // Per-call (min, max) over ranks of `n` timed calls of `comm` after `warmup` untimed ones; calls no
  // rank timed are left out.
  std::vector<std::pair<double, double>> TimeCalls(const Row& row, ncclComm_t comm, int warmup, int n) {
    for (int i = 0; i < warmup; ++i) Call(row, comm);
    executor::Timer timer(device.get(), n + 1);
    for (int i = 0; i < n; ++i) Call(row, comm, static_cast<uint64_t>(i), &timer);
    Check(device->StreamSynchronize(stream), "stream synchronize after timed calls");
    std::vector<std::pair<double, double>> out;
    for (const auto& [lo, hi] : OverRanks(timer, n))
      if (hi >= 0) out.push_back({lo, hi});
    return out;
  }

  // The times of `timer`'s calls tagged 0..n-1 (the stream synchronized), as (minimum, maximum) over the ranks;
  // the maximum is -1 for a call no rank timed. Collective: every rank calls it.
  std::vector<std::pair<double, double>> OverRanks(executor::Timer& timer, int n) {
    std::vector<executor::Sample> samples;
    timer.Harvest(&samples);
    std::vector<double> lo(n, 1e300), hi(n, -1.0);
    for (const executor::Sample& s : samples)
      if (s.tag < static_cast<uint64_t>(n)) lo[s.tag] = hi[s.tag] = s.us;
    MPI_Allreduce(MPI_IN_PLACE, lo.data(), n, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, hi.data(), n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    std::vector<std::pair<double, double>> out;
    for (int i = 0; i < n; ++i) out.emplace_back(lo[i], hi[i]);
    return out;
  }

  // What NCCL really ran for the latest call of the row's workload on A (ccltune's channel truth on
  // rank 0, the same on every rank), "?" when unknown.
  std::string RanOnA(const Row& row) {
    char buf[64] = "?";
    if (std::optional<ccltuneWorkloadStats_t> s = Stats(row, a); s && s->channelTruth && s->lastRan.algorithm >= 0) {
      Config c{s->lastRan.algorithm, s->lastRan.protocol, s->lastRan.channels, s->lastRan.chunkBytes};
      std::snprintf(buf, sizeof(buf), "%s", c.ToString().c_str());
    }
    MPI_Bcast(buf, sizeof(buf), MPI_CHAR, 0, MPI_COMM_WORLD);
    return buf;
  }

  // --mode landscape (bench/landscape.hpp): every config of the row's space forced on A, data-checked
  // once (which also shows what NCCL runs for it), then timed in opt.landscape_rounds passes, each in
  // a new seeded order, NCCL's default re-timed after every kDefaultEvery configs. Returns this rank's
  // data-check errors.
  static constexpr int kDefaultEvery = 6;
  static constexpr int kLandscapeWarmup = 2;
  int64_t Landscape(const Row& row, std::vector<LandscapeSample>* out, std::vector<LandscapeAlias>* aliases) {
    int64_t errors = 0;
    if (!tuning) {
      if (rank == 0) std::printf("# note: landscape needs ccltune preloaded and active (forced mode): skipped\n");
      return 0;
    }
    Run(row, a);  // ccltune learns the workload's cost table from a default call
    std::optional<optimizer::SearchSpace> space = Space(row);
    if (!space) {
      if (rank == 0) std::printf("# note: no ccltune statistics for this workload: landscape skipped\n");
      return 0;
    }
    if (opt.landscape_channels > 0) space->max_channels = opt.landscape_channels;
    std::vector<Config> distinct;
    std::vector<std::string> ran;
    std::map<std::string, Config> first_by_ran;
    for (const Config& cfg : optimizer::EnumerateSpace(*space)) {
      if (!ForceOnA(cfg)) continue;
      errors += DataCheck(row, a);
      const std::string r = RanOnA(row);
      if (r != "?" && !cfg.IsDefault()) {
        auto [it, first] = first_by_ran.try_emplace(r, cfg);
        if (!first) {
          aliases->push_back({row.coll, row.g.bytes, cfg, it->second, r});
          continue;
        }
      }
      distinct.push_back(cfg);
      ran.push_back(r);
    }
    if (rank == 0)
      std::printf("# landscape %s %llu B: %zu configs timed, %zu aliases; NCCL's default runs %s\n",
                  std::string(CollName(row.coll)).c_str(), static_cast<unsigned long long>(row.g.bytes),
                  distinct.size(),
                  static_cast<size_t>(std::count_if(
                      aliases->begin(), aliases->end(),
                      [&](const LandscapeAlias& x) { return x.coll == row.coll && x.bytes == row.g.bytes; })),
                  ran.empty() ? "?" : ran[0].c_str());
    if (opt.landscape_switch) {
      SwitchCosts(row, distinct, ran, out);
    } else {
      TimeBlocks(row, distinct, ran, out);
    }
    Check(api.SetMode(a, ccltuneModeDefault, nullptr) == ccltuneSuccess ? absl::OkStatus()
                                                                        : absl::InternalError("ccltuneSetMode"),
          "restoring ccltuneModeDefault on A");
    return errors;
  }

  // A pass's order of the configs 1..n-1 (0 is NCCL's default), seeded by the pass and the row.
  std::vector<size_t> RoundOrder(const Row& row, int round, size_t n) const {
    std::vector<size_t> order;
    for (size_t i = 1; i < n; ++i) order.push_back(i);
    std::mt19937_64 rng(opt.seed * 1000003 + static_cast<uint64_t>(round) * 7919 + row.g.bytes);
    std::shuffle(order.begin(), order.end(), rng);
    return order;
  }

  // The landscape's passes: each config timed in a block (kLandscapeWarmup untimed calls, then
  // opt.landscape_samples), in a new seeded order per pass, NCCL's default again after every kDefaultEvery.
  void TimeBlocks(const Row& row, const std::vector<Config>& distinct, const std::vector<std::string>& ran,
                  std::vector<LandscapeSample>* out) {
    for (int round = 0; round < opt.landscape_rounds; ++round) {
      const std::vector<size_t> order = RoundOrder(row, round, distinct.size());
      std::vector<size_t> blocks = {0};
      for (size_t k = 0; k < order.size(); ++k) {
        blocks.push_back(order[k]);
        if ((k + 1) % kDefaultEvery == 0 || k + 1 == order.size()) blocks.push_back(0);
      }
      for (size_t pos = 0; pos < blocks.size(); ++pos) {
        const size_t i = blocks[pos];
        if (!ForceOnA(distinct[i])) continue;
        const auto t = TimeCalls(row, a, kLandscapeWarmup, opt.landscape_samples);
        for (size_t k = 0; k < t.size(); ++k) {
          out->push_back({row.coll, row.g.bytes, distinct[i], round, static_cast<int>(pos), static_cast<int>(k),
                          t[k].first, t[k].second, ran[i]});
        }
      }
    }
  }

  // --landscape-switch 1: what a change of config costs the calls next to it, as the search's schedule changes
  // configs from one call to the next (no stream synchronize in between). Per round (a new seeded order) and
  // config X: two untimed calls of NCCL's default, then timed X, X, X, default, default (seq 0-4 in the samples:
  // X right after the default, X after X twice, the default right after X, the default after the default).
  // Rank 0 prints, per config, the medians over rounds of seq 0 against seq 1-2 and of seq 3 against seq 4.
  void SwitchCosts(const Row& row, const std::vector<Config>& distinct, const std::vector<std::string>& ran,
                   std::vector<LandscapeSample>* out) {
    constexpr int kSeq = 5;
    std::map<size_t, std::array<std::vector<double>, kSeq>> by_config;
    for (int round = 0; round < opt.landscape_rounds; ++round) {
      const std::vector<size_t> order = RoundOrder(row, round, distinct.size());
      for (size_t i : order) {
        if (!ForceOnA(distinct[0])) continue;
        executor::Timer timer(device.get(), kSeq + 1);
        for (int k = 0; k < 2; ++k) Call(row, a);
        if (!ForceOnA(distinct[i])) continue;
        for (int k = 0; k < 3; ++k) Call(row, a, static_cast<uint64_t>(k), &timer);
        ForceOnA(distinct[0]);  // NCCL's default: never refused
        for (int k = 3; k < kSeq; ++k) Call(row, a, static_cast<uint64_t>(k), &timer);
        Check(device->StreamSynchronize(stream), "stream synchronize after the switch calls");
        const std::vector<std::pair<double, double>> t = OverRanks(timer, kSeq);
        for (int k = 0; k < kSeq; ++k) {
          const auto [lo, hi] = t[k];
          if (hi < 0) continue;
          const size_t c = k < 3 ? i : 0;
          out->push_back({row.coll, row.g.bytes, distinct[c], round, static_cast<int>(i), k, lo, hi, ran[c]});
          by_config[i][k].push_back(hi);
        }
      }
    }
    if (rank != 0) return;
    auto median = [](const std::vector<double>& v) { return Median(v).value_or(0); };
    for (const auto& [i, seqs] : by_config) {
      std::vector<double> repeats = seqs[1];
      repeats.insert(repeats.end(), seqs[2].begin(), seqs[2].end());
      const double x_first = median(seqs[0]), x_rep = median(repeats), d_first = median(seqs[3]),
                   d_rep = median(seqs[4]);
      std::printf(
          "# switch %s %llu B %-18s after default %8.2f us, repeated %8.2f us (%.3f); default after it %8.2f "
          "us, repeated %8.2f us (%.3f)\n",
          std::string(CollName(row.coll)).c_str(), static_cast<unsigned long long>(row.g.bytes),
          distinct[i].ToString().c_str(), x_first, x_rep, x_rep > 0 ? x_first / x_rep : 0, d_first, d_rep,
          d_rep > 0 ? d_first / d_rep : 0);
    }
  }

  RowResult RunRow(Coll coll, int dtype, uint64_t size) {
    RowResult r;
    r.coll = coll;
    r.dtype = dtype;
    Geometry g = ComputeGeometry(coll, size, dtype, opt.op, nranks);
    r.op = g.op;
    r.bytes = g.bytes;
    r.count = g.count;
    absl::StatusOr<std::unique_ptr<RowBuffers>> buffers =
        RowBuffers::Create(device.get(), coll, g, dtype, opt.root, rank, nranks, opt.seed);
    Check(buffers.status(), "allocating buffers");
    Row row{coll, dtype, g, buffers->get()};
    int64_t errors = 0;

    if (opt.compare) {
      if (opt.check) errors += DataCheck(row, a);
      if (tuning) {
        Tune(row, &r);
        std::vector<std::optional<double>> steps;
        std::vector<std::optional<double>> t = TimeInterleaved(row, {a, b}, &steps);
        r.default_us = t[0];
        r.tuned_us = t[1];
        if (steps.size() == 2) {
          r.default_step_us = steps[0];
          r.tuned_step_us = steps[1];
        }
        if (opt.check) errors += DataCheck(row, b);
        if (std::optional<ccltuneWorkloadStats_t> s = Stats(row, b)) {
          r.config = s->config;
          if (s->convergeCalls > 0 || Settled(s->state)) r.converge_calls = s->convergeCalls;
        }
      } else {
        r.default_us = TimeInterleaved(row, {a})[0];
      }
    }
    if (opt.landscape) errors += Landscape(row, &landscape_samples, &landscape_aliases);
    if (opt.oracle) {
      if (tuning) {
        if (!opt.compare) Run(row, a);  // ccltune learns the workload's cost table from a default call
        errors += Oracle(row, &r);
      } else if (!opt.compare) {
        if (opt.check) errors += DataCheck(row, a);
        r.default_us = TimeInterleaved(row, {a})[0];
      }
    }
    MPI_Allreduce(&errors, &r.check_errors, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank != 0) {  // only rank 0 reports; keep the others' copies from looking like results
      r.default_us = r.tuned_us = r.oracle_us = r.default_step_us = r.tuned_step_us = std::nullopt;
    }
    return r;
  }
};

// ---------------------------------------------------------------------------------------------
// Overhead mode

// Host time of each enqueue call on `comms` (interleaved call by call), in bursts held back on the
// GPU by a spin kernel so that the host never waits for a full launch queue: what a training loop
// pays on the CPU per call, ccltune's event records and sync ops included. Without the kernels (a
// build without nvcc, or the simulated backend) the GPU is not held: `held` says so.
struct HostTiming {
  std::vector<std::vector<double>> us;  // per communicator, this rank
  int64_t rounds = 0;
  int64_t rounds_caught_up = 0;  // the hold ended before the burst was enqueued (GPU may have idled)
  double final_hold_us = 0;
  bool held = false;
};

HostTiming MeasureHostTimes(Bench& bench, const Bench::Row& row, const std::vector<ncclComm_t>& comms) {
  constexpr int kBurst = 50;  // calls per communicator per held burst
  HostTiming h;
  h.us.resize(comms.size());
  h.held = bench.kernels != nullptr;
  uint64_t hold_ns = 2'000'000;
  executor::Event after_hold = nullptr;
  if (h.held) {
    absl::StatusOr<executor::Event> e = bench.device->CreateEvent();
    Check(e.status(), "overhead: creating an event");
    after_hold = *e;
  }
  for (int i = 0; i < 3; ++i)  // settle: first calls of each communicator on this stream
    for (ncclComm_t c : comms) bench.Run(row, c);
  Check(bench.device->StreamSynchronize(bench.stream), "overhead: stream synchronize");
  const int rounds = (bench.opt.overhead_calls + kBurst - 1) / kBurst;
  for (int r = 0; r < rounds; ++r) {
    if (h.held) {
      Check(bench.kernels->Hold(bench.device.get(), bench.stream, hold_ns), "overhead: launching the hold kernel");
      Check(bench.device->RecordEvent(after_hold, bench.stream), "overhead: recording an event");
    }
    for (int i = 0; i < kBurst; ++i) {
      for (size_t c = 0; c < comms.size(); ++c) {
        const auto t0 = std::chrono::steady_clock::now();
        bench.Run(row, comms[c]);
        const auto t1 = std::chrono::steady_clock::now();
        h.us[c].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
    }
    if (h.held) {
      absl::StatusOr<executor::EventState> st = bench.device->QueryEvent(after_hold);
      Check(st.status(), "overhead: querying an event");
      if (*st == executor::EventState::kDone) {
        ++h.rounds_caught_up;
        hold_ns = std::min<uint64_t>(hold_ns * 2, 200'000'000);
      }
    }
    Check(bench.device->StreamSynchronize(bench.stream), "overhead: stream synchronize");
    ++h.rounds;
  }
  if (after_hold) bench.device->DestroyEvent(after_hold);
  h.final_hold_us = h.held ? static_cast<double>(hold_ns) / 1000.0 : 0;
  return h;
}

// The check a timed call makes before its start event (Device::StreamIdle: on CUDA, cuStreamQuery between two
// capture-mode exchanges), host time per check on this rank: batches of kChecks on the bench's stream while the
// hold kernel keeps it busy, and again after it drained. A check that answers against the stream's known state is
// counted (the hold ended early, or the backend has no idle state: the simulated one is never idle).
struct IdleCheckCost {
  static constexpr int kChecks = 1000, kBatches = 21;  // checks per batch, batches per side
  static constexpr int64_t kChecksPerSide = int64_t{kChecks} * kBatches;
  HostTimes busy_ns, idle_ns;  // per batch: ns per check
  int64_t busy_said_idle = 0, idle_said_busy = 0;
  bool held = false;  // the busy batches ran behind the hold kernel (false: no kernels built in, or simulated)
};

IdleCheckCost MeasureIdleCheck(Bench& bench) {
  constexpr uint64_t kHoldNs = 20'000'000;  // far longer than a batch of checks takes
  IdleCheckCost c;
  c.held = bench.kernels != nullptr;
  std::vector<double> busy, idle;
  auto batch = [&](bool want_idle, int64_t* wrong) {
    int64_t n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < IdleCheckCost::kChecks; ++i) n += bench.device->StreamIdle(bench.stream) == want_idle ? 0 : 1;
    const auto t1 = std::chrono::steady_clock::now();
    *wrong += n;
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / IdleCheckCost::kChecks;
  };
  Check(bench.device->StreamSynchronize(bench.stream), "idle check: stream synchronize");
  for (int b = 0; b < IdleCheckCost::kBatches; ++b) {
    if (c.held) Check(bench.kernels->Hold(bench.device.get(), bench.stream, kHoldNs), "idle check: the hold kernel");
    busy.push_back(batch(false, &c.busy_said_idle));
    Check(bench.device->StreamSynchronize(bench.stream), "idle check: stream synchronize");
    idle.push_back(batch(true, &c.idle_said_busy));
  }
  c.busy_ns = SummarizeHostTimes(std::move(busy));
  c.idle_ns = SummarizeHostTimes(std::move(idle));
  return c;
}

// Every row of the sweep (collectives x datatypes x sizes; sizes with less than one element per rank are left
// out) with its buffers: the workloads of the modes that run them all together (overhead, loop).
struct SweepRow {
  std::unique_ptr<RowBuffers> buffers;
  Bench::Row row;
};
std::vector<SweepRow> SweepRows(Bench& bench) {
  const Options& opt = bench.opt;
  std::vector<SweepRow> rows;
  for (Coll coll : opt.colls)
    for (int dtype : opt.dtypes)
      for (uint64_t size : SweepSizes(opt)) {
        Geometry g = ComputeGeometry(coll, size, dtype, opt.op, bench.nranks);
        if (g.count == 0) continue;
        absl::StatusOr<std::unique_ptr<RowBuffers>> buffers =
            RowBuffers::Create(bench.device.get(), coll, g, dtype, opt.root, bench.rank, bench.nranks, opt.seed);
        Check(buffers.status(), "allocating buffers");
        SweepRow r;
        r.buffers = *std::move(buffers);
        r.row = Bench::Row{coll, dtype, g, r.buffers.get()};
        rows.push_back(std::move(r));
      }
  return rows;
}

// The overhead mode: A keeps NCCL's default, B is tuned to convergence, C is forced to B's config.
// Forced mode applies the same config through the same plugin path as B's converged state but
// without timing or sync ops, so B - C is exactly what ccltune's bookkeeping costs per call (NCCL's
// own env variables would change the communicator's channel set, not just the call's config).
// Across runs, the same mode with CCLTUNE_DISABLE=1 and without the preload measures A only.
void RunOverhead(Bench& bench, std::vector<RowResult>* results, int64_t* check_errors) {
  const Options& opt = bench.opt;
  const int rank = bench.rank;
  struct Item : SweepRow {
    RowResult r;
  };
  std::vector<Item> items;
  for (SweepRow& s : SweepRows(bench)) {
    Item it;
    static_cast<SweepRow&>(it) = std::move(s);
    it.r.coll = it.row.coll;
    it.r.dtype = it.row.dtype;
    it.r.op = it.row.g.op;
    it.r.bytes = it.row.g.bytes;
    it.r.count = it.row.g.count;
    items.push_back(std::move(it));
  }
  const bool t = bench.tuning;
  std::vector<ncclComm_t> comms =
      t ? std::vector<ncclComm_t>{bench.a, bench.b, bench.c} : std::vector<ncclComm_t>{bench.a};
  const char* names[] = {"default", "converged", "forced"};
  auto set_mode = [&](ncclComm_t comm, ccltuneMode_t mode, const ccltuneConfig_t* cfg, const char* what) {
    if (!AllRanks(bench.api.SetMode(comm, mode, cfg) == ccltuneSuccess)) Fatal(std::string("ccltuneSetMode: ") + what);
  };
  int64_t errors = 0;

  // 1. NCCL's default on every communicator and row: the memory baseline.
  if (t) {
    set_mode(bench.b, ccltuneModeDefault, nullptr, "B default");
    set_mode(bench.c, ccltuneModeDefault, nullptr, "C default");
  }
  const int default_calls = std::max(opt.warmup, 20);
  for (Item& it : items) {
    if (opt.check) errors += bench.DataCheck(it.row, bench.a);
    for (int i = 0; i < default_calls; ++i)
      for (ncclComm_t c : comms) bench.Run(it.row, c);
  }
  Check(bench.device->StreamSynchronize(bench.stream), "stream synchronize");
  std::vector<double> mem_default = GatherUsedMiB(bench.device.get());

  // 2. Tune B on every row (each explores the configurations ccltune's search visits).
  std::vector<double> mem_tuned;
  if (t) {
    set_mode(bench.b, ccltuneModeTune, nullptr, "B tune");
    for (Item& it : items) bench.Tune(it.row, &it.r);
    Check(bench.device->StreamSynchronize(bench.stream), "stream synchronize");
    mem_tuned = GatherUsedMiB(bench.device.get());
  }

  // The idle-stream check's own cost (every timed call of a tuning communicator pays it once).
  const IdleCheckCost idle_check = MeasureIdleCheck(bench);
  if (rank == 0) {
    std::printf(
        "# idle-stream check before a timed call, host ns per check on rank 0 (median of %d batches): busy "
        "stream %.0f%s, idle stream %.0f; answers against the stream's state: busy %lld, idle %lld of %lld each\n",
        static_cast<int>(idle_check.busy_ns.calls), idle_check.busy_ns.median,
        idle_check.held ? "" : " (not held busy: no kernels built in, or the simulated backend)",
        idle_check.idle_ns.median, static_cast<long long>(idle_check.busy_said_idle),
        static_cast<long long>(idle_check.idle_said_busy), static_cast<long long>(IdleCheckCost::kChecksPerSide));
  }

  // 3. Per row: C forced to B's config; host and GPU time per call of A, B, C.
  nlohmann::json rows_json = nlohmann::json::array();
  for (Item& it : items) {
    ccltuneConfig_t cfg{-1, -1, 0, 0};
    if (t) {
      if (std::optional<ccltuneWorkloadStats_t> s = bench.Stats(it.row, bench.b)) {
        cfg = s->config;
        it.r.config = s->config;
        if (s->convergeCalls > 0 || Settled(s->state)) it.r.converge_calls = s->convergeCalls;
      }
      int64_t f[4] = {cfg.algorithm, cfg.protocol, cfg.channels, cfg.chunkBytes};
      MPI_Bcast(f, 4, MPI_INT64_T, 0, MPI_COMM_WORLD);
      cfg = ccltuneConfig_t{static_cast<int>(f[0]), static_cast<int>(f[1]), static_cast<int>(f[2]), f[3]};
      set_mode(bench.c, ccltuneModeForced, &cfg, "C forced to B's config");
      if (opt.check) {
        errors += bench.DataCheck(it.row, bench.b);
        errors += bench.DataCheck(it.row, bench.c);
      }
    }
    HostTiming h = MeasureHostTimes(bench, it.row, comms);
    std::vector<std::optional<double>> gpu = bench.TimeInterleaved(it.row, comms);
    it.r.default_us = gpu[0];
    if (t) it.r.tuned_us = gpu[1];
    nlohmann::json host = nlohmann::json::object();
    nlohmann::json gpu_json = nlohmann::json::object();
    std::vector<HostTimes> summaries;
    for (size_t c = 0; c < comms.size(); ++c) {
      HostTimes ht = SummarizeHostTimes(h.us[c]);
      GatherHostTimes(&ht);
      host[names[c]] = HostTimesJson(ht);
      gpu_json[names[c]] = gpu[c] ? nlohmann::json(*gpu[c]) : nlohmann::json(nullptr);
      summaries.push_back(ht);
    }
    int64_t caught_up = h.rounds_caught_up;
    MPI_Allreduce(MPI_IN_PLACE, &caught_up, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
      std::printf("#   %s %llu B %s: host us/call median", std::string(CollName(it.r.coll)).c_str(),
                  static_cast<unsigned long long>(it.r.bytes), std::string(DtypeName(it.r.dtype)).c_str());
      for (size_t c = 0; c < comms.size(); ++c) std::printf(" %s %.2f", names[c], summaries[c].median);
      std::printf(" | gpu us/call");
      for (size_t c = 0; c < comms.size(); ++c)
        std::printf(" %s %s", names[c], gpu[c] ? std::to_string(*gpu[c]).c_str() : "n/a");
      std::printf(
          " | config %s%s\n", t ? ConfigText(cfg).c_str() : "n/a",
          h.held ? "" : " | GPU not held (simulated backend, or no kernels built in): the host may have waited");
      rows_json.push_back({{"collective", std::string(CollName(it.r.coll))},
                           {"bytes", it.r.bytes},
                           {"dtype", std::string(DtypeName(it.r.dtype))},
                           {"config", t ? nlohmann::json(ConfigText(cfg)) : nlohmann::json(nullptr)},
                           {"host_us", host},
                           {"gpu_us", gpu_json},
                           {"gpu_held", h.held},
                           {"rounds", h.rounds},
                           {"rounds_gpu_caught_up_all_ranks", caught_up},
                           {"final_hold_us", h.final_hold_us}});
    }
  }
  std::vector<double> mem_forced = GatherUsedMiB(bench.device.get());
  int64_t total_errors = 0;
  MPI_Allreduce(&errors, &total_errors, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  *check_errors += total_errors;
  for (Item& it : items) {
    if (rank != 0) it.r.default_us = it.r.tuned_us = std::nullopt;
    results->push_back(it.r);
  }
  if (rank == 0) {
    auto delta = [](const std::vector<double>& a, const std::vector<double>& b) {
      std::vector<double> d;
      if (a.size() == b.size())
        for (size_t i = 0; i < a.size(); ++i) d.push_back(a[i] - b[i]);
      return d;
    };
    nlohmann::json memory = {
        {"note", "device memory used (cuMemGetInfo total - free) in MiB per rank, after " +
                     std::to_string(default_calls) +
                     " default calls of every row on every communicator, after tuning B on every row, "
                     "and after C was forced to B's configs"},
        {"after_default_mib", mem_default},
        {"after_tuning_mib", mem_tuned},
        {"after_forced_mib", mem_forced},
        {"tuning_minus_default_mib", delta(mem_tuned, mem_default)}};
    if (mem_default.empty()) memory["note"] = "no device memory information on this backend";
    auto per_batch_ns = [](const HostTimes& t) {
      return nlohmann::json{{"batches", t.calls}, {"median", t.median}, {"p10", t.p10}, {"p90", t.p90}};
    };
    bench.sections["overhead"] = {
        {"communicators",
         t ? nlohmann::json::array({"default: A in ccltuneModeDefault", "converged: B tuned to convergence",
                                    "forced: C in ccltuneModeForced with B's config (no timing, no sync ops)"})
           : nlohmann::json::array({"default: A (ccltune absent, disabled or not tuning)"})},
        {"host_timing",
         "wall time of each enqueue call (steady_clock around the NCCL call), communicators interleaved call by call, "
         "bursts of 50 per communicator queued behind a GPU spin kernel so the host never waits for the GPU"},
        {"rows", rows_json},
        {"memory", memory},
        {"idle_check",
         {{"note",
           "host time per Device::StreamIdle check on rank 0, ns per check, per batch; the busy side behind "
           "the hold kernel where held"},
          {"busy_ns", per_batch_ns(idle_check.busy_ns)},
          {"idle_ns", per_batch_ns(idle_check.idle_ns)},
          {"checks_per_side", IdleCheckCost::kChecksPerSide},
          {"busy_said_idle", idle_check.busy_said_idle},
          {"idle_said_busy", idle_check.idle_said_busy},
          {"held", idle_check.held}}}};
    if (!mem_default.empty()) {
      std::printf("# device memory MiB per rank: after default");
      for (double v : mem_default) std::printf(" %.0f", v);
      if (!mem_tuned.empty()) {
        std::printf(" | after tuning");
        for (double v : mem_tuned) std::printf(" %.0f", v);
      }
      std::printf("\n");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Loop mode

// A training loop: every row of the sweep is one workload, run --loop-repeat times per iteration in sweep order on
// B (tuned), the stream synchronized and a flag exchanged by every rank once per iteration (the host reading the
// loss), until rank 0 reads every workload settled after an iteration, or --loop-iters. Then -n iterations of A
// (NCCL's default) and of B alternate (A B B A ...), each timed on the device from its first call's start to its
// last call's end (maximum over ranks): the iteration by which every workload converged, what the iterations
// cost while searching, and the converged loop against NCCL's own.
void RunLoop(Bench& bench, int64_t* check_errors) {
  const Options& opt = bench.opt;
  const int rank = bench.rank;
  struct Workload : SweepRow {
    int settled_at = 0;  // the first iteration after which ccltune reported it settled (0: never)
    int reopened = 0;    // settled, then searching again at a later iteration
  };
  std::vector<Workload> ws;
  for (SweepRow& s : SweepRows(bench)) {
    Workload w;
    static_cast<SweepRow&>(w) = std::move(s);
    ws.push_back(std::move(w));
  }
  const bool t = bench.tuning;
  const std::vector<ncclComm_t> comms =
      t ? std::vector<ncclComm_t>{bench.a, bench.b} : std::vector<ncclComm_t>{bench.a};
  int64_t errors = 0;
  if (opt.check)
    for (Workload& w : ws) errors += bench.DataCheck(w.row, bench.a);
  // One iteration on `comm`, timed under `tag` when `timer` is given; the stream synchronized after it.
  auto iteration = [&](ncclComm_t comm, executor::Timer* timer, uint64_t tag) {
    const bool timed = timer != nullptr && timer->Begin(bench.stream, tag);
    for (Workload& w : ws)
      for (int r = 0; r < opt.loop_repeat; ++r) bench.Run(w.row, comm);
    if (timed) timer->End(bench.stream);
    Check(bench.device->StreamSynchronize(bench.stream), "stream synchronize after a loop iteration");
    // The simulated streams are idle now too: the next iteration's first call starts on an idle stream, as on a GPU.
    if (bench.sim.HostSync) bench.sim.HostSync();
  };
  for (int i = 0; i < opt.warmup; ++i) iteration(bench.a, nullptr, 0);

  // 1. Tuning: B's iterations until every workload settled.
  int all_settled_at = 0;
  int iters = 0;
  std::vector<executor::Sample> tuning_samples;
  if (t) {
    executor::Timer timer(bench.device.get(), 4);
    while (iters < opt.loop_iters && all_settled_at == 0) {
      iteration(bench.b, &timer, static_cast<uint64_t>(iters));
      timer.Harvest(&tuning_samples);
      ++iters;
      int all = 1;
      if (rank == 0) {
        for (Workload& w : ws) {
          const std::optional<ccltuneWorkloadStats_t> s = bench.Stats(w.row, bench.b);
          const bool settled = s && Settled(s->state);
          if (settled && w.settled_at == 0) w.settled_at = iters;
          if (!settled && w.settled_at != 0) w.settled_at = 0, ++w.reopened;
          if (!settled) all = 0;
        }
      }
      MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (all) all_settled_at = iters;
    }
  }
  std::vector<double> tuning_us = Bench::PerTag(tuning_samples, static_cast<size_t>(iters));
  Bench::MaxOverRanks(&tuning_us);

  // 2. The converged loop against NCCL's default, iterations alternating.
  executor::Timer timer(bench.device.get(), 4);
  std::vector<executor::Sample> samples;
  const size_t k = comms.size();
  for (int i = 0; i < opt.iters; ++i)
    for (size_t j = 0; j < k; ++j) {
      const size_t c = i % 2 == 0 ? j : k - 1 - j;
      iteration(comms[c], &timer, static_cast<uint64_t>(i) * k + c);
      timer.Harvest(&samples);
    }
  // Each timed iteration's time, the maximum over ranks, per communicator (-1: not timed).
  std::vector<double> per_iter = Bench::PerTag(samples, static_cast<size_t>(opt.iters) * k);
  Bench::MaxOverRanks(&per_iter);
  std::vector<std::vector<double>> timed_us(k);
  for (int i = 0; i < opt.iters; ++i)
    for (size_t c = 0; c < k; ++c) timed_us[c].push_back(per_iter[static_cast<size_t>(i) * k + c]);
  if (t && opt.check)
    for (Workload& w : ws) errors += bench.DataCheck(w.row, bench.b);
  int64_t total_errors = 0;
  MPI_Allreduce(&errors, &total_errors, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  *check_errors += total_errors;
  if (rank != 0) return;

  // Medians in µs, < 0 where none was measured.
  const double default_us = Median(timed_us[0]).value_or(-1);
  const double tuned_us = t ? Median(timed_us[1]).value_or(-1) : -1;
  double tuning_total = 0;
  int tuning_timed = 0;
  for (double us : tuning_us)
    if (us >= 0) tuning_total += us, ++tuning_timed;
  std::printf("# loop: %zu workloads, each %d per iteration", ws.size(), opt.loop_repeat);
  if (!t) {
    std::printf(" (ccltune not tuning: NCCL's default only)\n");
  } else if (all_settled_at > 0) {
    std::printf(": every workload settled after iteration %d (limit %d)\n", all_settled_at, opt.loop_iters);
  } else {
    std::printf(": not every workload settled within %d iterations\n", opt.loop_iters);
  }
  nlohmann::json per = nlohmann::json::array();
  for (Workload& w : ws) {
    const std::optional<ccltuneWorkloadStats_t> s = bench.Stats(w.row, bench.b);
    std::optional<ccltuneConfig_t> config;
    std::optional<int64_t> converge_calls;
    if (s) {
      config = s->config;
      if (s->convergeCalls > 0 || Settled(s->state)) converge_calls = s->convergeCalls;
    }
    const std::string coll(CollName(w.row.coll));
    if (t)
      std::printf("#   %-13s %10llu B %s: settled after iteration %d, %lld calls to converge, %s%s\n", coll.c_str(),
                  static_cast<unsigned long long>(w.row.g.bytes), std::string(DtypeName(w.row.dtype)).c_str(),
                  w.settled_at, static_cast<long long>(converge_calls.value_or(-1)),
                  config ? ConfigText(*config).c_str() : "n/a",
                  w.reopened ? (", re-opened " + std::to_string(w.reopened) + "x").c_str() : "");
    per.push_back({{"collective", coll},
                   {"bytes", w.row.g.bytes},
                   {"dtype", std::string(DtypeName(w.row.dtype))},
                   {"op", std::string(RedOpName(w.row.g.op))},
                   {"settled_at", w.settled_at},
                   {"reopened", w.reopened},
                   {"converge_calls", converge_calls ? nlohmann::json(*converge_calls) : nlohmann::json(nullptr)},
                   {"config", config ? nlohmann::json(ConfigText(*config)) : nlohmann::json(nullptr)}});
  }
  auto opt_json = [](double v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  if (default_us > 0) {
    std::printf("# loop, %d timed iterations of each, alternating: NCCL's default %.1f us per iteration", opt.iters,
                default_us);
    if (tuned_us > 0) std::printf(", tuned %.1f us: default/tuned %.3f", tuned_us, default_us / tuned_us);
    std::printf("\n");
    if (t && tuning_timed > 0)
      std::printf("# loop while searching: %d iterations took %.1f us, %.3f times as many of NCCL's default\n",
                  tuning_timed, tuning_total, tuning_total / (tuning_timed * default_us));
  }
  bench.sections["loop"] = {
      {"note",
       "each iteration runs every workload loop_repeat times in sweep order, then synchronizes the stream and the "
       "ranks; iteration times on the device, first call's start to last call's end, maximum over ranks; "
       "all_settled_at: the first iteration after which rank 0 read every workload settled (0: not within "
       "max_iters); timed: `timed_iters` iterations of each communicator, alternating, after that (timed_*_us, in "
       "order), and their medians"},
      {"repeat", opt.loop_repeat},
      {"max_iters", opt.loop_iters},
      {"tuning", t},
      {"all_settled_at", all_settled_at},
      {"workloads", per},
      {"tuning_iter_us", tuning_us},
      {"timed_iters", opt.iters},
      {"default_iter_us", opt_json(default_us)},
      {"tuned_iter_us", opt_json(tuned_us)},
      {"timed_default_us", timed_us[0]},
      {"timed_tuned_us", t ? nlohmann::json(timed_us[1]) : nlohmann::json(nullptr)}};
}

std::string NowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string NcclVersion() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  int major = v >= 10000 ? v / 10000 : v / 1000;
  int minor = v >= 10000 ? (v % 10000) / 100 : (v % 1000) / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

// Rank of this process before MPI is up (for printing usage once under mpirun).
bool LaunchedAsRankZero() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v) == 0;
  }
  return true;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<Options> parsed = ParseOptions(args);
  if (parsed.ok() && parsed->help) {
    if (LaunchedAsRankZero()) std::fputs(Usage().c_str(), stdout);
    return 0;
  }
  if (!parsed.ok()) {
    // Every rank says it: mpirun kills the others as soon as the first rank exits non-zero, so a message
    // printed by rank 0 alone is lost whenever rank 0 starts last (seen under TSan in CI).
    std::fprintf(stderr, "ccltune-bench: %s (--help for usage)\n", std::string(parsed.status().message()).c_str());
    std::fflush(stderr);
    return 2;
  }

  MPI_Init(&argc, &argv);
  Bench bench;
  bench.opt = *parsed;
  const Options& opt = bench.opt;
  MPI_Comm_rank(MPI_COMM_WORLD, &bench.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &bench.nranks);
  g_rank = bench.rank;
  const int rank = bench.rank;
  if (opt.root >= bench.nranks) {
    if (rank == 0) std::fprintf(stderr, "ccltune-bench: -r %d: root must be < %d ranks\n", opt.root, bench.nranks);
    MPI_Finalize();
    return 2;
  }

  absl::StatusOr<std::unique_ptr<executor::Device>> device = executor::OpenDevice();
  Check(device.status(), "opening the device");
  bench.device = *std::move(device);
  absl::StatusOr<int> ngpus = bench.device->DeviceCount();
  Check(ngpus.status(), "counting devices");
  const int ordinal = rank % std::max(1, *ngpus);
  Check(bench.device->SetDevice(ordinal), "selecting the device");
  absl::StatusOr<executor::Stream> stream = bench.device->CreateStream();
  Check(stream.status(), "creating a stream");
  bench.stream = *stream;

  // The bench's own kernels (CUDA only): the interference load, and the overhead mode's hold.
  const bool cuda = bench.device->backend() == executor::Backend::kCuda;
  nlohmann::json load_json = nullptr;
  if (opt.load.on()) {
    load_json = {{"kinds", opt.load.Kinds()},
                 {"gemm_n", opt.load.gemm ? nlohmann::json(opt.load.gemm_n) : nlohmann::json(nullptr)},
                 {"mem_bytes", opt.load.mem ? nlohmann::json(opt.load.mem_bytes) : nlohmann::json(nullptr)},
                 {"mode", opt.load.ModeName()},
                 {"phase", opt.load.PhaseName()},
                 {"depth", opt.load.depth}};
    if (!cuda) {
      load_json["effect"] = "none: the simulated backend runs no GPU kernels";
      if (rank == 0)
        std::printf("# --interference %s: no effect on the simulated backend (it runs no GPU kernels)\n",
                    opt.load.Kinds().c_str());
    } else if (!KernelsBuiltIn()) {
      Fatal(
          "--interference needs the bench's GPU kernels, and this ccltune-bench was built without them (no nvcc "
          "at build time: configure with -DCCLTUNE_BENCH_KERNELS=ON and CCLTUNE_NVCC pointing at nvcc)");
    }
  }
  if (cuda && KernelsBuiltIn() && (opt.load.on() || opt.overhead)) {
    absl::StatusOr<std::unique_ptr<GpuKernels>> k = GpuKernels::Load(bench.device.get());
    Check(k.status(), "loading the bench's GPU kernels");
    bench.kernels = *std::move(k);
  }
  if (cuda && opt.load.on() && opt.load.mode == LoadMode::kStep) {
    // Room for the longest timed sweep between two drains: -n iterations of two communicators (compare).
    LoadOptions step_opt = opt.load;
    step_opt.max_steps = std::max<int>(step_opt.max_steps, 2 * opt.iters + 64);
    absl::StatusOr<std::unique_ptr<StepLoad>> l = StepLoad::Create(step_opt, bench.device.get(), bench.kernels.get());
    Check(l.status(), "creating the step load");
    bench.step_load = *std::move(l);
    absl::StatusOr<double> alone = CalibrateStep(bench.step_load.get(), 50, bench.stream);
    Check(alone.status(), "running the step load alone");
    double all_alone = *alone;
    MPI_Allreduce(MPI_IN_PLACE, &all_alone, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    load_json["step_alone_us"] = all_alone;
    load_json["note"] =
        "step mode: every tuning and timed call is one step: 'depth' compute kernels (gemm and triad alternating) "
        "on a stream of their own, the collective's stream waiting for the step's start only, the next step "
        "waiting for both; step_alone_us = median makespan of a step with no collective (max over ranks); the "
        "rows' default_step_us / tuned_step_us = median makespan with the collective (max over ranks)";
    if (rank == 0) std::printf("# step load: %d kernels per step, %.1f us alone\n", opt.load.depth, all_alone);
  }
  if (cuda && opt.load.on() && opt.load.mode == LoadMode::kQueue) {
    absl::StatusOr<std::unique_ptr<BackgroundLoad>> l = BackgroundLoad::Create(opt.load, ordinal, bench.kernels.get());
    Check(l.status(), "starting the background load");
    bench.load = *std::move(l);
    // Its throughput alone, before any collective (all ranks at once, as later).
    MPI_Barrier(MPI_COMM_WORLD);
    absl::StatusOr<LoadStats> alone = CalibrateLoad(bench.load.get(), 500);
    Check(alone.status(), "running the background load alone");
    bench.load_alone = *alone;
  }

  bench.api = ResolveCcltune();
  bench.sim = ResolveSimHooks();
  const bool preloaded = bench.api.present();
  const bool active = preloaded && bench.api.IsActive() == 1;

  ncclUniqueId ids[3];
  if (rank == 0) {
    CheckNccl(ncclGetUniqueId(&ids[0]), "ncclGetUniqueId");
    if (opt.compare || opt.overhead || opt.loop) CheckNccl(ncclGetUniqueId(&ids[1]), "ncclGetUniqueId");
    if (opt.overhead) CheckNccl(ncclGetUniqueId(&ids[2]), "ncclGetUniqueId");
  }
  MPI_Bcast(ids, sizeof(ids), MPI_BYTE, 0, MPI_COMM_WORLD);
  CheckNccl(ncclCommInitRank(&bench.a, bench.nranks, ids[0], rank), "ncclCommInitRank (A)");
  if (opt.compare || opt.overhead || opt.loop)
    CheckNccl(ncclCommInitRank(&bench.b, bench.nranks, ids[1], rank), "ncclCommInitRank (B)");
  if (opt.overhead) CheckNccl(ncclCommInitRank(&bench.c, bench.nranks, ids[2], rank), "ncclCommInitRank (C)");

  // A runs NCCL's default; B keeps ccltune's default mode (tune). Every rank must agree.
  bench.tuning = AllRanks(active);
  if (bench.tuning) bench.tuning = AllRanks(bench.api.SetMode(bench.a, ccltuneModeDefault, nullptr) == ccltuneSuccess);

  Meta meta;
  for (int i = 0; i < argc; ++i) meta.command += (i ? " " : "") + std::string(argv[i]);
  meta.date = NowUtc();
  meta.nranks = bench.nranks;
  meta.nccl_version = NcclVersion();
  meta.device = bench.device->name();
  meta.backend = bench.device->backend() == executor::Backend::kCuda ? "cuda" : "simulated";
  meta.iters = opt.iters;
  meta.warmup = opt.warmup;
  meta.tune_step = opt.tune_step;
  meta.settle_calls = opt.settle_calls;
  if (opt.compare) meta.modes.push_back("compare");
  if (opt.oracle) meta.modes.push_back("oracle");
  if (opt.overhead) meta.modes.push_back("overhead");
  if (opt.landscape) meta.modes.push_back("landscape");
  if (opt.loop) meta.modes.push_back("loop");
  meta.interference = bench.load != nullptr;
  meta.ccltune_version = bench.api.Version();
  meta.preloaded = preloaded;
  meta.budget = opt.budget;
  meta.seed = opt.seed;

  if (rank == 0) {
    std::printf("# ccltune-bench: %d ranks, NCCL %s, device %s (%s backend), iters %d, warmup %d, check %d\n",
                bench.nranks, meta.nccl_version.c_str(), meta.device.c_str(), meta.backend.c_str(), opt.iters,
                opt.warmup, opt.check ? 1 : 0);
    if (!preloaded) {
      std::printf("# ccltune not loaded (LD_PRELOAD=libccltune.so to tune): measuring NCCL's default only\n");
    } else if (!bench.tuning) {
      std::printf("# ccltune %s loaded but not tuning (inactive or refused the modes): NCCL's default only\n",
                  meta.ccltune_version.c_str());
    } else {
      std::printf("# ccltune %s active\n", meta.ccltune_version.c_str());
    }
    if (bench.sim.SetMoveData) std::printf("# simulated NCCL: data moved for data checks only\n");
  }

  std::vector<RowResult> rows;
  int64_t check_errors = 0;
  if (opt.overhead) {
    if (rank == 0) std::printf("#\n# overhead mode\n");
    RunOverhead(bench, &rows, &check_errors);
  }
  if (opt.loop) {
    if (rank == 0) std::printf("#\n# loop mode\n");
    RunLoop(bench, &check_errors);
  }
  for (Coll coll : opt.overhead || opt.loop ? std::vector<Coll>{} : opt.colls) {
    if (rank == 0) PrintTableHeader(coll, opt.compare, opt.oracle);
    for (int dtype : opt.dtypes) {
      for (uint64_t size : SweepSizes(opt)) {
        Geometry g = ComputeGeometry(coll, size, dtype, opt.op, bench.nranks);
        if (g.count == 0) {
          if (rank == 0)
            std::printf("# %llu bytes: too small for one element per rank, skipped\n",
                        static_cast<unsigned long long>(size));
          continue;
        }
        RowResult r = bench.RunRow(coll, dtype, size);
        check_errors += r.check_errors;
        if (rank == 0) PrintTableRow(r, opt.compare, opt.oracle);
        rows.push_back(r);
      }
    }
  }

  // The background load's own throughput: alone, and while the collectives ran (every rank).
  if (bench.load) {
    const LoadStats under = bench.load->stats().Minus(bench.load_alone);
    const LoadStats& alone = bench.load_alone;
    double mine[6] = {alone.GemmTflops(), alone.MemGBps(), alone.Busy(),
                      under.GemmTflops(), under.MemGBps(), under.Busy()};
    std::vector<double> all(rank == 0 ? 6 * bench.nranks : 0);
    MPI_Gather(mine, 6, MPI_DOUBLE, all.data(), 6, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int64_t kernels[2] = {under.gemm_kernels, under.mem_kernels};
    MPI_Allreduce(MPI_IN_PLACE, kernels, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
      auto column = [&](int j) {
        std::vector<double> v;
        for (int r = 0; r < bench.nranks; ++r) v.push_back(all[6 * r + j]);
        return v;
      };
      load_json["note"] =
          "per rank; kernel times from events around each background kernel on its own stream; busy = summed "
          "kernel time / wall time the load ran; 'alone' = 0.5 s with no collectives, 'with_collectives' = while "
          "tuning and timing";
      load_json["alone"] = {{"gemm_tflops", column(0)}, {"mem_gbps", column(1)}, {"busy", column(2)}};
      load_json["with_collectives"] = {{"gemm_tflops", column(3)},
                                       {"mem_gbps", column(4)},
                                       {"busy", column(5)},
                                       {"gemm_kernels_all_ranks", kernels[0]},
                                       {"mem_kernels_all_ranks", kernels[1]}};
      std::printf(
          "# background load (rank 0): alone %.1f TFLOP/s gemm, %.0f GB/s mem; with collectives %.1f "
          "TFLOP/s, %.0f GB/s, busy %.0f%%\n",
          mine[0], mine[1], mine[3], mine[4], 100 * mine[5]);
    }
  }
  meta.interference_load = load_json;

  // The simulated NCCL's cross-rank consistency checker: a mismatch is seen by every rank of the
  // collective, so take the maximum rather than the sum.
  long long sim_mismatches = bench.sim.MismatchCount ? bench.sim.MismatchCount() : 0;
  MPI_Allreduce(MPI_IN_PLACE, &sim_mismatches, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  const int64_t mismatches = check_errors + sim_mismatches;
  if (rank == 0) {
    std::printf("#\n# mismatches: %lld (data check %lld, simulated NCCL consistency checker %lld%s)\n",
                static_cast<long long>(mismatches), static_cast<long long>(check_errors), sim_mismatches,
                bench.sim.MismatchCount ? "" : ": not present");
    if (opt.landscape) {
      std::vector<std::string> header = {
          "ccltune-bench --mode landscape: " + meta.command, "date " + meta.date,
          "ranks " + std::to_string(bench.nranks) + ", NCCL " + meta.nccl_version + ", device " + meta.device + " (" +
              meta.backend + " backend), ccltune " + meta.ccltune_version,
          "rounds " + std::to_string(opt.landscape_rounds) + ", samples per config and round " +
              std::to_string(opt.landscape_samples) + ", warm-up calls per block " +
              std::to_string(Bench::kLandscapeWarmup) + ", NCCL's default re-timed after every " +
              std::to_string(Bench::kDefaultEvery) + " configs"};
      std::string env;
      for (const char* v :
           {"NCCL_HOSTID", "NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE", "NCCL_NVLS_ENABLE", "NCCL_MIN_NCHANNELS",
            "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS", "CCLTUNE_TESTBED"})
        if (const char* x = std::getenv(v)) env += std::string(env.empty() ? "" : " ") + v + "=" + x;
      if (!env.empty()) header.push_back("environment (rank 0): " + env);
      absl::Status st =
          WriteLandscape(opt.landscape_out, header, bench.landscape_samples, bench.landscape_aliases, bench.nranks);
      if (!st.ok())
        std::fprintf(stderr, "ccltune-bench: %s\n", std::string(st.message()).c_str());
      else
        std::printf("# wrote %s.txt and %s.samples (%zu samples)\n", opt.landscape_out.c_str(),
                    opt.landscape_out.c_str(), bench.landscape_samples.size());
    }
    if (!opt.json_path.empty()) {
      absl::Status st = WriteJsonReport(opt.json_path, meta, rows, mismatches, bench.sections);
      if (!st.ok())
        std::fprintf(stderr, "ccltune-bench: %s\n", std::string(st.message()).c_str());
      else
        std::printf("# wrote %s\n", opt.json_path.c_str());
    }
    std::fflush(stdout);
  }

  bench.load.reset();
  bench.step_load.reset();
  bench.kernels.reset();
  if (bench.c) ncclCommDestroy(bench.c);
  if (bench.b) ncclCommDestroy(bench.b);
  ncclCommDestroy(bench.a);
  bench.device->DestroyStream(bench.stream);
  bench.device.reset();
  MPI_Finalize();
  return mismatches > 0 ? 1 : 0;
}

}  // namespace
}  // namespace ccltune::bench

int main(int argc, char** argv) { return ccltune::bench::Main(argc, argv); }
