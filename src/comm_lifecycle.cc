// Communicator lifecycle (see comm_lifecycle.hpp).
#include "src/comm_lifecycle.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/comm_state.hpp"
#include "src/inflight.hpp"
#include "src/log.hpp"
#include "src/nccl_api.hpp"
#include "src/runtime.hpp"
#include "src/summary.hpp"

namespace ccltune {
namespace {

constexpr const char* kVersion = "0.1.0";

// The simulated NCCL moves data only on the first call of each config unless told otherwise;
// ccltune's sync ops always need their data, so they ask for it.
using SetMoveDataFn = void (*)(int);
SetMoveDataFn SimSetMoveData() {
  static SetMoveDataFn fn = reinterpret_cast<SetMoveDataFn>(dlsym(RTLD_DEFAULT, "simncclSetMoveData"));
  return fn;
}

int EnvInt(const char* name, int fallback) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  long x = strtol(v, &end, 10);
  return (end != v && *end == '\0') ? static_cast<int>(x) : fallback;
}

config_table::WorkloadState StateOf(const coordinator::WorkloadUpdate& u, bool imported) {
  if (!u.converged) return config_table::WorkloadState::kSearching;
  return imported ? config_table::WorkloadState::kImported : config_table::WorkloadState::kConverged;
}

}  // namespace

optimizer::Options SearchOptionsFrom(const Settings& settings) {
  optimizer::Options o;
  o.min_gain = settings.min_gain;
  o.guard = settings.guard;
  o.screen_cost_ratio = settings.screen_cost_ratio;
  o.race_budget = settings.race_budget;
  return o;
}

Leader::Options LeaderOptionsFrom(const Settings& settings) {
  Leader::Options lo;
  lo.search = SearchOptionsFrom(settings);
  lo.max_entries = settings.max_batch;
  lo.interval.min_units = static_cast<uint64_t>(settings.min_interval);
  lo.settle_below_us = settings.settle_us;
  lo.low_stakes_share = settings.low_stakes_pct / 100.0;
  return lo;
}

bool CommLifecycle::Blocking(const ncclConfig_t* config) {
  if (config != nullptr && config->blocking != NCCL_CONFIG_UNDEF_INT) return config->blocking != 0;
  return EnvInt("NCCL_COMM_BLOCKING", 1) != 0;
}

config_table::Fingerprint CommLifecycle::FingerprintOf(const CommState& cs) const {
  config_table::Fingerprint fp;
  executor::Device* dev = rt_.device();
  fp.gpu = dev != nullptr ? dev->name() : "unknown";
  fp.nranks = cs.nranks();
  PluginCtx* ctx = cs.ctx.load();
  fp.nnodes = ctx != nullptr ? static_cast<int>(ctx->nnodes) : 1;
  fp.nccl_version = RealNcclVersion();
  fp.plugin_version = rt_.plugin().abi();
  fp.channel_budget = cs.channel_budget();
  fp.channels = cs.max_ran_channels;
  fp.ccltune_version = kVersion;
  return fp;
}

void CommLifecycle::OnCommCreated(ncclComm_t comm, const ncclConfig_t* config, bool multi_gpu_thread, int baseline) {
  if (!rt_.active() || comm == nullptr) return;
  const Settings& settings = rt_.settings();
  CommOptions o;
  if (Real().CommUserRank(comm, &o.rank) != ncclSuccess || Real().CommCount(comm, &o.nranks) != ncclSuccess) {
    CCLTUNE_WARN(kInit, "cannot query rank/size of communicator %p; passing it through", static_cast<void*>(comm));
    return;
  }
  // Channel budget: ccltune's setting, else what the communicator was created with, else NCCL's env.
  o.baseline_channels = baseline;
  if (config != nullptr) o.creation_config = *config;
  int budget = settings.channel_budget;
  if (budget == 0 && config != nullptr && config->maxCTAs != NCCL_CONFIG_UNDEF_INT && config->maxCTAs > 0) {
    budget = config->maxCTAs;
  }
  if (budget == 0) budget = EnvInt("NCCL_MAX_CTAS", EnvInt("NCCL_MAX_NCHANNELS", 32));
  o.channel_budget = std::clamp(budget, 1, 64);

  const bool blocking = Blocking(config);
  executor::Device* device = rt_.device();
  if (multi_gpu_thread) {
    o.passthrough = true;
    o.passthrough_reason = "one thread drives several communicators (ncclCommInitAll, or several created in one group)";
  } else if (!blocking) {
    o.passthrough = true;
    o.passthrough_reason = "non-blocking communicator";
  } else if (device == nullptr) {
    o.passthrough = true;
    o.passthrough_reason = "no device backend: " + rt_.device_error();
  }
  SetLogRank(o.rank);
  auto cs = std::make_shared<CommState>(comm, o);
  if (!o.passthrough) SetUp(*cs);
  if (o.rank == 0 && !cs->passthrough()) rt_.exporter().StartFlusher();
  if (cs->passthrough()) {
    CCLTUNE_INFO(kInit, "communicator %p (rank %d of %d) passes through untuned: %s", static_cast<void*>(comm),
                 cs->rank(), cs->nranks(), cs->passthrough_reason());
  }
  rt_.comms().Add(comm, cs);
  if (o.rank == 0 && !announced_.exchange(true)) {
    const int v = RealNcclVersion();
    std::string truth = "channel truth on (NCCL's profiler plugin interface)";
    if (!rt_.plugin().channel_truth()) {
      const char* prof = getenv("NCCL_PROFILER_PLUGIN");
      truth =
          absl::StrCat("channel truth off (", prof != nullptr ? absl::StrCat("NCCL_PROFILER_PLUGIN=", prof, ": ") : "",
                       "NCCL did not load ccltune's profiler plugin)");
    }
    LogAlways(absl::StrFormat("ccltune %s: %s; NCCL %d.%d.%d, tuner ABI v%d, device %s, channel budget %d, %s%s",
                              kVersion, cs->passthrough() ? "passing through" : "tuning", v / 10000, (v / 100) % 100,
                              v % 100, rt_.plugin().abi(), device != nullptr ? device->name() : "none",
                              o.channel_budget, truth,
                              rt_.nccl_env_limits_algo() ? ", searching within what NCCL_ALGO/NCCL_PROTO allow" : ""));
  }
}

absl::StatusOr<NcclTransport::SideRoute> CommLifecycle::SplitSyncComm(CommState& cs, ncclComm_t* side_comm) {
  *side_comm = nullptr;
  // Every rank alike: the same NCCL library, so the same functions.
  if (Real().CommSplit == nullptr || Real().CommDestroy == nullptr || Real().CommAbort == nullptr) {
    return absl::UnimplementedError("this NCCL has no ncclCommSplit");
  }
  // One channel is plenty for a few KiB; its own resources (splitShare 0): a split that shared the tuned
  // communicator's would also share its launch order on the GPU, where the sync ops would again run between
  // the user's calls.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.minCTAs = 1;
  config.maxCTAs = 1;
  config.splitShare = 0;
  config.commName = "ccltune-sync";
  ncclComm_t side = nullptr;
  if (const ncclResult_t r = Real().CommSplit(cs.comm(), 0, cs.rank(), &side, &config); r != ncclSuccess) {
    return absl::InternalError(absl::StrCat("ncclCommSplit for the sync ops failed: NCCL error ", static_cast<int>(r)));
  }
  if (side == nullptr) return absl::InternalError("ncclCommSplit for the sync ops returned no communicator");
  absl::StatusOr<executor::Stream> stream = rt_.device()->CreateStream();
  if (!stream.ok()) {
    Real().CommDestroy(side);
    return stream.status();
  }
  *side_comm = side;
  NcclTransport::SideRoute route;
  route.stream = *stream;
  route.async_error = [side]() {
    ncclResult_t async = ncclSuccess;
    if (Real().CommGetAsyncError == nullptr || Real().CommGetAsyncError(side, &async) != ncclSuccess) {
      return ncclSuccess;
    }
    return async;
  };
  route.release = [side](bool abort) { abort ? Real().CommAbort(side) : Real().CommDestroy(side); };
  return route;
}

void CommLifecycle::SetUp(CommState& cs) {
  const Settings& settings = rt_.settings();
  executor::Device* device = rt_.device();
  ncclComm_t comm = cs.comm();
  std::optional<NcclTransport::SideRoute> side;
  ncclComm_t sync_comm = comm;
  if (settings.sync_split) {
    absl::StatusOr<NcclTransport::SideRoute> route = SplitSyncComm(cs, &sync_comm);
    if (!route.ok()) {
      cs.MarkPassthrough(absl::StrCat("CCLTUNE_SYNC_COMM=split: ", route.status().message()));
      CCLTUNE_WARN(kInit, "communicator %p: %s", static_cast<void*>(comm), cs.passthrough_reason());
      return;
    }
    side = std::move(*route);
    if (cs.rank() == 0) {
      CCLTUNE_INFO(kInit, "communicator %p: sync ops on communicator %p (split off it), on a stream of ccltune's",
                   static_cast<void*>(comm), static_cast<void*>(sync_comm));
    }
  }
  // ccltune's own op: the plugin sees it as internal and leaves NCCL's default untouched. On the side
  // communicator it names no communicator state, so that the side communicator's tuner context is never
  // bound to the tuned communicator's state.
  CommState* owner = side ? nullptr : &cs;
  NcclTransport::AllReduceFn all_reduce_max = [owner, sync_comm](void* buf, int words, void* stream) {
    std::vector<InFlight>& inflight = ThisThread().inflight;
    inflight.push_back(InFlight{owner, Config{}, 0, true, false});
    if (SetMoveDataFn f = SimSetMoveData()) f(1);
    ncclResult_t r = Real().AllReduce(buf, buf, static_cast<size_t>(words), ncclUint64, ncclMax, sync_comm,
                                      static_cast<cudaStream_t>(stream));
    inflight.pop_back();
    return r;
  };
  NcclTransport::AsyncErrorFn async_error = [comm]() {
    ncclResult_t async = ncclSuccess;
    if (Real().CommGetAsyncError == nullptr || Real().CommGetAsyncError(comm, &async) != ncclSuccess) {
      return ncclSuccess;
    }
    return async;
  };
  auto transport =
      std::make_unique<NcclTransport>(device, std::move(all_reduce_max), std::move(async_error), std::move(side));
  if (absl::Status st = transport->Init(); !st.ok()) {
    // Without its buffer this rank cannot take part in sync ops. Every rank allocates the same
    // 8 KiB at the same point, so this is the rare out-of-memory case; see docs/failure semantics.
    cs.MarkPassthrough(absl::StrCat("cannot allocate the sync buffer: ", st.message()));
    CCLTUNE_WARN(kInit, "communicator %p: %s", static_cast<void*>(comm), cs.passthrough_reason());
    return;
  }
  cs.transport = transport.get();
  // Every rank times the calls its schedule says; the timings travel to the leader in the sync ops.
  cs.timer = std::make_unique<executor::Timer>(device, CommState::kTimerDepth);
  cs.timing = settings.timing_max ? Leader::Timing::kMaxOverRanks : Leader::Timing::kMinOverRanks;
  CommState* csp = &cs;
  coordinator::CommCoordinator::Hooks hooks;
  hooks.fill_samples = [this, csp](uint64_t first, int n, int slot0, bool early, coordinator::SampleWords* words) {
    rt_.calls().FillSamples(*csp, first, n, slot0, early, words);
  };
  if (cs.rank() == 0) {
    Leader::Options lo = LeaderOptionsFrom(settings);
    lo.channel_budget = cs.channel_budget();
    lo.chunk_dim = rt_.plugin().abi() >= 6 && settings.search_chunk;
    lo.channel_truth = rt_.plugin().channel_truth();
    lo.timing = cs.timing;
    lo.trace = rt_.trace();
    if (lo.trace != nullptr) lo.trace_comm = absl::StrFormat("%p", static_cast<void*>(comm));
    cs.leader = std::make_unique<Leader>(lo);
    hooks.build_message = [this, csp](uint64_t sync_id) {
      if (!csp->imported_loaded) {
        csp->imported_loaded = true;
        if (!rt_.settings().import_path.empty()) LoadImport(*csp);
      }
      return csp->leader->Build(csp->coord->book(), coordinator::RecordRoom(sync_id));
    };
    hooks.on_samples = [csp](uint64_t first, const std::vector<std::optional<coordinator::CarriedSample>>& s,
                             bool window) { csp->leader->OnSamples(first, s, window); };
  }
  hooks.on_update = [csp](const coordinator::WorkloadUpdate& u,
                          const std::vector<coordinator::ScheduleEntry>& dropped) {
    ++csp->updates_applied;
    if (csp->leader) csp->leader->OnApplied(u, dropped);
    auto it = csp->workloads.find(u.workload);
    if (it == csp->workloads.end()) return;  // not seen here yet: picked up at first sight (CallPath::Decide)
    const bool imported = csp->leader && csp->leader->imported(u.workload);
    const uint64_t calls = it->second.calls;
    if (csp->rank() == 0)
      CCLTUNE_TRACE(kCoord, "workload %016x: update applied at unit %d, after %d of its calls (%d entries%s)",
                    u.workload, static_cast<int64_t>(csp->coord->units()), static_cast<int64_t>(calls),
                    static_cast<int64_t>(u.entries.size()), u.converged ? ", converged" : "");
    csp->table().Update(it->second.key, [&](config_table::Entry& e) {
      e.state = StateOf(u, imported);
      e.config = u.entries.back().config;
      if (u.converged && e.converge_calls == 0) e.converge_calls = std::max<uint64_t>(calls, 1);
      if (!u.converged) e.converge_calls = 0;
    });
  };
  hooks.on_stop = [csp](const std::string& reason) {
    csp->stopped = true;
    csp->stop_reason = reason;
    // Every rank stops at the same unit; the leader says so once, loudly.
    Log(csp->rank() == 0 ? LogLevel::kWarn : LogLevel::kInfo, Subsys::kCoord,
        "communicator %p: tuning off, NCCL's defaults from here on: %s", static_cast<void*>(csp->comm()), reason);
  };
  hooks.on_slow_wait = [csp](uint64_t sync_id, absl::Duration waited) {
    CCLTUNE_WARN(kCoord,
                 "communicator %p rank %d: waiting %s for sync %d (unit %d) — a peer is far behind; if this "
                 "persists, check that every rank runs ccltune with the same settings",
                 static_cast<void*>(csp->comm()), csp->rank(), absl::FormatDuration(waited),
                 static_cast<int64_t>(sync_id), static_cast<int64_t>(csp->coord->units()));
  };
  cs.coord = std::make_unique<coordinator::CommCoordinator>(cs.rank(), std::move(transport), std::move(hooks),
                                                            absl::Seconds(settings.sync_warn_s));
}

void CommLifecycle::LoadImport(CommState& cs) {
  const std::string& path = rt_.settings().import_path;
  const config_table::Fingerprint fp = FingerprintOf(cs);
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".csv") == 0) {
    auto rules = config_table::ImportCsv(path, fp.nranks, fp.nnodes);
    if (!rules.ok()) {
      CCLTUNE_WARN(kExport, "%s; tuning goes on from NCCL's defaults", rules.status().message());
      return;
    }
    cs.csv_rules = std::move(*rules);
    for (const auto& [h, w] : cs.workloads) ApplyCsvImport(cs, w.key);  // workloads seen before this first sync
    LogImportLoaded(path, static_cast<int>(cs.csv_rules.size()), "CSV lines", fp.nranks);
    return;
  }
  auto imp = config_table::ImportJson(path, fp);
  if (imp.ok()) {
    cs.leader->AddImports(*imp);
    LogImportLoaded(path, static_cast<int>(imp->size()), "configs", fp.nranks);
  } else {
    CCLTUNE_WARN(kExport, "%s; tuning goes on from NCCL's defaults", imp.status().message());
  }
}

void CommLifecycle::ApplyCsvImport(CommState& cs, const WorkloadKey& key) {
  if (cs.csv_rules.empty() || !cs.leader || key.grouped || key.calls.size() != 1) return;
  PluginCtx* ctx = cs.ctx.load();
  const int nnodes = ctx != nullptr ? static_cast<int>(ctx->nnodes) : 1;
  std::optional<Config> cfg = config_table::MatchCsv(cs.csv_rules, key.calls[0], cs.nranks(), nnodes);
  if (!cfg) return;
  // A line may ask for more channels than this communicator searches; NCCL would clamp it anyway.
  cfg->channels = std::min(cfg->channels, cs.channel_budget());
  cs.leader->AddImports({config_table::ImportedWorkload{key, *cfg, 0, 0}});
}

void CommLifecycle::OnCommGone(ncclComm_t comm, bool abort) {
  std::shared_ptr<CommState> cs = rt_.comms().Remove(comm);
  if (!cs) return;
  rt_.plugin().Unbind(cs.get());
  std::lock_guard<std::mutex> lock(cs->mu);
  rt_.exporter().AddRetiredChanges(cs->updates_applied);
  if (cs->rank() == 0 && !cs->passthrough()) rt_.exporter().Retire(*cs);
  if (abort && cs->transport != nullptr) cs->transport->Leak();
  cs->coord.reset();
  cs->timer.reset();
}

}  // namespace ccltune
