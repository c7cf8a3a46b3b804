// Leader logic: size classes, searches, the schedules kept ahead of the calls, and the payload messages.
#include "src/leader.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "optimizer/internal/stats.hpp"
#include "src/log.hpp"

namespace ccltune {
namespace {

// Per-workload statistics keep this many of its newest default and incumbent samples.
constexpr size_t kKeepSamples = 64;
// A workload without calls for this many intervals no longer keeps the intervals short while it searches.
constexpr int kIdleIntervals = 2;
// A workload without calls for this many iterations (the period known), or else for kStoppedUnits calls of the
// communicator, has stopped running (Leader::Stopped).
constexpr uint64_t kStoppedPeriods = 2;
constexpr uint64_t kStoppedUnits = 256;
// A workload whose last this many timed calls all started on an idle stream on some rank (executor::IdleFilter:
// DDP's first gradient bucket of each backward pass, on the one-GPU testbed) cannot be sampled: nothing more is
// asked of it while that lasts (Leader::Stopped), so its class's search goes on with its other members.
constexpr int kUnsampledStreak = 6;
// A size class whose every member's last this many timed calls came back idle can never be sampled (a DDP class of
// the one bucket that starts each backward pass): its search ends on NCCL's default (Leader::Unsampleable). Far
// longer than kUnsampledStreak: a host-bound stretch of a job (its first iterations, say) does not end a search.
constexpr int kUnsampleableStreak = 64;
// While a converged workload's guard checks (optimizer::Search::checking), intervals grow to this many units at
// most: its probes (one per update, an update in flight for kLag intervals) make a window of 8 in about 1000
// calls. A sync costs the calls around it: kept at the floor (8 units) after convergence, the simulated
// cluster's compare read the tuned all-reduce 1 MiB at 45 us where it reads 34.
constexpr uint64_t kGuardIntervalCap = 64;

int Log2Floor(uint64_t v) {
  int k = 0;
  while (v > 1) {
    v >>= 1;
    ++k;
  }
  return k;
}

void Keep(std::deque<double>* d, double v) {
  d->push_back(v);
  while (d->size() > kKeepSamples) d->pop_front();
}

// Whether tree is among the algorithms NCCL would run for the workload (any protocol).
bool HasTree(const SubspaceSet& space) {
  for (int p = 0; p < kNumProtos; ++p)
    if (space.Valid(kAlgoTree, p)) return true;
  return false;
}

double Robust(const std::deque<double>& d) {
  if (d.empty()) return 0;
  return optimizer::internal::RobustEstimate(std::vector<double>(d.begin(), d.end()));
}

}  // namespace

SizeClass SizeClassOf(const WorkloadKey& key) {
  SizeClass c;
  if (key.grouped || key.calls.size() != 1) {
    c.id = key.Hash();
    for (const CallDesc& d : key.calls) c.min_bytes += d.bytes;
    c.max_bytes = c.min_bytes;
    return c;
  }
  const CallDesc& d = key.calls[0];
  const int k = Log2Floor(std::max<uint64_t>(d.bytes, 1));
  c.min_bytes = d.bytes == 0 ? 0 : uint64_t{1} << k;
  c.max_bytes = d.bytes == 0 ? 0 : (k >= 63 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << (k + 1)) - 1);
  uint64_t h = 0xcbf29ce484222325ull;
  h = FnvMix(h, 0x5353'414C'4345'5A49ull);  // "IZECLASS": a class, unlike any workload hash
  h = FnvMix(h, static_cast<uint64_t>(d.coll));
  h = FnvMix(h, static_cast<uint64_t>(d.dtype));
  h = FnvMix(h, static_cast<uint64_t>(static_cast<int64_t>(d.op)));
  h = FnvMix(h, static_cast<uint64_t>(d.bytes == 0 ? -1 : k));
  c.id = h == 0 ? 1 : h;
  return c;
}

Leader::Work& Leader::Get(uint64_t workload) {
  auto [it, inserted] = work_.try_emplace(workload);
  if (inserted) order_.push_back(workload);
  return it->second;
}

Leader::Class* Leader::ClassOf(const Work& w) {
  auto it = classes_.find(w.class_id);
  return it == classes_.end() ? nullptr : &it->second;
}
const Leader::Class* Leader::ClassOf(const Work& w) const {
  auto it = classes_.find(w.class_id);
  return it == classes_.end() ? nullptr : &it->second;
}

void Leader::OnUnit(uint64_t workload, const WorkloadKey& key) {
  detector_.Observe(workload);
  Work& w = Get(workload);
  ++w.units_this_interval;
  w.last_unit = ++units_;
  if (w.calls++ == 0) w.first_unit = units_;
  if (w.search_ready) return;
  if (w.class_id == 0) {
    w.key = key;
    SizeClass sc = SizeClassOf(key);
    if (!o_.size_classes) sc.id = workload;
    w.class_id = sc.id;
    Class& c = classes_[sc.id];
    if (c.members.empty()) c.bounds = sc;
    w.stream = static_cast<int>(c.members.size());
    c.members.push_back(workload);
  }
  ++classes_[w.class_id].units;
  EnsureSearch(w);
}

optimizer::Prior Leader::PriorFor(const Class& c) const {
  // The winners of the nearest converged classes of the same collective, datatype and op.
  optimizer::Prior p;
  if (c.members.empty()) return p;
  const Work& me = work_.at(c.members[0]);
  if (me.key.grouped || me.key.calls.size() != 1) return p;
  std::vector<std::pair<double, Config>> near;
  for (const auto& [id, other] : classes_) {
    if (&other == &c || !other.search || other.search->state() != optimizer::State::kConverged) continue;
    const Work& ow = work_.at(other.members[0]);
    if (ow.key.grouped || ow.key.calls.size() != 1) continue;
    const CallDesc& a = me.key.calls[0];
    const CallDesc& b = ow.key.calls[0];
    if (a.coll != b.coll || a.dtype != b.dtype || a.op != b.op) continue;
    const Config win = other.search->incumbent();
    if (win.IsDefault()) continue;
    const double dist = std::fabs(std::log2(std::max<double>(1, static_cast<double>(a.bytes))) -
                                  std::log2(std::max<double>(1, static_cast<double>(b.bytes))));
    if (dist <= 2.5) near.emplace_back(dist, win);
  }
  std::stable_sort(near.begin(), near.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (size_t i = 0; i < near.size() && p.hints.size() < 2; ++i) p.hints.push_back(near[i].second);
  return p;
}

void Leader::OnSpace(uint64_t workload, const SubspaceSet& space,
                     const std::array<float, kNumAlgos * kNumProtos>& cost) {
  Work& w = Get(workload);
  if (w.space_known) return;
  w.space_known = true;
  w.space = space;
  w.cost = cost;
  // What NCCL picks by itself ran already (the workload's first calls): no warm-up for it.
  if (space.nccl_algo >= 0 && !o_.channel_truth) connected_.insert({space.nccl_algo, space.nccl_proto});
  EnsureSearch(w);
}

void Leader::EnsureSearch(Work& w) {
  if (w.import.has_value() || w.from_import) {  // imported: never searched
    w.search_ready = true;
    return;
  }
  if (!w.space_known) return;
  Class* c = ClassOf(w);
  if (c == nullptr) return;
  if (c->search.has_value()) {
    w.search_ready = true;
    return;
  }
  // A search starts at its class's second call: a call seen once (a set-up broadcast, a one-off
  // all-reduce) stays on NCCL's default and is never reported as searching.
  if (c->units < kMinUnitsToSearch) return;
  w.search_ready = true;
  optimizer::SearchSpace ss;
  ss.subspaces = w.space;
  ss.cost = w.cost;
  ss.max_channels = o_.channel_budget;
  // A group's collectives each report what NCCL ran (their algorithms and channel counts differ, and
  // NCCL's planner adds the group's channel counts up): no one config to learn for the group.
  ss.channel_truth = o_.channel_truth && !w.key.grouped && w.key.calls.size() == 1;
  ss.chunk_dim = o_.chunk_dim;
  // Protocol grains as NCCL computes them (LL 16 B, LL128 1920 B, Simple 512 B) and a range that
  // stays within NCCL's buffer-derived maximum (which clamps above anyway).
  const int64_t grain[kNumProtos] = {16, 1920, 512};
  for (int p = 0; p < kNumProtos; ++p) {
    ss.chunk_grain[p] = grain[p];
    ss.chunk_min[p] = grain[p] * 16;
    ss.chunk_max[p] = p == kProtoSimple ? (1 << 20) : grain[p] * 1024;
  }
  c->search.emplace(ss, o_.search, PriorFor(*c));
  CCLTUNE_INFO(kOpt, "search of %s [%d..%d B] started (channel budget %d); NCCL's cost table over its pick (*): %s",
               w.key.ToString(), static_cast<int64_t>(c->bounds.min_bytes), static_cast<int64_t>(c->bounds.max_bytes),
               ss.max_channels, optimizer::DescribePrior(ss, o_.search));
  // NCCL's default ran before the search existed and is reported only when its run changes: the search
  // learns it here (the communicator's channels show in it before any candidate runs).
  if (ss.channel_truth && w.default_ran) c->search->NoteRan(Config{}, *w.default_ran);
}

void Leader::OnTimed(uint64_t seq, uint64_t workload, const Config& asked, bool scheduled, uint64_t call, uint64_t unit,
                     bool follows_other) {
  timed_[seq] = Timed{workload, asked, scheduled, call, unit, follows_other};
  next_timed_ = seq + 1;
  Work& w = Get(workload);
  if (scheduled) ++w.scheduled_in_flight;
  w.back_to_back = w.last_timed_unit != 0 && unit == w.last_timed_unit + 1;
  w.last_timed_unit = unit;
}

void Leader::Trace(const Work& w, const Timed& t, double us, const coordinator::CarriedSample& sample) {
  config_table::TraceRow row;
  row.comm = o_.trace_comm;
  row.workload = w.key.ToString();
  row.call = t.call;
  row.unit = t.unit;
  row.config = t.asked.IsDefault() ? std::string("default") : t.asked.ToString();
  row.us = us;
  row.min_us = sample.min_us;
  row.max_us = sample.max_us;
  if (t.asked.IsDefault()) {
    row.role = config_table::TraceRole::kDefault;
  } else if (w.sent_converged && t.asked == w.last_final) {
    row.role = config_table::TraceRole::kMonitor;
  } else {
    // A schedule entry is a candidate on trial; the final entry run while waiting is the current best.
    row.role = t.scheduled ? config_table::TraceRole::kCandidate : config_table::TraceRole::kIncumbent;
  }
  if (absl::Status st = o_.trace->Append(row); !st.ok() && !trace_failed_) {
    trace_failed_ = true;
    CCLTUNE_WARN(kOpt, "CCLTUNE_TRACE: %s; no more trace lines from this communicator", st.message());
  }
}

void Leader::OnSamples(uint64_t first_seq, const std::vector<std::optional<coordinator::CarriedSample>>& samples,
                       bool window) {
  for (size_t i = 0; i < samples.size(); ++i) {
    auto it = timed_.find(first_seq + i);
    if (it == timed_.end()) continue;
    const Timed t = it->second;
    timed_.erase(it);
    auto wi = work_.find(t.workload);
    if (wi == work_.end()) continue;
    Work& w = wi->second;
    if (t.scheduled) --w.scheduled_in_flight;
    if (!samples[i] || samples[i]->idle) {
      // No rank could time the call (every rank's timer pool full, say), or some rank timed it from an idle stream
      // (its time holds NCCL's launch and the other ranks' late arrival: executor::IdleFilter): that sample will
      // not come.
      if (samples[i]) ++w.idle_samples, ++w.idle_streak;
      Class* c = ClassOf(w);
      if (c == nullptr || !c->search.has_value()) continue;
      if (t.scheduled) c->search->NoteLost(t.asked);
      if (c->search->state() == optimizer::State::kSearching && Unsampleable(*c)) {
        // Every member's last kUnsampleableStreak timed calls came back idle: the search would wait for samples for
        // good, and keep the intervals at one iteration while it does (Leader::searching). It ends on NCCL's
        // default, what those calls ran while nothing could be measured.
        c->search->Adopt(Config{}, 0);
        CCLTUNE_INFO(kOpt,
                     "search of %s [%d..%d B] stopped: the last %d timed calls of every workload of its size class "
                     "started on an idle stream (not samples); NCCL's default kept",
                     w.key.ToString(), static_cast<int64_t>(c->bounds.min_bytes),
                     static_cast<int64_t>(c->bounds.max_bytes), kUnsampleableStreak);
      }
      continue;
    }
    // Timing: a call that follows another workload's is read by its minimum over ranks.
    const bool by_min = ReadByMinimum(o_.timing, t.follows_other);
    const double us = by_min ? samples[i]->min_us : samples[i]->max_us;
    if (o_.trace != nullptr) Trace(w, t, us, *samples[i]);
    ++w.samples;
    w.idle_streak = 0;
    if (t.asked.IsDefault()) Keep(&w.default_samples, us);
    if (w.sent_converged && t.asked == w.last_final && !t.asked.IsDefault()) Keep(&w.incumbent_samples, us);
    Class* c = ClassOf(w);
    if (c == nullptr || !c->search.has_value()) continue;
    optimizer::Search& s = *c->search;
    const bool was_converged = s.state() == optimizer::State::kConverged;
    // A converged search reads the calls of the converged schedule only: those of its last search entries (and
    // of the config it waited on) come back after the decision, until the update applies, and would be the
    // monitoring's first window, its baseline (simulated testbed noise, reduce-scatter 16 MiB kept on the
    // default: such calls read 1.2x its level before, and a 1.3x drift later read 1.07x that baseline, below
    // the drift ratio, and was never judged).
    if (was_converged && (!w.applied_converged || first_seq + i < w.converged_from)) continue;
    // Samples of a converged search are few: its statistics are read for them only.
    const optimizer::Stats before = was_converged ? s.stats() : optimizer::Stats{};
    s.AddSample(t.asked, us, w.stream, t.scheduled);
    if (was_converged && s.state() == optimizer::State::kSearching) {
      const optimizer::Stats after = s.stats();
      CCLTUNE_INFO(kOpt, "search of %s re-opened: %s", w.key.ToString(),
                   after.demoted > before.demoted ? "its config read slower than NCCL's default run beside it"
                   : after.shifted > before.shifted
                       ? "its config's edge over NCCL's default shrank by more than the drift ratio"
                       : "its time moved away from what it was");
    }
    if (!was_converged && s.state() == optimizer::State::kConverged) {
      CCLTUNE_INFO(kOpt, "search of %s [%d..%d B] done: %s (calls timed from an idle stream, not sampled: %d)",
                   w.key.ToString(), static_cast<int64_t>(c->bounds.min_bytes),
                   static_cast<int64_t>(c->bounds.max_bytes), s.Describe(), w.idle_samples);
    }
  }
  // Every timed call gets a slot in some window, in order: one numbered before this window that is still here was
  // never carried (cannot happen while syncs run; kept from growing if it did). Early copies say nothing of the calls
  // before them: one they skipped (idle, or not finished on some rank) still comes with its window (dropped at an early
  // copy's run, an idle call was neither counted as idle nor, when asked for, reported lost, and its search waited for
  // it: one-GPU testbed, all-reduce 64 KiB as a loop iteration's first call, 6-7 per search).
  if (!window) return;
  while (!timed_.empty() && timed_.begin()->first < first_seq) {
    if (timed_.begin()->second.scheduled) --Get(timed_.begin()->second.workload).scheduled_in_flight;
    timed_.erase(timed_.begin());
  }
}

void Leader::OnRan(uint64_t workload, const Config& asked, const Config& ran) {
  if (ran.HasSubspace()) connected_.insert({ran.algo, ran.proto});
  auto it = work_.find(workload);
  if (it == work_.end()) return;
  Work& w = it->second;
  if (asked.IsDefault() && ran.HasSubspace()) w.default_ran = ran;
  if (w.key.grouped || w.key.calls.size() != 1) return;  // see EnsureSearch
  Class* c = ClassOf(w);
  if (c != nullptr && c->search.has_value()) c->search->NoteRan(asked, ran);
}

void Leader::OnApplied(const coordinator::WorkloadUpdate& u, const std::vector<coordinator::ScheduleEntry>& dropped) {
  auto it = work_.find(u.workload);
  if (it == work_.end()) return;
  Work& w = it->second;
  w.in_flight = std::max(0, w.in_flight - 1);
  if (u.converged && !w.applied_converged) w.converged_from = next_timed_;
  w.applied_converged = u.converged;
  // Replaced calls never run: their timings will not come.
  Class* c = ClassOf(w);
  if (c == nullptr || !c->search.has_value()) return;
  for (const coordinator::ScheduleEntry& e : dropped)
    for (uint32_t k = e.warmup ? 1 : 0; k < e.calls; ++k) c->search->NoteLost(e.config);
}

void Leader::AddImports(const std::vector<config_table::ImportedWorkload>& imports) {
  for (const auto& imp : imports) {
    Work& w = Get(imp.key.Hash());
    w.import = imp.config;
    w.import_us = imp.tuned_us;
    w.from_import = true;
  }
}

bool Leader::imported(uint64_t workload) const {
  auto it = work_.find(workload);
  return it != work_.end() && it->second.from_import;
}

bool Leader::Unsampleable(const Class& c) const {
  for (uint64_t h : c.members)
    if (work_.at(h).idle_streak < kUnsampleableStreak) return false;
  return !c.members.empty();
}

bool Leader::Stopped(const Work& w) const {
  const uint64_t period = detector_.period();
  return units_ - w.last_unit >= (period != 0 ? kStoppedPeriods * period : kStoppedUnits) ||
         w.idle_streak >= kUnsampledStreak;
}

bool Leader::searching() const {
  for (const auto& [h, w] : work_) {
    if ((w.in_flight > 0 && !w.probe_only) || w.import.has_value()) return true;
    // A search whose workload stopped running (a phase of the job that is over, a size seen during
    // warm-up only) cannot finish: it keeps the intervals short only while its calls still come (it
    // kept them short for good: the bench's later rows on the simulated cluster ran 13-23% slower
    // when one re-opened search of an earlier row waited for samples that never came).
    if (w.idle_intervals >= kIdleIntervals) continue;
    const Class* c = ClassOf(w);
    if (!w.from_import && c != nullptr && c->search.has_value() && c->search->state() != optimizer::State::kConverged)
      return true;
  }
  return false;
}

bool Leader::Settling() {
  if (o_.settle_below_us <= 0) return false;
  bool settle = false;
  for (auto& [h, w] : work_) {
    if (w.idle_intervals >= kIdleIntervals || w.from_import) continue;
    const Class* c = ClassOf(w);
    if (c == nullptr || !c->search.has_value() || c->search->state() == optimizer::State::kConverged) continue;
    if (!HasTree(w.space)) continue;
    // Once settled, a search stays so until it converges or starts over: a default read near the bound would
    // otherwise switch between the two kinds of samples, and a config sampled under one read against the other's.
    if (w.settled_generation != c->search->generation() && !w.default_samples.empty() &&
        Robust(w.default_samples) < o_.settle_below_us)
      w.settled_generation = c->search->generation();
    settle = settle || w.settled_generation == c->search->generation();
  }
  return settle;
}

bool Leader::checking() const {
  for (const auto& [h, w] : work_) {
    if (w.idle_intervals >= kIdleIntervals) continue;
    const Class* c = ClassOf(w);
    if (!w.from_import && c != nullptr && c->search.has_value() && c->search->checking()) return true;
  }
  return false;
}

double Leader::TimeWeight(const Work& w) const {
  if (w.calls == 0) return 0;
  const std::deque<double>& measured = !w.default_samples.empty() ? w.default_samples : w.incumbent_samples;
  if (measured.empty()) return 0;
  const double us = Robust(measured);
  if (!(us > 0)) return 0;
  return us * static_cast<double>(w.calls) / static_cast<double>(units_ - w.first_unit + 1);
}

void Leader::UpdateStakes() {
  if (o_.low_stakes_share <= 0) return;
  std::map<uint64_t, double> weight;  // per class
  std::set<uint64_t> unknown;         // classes with a running member of unknown weight
  double total = 0;
  for (uint64_t h : order_) {
    const Work& w = work_.at(h);
    if (w.idle_intervals >= kIdleIntervals || w.class_id == 0) continue;
    const double t = TimeWeight(w);
    if (t <= 0) {
      unknown.insert(w.class_id);
      continue;
    }
    weight[w.class_id] += t;
    total += t;
  }
  for (auto& [id, c] : classes_) {
    if (!c.search.has_value()) continue;
    const auto it = weight.find(id);
    c.search->SetLowStakes(total > 0 && it != weight.end() && !unknown.contains(id) &&
                           it->second < o_.low_stakes_share * total);
  }
}

std::vector<coordinator::ScheduleEntry> Leader::Entries(Work& w, Class& c, int max, const Config& before) {
  std::vector<coordinator::ScheduleEntry> out;
  if (max <= 0) return out;
  Config prev = before;
  for (const optimizer::Candidate& cand : c.search->Next(max, w.stream)) {
    coordinator::ScheduleEntry e;
    e.config = cand.config;
    e.calls = static_cast<uint32_t>(std::min<int>(cand.calls, coordinator::kMaxCallsPerEntry - 1));
    // The first run of an algorithm/protocol on this communicator connects it (NCCL sets it up then):
    // that call is not a sample. Later channel counts of the same pair need no warm-up.
    const bool connects = cand.config.HasSubspace() && connected_.insert({cand.config.algo, cand.config.proto}).second;
    // NCCL's default right after a call of another config of the same workload pays for the switch: on
    // 4 NVLink H100s, all-reduce 16 MiB ring/Simple read 112-114 us after ring/LL128 calls and 105.8 us
    // in its own blocks, which made ring/LL128 (108-109 us either way) look 6% faster than the default
    // it is 3% slower than. Every config is compared with the default, so the default's sample is the
    // second call of its entry when the workload runs back to back (calls in between, of other
    // workloads, leave each sample the same context).
    const bool switches_back = cand.config.IsDefault() && !prev.IsDefault() && w.back_to_back;
    // A warm-up before every config whose algorithm/protocol differs from the call's before was tried and
    // dropped: no gain on the simulated cluster (27 rows past 1.05 of the oracle against 25 over 16 seeds, +2.1
    // calls per workload) nor a measured one on the one-GPU testbed (5 interleaved pairs of full runs,
    // 2026-12-04; docs/results/search-testbed.md, thirty-eighth session). Tried again with the default's pair
    // counted (fortieth session): fewer rows past 1.05 in 40 all-reduce-only pairs (16 against 26 of 80,
    // p = 0.053), +14% calls, and its full run lost to the head's.
    if (connects || switches_back) {
      e.warmup = true;
      ++e.calls;
    }
    prev = cand.config;
    out.push_back(e);
  }
  if (!out.empty()) w.last_entry = out.back().config;
  return out;
}

void Leader::UnblockIdle(const coordinator::ScheduleBook& book) {
  for (auto& [id, c] : classes_) {
    if (!c.search.has_value() || c.search->state() != optimizer::State::kSearching || c.search->pending() == 0)
      continue;
    bool idle = true;
    for (uint64_t h : c.members) {
      const Work& w = work_.at(h);
      idle = idle && w.in_flight == 0 && w.scheduled_in_flight <= 0 && book.PendingCalls(h) == 0;
    }
    if (!idle) continue;
    CCLTUNE_TRACE(kOpt, "size class %016x: %d samples awaited with nothing scheduled or in flight: asked again", id,
                  c.search->pending());
    c.search->DropPending();
  }
}

coordinator::LeaderMessage Leader::Build(const coordinator::ScheduleBook& book, int room) {
  coordinator::LeaderMessage msg;
  UnblockIdle(book);
  for (uint64_t h : order_) {
    Work& w = work_[h];
    w.calls_per_interval = std::max<uint64_t>(1, w.units_this_interval);
    w.idle_intervals = w.units_this_interval == 0 ? w.idle_intervals + 1 : 0;
    w.units_this_interval = 0;
  }
  UpdateStakes();
  for (uint64_t h : order_) {
    Work& w = work_[h];
    Class* c = ClassOf(w);
    // A search that just converged ships its result at once, beside an update still in flight (which applies
    // first, and whose entries the converged one then drops): waiting for that apply would keep the workload on
    // its search's schedule for another interval, an iteration of a training loop.
    const bool converged_news = c != nullptr && c->search.has_value() && !w.from_import &&
                                c->search->state() == optimizer::State::kConverged &&
                                !(w.sent_converged && c->search->incumbent() == w.last_final);
    if (w.in_flight > 0 && (!converged_news || w.in_flight > 1)) continue;
    coordinator::WorkloadUpdate u;
    u.workload = h;
    if (w.import.has_value()) {
      // Imported config: shipped as the converged final entry; no tuning for this workload.
      u.entries.push_back({*w.import, 0, false});
      u.converged = true;
      if (coordinator::EncodedWords(u) > room) break;
      w.last_final = *w.import;
      w.import.reset();
      w.sent_converged = true;
    } else if (w.from_import || c == nullptr || !c->search.has_value()) {
      continue;
    } else if (c->search->state() == optimizer::State::kConverged) {
      if (w.sent_converged && c->search->incumbent() == w.last_final) {
        // The search's guard asks for a call of NCCL's default now and then (converged on another config), or
        // of its reference config while it checks a drift of the default's own time (converged on the default).
        // It runs before the final entry, which stays the converged incumbent (the monitoring's count of its
        // calls goes on); the entry's size is checked before the search is asked.
        if (frozen_) continue;
        u.entries = {{Config{}, 2, true}, {w.last_final, 0, false}};
        u.converged = true;
        u.append = true;
        if (coordinator::EncodedWords(u) > room) continue;
        u.entries = Entries(w, *c, 1, w.last_final);
        if (u.entries.empty()) continue;
        u.entries.push_back({w.last_final, 0, false});
      } else {
        u.entries.push_back({c->search->incumbent(), 0, false});
        u.converged = true;  // replaces what is left: no more samples once converged
        // What does not fit waits for the next payload, its state untouched: marked as sent, it never was
        // (a DDP bucket of a converged class stayed "searching" for good when its update missed the room).
        if (coordinator::EncodedWords(u) > room) break;
        if (!(w.last_final == c->search->incumbent())) w.incumbent_samples.clear();
        w.last_final = c->search->incumbent();
        w.sent_converged = true;
      }
    } else if (!frozen_ && Stopped(w)) {
      // A member that stopped running, or whose calls cannot be sampled, while its class searches: what is scheduled
      // for it will not run or not come back, and its class's search would await those samples for good (on the
      // one-GPU testbed, a DDP class of three buckets searched for 250 steps: every entry went to the bucket
      // that starts each backward pass on an idle stream, and came back marked). Its schedule is replaced by
      // the final entry (the calls it drops are reported lost as it applies: OnApplied), and nothing more is
      // asked for it until it runs again, or a call of it comes back as a sample.
      if (book.PendingCalls(h) == 0) continue;
      u.entries.push_back({c->search->waiting(), 0, false});
      if (coordinator::EncodedWords(u) > room) break;
      w.last_final = u.entries.back().config;
      w.sent_converged = false;
    } else if (!frozen_) {
      // Keep the schedule about three intervals of this workload's calls ahead: the update applies
      // kLag intervals from now and its timings come back about one interval after the calls.
      const uint64_t ahead = book.PendingCalls(h);
      const uint64_t want = std::max<uint64_t>(4, 3 * w.calls_per_interval);
      const bool restarted = c->search->generation() != w.sent_generation;
      CCLTUNE_TRACE(kOpt, "workload %016x: %d calls scheduled ahead (want %d), %d timings awaited%s", h,
                    static_cast<int64_t>(ahead), static_cast<int64_t>(want), c->search->pending(),
                    restarted ? ", search (re)started" : "");
      // What runs while the schedule waits: the race's leader once it beats the default (its calls are
      // samples too), shipped alone when it changed and nothing else is to be asked.
      const Config waiting = c->search->waiting();
      const bool final_changed = !(waiting == w.last_final) || w.sent_converged;
      // Top the schedule up; a search that (re)started replaces what is still scheduled.
      const bool top_up = ahead < want || restarted;
      if (!top_up && !final_changed) continue;
      const int max = std::min<int>({o_.max_entries, coordinator::kMaxEntriesPerRecord - 1, room - 3,
                                     static_cast<int>(restarted      ? want
                                                      : want > ahead ? want - ahead
                                                                     : 0)});
      if (max < 1 && !final_changed) break;
      // What runs right before the new entries: the last entry still scheduled, else the final one.
      const Config before = !restarted && ahead > 0 ? w.last_entry : w.last_final;
      if (top_up && max >= 1) u.entries = Entries(w, *c, max, before);
      if (u.entries.empty() && !final_changed) continue;  // nothing worth asking before more timings come back
      // A search that (re)started replaces what is still scheduled; otherwise entries come after it (the
      // search counts those on their way), and a final entry alone keeps them.
      u.append = u.entries.empty() || !restarted;
      u.entries.push_back({waiting, 0, false});
      // Entries from Next() always fit (max leaves room for the header and the final entry); a final entry
      // alone may not, and then waits for the next payload with the workload's state untouched.
      if (coordinator::EncodedWords(u) > room) break;
      if (u.entries.size() > 1) w.sent_generation = c->search->generation();
      w.last_final = waiting;
      w.sent_converged = false;
    } else {
      continue;
    }
    // Each branch checked that `u` fits before touching the workload's state (what does not fit waits for
    // the next payload).
    room -= coordinator::EncodedWords(u);
    ++w.in_flight;
    w.probe_only = w.sent_converged && u.append && u.converged;
    CCLTUNE_TRACE(kOpt, "schedule for %016x: %d entries, final %s%s", h, static_cast<int>(u.entries.size()),
                  u.entries.back().config.ToString(), u.converged ? " (converged)" : "");
    msg.updates.push_back(std::move(u));
  }
  msg.period = std::min<uint64_t>(detector_.period(), 0xFFFFFFFFull);
  msg.settle = Settling();
  msg.interval = policy_.Next(detector_.period(), searching(), checking() ? kGuardIntervalCap : 0, msg.settle);
  // A sync op in the middle of a workload's run of calls costs it a sample: the call after the sync op is held
  // (LeaderMessage::settle), beside the one that starts the run. Once the period is known, the sync points keep their
  // place in the iteration (the intervals are multiples of it, or halves that add up to it); this moves them to the
  // end of a run, where the call after the sync op is one that is held anyway. This payload's interval starts at sync
  // point k + kLag, the last kLag intervals after this one; it ends `span` (those and its own) modulo the period
  // units into an iteration from here, while the period has not changed since they were chosen.
  const uint64_t period = detector_.period();
  bool steady = period > 1;
  uint64_t span = msg.interval;
  for (const Delivered& d : delivered_) {
    steady = steady && d.period == period;
    span += d.interval;
  }
  const uint64_t shift = steady ? detector_.ShiftToRunEnd(span % period) : 0;
  msg.interval += shift;
  std::rotate(delivered_.begin(), delivered_.begin() + 1, delivered_.end());
  delivered_.back() = Delivered{period, msg.interval};
  return msg;
}

std::optional<Leader::WorkloadStats> Leader::StatsOf(uint64_t workload) const {
  auto it = work_.find(workload);
  if (it == work_.end()) return std::nullopt;
  const Work& w = it->second;
  WorkloadStats s;
  s.default_us = Robust(w.default_samples);
  s.incumbent_us = w.last_final.IsDefault() ? s.default_us : Robust(w.incumbent_samples);
  s.samples = w.samples;
  if (const Class* c = ClassOf(w)) {
    s.size_class = c->bounds;
    if (c->search.has_value()) {
      s.search = c->search->stats();
      // The tuned time as the search measured it, beside the default: monitoring samples of the incumbent
      // come later than the default's (none are taken once converged), and a slow or fast period between
      // the two read as a speed-up that is not there (simulated testbed noise: 0.24x for a config
      // measured at 0.49 of the default).
      if (!w.last_final.IsDefault() && w.last_final == c->search->incumbent() && s.search.incumbent_relative > 0 &&
          s.default_us > 0)
        s.incumbent_us = s.default_us * s.search.incumbent_relative;
    }
  }
  if (w.from_import && s.incumbent_us == 0) s.incumbent_us = w.import_us;
  return s;
}

std::string Leader::Describe(uint64_t workload) const {
  auto it = work_.find(workload);
  if (it == work_.end()) return "";
  const Class* c = ClassOf(it->second);
  return c != nullptr && c->search.has_value() ? c->search->Describe() : "";
}

}  // namespace ccltune
