// coordinator: the consistency protocol of DESIGN.md §4. Every rank counts units of a communicator;
// after chosen units every rank issues one in-band all-reduce(MAX) of a fixed-size array of 64-bit
// words (the payload) through a Transport; the leader (rank 0) writes the schedule updates, the
// others write zeros; payload k is applied by every rank at sync point k+kLag, so all ranks switch
// configs at the same call. Knows nothing of CUDA, NCCL or MPI: the real transport lives in src/,
// an in-process fake (FakeHub) serves the tests.
//
// Payload layout (words; protocol constants, never changed by a version):
//   0 magic 'CCLTUNE\0'      every rank writes it
//   1 version v              every rank: MAX -> highest version present
//   2 2^63 - v               every rank: MAX -> 2^63 - lowest version present
//   3 sync id                every rank writes the same value
//   4 cannot-tune flag       0/1 per rank: MAX -> any rank cannot tune
//   5 error flag             0/1 per rank: MAX -> any rank saw an error
//   6 interval               leader: length (units) of the interval that starts at sync k+kLag
//   7 control                leader: bit0 stop tuning on this communicator; bit1 settle (from version 4 on:
//                            a call right after a sync op is held); bits 8..39 the detected iteration
//                            period in units (0 unknown)
//   8 record count           leader
//   9.. records              leader: per workload [hash][header: n entries (8 bits), converged bit 8,
//                            append bit 9] then n entry words: algo+1 (4 bits) | proto+1 (4) |
//                            channels (11) | warm-up (1) | calls (12; 0 = final, stays) | chunk bytes (32)
// Syncs 0 .. kLag-1 are these kPayloadWords words on every version (the agreement point is sync 0). A
// sync with a higher id runs on ranks that all applied sync 0, which stops tuning and syncing on every
// rank unless all run the same version; from protocol version 2 on, those syncs carry kSampleWords more
// words: the timings of earlier calls, every rank writing its own, two words per timed call (2^63 - ns
// and ns, so the MAX delivers the minimum and the maximum over ranks; 0 where a rank has none). From
// version 3 on, a rank that timed a call from an idle stream (executor::IdleFilter; not one the leader reads by its
// minimum over ranks) writes the reserved timing 2^62 - 1 ns instead, and the slot's maximum then says that some rank
// did. Version 4 holds the calls that a ScheduleBook::Next runs after a sync op while the control's settle bit is set
// (ranks of version 3 would not: a rank of each would run different configs at one call). Version 5 counts a held call
// that runs a warm-up entry's config as that entry's warm-up call (ScheduleBook::Next; version 4 ran the entry's calls
// after it all the same). Version 6 fills the slots that the window of sync j leaves free with early copies: the timed
// calls issued before sync point j - 1 that no sync carried yet, each rank writing its timing where it has one and the
// reserved timing 2^62 - 2 ns where it has none yet (its GPU is behind its host); a copy whose maximum says that some
// rank had none is not used, and the call's timing comes with its own window as before (CommCoordinator::Deliver).
// Version 7 fills the slots still free after those with copies of the calls issued since sync point j - 1 (the interval
// that sync j ends), and copies them again at sync j + 1 as calls issued before its j; each timing is handed to the
// leader once. Version 8 gives the syncs from id kLag on kMoreRecordWords more record words, between the payload and
// the timings: the records run on from the payload's last word into them, so such a sync carries kRecordWords +
// kMoreRecordWords words of records (RecordRoom).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vocab/types.hpp"

namespace ccltune::coordinator {

inline constexpr int kPayloadWords = 64;
inline constexpr uint64_t kMagic = 0x0045'4E55'544C'4343ull;  // "CCLTUNE" little-endian
#ifdef CCLTUNE_TEST_PROTOCOL_VERSION                          // tests only: a build that speaks another version
inline constexpr uint64_t kProtocolVersion = CCLTUNE_TEST_PROTOCOL_VERSION;
#else
inline constexpr uint64_t kProtocolVersion = 8;
#endif
inline constexpr uint64_t kFirstSyncUnit = 1;     // the first sync follows unit 1: the agreement point
inline constexpr int kLag = 2;                    // payload k applies at sync point k + kLag
inline constexpr uint64_t kInitialInterval = 16;  // units between the first kLag + 1 sync points
inline constexpr int kHeaderWords = 9;
inline constexpr int kMaxEntriesPerRecord = 255;
inline constexpr uint32_t kMaxCallsPerEntry = 4095;
// Timed calls carried by one sync from id kLag on (two words each), and the words that sync has.
inline constexpr int kSampleSlots = 96;
inline constexpr int kSampleWords = 2 * kSampleSlots;
// Record words that a sync from id kLag on carries beyond the payload's (protocol version 8 on). While 16 workloads
// start their races in a training loop, an update of a dozen entries takes 14 words, and 55 words left workloads
// without their next entries for several intervals (docs/results/search-testbed.md, fifty-fourth session).
inline constexpr int kMoreRecordWords = 64;
inline constexpr int kExtendedWords = kPayloadWords + kMoreRecordWords + kSampleWords;
// A converged workload's final entry is timed on every kMonitorEvery-th call (every rank alike), and such
// monitoring calls are timed kMonitorPerInterval times at most between two sync points: one sync carries
// kSampleSlots timings, and once everything is converged the intervals grow to tens of thousands of units
// (one call in 16 of those would be thousands of timings per sync, a backlog the syncs carry ever later: the
// leader then judges a drift on timings from long ago, and holds every waiting timing in memory meanwhile).
inline constexpr uint64_t kMonitorEvery = 16;
inline constexpr int kMonitorPerInterval = kSampleSlots / 2;

using Words = std::array<uint64_t, kPayloadWords>;
using MoreWords = std::array<uint64_t, kMoreRecordWords>;
using SampleWords = std::array<uint64_t, kSampleWords>;

// What one sync op reduces: the payload, and from sync id kLag on more record words and the carried timings.
struct Payload {
  Words base{};
  MoreWords more{};
  SampleWords samples{};
  bool extended = false;  // the op has kExtendedWords words (else kPayloadWords)
  int words() const { return extended ? kExtendedWords : kPayloadWords; }
};
// Whether sync `sync_id` is extended (protocol constant of this version; see the layout above).
inline bool ExtendedSync(uint64_t sync_id) { return sync_id >= static_cast<uint64_t>(kLag); }

struct ScheduleEntry {
  Config config;
  uint32_t calls = 0;   // 0: the final entry (incumbent), which stays after the others are used up
  bool warmup = false;  // the entry's first call is not timed (the first run of an algorithm/protocol)
  friend bool operator==(const ScheduleEntry&, const ScheduleEntry&) = default;
};

// "Run c1 x m1, c2 x m2, ... in order, then stay on the final entry." Replaces what the workload had,
// or with `append` comes after the entries it still has (the final entry is replaced either way).
struct WorkloadUpdate {
  uint64_t workload = 0;
  std::vector<ScheduleEntry> entries;  // the last one has calls == 0
  bool converged = false;              // the final entry is the search's result
  bool append = false;
  friend bool operator==(const WorkloadUpdate&, const WorkloadUpdate&) = default;
};

// One carried timing: the minimum and maximum over the ranks that timed the call, or, where some rank
// timed it from an idle stream, `idle` and no times, or, in an early copy where some rank had no timing yet (and none
// timed it from an idle stream), `not_yet` and no times.
struct CarriedSample {
  double min_us = 0;
  double max_us = 0;
  bool idle = false;
  bool not_yet = false;
  friend bool operator==(const CarriedSample&, const CarriedSample&) = default;
};
// Writes slot `slot` of a rank's contribution (us > 0); a slot left alone means "not timed here".
void EncodeSample(SampleWords* words, int slot, double us);
// Writes slot `slot` as timed from an idle stream on this rank: the reduced slot then decodes as idle.
void EncodeIdleSample(SampleWords* words, int slot);
// Writes slot `slot` of an early copy as not timed here yet: the reduced slot then decodes as not_yet (unless some rank
// marked it idle).
void EncodeNotYetSample(SampleWords* words, int slot);
// The first `n` slots of reduced sample words: a sample, or nullopt where no rank had one. DataLoss
// for a slot whose two words do not belong together.
absl::StatusOr<std::vector<std::optional<CarriedSample>>> DecodeSamples(const SampleWords& reduced, int n);

struct LeaderMessage {
  std::vector<WorkloadUpdate> updates;
  uint64_t interval = kInitialInterval;  // length of the interval starting at sync point k + kLag
  uint64_t period = 0;                   // the leader's detected iteration period (units), 0 unknown
  bool stop_tuning = false;
  // From sync point k + kLag on (with the interval), every rank holds a workload's call that directly follows a sync
  // op, where the workload runs back to back (kHoldWindow, ScheduleBook::Next): its samples are then all of calls
  // that follow their own config, none of a call right after a sync op (ccltune::Leader::Settling).
  bool settle = false;
  friend bool operator==(const LeaderMessage&, const LeaderMessage&) = default;
};

struct RankFlags {
  bool cannot_tune = false;
  bool saw_error = false;
};

// Words one update takes in a payload.
int EncodedWords(const WorkloadUpdate& u);
// Room for records in an empty payload.
inline constexpr int kRecordWords = kPayloadWords - kHeaderWords;
// Room for records in sync `sync_id`: the payload's, and from id kLag on the more record words too.
inline int RecordRoom(uint64_t sync_id) { return kRecordWords + (ExtendedSync(sync_id) ? kMoreRecordWords : 0); }

// The contribution of one rank. `leader` is the leader's message (nullptr on other ranks). With `more` (a sync from id
// kLag on), records that do not fit the payload run on into it, which is written whole (zeros past the records).
// InvalidArgument if the message does not fit or a field is out of range.
absl::StatusOr<Words> Encode(const LeaderMessage* leader, uint64_t sync_id, RankFlags flags,
                             uint64_t version = kProtocolVersion, MoreWords* more = nullptr);

struct Delivered {
  uint64_t sync_id = 0;
  uint64_t min_version = 0;
  uint64_t max_version = 0;
  bool any_cannot_tune = false;
  bool any_error = false;
  LeaderMessage message;
};

// Decodes the reduced words, with `more` the reduced more record words of a sync from id kLag on. DataLoss for a
// malformed payload (bad magic, record overrun, bad field); FailedPrecondition when versions differ across ranks
// (min != max), with min/max filled in the message. Never reads past the arrays.
absl::StatusOr<Delivered> Decode(const Words& reduced, const MoreWords* more = nullptr);

// A call that follows a call of another workload on its communicator holds, in its time over ranks, that call's
// late finish on some ranks (ccltune::Leader::Timing); one that follows ccltune's sync op starts with the ranks
// aligned by it and reads slower than in a run of calls. A workload that ran back to back within its last
// kHoldWindow calls has calls to spare: those that follow another workload's or a sync op are held
// (ScheduleBook::Next): every rank sees the same calls, so every rank holds the same ones.
inline constexpr uint64_t kHoldWindow = 8;
// Units per interval, at the fewest, while a workload run back to back alone is searched on calls short enough for
// the sync op's after-effect to turn its order of configs (ccltune::Leader, IntervalOptions::settle_units): the first
// call of each interval is held, the other two are samples. On the one-GPU testbed (all-reduce 64 and 256 KiB, a
// fixed interval for every row) 3 left no row of 20 past 1.05 of the oracle's time, against 3 of 20 with 1 in the same
// batch, and 2 left 5 of 40 (docs/results/search-testbed.md, forty-first session).
inline constexpr uint64_t kSettleUnits = 3;
// One workload's calls on one rank, as far as holding goes.
class BackToBack {
 public:
  // Its call number `call` (1, 2, ...; every call counted) follows a call of another workload (`follows_other`) or
  // one of its own. True: hold it (it follows another's, and one of its last kHoldWindow calls followed its own).
  bool Hold(uint64_t call, bool follows_other);

 private:
  uint64_t last_warm_call_ = 0;  // its latest call that followed one of its own (0: none)
};

// Per communicator and rank: each workload's schedule, consumed one call at a time.
class ScheduleBook {
 public:
  struct Call {
    Config config;
    bool timed = false;      // every rank times this call (a scheduled sample, a waiting or monitoring call)
    bool scheduled = false;  // the call ran a schedule entry (not the final entry)
  };
  // Returns the entries the update dropped (a replacing update drops the calls still scheduled).
  std::vector<ScheduleEntry> Apply(const WorkloadUpdate& u);
  // The next call of `workload` (consumes one call), or nullopt: NCCL's default, untimed. `hold`: the call
  // follows another workload's or a sync op (kHoldWindow): it runs the schedule's next entry's config (the final
  // entry's when none is left) untimed and consumes nothing but that entry's warm-up call, where it has one (the
  // entry's samples, a guard's probe or a monitoring sample wait for a call that follows one of its own).
  std::optional<Call> Next(uint64_t workload, bool hold = false);
  // Calls of `workload` still scheduled before its final entry.
  uint64_t PendingCalls(uint64_t workload) const;
  // The final entry, without consuming (used while a stream captures a graph).
  std::optional<Config> Incumbent(uint64_t workload) const;
  // True when only the final entry is left (or the workload has no schedule).
  bool Exhausted(uint64_t workload) const;
  bool Converged(uint64_t workload) const;
  // A sync point was issued (every rank at the same unit): the monitoring calls' allowance starts again.
  void NewInterval() { monitor_timed_ = 0; }
  void Clear();
  size_t size() const { return book_.size(); }

 private:
  struct Slot {
    std::deque<ScheduleEntry> pending;  // entries with calls left
    Config final_config;
    bool converged = false;
    uint64_t final_calls = 0;  // calls served by the final entry since it became converged
  };
  std::unordered_map<uint64_t, Slot> book_;
  int monitor_timed_ = 0;  // monitoring calls timed since the last sync point
};

// Where the sync points fall. s_0 = kFirstSyncUnit, s_{j+1} = s_j + I_j, I_j = kInitialInterval for
// j < kLag, and I_{k+kLag} delivered by payload k (applied at s_{k+kLag}, just in time).
class SyncCadence {
 public:
  struct Actions {
    std::optional<uint64_t> apply;  // wait for this sync id and apply its payload (first)
    std::optional<uint64_t> issue;  // then issue this sync id
  };
  // `units` is the number of units completed so far (1 after the first).
  Actions OnUnitComplete(uint64_t units);
  // Payload k delivered the interval I_{k+kLag}; must be called while applying payload k.
  void SetDeliveredInterval(uint64_t sync_id, uint64_t interval);
  // The iteration period delivered by the payload applied last (0 unknown).
  void SetDeliveredPeriod(uint64_t period) { period_ = period; }
  // The unit about to be reported to OnUnitComplete ran a workload this communicator never ran before.
  // Every rank sees the same first sightings at the same unit, so this is as deterministic as the
  // rest: the pending sync point and the next kLag + 1 intervals are capped at BoostCap(), so the
  // leader can ship the new workload's first candidates within about 3 caps instead of waiting out
  // long converged intervals. The cap is one iteration (the delivered period, at least 2 units), or
  // kInitialInterval while the period is unknown: intervals stay at least one iteration long.
  void NoteNewWorkload() { new_workload_ = true; }
  uint64_t BoostCap() const { return period_ > 0 ? std::max<uint64_t>(period_, 2) : kInitialInterval; }
  uint64_t next_sync_unit() const { return next_sync_unit_; }
  uint64_t next_sync_id() const { return next_sync_id_; }

 private:
  uint64_t next_sync_unit_ = kFirstSyncUnit;
  uint64_t next_sync_id_ = 0;
  uint64_t period_ = 0;
  bool new_workload_ = false;
  int boost_left_ = 0;
  std::unordered_map<uint64_t, uint64_t> interval_for_;  // sync index j -> I_j
};

// Leader side: the repeating period of the sequence of workload keys (the training iteration).
class IterationDetector {
 public:
  explicit IterationDetector(size_t history = 4096) : history_(history) {}
  void Observe(uint64_t workload);
  // Smallest period P that repeats at least 3 times at the end of the history; 0 while unknown.
  uint64_t period() const { return period_; }
  // With the period known: the fewest units d in [0, period) such that the unit ahead + d after the last one observed
  // ends a run of calls of one workload (the unit after it, read whole periods earlier in the history, is another
  // workload's). A sync op placed there falls between two workloads' runs. 0 while the period is unknown or no such
  // unit exists.
  uint64_t ShiftToRunEnd(uint64_t ahead = 0) const;

 private:
  void Detect(size_t limit);  // tries the periods 1 .. limit
  size_t history_;
  std::deque<uint64_t> seq_;
  uint64_t period_ = 0;
  uint64_t observed_ = 0;
};

// Leader side: how long the next interval is. At least `min_units`; converged, at least one iteration (a multiple of
// the period), doubling up to `max_units` (and up to `cap`, when not 0: a converged workload's guard is still
// checking, and its probes come and go at syncs). While something is searched: half an iteration, the last
// interval's complement to one iteration (a period of at least 2 and `min_units` at most half of it; otherwise one
// iteration), so that any kLag intervals in a row still span an iteration (the host wait's premise, DESIGN.md §4).
struct IntervalOptions {
  uint64_t min_units = 8;
  uint64_t max_units = 1 << 16;
  uint64_t unknown_period_units = kInitialInterval;  // while the period is unknown
  // With `settle` (a workload that runs back to back alone, period 1, is searched on short calls): at least this
  // many units, so that each interval has calls that follow no sync op (CallPath holds the one right after it).
  uint64_t settle_units = kSettleUnits;
};
class IntervalPolicy {
 public:
  explicit IntervalPolicy(IntervalOptions o = {}) : o_(o) {}
  uint64_t Next(uint64_t period, bool searching, uint64_t cap = 0, bool settle = false);

 private:
  IntervalOptions o_;
  uint64_t last_ = 0;
};

// The in-band all-reduce(MAX) over the communicator's ranks.
class Transport {
 public:
  virtual ~Transport() = default;
  // Starts sync `sync_id` with this rank's contribution on `stream` (opaque; the unit's stream);
  // contribution.words() words are reduced.
  virtual absl::Status Issue(uint64_t sync_id, const Payload& contribution, void* stream) = 0;
  // Waits for sync `sync_id` and writes the reduced words. DeadlineExceeded after `timeout`, and
  // the caller may wait again.
  virtual absl::Status Wait(uint64_t sync_id, Payload* reduced, absl::Duration timeout) = 0;
  // Never blocks: true and the reduced words when sync `sync_id` is complete, false while not.
  virtual absl::StatusOr<bool> Poll(uint64_t sync_id, Payload* reduced) = 0;
};

// In-process fake: n endpoints; Issue never blocks; Wait blocks until all n contributed; Poll says
// whether all have. A contribution of another size than the others' makes the sync fail (the real
// all-reduce would hang or corrupt).
class FakeHub {
 public:
  explicit FakeHub(int n);
  ~FakeHub();
  std::unique_ptr<Transport> Endpoint(int rank);
  // Fault injection for tests: endpoint `rank` drops its contribution to `sync_id`.
  void DropContribution(int rank, uint64_t sync_id);

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

// One rank's protocol state for one communicator.
class CommCoordinator {
 public:
  struct Hooks {
    // Leader only: fill the message for sync `sync_id` (called when the leader issues it).
    std::function<LeaderMessage(uint64_t sync_id)> build_message;
    // Every rank: an update was applied (after the book took it); `dropped`: the scheduled calls it
    // replaced, which will not run.
    std::function<void(const WorkloadUpdate&, const std::vector<ScheduleEntry>& dropped)> on_update;
    // Every rank: tuning stopped on this communicator (reason is a one-line message).
    std::function<void(const std::string& reason)> on_stop;
    // Every rank: a wait took longer than the warn threshold (for loud logging).
    std::function<void(uint64_t sync_id, absl::Duration waited)> on_slow_wait;
    // Every rank, when it issues extended sync j: write this rank's timings of the timed calls
    // first_seq .. first_seq + n - 1 (NoteTimed's numbers) into slots slot0 .. slot0 + n - 1 (EncodeSample).
    // early = false: the window, calls issued before sync point j - kLag, which the apply at sync point j has
    // waited for (a call this rank has no timing of stays empty). early = true: the early copies, calls issued
    // before sync point j - 1, some of which may still run on this rank's GPU: EncodeNotYetSample where this
    // rank has no timing yet; their timings are still needed for the window of a later sync.
    std::function<void(uint64_t first_seq, int n, int slot0, bool early, SampleWords* words)> fill_samples;
    // Leader: the carried timings of calls first_seq .. first_seq + size - 1, as soon as their sync
    // completed (HarvestSamples) or at its apply at the latest. Each timed call's once: from its early copy
    // where every rank had its timing then (the later of those in one sync after the others), else from its
    // window; a window's calls that came early are left out of it (each run of consecutive calls in one call).
    // `window`: the run is part of a window (every call before it was carried now or earlier); false for early
    // copies, which may skip a call (idle or not finished on some rank) that a later window still carries.
    std::function<void(uint64_t first_seq, const std::vector<std::optional<CarriedSample>>& samples, bool window)>
        on_samples;
  };
  CommCoordinator(int rank, std::unique_ptr<Transport> transport, Hooks hooks,
                  absl::Duration warn_after = absl::Seconds(5));

  // The next call of `workload`: its config, and whether every rank times it (then NoteTimed() gives
  // its number). capturing: the incumbent, nothing consumed, untimed. NCCL's default (untimed) when
  // tuning is off or the workload has no schedule.
  // hold: ScheduleBook::Next's.
  ScheduleBook::Call ConfigFor(uint64_t workload, bool capturing, bool hold = false);
  // The number of the timed call ConfigFor just returned (0, 1, 2, ... on every rank alike).
  uint64_t NoteTimed() { return timed_calls_++; }
  // Leader: hands the timings of completed extended syncs to on_samples without blocking.
  void HarvestSamples();
  // After a unit completed, on the stream of its last collective: apply due payloads and issue
  // due syncs. Returns the first error (the caller stops tuning locally only through the
  // protocol: errors are raised as the error flag at the next sync).
  absl::Status OnUnitComplete(void* stream);
  // This rank cannot tune (set up failed) or saw an error: raised at the next sync.
  void RaiseCannotTune() { flags_.cannot_tune = true; }
  // The unit about to complete ran a workload never seen on this communicator (see SyncCadence).
  void NoteNewWorkload() { cadence_.NoteNewWorkload(); }
  void RaiseError() { flags_.saw_error = true; }

  bool tuning() const { return tuning_; }
  // The settle bit of the payload applied last (LeaderMessage::settle): the call right after a sync op is held.
  bool settle() const { return settle_; }
  bool is_leader() const { return rank_ == 0; }
  uint64_t units() const { return units_; }
  uint64_t syncs_issued() const { return cadence_.next_sync_id(); }
  const ScheduleBook& book() const { return book_; }

 private:
  absl::Status Apply(uint64_t sync_id);
  int rank_;
  std::unique_ptr<Transport> transport_;
  Hooks hooks_;
  absl::Duration warn_after_;
  ScheduleBook book_;
  SyncCadence cadence_;
  RankFlags flags_;
  bool tuning_ = true;   // false once the protocol stopped it (same on every rank)
  bool syncing_ = true;  // false once no more syncs are issued (same on every rank)
  bool settle_ = false;  // the applied payload's settle bit (same on every rank)
  uint64_t units_ = 0;
  // Carried timings: timed calls numbered so far, the count at each sync issued (by id), how many
  // were carried, and (leader) the windows of issued syncs whose timings were not delivered yet.
  uint64_t timed_calls_ = 0;
  std::unordered_map<uint64_t, uint64_t> timed_at_issue_;
  uint64_t carried_ = 0;
  uint64_t early_next_ = 0;  // the first timed call not yet copied as one issued before sync point id - 1
  struct Window {
    uint64_t sync_id = 0;
    uint64_t first = 0;
    int n = 0;
    uint64_t early_first = 0;  // the early copies: slots n .. n + early_n - 1
    int early_n = 0;
  };
  std::set<uint64_t> came_early_;  // leader: timed calls delivered from an early copy, not yet passed by a window
  std::deque<Window> undelivered_;
  void Deliver(const Window& w, const Payload& reduced);
};

}  // namespace ccltune::coordinator
