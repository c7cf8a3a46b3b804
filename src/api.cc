// The public C API's modes and statistics, over the communicators ccltune knows (public_api.cc holds
// the exported entry points).
#include <algorithm>
#include <cstring>

#include "src/comm_state.hpp"
#include "src/runtime.hpp"

namespace ccltune {
namespace {

ccltuneConfig_t ToApi(const Config& c) { return {c.algo, c.proto, c.channels, c.chunk_bytes}; }

}  // namespace

int Runtime::SetMode(ncclComm_t comm, ccltuneMode_t mode, const ccltuneConfig_t* forced) {
  if (mode < ccltuneModeTune || mode > ccltuneModeForced) return ccltuneInvalidArgument;
  Config f;
  if (mode == ccltuneModeForced) {
    if (forced == nullptr) return ccltuneInvalidArgument;
    f = Config{forced->algorithm, forced->protocol, forced->channels, forced->chunkBytes};
    const bool algo_ok =
        f.algo >= -1 && f.algo < kNumAlgos && f.proto >= -1 && f.proto < kNumProtos && ((f.algo < 0) == (f.proto < 0));
    if (!algo_ok || f.channels < 0 || f.channels > 64 || f.chunk_bytes < 0) return ccltuneInvalidArgument;
  }
  std::shared_ptr<CommState> cs = comms_.FindShared(comm);
  if (!cs) return ccltuneNotFound;
  if (cs->passthrough()) return ccltuneUnavailable;
  std::lock_guard<std::mutex> lock(cs->mu);
  cs->mode = mode;
  cs->forced = f;
  if (cs->leader) cs->leader->set_frozen(mode == ccltuneModeFrozen);
  return ccltuneSuccess;
}

int Runtime::GetMode(ncclComm_t comm, ccltuneMode_t* mode) {
  if (mode == nullptr) return ccltuneInvalidArgument;
  std::shared_ptr<CommState> cs = comms_.FindShared(comm);
  if (!cs) return ccltuneNotFound;
  std::lock_guard<std::mutex> lock(cs->mu);
  *mode = cs->mode;
  return ccltuneSuccess;
}

void Runtime::FillStats(CommState& cs, const config_table::Entry& e, ccltuneWorkloadStats_t* out) {
  std::memset(out, 0, sizeof(*out));
  const CallDesc& c = e.key.calls.empty() ? CallDesc{} : e.key.calls.front();
  const uint64_t hash = e.key.Hash();
  out->collective = static_cast<int>(c.coll);
  out->datatype = c.dtype;
  out->op = c.op;
  out->bytes = c.bytes;
  out->grouped = e.key.grouped ? 1 : 0;
  out->state = static_cast<int>(e.state);
  out->config = ToApi(e.config);
  out->defaultUs = e.default_us;
  out->tunedUs = e.tuned_us;
  out->samples = static_cast<int64_t>(e.samples);
  if (cs.leader) {
    if (auto st = cs.leader->StatsOf(hash)) {
      out->defaultUs = st->default_us;
      out->tunedUs = st->incumbent_us;
      out->samples = st->samples;
    }
  }
  auto w = cs.workloads.find(hash);
  out->calls = static_cast<int64_t>(w != cs.workloads.end() ? w->second.calls : e.calls);
  out->convergeCalls = static_cast<int64_t>(e.converge_calls);
  out->validSubspaces = e.subspaces.valid_mask;
  out->ncclAlgorithm = e.subspaces.nccl_algo;
  out->ncclProtocol = e.subspaces.nccl_proto;
  out->channelBudget = cs.channel_budget();
  out->chunkTunable = plugin_.abi() >= 6 ? 1 : 0;
  out->lastRan = e.last_ran.HasSubspace() ? ToApi(e.last_ran) : ccltuneConfig_t{-1, -1, 0, 0};
  out->channelTruth = plugin_.channel_truth() ? 1 : 0;
}

int Runtime::GetStats(ncclComm_t comm, const CallDesc& call, ccltuneWorkloadStats_t* out) {
  if (out == nullptr) return ccltuneInvalidArgument;
  std::shared_ptr<CommState> cs = comms_.FindShared(comm);
  if (!cs) return ccltuneNotFound;
  std::lock_guard<std::mutex> lock(cs->mu);
  auto e = cs->table().Find(WorkloadKey::HashOf({&call, 1}, false));
  if (!e) return ccltuneNotFound;
  FillStats(*cs, *e, out);
  return ccltuneSuccess;
}

int Runtime::ListStats(ncclComm_t comm, ccltuneWorkloadStats_t* out, int max, int* count) {
  if (count == nullptr || (max > 0 && out == nullptr)) return ccltuneInvalidArgument;
  std::shared_ptr<CommState> cs = comms_.FindShared(comm);
  if (!cs) return ccltuneNotFound;
  std::lock_guard<std::mutex> lock(cs->mu);
  std::vector<config_table::Entry> all = cs->table().Snapshot();
  *count = static_cast<int>(all.size());
  for (int i = 0; i < std::min<int>(max, static_cast<int>(all.size())); ++i) FillStats(*cs, all[i], &out[i]);
  return ccltuneSuccess;
}

int Runtime::Summary(ccltuneSummary_t* out) {
  std::memset(out, 0, sizeof(*out));
  out->changes = exporter_.retired_changes();
  for (auto& cs : comms_.Live()) {
    if (cs->passthrough()) continue;
    std::lock_guard<std::mutex> lock(cs->mu);
    ++out->communicators;
    out->changes += cs->updates_applied;
    const bool tuned_mode = cs->mode == ccltuneModeTune || cs->mode == ccltuneModeFrozen;
    for (const config_table::Entry& e : cs->table().Snapshot()) {
      ++out->workloads;
      auto w = cs->workloads.find(e.key.Hash());
      out->calls += static_cast<int64_t>(w != cs->workloads.end() ? w->second.calls : e.calls);
      if (!tuned_mode) {
        ++out->other;
        continue;
      }
      switch (e.state) {
        case config_table::WorkloadState::kDefault:
          ++out->pending;
          break;
        case config_table::WorkloadState::kSearching:
          ++out->searching;
          break;
        case config_table::WorkloadState::kConverged:
        case config_table::WorkloadState::kImported:
          ++out->converged;
          break;
        case config_table::WorkloadState::kForced:
          ++out->other;
          break;
      }
    }
  }
  return ccltuneSuccess;
}

}  // namespace ccltune
