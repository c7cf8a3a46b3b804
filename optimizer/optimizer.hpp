// optimizer: the search for one workload's best configuration, driven by measured samples, built for
// real NCCL: per-sample noise of 5-20% with heavy tails, slow periods that cover whole stretches of
// calls, rugged channel curves, communicators with fewer channels than asked for. One algorithm for
// every plugin ABI, in stages named by their files:
//   prior.cc   NCCL's cost table orders the subspaces; hints (an import, a neighbouring size's winner)
//              come first;
//   screen.cc  a few log-spaced channel counts per subspace over the channels NCCL really runs;
//   race.cc    an asynchronous race over the screened configs (no rounds): the leader and its strongest
//              challenger (lowest lower confidence bound) are sampled, NCCL's default always in between,
//              on robust statistics of samples normalised by the default measured next to them;
//   refine.cc  channel counts next to the leader (and chunk sizes where tuner v6 offers them) join the race,
//              the bracket halving while it leads;
//   decide.cc  the leader replaces NCCL's default only on a gain larger than the measured noise, judged on
//              its samples since it leads;
//   search.cc  the state machine that runs them within a sample budget: the next candidates are always
//              available, also while earlier ones are still being measured.
// Pure C++: no CUDA, NCCL or MPI; tests drive it with measured landscapes replayed with their noise.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vocab/types.hpp"

namespace ccltune::optimizer {

struct SearchSpace {
  SubspaceSet subspaces;  // valid algorithm x protocol entries and NCCL's pick
  // NCCL's cost-table estimate per subspace (index algo * kNumProtos + proto, µs; < 0 where invalid or
  // unknown): its relative costs order the subspaces even where its pick is wrong.
  std::array<float, kNumAlgos * kNumProtos> cost{};
  int max_channels = 0;        // channels that may be asked for, [1, max_channels]
  bool channel_truth = false;  // NoteRan() will report what NCCL ran (ccltune's profiler plugin is loaded)
  bool chunk_dim = false;      // search chunk size too (tuner v6, NCCL >= 2.30)
  // Per protocol grain (bytes); chunk sizes are searched as grain * 2^k within [min, max].
  int64_t chunk_grain[kNumProtos] = {0, 0, 0};
  int64_t chunk_min[kNumProtos] = {0, 0, 0};
  int64_t chunk_max[kNumProtos] = {0, 0, 0};
  SearchSpace() { cost.fill(-1.0f); }
};

struct Options {
  // Switch away from NCCL's default only if the winner is faster by more than this fraction, and by
  // more than kDecideZ standard errors of the measured difference.
  double min_gain = 0.02;
  // Screened configs at most (the prior's order decides which).
  int max_screen = 24;
  // Screen no subspace whose NCCL cost-table estimate is more than this many times that of NCCL's own pick
  // (where both are known; hints are screened regardless). 0: screen every valid subspace. On the one-GPU
  // testbed NCCL 2.28.9's table rated a winning subspace up to 2.59x its pick (tree/simple, all-reduce 256 KiB)
  // and tree/ll, never a winner there or on NVLink, 4.6-11.8x (docs/results/search-testbed.md, thirty-first
  // session). 6 by default: it leaves out what 5 does there (NCCL rates nothing between 4.55 and 7.16 times its
  // pick), tree/ll at all-reduce 256 KiB-16 MiB and its 114-151 ms of timed calls per testbed run; with it 9 of 11
  // testbed runs met issue 12's done-when, without it 5 of 11 (thirty-second to thirty-fourth sessions).
  double screen_cost_ratio = 6;
  // After convergence the caller keeps sampling the incumbent now and then (coordinator::kMonitorEvery);
  // per workload, the median of `monitor_window` samples `drift_ratio` away from its first window's, in
  // two consecutive windows, re-opens the search (with the guard and a config other than the default: the
  // guard judges it against the default, from a fresh window).
  int monitor_window = 8;
  double drift_ratio = 0.15;
  // Converged on a config other than NCCL's default, the search asks for a call of the default now and then
  // and re-opens when the incumbent reads significantly slower than it, or its edge over it shrank by more
  // than drift_ratio (Stats::probes, demoted, shifted, rechecks). Converged on the default, a drift of its
  // time is judged the same way against the reference, the config that came closest to it in the search.
  bool guard = true;
  // The search's sample budget (entries asked for while searching, NCCL's default included) is race_budget plus
  // 3 per arm; past it the search decides on what came back (CCLTUNE_RACE_BUDGET). A training loop that runs each
  // workload once per iteration converges when its slowest search does, and the slowest are the ones that run to
  // their budget (near ties of two fast arms, gains of a few percent inside the noise). A smaller budget settles a
  // loop sooner for a converged result a little further from the best (docs/results/search-testbed.md,
  // sixty-first session: 12 instead of 18 settled the simulated one-call loop after 38.0 iterations instead of
  // 40.6, and left 0.00-0.08 of the headroom on the recorded landscapes); a long job pays that on every iteration.
  int race_budget = 18;
  // race_budget of a search whose workloads take a small share of their communicator's time (Search::SetLowStakes;
  // the leader decides, Leader::Options::low_stakes_share): it settles sooner, and a few percent more of a small
  // share of the time is little. Such a search has race_budget again while its leader reads 10% or more faster than
  // the default without a significant verdict. At race_budget or above it changes nothing. A low-stakes search also
  // counts the samples of its waiting config (Search::waiting()) against its budget (Stats::waited). On real NCCL (the
  // one-GPU testbed, 4 ranks, a class under 3% of the time low stakes) the training loop of 15 workloads settled
  // after 17.5 iterations instead of 20.8 at four calls per iteration and 41.6 instead of 48.6 at one, its converged
  // configs as fast (docs/results/search-testbed.md, sixty-third session).
  int low_stakes_budget = 6;
};

// Where the search starts: configs to try first (an imported result, the winner of a neighbouring
// size of the same collective and type), best first.
struct Prior {
  std::vector<Config> hints;
};

// A schedule entry: run `config` for `calls` consecutive calls; every call is a sample.
struct Candidate {
  Config config;
  int calls = 1;
  friend bool operator==(const Candidate&, const Candidate&) = default;
};

enum class State {
  kSearching,  // Next() has candidates, or samples are still awaited
  kConverged,  // incumbent() is final until drift, or the guard's probes of the default, re-open the search
};

struct Stats {
  double default_us = 0;    // robust estimate of NCCL's default (0 until measured)
  double incumbent_us = 0;  // robust estimate of the incumbent
  double noise = 0;         // measured relative per-sample noise
  int samples = 0;          // samples received while searching (monitoring excluded)
  int configs = 0;          // distinct configs measured (as NCCL ran them)
  int requested = 0;        // samples asked for (Next) while searching
  int lost = 0;             // asked for, then reported lost (NoteLost) or given up (DropPending)
  int early = 0;            // converged on a race arm before the sample budget was used up
  int reopened = 0;
  // After convergence on a config other than NCCL's default, the search asks for a call of the default now
  // and then (Next() while converged) and judges the incumbent against those (the guard): `probes` asked
  // for; re-openings (counted in `reopened` too) because the incumbent read significantly slower than the
  // default (`demoted`), or its edge over the default shrank by more than drift_ratio from what the search
  // had measured (`shifted`); `rechecks`: a drift of the incumbent's own time handed to the guard (a fresh
  // first window) instead of re-opening the search. Converged on the default, after a drift of its time:
  // probes of the reference, and `demoted` / `shifted` when the reference reads significantly faster than the
  // default / closer to it by more than drift_ratio than the search measured.
  int probes = 0;
  int demoted = 0;
  int shifted = 0;
  int rechecks = 0;
  // Converged on a config other than the default: its time over that of the default measured beside it
  // while searching (each sample against the default samples nearest to it); 0 where not measured.
  double incumbent_relative = 0;
  // Entries the search may ask for as it stands (with the waiting samples it counts, `waited`): race_budget (see
  // SetLowStakes) + 3 per arm.
  int budget = 0;
  int arms = 0;             // configs in the race (NCCL's default excluded)
  bool low_stakes = false;  // Search::SetLowStakes
  // Samples of the waiting config (AddSample with requested = false) that came while the search was low stakes:
  // they count against the budget beside the entries asked for (Options::low_stakes_budget).
  int waited = 0;
};

class Search {
 public:
  Search(const SearchSpace& space, const Options& options, const Prior& prior = {});
  ~Search();
  Search(Search&&) noexcept;
  Search& operator=(Search&&) noexcept;

  State state() const;
  // Converged on a config other than NCCL's default, and no window of the guard's probes of the default has
  // confirmed the gain yet (4 windows at most), or converged on the default and checking a drift of its time
  // against the reference: a caller whose syncs space out while all is converged keeps them at most a few dozen
  // calls apart meanwhile (its probes are shipped and come back at syncs).
  bool checking() const;
  // The next entries to run, at most `max_candidates`, in order. Callable at any time, also while
  // samples of earlier entries are still awaited (the caller keeps a schedule ahead of the calls);
  // empty when nothing is worth running before more samples arrive. Once converged on a config other than
  // NCCL's default, now and then one call of the default (the guard's probe, see Stats::probes), or, converged
  // on the default while the guard checks a drift of its time, one call of the reference: the caller runs it
  // before the incumbent and delivers its sample; the search stays converged.
  // `stream`: which of the workloads sharing this search runs them (sizes of one size class differ, so
  // each workload's samples are compared with its own default's, and each gets its own default samples).
  std::vector<Candidate> Next(int max_candidates, int stream = 0);
  // A measured call that ran `config` as asked, on `stream` (samples arrive in call order).
  // `requested`: the call ran a Candidate from Next(); false for a call the search did not ask for
  // (the incumbent run while the schedule waits for samples), which counts as a sample all the same.
  void AddSample(const Config& config, double us, int stream = 0, bool requested = true);
  // Channel truth: NCCL ran `ran` for a call that asked for `asked` (fewer channels than asked, when
  // the message is small or the communicator has fewer). Configs that run identically share their
  // samples and are never asked for twice.
  void NoteRan(const Config& asked, const Config& ran);
  // A sample asked for that will not come (no rank could time the call): the search stops waiting for it.
  void NoteLost(const Config& config);
  // Every sample asked for that has not come yet will not (their schedule was replaced).
  void DropPending();
  // Best configuration so far (the default Config until something beats it significantly).
  Config incumbent() const;
  // What to run while the schedule waits for samples (the caller's final entry while searching, every
  // call of it a sample given with requested = false): the race's current leader once it measured
  // better than the default (its samples are what the next rounds and the decision want most), else
  // NCCL's default; the incumbent once converged.
  Config waiting() const;
  // Warm start: take `config` as incumbent and converge at once (import); `us` its known time or 0.
  // Monitoring still runs and may re-open the search.
  void Adopt(const Config& config, double us);
  // Forget the converged state and search again (drift, or on request).
  void Reopen();
  Stats stats() const;
  // Whether the workloads of this search take a small share of their communicator's time: the budget is then
  // Options::low_stakes_budget (see there). The caller may change it at any time; it is read at every decision.
  void SetLowStakes(bool low);
  // Samples still awaited.
  int pending() const;
  // Changes when the search starts over (Reopen): entries asked for before are worth nothing then, and a
  // caller replaces what it still has scheduled. Otherwise a caller only appends: the race counts the
  // entries on their way and goes on from them (replacing them whenever the leader changed dropped the
  // samples already in flight and stalled deep pipelines for a round trip each time).
  int generation() const;
  // What the search measured, for a trace log: configs with their estimate relative to the default,
  // sample counts, the stage, the noise and the incumbent. One line, at most `max_configs` configs.
  std::string Describe(int max_configs = 16) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// NCCL's cost table for the space as one log line: every valid subspace in the prior's order with its estimate
// over that of NCCL's pick ("ring/simple 1.00* tree/simple 1.35 ring/ll 3.20"; * NCCL's pick, ? no estimate), or
// its estimates in µs where the pick has none. What the prior ranked, beside what the search then measured.
// A subspace that options.screen_cost_ratio keeps from screening is marked " (not screened)".
std::string DescribePrior(const SearchSpace& space, const Options& options = Options{});

// Every configuration of the space (the oracle's list): "no override" first, then every valid
// subspace x channels 1..max_channels (x chunk steps when chunk_dim).
std::vector<Config> EnumerateSpace(const SearchSpace& space);

}  // namespace ccltune::optimizer
