// The leader's side of tuning one communicator (rank 0 only). Workloads of one collective, datatype and
// reduction whose sizes fall in one size class (a factor of 2: [2^k, 2^(k+1)) bytes) share one
// optimizer::Search, so DDP's gradient buckets are tuned as one; a user group is a class of its own. The
// leader keeps every workload's schedule a few calls ahead of the calls (appending to what every rank
// still has), marks the first run of an algorithm/protocol on the communicator as a warm-up, feeds the
// searches the timings every rank carried back (the minimum or maximum over ranks of each timed call)
// and what NCCL really ran (channel truth), and packs the payload messages.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "config_table/config_table.hpp"
#include "config_table/trace_format.hpp"
#include "coordinator/coordinator.hpp"
#include "optimizer/optimizer.hpp"
#include "vocab/types.hpp"

namespace ccltune {

// A size class: workloads tuned by one search.
struct SizeClass {
  uint64_t id = 0;         // stable across ranks and runs; never 0
  uint64_t min_bytes = 0;  // bounds of the class (user bytes of the call), inclusive
  uint64_t max_bytes = 0;
};
// Ungrouped calls: (collective, datatype, op, floor(log2 bytes)); a group is its own class (its hash).
SizeClass SizeClassOf(const WorkloadKey& key);

class Leader {
 public:
  // Which per-call time over ranks the searches compare. kMaxOverRanks (what a job waits for) reads a call that
  // follows a call of another workload by the minimum instead: its maximum holds the other workload's late
  // finish on some ranks (after a 16 MiB reduce-scatter, several times a 64 KiB all-reduce's own time on the
  // simulated testbed), whatever config it ran. A workload that also runs back to back (repeated calls, the
  // bench) does not time such calls at all (coordinator::kHoldWindow), so that its samples are of one kind.
  enum class Timing { kMinOverRanks, kMaxOverRanks };
  // Whether a call's time is read by its minimum over ranks under `timing` (every rank's idle filter asks too:
  // such a call is never marked idle, executor::IdleFilter).
  static bool ReadByMinimum(Timing timing, bool follows_other) {
    return timing == Timing::kMinOverRanks || follows_other;
  }
  // Calls of a size class before its search starts (see EnsureSearch).
  static constexpr uint64_t kMinUnitsToSearch = 2;
  struct Options {
    optimizer::Options search;
    int channel_budget = 32;
    bool chunk_dim = false;
    bool channel_truth = false;  // NCCL's profiler interface reports what it ran
    bool size_classes = true;
    Timing timing = Timing::kMaxOverRanks;
    // CCLTUNE_TRACE: one line per timed call whose timing came back (config_table/trace_format.hpp), labelled
    // `trace_comm`; null: no trace.
    config_table::TraceWriter* trace = nullptr;
    std::string trace_comm;
    int max_entries = 24;  // most entries shipped for one workload in one payload
    coordinator::IntervalOptions interval;
    // A workload searched while NCCL's default takes less than this (µs, as measured; 0: never) keeps the intervals
    // at least interval.settle_units long while the iteration is one unit (see Settling()).
    double settle_below_us = 1000;
    // A size class whose running workloads take under this share of the communicator's time is searched on
    // search.low_stakes_budget (optimizer::Search::SetLowStakes; see UpdateStakes). 0: every search has race_budget.
    // On the simulated cluster (the recorded testbed landscape and noise, the bench's training loops of 15 workloads
    // of 64 KiB-16 MiB) 1.5%, 3%, 5% and 10% settled them alike (16.1-16.4 iterations at four calls per iteration,
    // 36.8-37.5 at one, against 18.1 and 40.7 at 0) with the same converged configs; at 3% the testbed's 64-256 KiB
    // workloads and its all-gather and reduce-scatter of 1 MiB are low stakes (docs/results/search-testbed.md,
    // sixty-third session).
    double low_stakes_share = 0.03;
  };
  explicit Leader(const Options& o) : o_(o), policy_(o.interval) {}

  // A unit of `workload` (key) started (the iteration detector's and the lookahead's input).
  void OnUnit(uint64_t workload, const WorkloadKey& key);
  // NCCL's cost table for `workload` was seen: its search space is known from now on. `cost` holds the
  // table's entries per subspace (algo * kNumProtos + proto; < 0 invalid).
  void OnSpace(uint64_t workload, const SubspaceSet& space, const std::array<float, kNumAlgos * kNumProtos>& cost);
  // A timed call was issued with number `seq` (every rank numbers timed calls alike).
  // `scheduled`: the call ran one of the search's schedule entries (else the final entry, while waiting).
  // `call`: the workload's call index on this rank (from 0); `unit`: the communicator's unit count at the call
  // (the tuning trace shows both; consecutive units of one workload mean it runs back to back, and then NCCL's
  // default after another config gets a warm-up call: Entries). `follows_other`: the communicator's call before it
  // was of another workload (its timing is then read by the minimum over ranks: Timing).
  void OnTimed(uint64_t seq, uint64_t workload, const Config& asked, bool scheduled = true, uint64_t call = 0,
               uint64_t unit = 0, bool follows_other = false);
  // Carried timings of timed calls first_seq.. (coordinator::Hooks::on_samples).
  // `window`: coordinator::Hooks::on_samples's (only a window's run shows that the calls before it were all carried).
  void OnSamples(uint64_t first_seq, const std::vector<std::optional<coordinator::CarriedSample>>& samples,
                 bool window = true);
  // Channel truth: NCCL ran `ran` for a call of `workload` that asked for `asked` (any call, timed or not).
  void OnRan(uint64_t workload, const Config& asked, const Config& ran);
  // Every rank applied this update (the leader included); `dropped`: the scheduled calls it replaced.
  void OnApplied(const coordinator::WorkloadUpdate& u, const std::vector<coordinator::ScheduleEntry>& dropped = {});
  // Imported configs: shipped as final, converged entries; those workloads are not searched.
  void AddImports(const std::vector<config_table::ImportedWorkload>& imports);
  void set_frozen(bool frozen) { frozen_ = frozen; }
  bool imported(uint64_t workload) const;

  // The message for the next sync op, given the leader's own schedule book, in `room` record words at most
  // (coordinator::RecordRoom of the sync's id).
  coordinator::LeaderMessage Build(const coordinator::ScheduleBook& book, int room);

  // What the leader measured for one workload (time of NCCL's default and of the incumbent, from
  // the carried timings of that workload's own calls), and the search of its class.
  struct WorkloadStats {
    double default_us = 0;
    double incumbent_us = 0;
    int64_t samples = 0;
    SizeClass size_class;
    optimizer::Stats search;
  };
  std::optional<WorkloadStats> StatsOf(uint64_t workload) const;
  // Whether the intervals stay short: an update other than a guard's probe is on its way, or a workload that
  // still runs is searching.
  bool searching() const;
  // Whether a workload that still runs has its guard's first window open, or its guard checking a drift of a kept
  // default (optimizer::Search::checking): the intervals then grow to kGuardIntervalCap units at most.
  bool checking() const;
  // Whether a workload that still runs, and that NCCL could run with tree, is searched while its default's measured
  // time is below Options::settle_below_us (once seen below, until its search converges or starts over). With a sync op
  // after every unit, every call follows one: it starts with the ranks aligned by it and reads its latency from there,
  // not its time in a run of calls, by an amount that depends on the config (one-GPU testbed, all-reduce 64-256 KiB:
  // tree/simple 17-21% over its oracle's time, ring 5-10%), which turns the order of near-tied configs of short calls.
  // Longer intervals (Build) leave calls that follow no sync op; on long calls the effect is lost in the noise and the
  // short interval's quicker feedback wins (with intervals of 3 for every row, 16 MiB rows ended on the wrong config
  // more often, on the simulated cluster and in a testbed run; docs/results/search-testbed.md, forty-first session).
  // Searches without tree do not settle: on the testbed ring and PAT read alike after a sync op and in a run of calls
  // (thirty-seventh session), and settling the all-gathers and reduce-scatters of 64 KiB-1 MiB cost them 1.7x the
  // calls on the testbed (89.6 against 53.9 per workload over 12 runs each) and 1.5-2.2x on the simulated cluster,
  // with as many rows past 1.05 of the oracle's time either way (7 of 72 against 7; 7 of 96 against 7; forty-second
  // session).
  bool Settling();
  // One line about the search of the workload's class (trace log).
  std::string Describe(uint64_t workload) const;

 private:
  struct Work {
    WorkloadKey key;
    uint64_t class_id = 0;
    int stream = 0;  // this member's index in its class (the search's sample stream)
    // Updates for it in flight (sent, not yet applied): one at a time, except that the search's converged update
    // goes out at once beside one still in flight (Build).
    int in_flight = 0;
    bool probe_only = false;  // ... and the last one only adds a probe of the guard (no need to hurry)
    bool sent_converged = false;
    // Whether the last update applied was converged, and the first timed call (number) that ran on the converged
    // schedule: a converged search's samples are of calls from there on (see OnSamples).
    bool applied_converged = false;
    uint64_t converged_from = 0;
    int sent_generation = -1;  // the search's generation() when entries were last shipped
    Config last_final;
    std::optional<Config> import;  // to ship
    double import_us = 0;
    bool from_import = false;
    // NCCL's cost table, once read (it may come before the workload's first counted unit).
    bool space_known = false;
    SubspaceSet space;
    std::array<float, kNumAlgos * kNumProtos> cost{};
    bool search_ready = false;         // its class's search exists, or it is imported: OnUnit has nothing to start
    uint64_t units_this_interval = 0;  // calls seen since the last Build
    uint64_t calls_per_interval = 1;   // as seen in the last interval (the lookahead's unit)
    int idle_intervals = 0;            // consecutive intervals without a call of this workload
    uint64_t last_unit = 0;            // the leader's unit count at its latest call (Stopped)
    uint64_t first_unit = 0;           // ... at its first call
    uint64_t calls = 0;                // its calls seen (OnUnit)
    std::deque<double> default_samples, incumbent_samples;  // this workload's own, for its statistics
    int64_t samples = 0;
    int64_t idle_samples = 0;         // timed calls some rank timed from an idle stream: not samples
    int idle_streak = 0;              // ... of its latest timed calls whose timings came back, in a row
    int64_t scheduled_in_flight = 0;  // timed calls of schedule entries whose timings have not come back
    // Whether its last two timed calls were consecutive calls of the communicator (a workload run back to
    // back: every call of a searching workload is timed), and the last schedule entry shipped (what runs
    // before the next update's first entry).
    bool back_to_back = false;
    uint64_t last_timed_unit = 0;
    Config last_entry;
    // What NCCL last reported running for its default (a run is reported when it changes, so the first report
    // comes at the workload's first call, before its class's search exists): handed to the search as it starts.
    std::optional<Config> default_ran;
    int settled_generation = -1;  // the generation of its class's search that settles for it (Settling)
  };
  struct Class {
    SizeClass bounds;
    std::vector<uint64_t> members;  // workloads, in first-seen order
    std::optional<optimizer::Search> search;
    uint64_t units = 0;  // calls of its members seen before its search started
  };
  struct Timed {
    uint64_t workload = 0;
    Config asked;
    bool scheduled = true;  // a search's schedule entry (else its final entry, run while waiting)
    uint64_t call = 0, unit = 0;
    bool follows_other = false;  // the communicator's call before it was of another workload
  };
  // One tuning-trace line for a timing that came back (o_.trace set).
  void Trace(const Work& w, const Timed& t, double us, const coordinator::CarriedSample& sample);
  bool trace_failed_ = false;
  Work& Get(uint64_t workload);
  // Whether `w` stopped running: no call for kStoppedPeriods iterations (the period known), else for kStoppedUnits
  // calls of the communicator; or cannot be sampled: its last kUnsampledStreak timed calls all came back idle. What is
  // scheduled for it then will not run or not come back (Build).
  bool Stopped(const Work& w) const;
  // Whether no member of `c` can be sampled: each one's last kUnsampleableStreak timed calls came back idle.
  bool Unsampleable(const Class& c) const;
  Class* ClassOf(const Work& w);
  const Class* ClassOf(const Work& w) const;
  optimizer::Prior PriorFor(const Class& c) const;
  // Starts the search of `w`'s class once both its class and its cost table are known.
  void EnsureSearch(Work& w);
  // A searching class whose members have nothing scheduled, shipped or in flight while its search still
  // awaits samples: those will never come (a lost count) - the search asks again rather than wait forever.
  void UnblockIdle(const coordinator::ScheduleBook& book);
  // A workload's share of the communicator's time, as a weight: its calls per unit of the communicator since its
  // first call, times its default's measured time (its incumbent's, imported, while the default has no sample); 0
  // while unmeasured (NCCL's cost table is no guide to times: on the one-GPU testbed NCCL 2.28.9 rated all-reduce
  // 256 KiB's tree/simple 2.59x the time of its pick, which ran 1.3x faster than it).
  double TimeWeight(const Work& w) const;
  // Tells each search whether its class is low stakes: its running workloads' weights under
  // Options::low_stakes_share of those of every running workload measured (a class with a running member not
  // measured yet is not).
  void UpdateStakes();
  // Entries for `w` from its class's search (warm-ups marked), at most `max`.
  std::vector<coordinator::ScheduleEntry> Entries(Work& w, Class& c, int max, const Config& before);

  Options o_;
  coordinator::IterationDetector detector_;
  coordinator::IntervalPolicy policy_;
  std::unordered_map<uint64_t, Work> work_;
  std::vector<uint64_t> order_;  // first-seen order, for deterministic packing
  std::map<uint64_t, Class> classes_;
  std::map<uint64_t, Timed> timed_;          // seq -> the timed call, until its timing arrives
  uint64_t next_timed_ = 0;                  // the number the next timed call gets
  uint64_t units_ = 0;                       // units seen (OnUnit)
  std::set<std::pair<int, int>> connected_;  // algorithm/protocol pairs NCCL has run on this communicator
  // The intervals of the last kLag payloads (oldest first) and the period known when each was chosen. IntervalPolicy
  // gives multiples of a known period, so one that is not was lengthened to move the sync points (Build).
  struct Delivered {
    uint64_t period = 0;
    uint64_t interval = 0;
  };
  std::array<Delivered, coordinator::kLag> delivered_{};
  bool frozen_ = false;
};

}  // namespace ccltune
