// The per-call path (see call_path.hpp).
#include "src/call_path.hpp"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "src/comm_state.hpp"
#include "src/inflight.hpp"
#include "src/log.hpp"
#include "src/runtime.hpp"

namespace ccltune {
namespace {

thread_local ThreadCalls t_calls;

// Reused by GroupEnd on this thread (capacity kept: no allocation per group once warm).
struct GroupScratch {
  std::vector<CallDesc> calls;  // the group's collectives, grouped by communicator
  std::vector<GroupColl> group;
};
thread_local GroupScratch t_scratch;

}  // namespace

ThreadCalls& ThisThread() { return t_calls; }

bool CallPath::InUserGroup() const { return t_calls.group_depth > 0; }

Config CallPath::Decide(CommState& cs, uint64_t hash, std::span<const CallDesc> key_calls, bool grouped, bool capturing,
                        bool* timed, uint64_t* seq, bool* record_space) {
  *timed = false;
  *record_space = false;
  if (!cs.coord) return Config{};
  if (capturing) {
    // Graph replays never pass through ccltune: the incumbent, nothing counted, consumed or timed.
    if (cs.mode == ccltuneModeDefault) return Config{};
    if (cs.mode == ccltuneModeForced) return cs.forced;
    return cs.coord->ConfigFor(hash, true).config;
  }
  auto [it, first_sight] = cs.workloads.try_emplace(hash);
  WorkloadSlot& slot = it->second;
  if (first_sight) {
    slot.key = WorkloadKey{std::vector<CallDesc>(key_calls.begin(), key_calls.end()), grouped};
    cs.table().Update(slot.key, [](config_table::Entry&) {});
    rt_.lifecycle().ApplyCsvImport(cs, slot.key);
  }
  ++slot.calls;
  *record_space = !slot.space_known;
  // NCCL's default and forced modes keep statistics (and learn the cost table) but tune nothing,
  // count no units and time nothing.
  if (cs.mode == ccltuneModeDefault) return Config{};
  if (cs.mode == ccltuneModeForced) return cs.forced;
  // A new workload pulls the next sync points in (every rank alike: they all see the same calls), and so
  // does its second call, where the leader starts its class's search (Leader::kMinUnitsToSearch).
  if (slot.calls == 2) cs.coord->NoteNewWorkload();
  if (first_sight) {
    cs.coord->NoteNewWorkload();
    // An update (an import) may have arrived before this rank saw the workload.
    if (cs.coord->book().Converged(hash)) {
      const bool imported = cs.leader && cs.leader->imported(hash);
      cs.table().Update(slot.key, [&](config_table::Entry& e) {
        e.state = imported ? config_table::WorkloadState::kImported : config_table::WorkloadState::kConverged;
        e.config = cs.coord->book().Incumbent(hash).value_or(Config{});
        e.converge_calls = 1;
      });
    }
  }
  uint64_t lookup = hash;
#if CCLTUNE_PLANTED_BUG_SIZE_KEYED
  // PLANTED BUG (negative control, ccltune_planted_size_keyed only): rank 1 consumes schedules per call
  // size: a workload whose byte count equals that of a workload seen earlier on the communicator
  // consumes the earlier workload's schedule instead of its own.
  if (cs.rank() == 1) {
    static std::map<std::pair<const CommState*, uint64_t>, uint64_t> first_of_size;
    uint64_t bytes = 0;
    for (const CallDesc& c : key_calls) bytes += c.bytes;
    lookup = first_of_size.emplace(std::make_pair(&cs, bytes), hash).first->second;
  }
#endif
  // A call that follows another workload's, of a workload that also runs back to back, is held (kHoldWindow): it runs
  // the schedule's next config untimed, so the timed call after it follows that config. So is one right after
  // ccltune's sync op while the leader settles (LeaderMessage::settle): the sync op aligns the ranks, and a call right
  // after it reads its latency from an aligned start, not its time in a run of calls (the one-GPU testbed: tree/simple
  // 17-21% over, ring 5-10%). Every rank issues the same syncs after the same units and applies the same payloads, so
  // every rank holds the same calls.
  const bool follows_other = cs.last_unit_workload != hash;
  const uint64_t syncs = cs.coord->syncs_issued();
  const bool after_sync = syncs != cs.syncs_at_last_unit && cs.coord->settle();
  const bool hold = slot.back_to_back.Hold(slot.calls, follows_other || after_sync);
  cs.last_unit_workload = hash;
  cs.syncs_at_last_unit = syncs;
  const coordinator::ScheduleBook::Call call = cs.coord->ConfigFor(lookup, false, hold);
  if (cs.leader && cs.coord->tuning()) cs.leader->OnUnit(hash, slot.key);
  if (call.timed) {
    // Every rank numbers the same timed calls; a rank that cannot time one still takes its number.
    *timed = true;
    *seq = cs.coord->NoteTimed();
    cs.timed_workload[*seq % CommState::kTimerDepth] = CommState::TimedWorkload{*seq, hash, follows_other};
    if (cs.leader)
      cs.leader->OnTimed(*seq, hash, call.config, call.scheduled, slot.calls - 1, cs.coord->units(), follows_other);
  }
  return call.config;
}

void CallPath::Harvest(CommState& cs) {
  if (cs.timer && cs.timer->pending() > 0) {
    std::vector<executor::Sample> samples;
    cs.timer->Harvest(&samples);
    for (const executor::Sample& s : samples) {
      executor::IdleFilter* filter = &cs.idle_filter;
      bool follows_other = false;
      if (const CommState::TimedWorkload& t = cs.timed_workload[s.tag % CommState::kTimerDepth]; t.seq == s.tag) {
        if (auto it = cs.workloads.find(t.workload); it != cs.workloads.end()) filter = &it->second.idle_filter;
        follows_other = t.follows_other;
      }
      const bool idle =
          filter->Mark(s.idle, Leader::ReadByMinimum(cs.timing, follows_other)) && rt_.settings().drop_idle_samples;
      if (s.tag >= cs.carried_below) cs.timings[s.tag] = CommState::RankTiming{s.us, idle};
    }
  }
  if (cs.leader && cs.coord) cs.coord->HarvestSamples();
}

void CallPath::MaybeHarvest(CommState& cs) {
  if (++cs.calls_since_harvest < kHarvestEvery) return;
  cs.calls_since_harvest = 0;
  Harvest(cs);
}

void CallPath::FillSamples(CommState& cs, uint64_t first, int n, int slot0, bool early,
                           coordinator::SampleWords* words) {
  Harvest(cs);
  for (int i = 0; i < n; ++i) {
    auto it = cs.timings.find(first + static_cast<uint64_t>(i));
    if (it == cs.timings.end()) {
      if (early) coordinator::EncodeNotYetSample(words, slot0 + i);
      continue;
    }
    if (it->second.idle) {
      coordinator::EncodeIdleSample(words, slot0 + i);
    } else {
      coordinator::EncodeSample(words, slot0 + i, it->second.us);
    }
  }
  if (early) return;  // the window of a later sync carries these calls too
  // Carried (or, where this rank had no timing yet, given up): never needed again.
  cs.carried_below = std::max(cs.carried_below, first + static_cast<uint64_t>(n));
  cs.timings.erase(cs.timings.begin(), cs.timings.lower_bound(cs.carried_below));
}

void CallPath::AfterUnit(CommState& cs, void* stream) {
  if (!cs.coord) return;
  if (cs.coord->units() == 0) {
    // The agreement point follows this first unit: say now if this rank cannot tune.
    if (cs.ctx.load() == nullptr) {
      CCLTUNE_INFO(kInit,
                   "communicator %p: NCCL did not consult ccltune's tuner plugin (NCCL_TUNER_PLUGIN set "
                   "elsewhere?); this communicator stays on NCCL's defaults",
                   static_cast<void*>(cs.comm()));
      cs.coord->RaiseCannotTune();
    }
    if (rt_.settings().test_fail_setup_rank == cs.rank()) {
      CCLTUNE_INFO(kInit, "CCLTUNE_TEST_FAIL_SETUP_RANK: rank %d reports a failed set-up", cs.rank());
      cs.coord->RaiseCannotTune();
    }
  }
  if (absl::Status st = cs.coord->OnUnitComplete(stream); !st.ok()) {
    CCLTUNE_WARN(kCoord, "communicator %p: %s", static_cast<void*>(cs.comm()), st.message());
    cs.coord->RaiseError();
  }
}

ncclResult_t CallPath::Collective(ncclComm_t comm, cudaStream_t stream, const CallDesc& call, NcclCall fn) {
  CommState* cs = rt_.comms().Find(comm);
  if (cs == nullptr || cs->passthrough()) return fn();
  ThreadCalls& tc = t_calls;
  if (tc.group_depth > 0) {
    tc.group.push_back(GroupColl{cs, call, stream});
    return fn();
  }
  const bool capturing = rt_.device()->IsCapturing(stream);
  const uint64_t hash = WorkloadKey::HashOf({&call, 1}, false);
  bool timed = false, counts = false, record_space = false;
  uint64_t seq = 0;
  Config cfg;
  {
    std::lock_guard<std::mutex> lock(cs->mu);
    counts = !capturing && cs->coord && (cs->mode == ccltuneModeTune || cs->mode == ccltuneModeFrozen);
    cfg = Decide(*cs, hash, {&call, 1}, false, capturing, &timed, &seq, &record_space);
    if (timed) timed = cs->timer->Begin(stream, seq);
  }
  tc.inflight.push_back(InFlight{cs, cfg, hash, false, record_space});
  const ncclResult_t r = fn();
  tc.inflight.pop_back();
  if (counts) {
    std::lock_guard<std::mutex> lock(cs->mu);
    if (timed) cs->timer->End(stream);
    MaybeHarvest(*cs);
    AfterUnit(*cs, stream);
  }
  return r;
}

ncclResult_t CallPath::GroupStart(NcclCall fn) {
  ++t_calls.group_depth;
  return fn();
}

struct CallPath::Unit {
  CommState* cs = nullptr;
  size_t first = 0, count = 0;  // the unit's collectives in t_scratch.calls
  cudaStream_t first_stream = nullptr;
  cudaStream_t last_stream = nullptr;
  bool capturing = false;
  bool counts = false;
  bool timed = false;
  bool record_space = false;
  uint64_t seq = 0;
  uint64_t hash = 0;
  Config cfg;
};

void CallPath::CreatedInUserGroup(ncclComm_t comm, const ncclConfig_t* config) {
  CreatedInGroup c;
  c.comm = comm;
  if (config != nullptr) {
    c.has_config = true;
    c.config = *config;
  }
  t_calls.created.push_back(c);
}

void CallPath::TakeOnCreated(ncclResult_t group_result) {
  std::vector<CreatedInGroup> created;
  created.swap(t_calls.created);
  // A blocking init completes inside the group end (ncclSuccess); a non-blocking one is still in
  // progress (ncclInProgress), and the lifecycle passes such a communicator through.
  if (group_result != ncclSuccess && group_result != ncclInProgress) return;
  const bool several = created.size() > 1;
  for (const CreatedInGroup& c : created) {
    rt_.lifecycle().OnCommCreated(c.comm, c.has_config ? &c.config : nullptr, /*multi_gpu_thread=*/several);
  }
}

ncclResult_t CallPath::GroupEnd(NcclCall fn, bool simulate) {
  ThreadCalls& tc = t_calls;
  if (tc.group_depth == 0) return fn();  // unbalanced: NCCL reports it
  if (--tc.group_depth > 0) return fn();
  if (tc.created.empty()) return LaunchGroup(fn, simulate);
  const ncclResult_t r = LaunchGroup(fn, simulate);
  TakeOnCreated(r);
  return r;
}

ncclResult_t CallPath::LaunchGroup(NcclCall fn, bool simulate) {
  ThreadCalls& tc = t_calls;
  if (tc.group.empty()) return fn();
  GroupScratch& sc = t_scratch;
  std::swap(sc.group, tc.group);  // the group's collectives; tc.group is empty (with capacity) for the next
  tc.group.clear();
  // One unit per communicator, its collectives in issue order.
  thread_local std::vector<Unit> units;
  units.clear();
  sc.calls.clear();
  for (size_t i = 0; i < sc.group.size(); ++i) {
    CommState* cs = sc.group[i].cs;
    if (std::any_of(units.begin(), units.end(), [&](const Unit& u) { return u.cs == cs; })) continue;
    Unit u;
    u.cs = cs;
    u.first = sc.calls.size();
    u.first_stream = static_cast<cudaStream_t>(sc.group[i].stream);
    for (size_t j = i; j < sc.group.size(); ++j) {
      if (sc.group[j].cs != cs) continue;
      sc.calls.push_back(sc.group[j].call);
      u.last_stream = static_cast<cudaStream_t>(sc.group[j].stream);
      if (!u.capturing && rt_.device()->IsCapturing(u.last_stream)) u.capturing = true;
    }
    u.count = sc.calls.size() - u.first;
    units.push_back(u);
  }
  const size_t base = tc.inflight.size();
  for (Unit& u : units) {
    const std::span<const CallDesc> calls(sc.calls.data() + u.first, u.count);
    const bool grouped = u.count > 1;  // a group of one call is that call's workload
    u.hash = WorkloadKey::HashOf(calls, grouped);
    std::lock_guard<std::mutex> lock(u.cs->mu);
    // ncclGroupSimulateEnd consults the tuner but launches nothing: incumbent, nothing counted.
    const bool frozen_view = u.capturing || simulate;
    u.counts = !frozen_view && u.cs->coord && (u.cs->mode == ccltuneModeTune || u.cs->mode == ccltuneModeFrozen);
    u.cfg = Decide(*u.cs, u.hash, calls, grouped, frozen_view, &u.timed, &u.seq, &u.record_space);
    if (u.timed) u.timed = u.cs->timer->Begin(u.first_stream, u.seq);
    InFlight f{u.cs, u.cfg, u.hash, false, u.record_space};
    f.single = u.count == 1;
    tc.inflight.push_back(f);
  }
  const ncclResult_t r = fn();
  tc.inflight.resize(base);
  for (Unit& u : units) {
    if (!u.counts) continue;
    std::lock_guard<std::mutex> lock(u.cs->mu);
    if (u.timed) u.cs->timer->End(u.last_stream);
    MaybeHarvest(*u.cs);
    AfterUnit(*u.cs, u.last_stream);
  }
  return r;
}

}  // namespace ccltune
