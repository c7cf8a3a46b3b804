// NCCL's tuner and profiler plugins on ccltune's side (see plugin_bridge.hpp).
#include "src/plugin_bridge.hpp"

#include <algorithm>
#include <array>

#include "src/comm_state.hpp"
#include "src/inflight.hpp"
#include "src/log.hpp"
#include "src/runtime.hpp"

namespace ccltune {

void* PluginBridge::TunerInit(int abi, uint64_t comm_id, size_t nranks, size_t nnodes) {
  std::lock_guard<std::mutex> lock(mu_);
  abi_.store(std::max(abi_.load(), abi));
  auto ctx = std::make_unique<PluginCtx>();
  ctx->comm_id = comm_id;
  ctx->nranks = nranks;
  ctx->nnodes = nnodes;
  ctx->abi = abi;
  contexts_.push_back(std::move(ctx));
  CCLTUNE_INFO(kPlugin, "tuner ABI v%d init: commId %016x, %d ranks, %d nodes", abi, comm_id, static_cast<int>(nranks),
               static_cast<int>(nnodes));
  return contexts_.back().get();
}

void PluginBridge::TunerFinalize(void* vctx) {
  std::lock_guard<std::mutex> lock(mu_);
  auto* ctx = static_cast<PluginCtx*>(vctx);
  if (CommState* cs = ctx->bound.load()) cs->ctx.store(nullptr);
  contexts_.erase(std::remove_if(contexts_.begin(), contexts_.end(), [&](const auto& p) { return p.get() == ctx; }),
                  contexts_.end());
}

void PluginBridge::Unbind(CommState* cs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (PluginCtx* ctx = cs->ctx.load()) ctx->bound.store(nullptr);
}

CommState* PluginBridge::Bound(PluginCtx* ctx) {
  if (CommState* cs = ctx->bound.load(std::memory_order_acquire)) return cs;
  std::lock_guard<std::mutex> lock(mu_);
  if (CommState* cs = ctx->bound.load()) return cs;
  // Bind to the one communicator with a call in flight here that matches and has no context yet.
  CommState* candidate = nullptr;
  int n = 0;
  for (const InFlight& f : ThisThread().inflight) {
    if (f.comm == nullptr || f.comm->ctx.load() != nullptr) continue;
    if (static_cast<size_t>(f.comm->nranks()) != ctx->nranks) continue;
    if (f.comm != candidate) {
      candidate = f.comm;
      ++n;
    }
  }
  if (n != 1) return nullptr;
  candidate->ctx.store(ctx);
  ctx->bound.store(candidate, std::memory_order_release);
  CCLTUNE_TRACE(kPlugin, "tuner context %016x bound to communicator %p", ctx->comm_id,
                static_cast<void*>(candidate->comm()));
  return candidate;
}

void PluginBridge::GetCollInfo(void* vctx, int coll, size_t nbytes, int num_pipe_ops, float** table, int num_algo,
                               int num_proto, int* nchannels) {
  auto* ctx = static_cast<PluginCtx*>(vctx);
  if (ThisThread().probe.active) {
    // The channel probe: ring/LL where NCCL allows it (small chunks: every channel gets work), every channel.
    float* t = reinterpret_cast<float*>(table);
    if (kAlgoRing < num_algo && kProtoLL < num_proto && t[kAlgoRing * num_proto + kProtoLL] >= 0) {
      t[kAlgoRing * num_proto + kProtoLL] = 0.0f;
    }
    *nchannels = kProbeChannels;
    return;
  }
  std::vector<InFlight>& inflight = ThisThread().inflight;
  if (ctx == nullptr || inflight.empty()) return;  // not a call ccltune issued on this thread
  CommState* bound = Bound(ctx);
  if (bound == nullptr) return;
  InFlight* f = nullptr;
  for (InFlight& x : inflight)
    if (x.comm == bound) f = &x;
  if (f == nullptr || f->internal) return;
  float* t = reinterpret_cast<float*>(table);  // NCCL passes its float[numAlgo][numProto] as float**
  if (f->record_space) {
    f->record_space = false;
    SubspaceSet s;
    std::array<float, kNumAlgos * kNumProtos> cost;
    cost.fill(-1.0f);
    float best = 0;
    for (int a = 0; a < std::min(num_algo, kNumAlgos); ++a) {
      for (int p = 0; p < std::min(num_proto, kNumProtos); ++p) {
        const float c = t[a * num_proto + p];
        if (c < 0) continue;
        cost[a * kNumProtos + p] = c;
        s.valid_mask |= 1u << (a * kNumProtos + p);
        if (s.nccl_algo < 0 || c < best) {
          best = c;
          s.nccl_algo = a;
          s.nccl_proto = p;
        }
      }
    }
    std::lock_guard<std::mutex> lock(bound->mu);
    if (auto it = bound->workloads.find(f->workload); it != bound->workloads.end()) {
      it->second.space_known = true;
      bound->table().Update(it->second.key, [&](config_table::Entry& e) { e.subspaces = s; });
    }
    if (bound->leader) bound->leader->OnSpace(f->workload, s, cost);
  }
  const Config& c = f->config;
  bool subspace_set = false;
  // Only an entry NCCL's cost table allows: NCCL sets the cost of what NCCL_ALGO/NCCL_PROTO disable (and
  // of what cannot run here) to -1, so the user's limits hold as NCCL reads them, per collective included.
  if (c.HasSubspace()) {
    if (c.algo < num_algo && c.proto < num_proto && t[c.algo * num_proto + c.proto] >= 0) {
      t[c.algo * num_proto + c.proto] = 0.0f;
      subspace_set = true;
    } else {
      CCLTUNE_TRACE(kPlugin, "%s not valid for this call (func %d, %d bytes): NCCL chooses", c.ToString(), coll,
                    static_cast<int64_t>(nbytes));
    }
  }
  f->subspace_applied = (f->consults == 0 || f->subspace_applied) && subspace_set;
  ++f->consults;
  if (c.channels > 0) {
    *nchannels = c.channels;
    f->channels_applied = c.channels;
  } else if (c.IsDefault() && f->single && bound->baseline_channels() > 0) {
    // NCCL's default on a communicator ccltune created with more channels: NCCL's own algorithm and protocol
    // (its cost table does not change with the budget), on the channels NCCL would give it at its own budget.
    // NCCL starts from the communicator's channels and takes fewer for a small message, so that is what it
    // ran here untouched, at most the original count (read on the first call; untouched until then).
    int own = 0;
    {
      std::lock_guard<std::mutex> lock(bound->mu);
      if (auto it = bound->workloads.find(f->workload); it != bound->workloads.end()) own = it->second.own_channels;
    }
    if (own > 0) {
      *nchannels = std::min(own, bound->baseline_channels());
      f->channels_applied = *nchannels;
    }
  }
  CCLTUNE_TRACE(kPlugin, "getCollInfo func %d bytes %d pipeOps %d -> %s", coll, static_cast<int64_t>(nbytes),
                num_pipe_ops, c.ToString());
}

void PluginBridge::GetChunkSize(void* vctx, int coll, size_t nbytes, int algo, int proto, int nchannels,
                                size_t* chunk) {
  auto* ctx = static_cast<PluginCtx*>(vctx);
  const std::vector<InFlight>& inflight = ThisThread().inflight;
  if (ctx == nullptr || inflight.empty()) return;
  CommState* bound = ctx->bound.load(std::memory_order_acquire);
  if (bound == nullptr) return;
  for (const InFlight& f : inflight) {
    if (f.comm != bound || f.internal || f.config.chunk_bytes <= 0) continue;
    // A chunk below the protocol's grain rounds to 0 inside NCCL (a division by zero): clamp.
    const int64_t grain = proto == kProtoLL ? 16 : proto == kProtoLL128 ? 1920 : 512;
    int64_t v = std::max<int64_t>(f.config.chunk_bytes, grain);
    v = v / grain * grain;
    *chunk = static_cast<size_t>(v);
  }
}

void* PluginBridge::ProfilerInit(uint64_t comm_id, int rank, int nranks) {
  std::lock_guard<std::mutex> lock(mu_);
  profiler_loaded_ = true;
  auto ctx = std::make_unique<ProfilerCtx>();
  ctx->comm_id = comm_id;
  ctx->rank = rank;
  ctx->nranks = nranks;
  profiler_contexts_.push_back(std::move(ctx));
  return profiler_contexts_.back().get();
}

void PluginBridge::ProfilerFinalize(void* vctx) {
  std::lock_guard<std::mutex> lock(mu_);
  auto* ctx = static_cast<ProfilerCtx*>(vctx);
  profiler_contexts_.erase(std::remove_if(profiler_contexts_.begin(), profiler_contexts_.end(),
                                          [&](const auto& p) { return p.get() == ctx; }),
                           profiler_contexts_.end());
}

void PluginBridge::ProfilerColl(void* vctx, int algo, int proto, int channels) {
  auto* ctx = static_cast<ProfilerCtx*>(vctx);
  if (ChannelProbe& probe = ThisThread().probe; probe.active) {
    probe.ran = std::max(probe.ran, channels);
    return;
  }
  std::vector<InFlight>& inflight = ThisThread().inflight;
  if (ctx == nullptr || inflight.empty()) return;  // launched off the calling thread (a graph's host callback)
  // The call in flight on this thread whose communicator's tuner context has the same hash.
  InFlight* f = nullptr;
  for (InFlight& x : inflight) {
    PluginCtx* pc = x.comm != nullptr ? x.comm->ctx.load() : nullptr;
    if (pc != nullptr && pc->comm_id == ctx->comm_id) f = &x;
  }
  if (f == nullptr || f->internal) return;
  CommState& cs = *f->comm;
  const Config ran{algo, proto, channels, 0};
  // A disagreement between what the plugin applied and what NCCL ran means ccltune's model of NCCL is
  // wrong here: never tune on it. NCCL may run a lone collective on fewer channels than asked (small
  // messages), never on more; in a group its planner adds the tasks' channel counts up, so there a task
  // can get more than asked and only the algorithm and protocol are checked.
  const bool wrong_subspace = f->subspace_applied && (algo != f->config.algo || proto != f->config.proto);
  const bool wrong_channels = f->single && f->channels_applied > 0 && channels > f->channels_applied;
  std::lock_guard<std::mutex> lock(cs.mu);
  cs.max_ran_channels = std::max(cs.max_ran_channels, channels);
  // Recorded when it changes only: the same (asked, ran) pair repeats on almost every call. A group's
  // collectives each report their own run: no one (asked, ran) pair for the group.
  if (auto it = cs.workloads.find(f->workload); f->single && it != cs.workloads.end()) {
    WorkloadSlot& w = it->second;
    // NCCL's default untouched on a raised communicator (a workload's first call): what it runs on all the
    // channels. That is not the default ccltune runs from the next call on (GetCollInfo): told to the table
    // and to a search (a size class's search may already run) as the default's run, it would show the wrong
    // run and make NCCL's own pick on the raised channels a twin of the default, never tried.
    const bool raised_default = cs.baseline_channels() > 0 && f->config.IsDefault() && f->channels_applied == 0;
    if (raised_default && w.own_channels == 0) w.own_channels = channels;
    if (!raised_default && (!(w.last_asked == f->config) || !(w.last_ran == ran) || !w.ran_known)) {
      w.last_asked = f->config;
      w.last_ran = ran;
      w.ran_known = true;
      cs.table().Update(w.key, [&](config_table::Entry& e) { e.NoteRan(f->config, ran); });
      if (cs.leader) cs.leader->OnRan(f->workload, f->config, ran);
    }
  }
  if ((wrong_subspace || wrong_channels) && !cs.ran_mismatch && cs.coord) {
    cs.ran_mismatch = true;
    CCLTUNE_WARN(kPlugin,
                 "communicator %p rank %d: NCCL ran %s for a call ccltune set to %s; tuning stops on this "
                 "communicator (every rank, at the next sync)",
                 static_cast<void*>(cs.comm()), cs.rank(), ran.ToString(), f->config.ToString());
    cs.coord->RaiseError();
  }
}

}  // namespace ccltune
