// Stage 6, the search: runs prior -> screen -> race (with refinement) -> decide for one workload and
// keeps monitoring after convergence (see optimizer.hpp). Pipelined: Next() always answers from what is
// known, counting the samples already asked for, so a caller can keep a schedule ahead of the calls
// while samples are still in flight; when everything of the current round is asked for, it adds a few
// more samples of the round's leaders and the default (they count in the next round).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "optimizer/internal/samples.hpp"
#include "optimizer/internal/stages.hpp"
#include "optimizer/internal/stats.hpp"
#include "optimizer/optimizer.hpp"

namespace ccltune::optimizer {

using internal::ConfigKey;
using internal::KeyOf;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The default is measured at least once every kDefaultEvery entries while screening and racing (its
// samples are the local reference of the others), every other entry while deciding.
constexpr int kDefaultEvery = 4;
// Cumulative samples per survivor in race round r (index r; round 0 is screening).
constexpr int kRoundTarget[] = {1, 2, 4, 6, 8};
constexpr int kMaxRounds = static_cast<int>(std::size(kRoundTarget)) - 1;
// Refinement steps (each halves the channel bracket around the winner, or tries chunk sizes).
constexpr int kMaxRefine = 3;
// A refinement step whose neighbours are this many channels or more from the winner is followed by
// another even when the winner held its place.
constexpr int kWideBracket = 3;
// Samples asked for while searching, at most: past it the search decides on what it has.
constexpr int kMaxRequested = 96;
// An undecided comparison of winner and default adds kDecideStep samples to each side, up to
// kDecideCap samples of the winner, and stops earlier when the cap could not decide it either
// (internal::Decide's futility check). A cap of 16 was tried: on the testbed's small sizes (per-sample
// noise 0.2) a 27% gain needs about 20 fresh samples to clear kDecideZ, and reduce-scatter 256 KiB kept
// the default at 0.73 after 13 samples while the oracle found 1.49x.
constexpr int kDecideStep = 4;
constexpr int kDecideCap = 24;
// Samples of the likely winner asked for ahead of its rounds, at most.
constexpr int kSpeculateCap = 16;
// Refinement rounds keep up to kMaxCarried earlier contenders within kCarryMargin of the winner (relative
// to the default) in the race, and refine the best of another subspace among them too: a near tie between
// subspaces is not settled by the few samples that ended a halving round, nor on one subspace's
// screening points.
constexpr double kCarryMargin = 0.05;
constexpr size_t kMaxCarried = 2;
// Screening samples this many times slower than a neighbour of the same subspace (times the neighbour's
// channels over theirs, when it has more) are checked again.
constexpr double kSuspectRatio = 1.5;
// A config that left the race counts again for the final choice with this many samples or more.
constexpr int kFinalMinSamples = 4;

}  // namespace

struct Search::Impl {
  enum class Stage { kScreen, kRace, kDecide, kDone };

  SearchSpace space;
  Options opt;
  Prior prior;
  internal::SampleStore store;
  std::map<ConfigKey, int> pending;  // samples asked for and not received, by config as NCCL runs it
  std::vector<Config> pool;          // contenders of the current round (as NCCL runs them), default excluded
  int target = 1;                    // cumulative samples every contender needs this round
  int round = 0;
  int refine_steps = 0;
  bool refining = false;  // the current round races a winner against its neighbours
  Config refine_from;
  Config winner;
  Stage stage = Stage::kScreen;
  std::map<int, int> since_default;  // per stream: entries since its last default sample
  size_t cursor = 0;
  int decide_target = 0;    // fresh samples of the winner and of the default before the (next) verdict
  int64_t decide_from = 0;  // the decision's samples arrive from this index on (after screening)
  Config incumbent;
  double incumbent_us = 0;
  Stats stats;

  Impl(const SearchSpace& s, const Options& o, const Prior& p) : space(s), opt(o), prior(p) {
    int subspaces = 0;
    for (int a = 0; a < kNumAlgos; ++a)
      for (int q = 0; q < kNumProtos; ++q) subspaces += space.subspaces.Valid(a, q) ? 1 : 0;
    const int screened =
        std::min<int>(o.max_screen, subspaces * static_cast<int>(internal::ScreenChannels(s.max_channels).size()));
    wide = o.round_trip_calls >= 2 * screened + 2;
    space.max_channels = std::max(1, space.max_channels);
    opt.max_screen = std::max(1, opt.max_screen);
    opt.max_survivors = std::max(1, opt.max_survivors);
    opt.final_samples = std::max(2, opt.final_samples);
    opt.monitor_window = std::max(1, opt.monitor_window);
  }

  Config KeyFor(const Config& asked) const { return store.TwinOfDefault(asked) ? Config{} : store.Effective(asked); }
  int Pending(const Config& eff) const {
    auto it = pending.find(KeyOf(eff));
    return it == pending.end() ? 0 : it->second;
  }
  // Samples that count for the current stage: all of them, or while deciding the fresh ones.
  int Count(const Config& eff) const { return store.Count(eff, stage == Stage::kDecide ? decide_from : 0); }
  int Have(const Config& eff) const { return Count(eff) + Pending(eff); }
  int TotalPending() const {
    int n = 0;
    for (const auto& [k, v] : pending) n += v;
    return n;
  }
  // Wide rounds (Options::round_trip_calls): screening takes two samples of each config, the race keeps
  // its best two. Decided when screening starts, from the screening set's size.
  bool wide = false;
  int ScreenTarget() const { return wide ? 2 : 1; }
  int WideOr(int target) const { return wide ? kRoundTarget[kMaxRounds - 1] : target; }

  int DefaultMin() const {
    switch (stage) {
      case Stage::kScreen:
        return wide ? 3 : 2;
      case Stage::kRace:
        return target;
      default:
        // The default's samples flatter nothing (it is always in the race, never chosen): fresh ones
        // only keep the winner's local reference, one for every two of the winner's.
        return (decide_target + 1) / 2;
    }
  }
  // A screened config whose one sample reads kSuspectRatio times slower than a channel count of its own
  // subspace that measured as fast as the default or faster (NCCL's default included, where it runs that
  // subspace): one slow call can look like that
  // (real NCCL on the testbed: all-reduce 1 MiB ring/simple/nc1 read 4.1x on its screening sample, was
  // dropped, and was the oracle's pick at 1.15x faster). It gets a second sample, and a third when the
  // two disagree by that ratio too (the median of three drops one outlier).
  bool Suspect(const Config& c) const {
    if (wide || c.IsDefault()) return false;
    const std::vector<internal::Sample>& own = store.Of(c);
    if (own.empty() || own.size() > 2) return false;
    if (own.size() == 2) {
      // Two samples (a suspect's second, or one asked ahead for the likely survivors while the round is
      // decided): a third settles two that disagree (their median is their mean).
      const double hi = std::max(own[0].us, own[1].us), lo = std::min(own[0].us, own[1].us);
      return hi > kSuspectRatio * lo;
    }
    // Only next to a neighbour that is a contender (as fast as the default or faster): a subspace slow at
    // every channel count is not worth the samples, and some are many times slower at one count.
    // Fewer channels may be slower by their ratio (a bandwidth-bound call on half the channels takes
    // twice as long): the allowance grows with it.
    const double mine = store.Relative(c);
    auto implausible = [&](double theirs, int their_channels) {
      const double fewer = std::max(1.0, static_cast<double>(their_channels) / std::max(1, c.channels));
      return theirs <= 1 && mine > kSuspectRatio * fewer * theirs;
    };
    const std::optional<Config>& d = store.DefaultRan();
    if (d && d->algo == c.algo && d->proto == c.proto && implausible(1.0, d->channels)) return true;
    for (const Config& m : store.Measured())
      if (!m.IsDefault() && m.algo == c.algo && m.proto == c.proto && !(m == c) &&
          implausible(store.Relative(m), m.channels))
        return true;
    return false;
  }
  int TargetOf(const Config& c) const {
    if (stage == Stage::kScreen) return ScreenTarget() + (Suspect(c) ? static_cast<int>(store.Of(c).size()) : 0);
    return stage == Stage::kDecide && c == winner ? decide_target : target;
  }
  std::vector<Config> Contenders() const { return stage == Stage::kDecide ? std::vector<Config>{winner} : pool; }

  // Pool entries as NCCL is now known to run them: merged, twins of the default dropped.
  void Normalise() {
    std::vector<Config> out;
    std::set<ConfigKey> seen;
    for (const Config& c : pool) {
      if (store.TwinOfDefault(c)) continue;
      const Config e = store.Effective(c);
      if (seen.insert(KeyOf(e)).second) out.push_back(e);
    }
    pool = std::move(out);
  }

  bool RoundComplete() const {
    for (const Config& c : Contenders())
      if (Count(c) < TargetOf(c)) return false;
    return Count(Config{}) >= DefaultMin();
  }

  int round_id = 0;

  void StartRound(std::vector<Config> next, int new_target) {
    ++round_id;
    pool = std::move(next);
    target = new_target;
    cursor = 0;
  }

  void Converge(const Config& c) {
    stage = Stage::kDone;
    incumbent = c;
    const double v = store.Absolute(c);
    incumbent_us = std::isfinite(v) ? v : 0;
    watch.clear();
    pending.clear();
  }

  bool InPool(const Config& c) const { return std::find(pool.begin(), pool.end(), c) != pool.end(); }
  // The pool's best by a pessimistic estimate, Relative() plus one standard error of its own samples: a
  // config ahead on few samples is more likely lucky than fast (the race's leader, internal::Leader, is
  // the point estimate's best).
  Config Final() const {
    const double sigma = std::max(store.Noise(), 0.03);
    Config best;
    double best_v = kInf;
    // The pool's measured configs, and those an earlier round dropped with kFinalMinSamples or more: a
    // halving round decides on the estimates of its time, and later samples can show that it dropped the
    // better one.
    for (const Config& c : store.Measured()) {
      const int n = store.Count(c);
      if (c.IsDefault() || (n < kFinalMinSamples && !InPool(c))) continue;
      const double v = store.Relative(c) + 1.25 * sigma / std::sqrt(static_cast<double>(n));
      if (v < best_v) best_v = v, best = c;
    }
    return best_v < kInf ? best : internal::Leader(pool, store);
  }
  // The configs within kCarryMargin of `w` (other than `w`), best first, at most kMaxCarried: the pool's
  // and those of earlier rounds with 2 samples or more. They stay in the refinement race.
  std::vector<Config> Carried(const Config& w) const {
    std::vector<Config> out;
    const double best = store.Relative(w);
    // Earlier rounds' configs too: a halving round that dropped a config on few samples may have dropped
    // the better subspace.
    for (const Config& c : store.Measured())
      if (!c.IsDefault() && !(c == w) && (store.Count(c) >= 2 || InPool(c)) && store.Relative(c) <= best + kCarryMargin)
        out.push_back(c);
    std::stable_sort(out.begin(), out.end(),
                     [&](const Config& x, const Config& y) { return store.Relative(x) < store.Relative(y); });
    if (out.size() > kMaxCarried) out.resize(kMaxCarried);
    return out;
  }
  // Set by whatever can move the search on: samples, lost samples, channel truth (truth_seen).
  bool dirty = true;
  uint64_t truth_seen = ~uint64_t{0};

  void Advance() {
    const bool truth_changed = store.truth_version() != truth_seen;
    if (!dirty && !truth_changed) return;
    dirty = false;
    truth_seen = store.truth_version();
    bool rescreen = truth_changed;
    for (int guard = 0; guard < 64; ++guard) {
      if (truth_changed) Normalise();
      switch (stage) {
        case Stage::kScreen: {
          if (rescreen || pool.empty()) {
            rescreen = false;
            for (const Config& c : internal::ScreenSet(space, opt, prior, store))
              if (std::find(pool.begin(), pool.end(), c) == pool.end()) pool.push_back(c);
          }
          if (pool.empty()) return Converge(Config{});  // nothing to try: NCCL's default
          if (!RoundComplete()) return;
          const int n = static_cast<int>(pool.size());
          const int keep = wide ? std::min(n, 2) : std::clamp((n + 1) / 2, std::min(n, 2), opt.max_survivors);
          // Wide: one race round of the best two to a high target, then the decision.
          round = wide ? kMaxRounds : 1;
          stage = Stage::kRace;
          StartRound(internal::Survivors(pool, store, keep), WideOr(kRoundTarget[1]));
          continue;
        }
        case Stage::kRace: {
          if (stats.requested >= kMaxRequested && Have(Config{}) >= 2) {
            winner = Final();
            stage = Stage::kDecide;
            decide_target = opt.final_samples;
            decide_from = store.total();
            continue;
          }
          if (!RoundComplete()) return;
          if (refining || pool.size() <= 1 || round >= kMaxRounds) {
            const Config w = Final();
            if (w.IsDefault()) return Converge(Config{});
            // Refine around the winner; once more if refining moved it, or while the bracket around it
            // is still wide (a winner that held its place between close neighbours is as good as this
            // budget gets).
            const bool moved = !refining || !(w == refine_from);
            refining = false;
            if (refine_steps < kMaxRefine) {
              // The winner's neighbours, and those of the best carried config of another subspace (a
              // near tie between subspaces is settled on each one's refined best, not on its screening
              // points).
              const std::vector<Config> carried = Carried(w);
              std::vector<Config> next;
              bool wide = false;
              auto neighbours_of = [&](const Config& c) {
                for (const Config& n : internal::Neighbours(c, space, store)) {
                  if (std::find(next.begin(), next.end(), n) != next.end()) continue;
                  wide |= n.chunk_bytes == c.chunk_bytes && std::abs(n.channels - c.channels) >= kWideBracket;
                  next.push_back(n);
                }
              };
              neighbours_of(w);
              for (const Config& c : carried)
                if (c.algo != w.algo || c.proto != w.proto) {
                  neighbours_of(c);  // carried is sorted best first: the best of the other subspaces
                  break;
                }
              if (!next.empty() && (moved || wide)) {
                ++refine_steps;
                refining = true;
                refine_from = w;
                next.insert(next.begin(), w);
                for (const Config& c : carried)
                  if (std::find(next.begin(), next.end(), c) == next.end()) next.push_back(c);
                StartRound(std::move(next), kRoundTarget[2]);
                continue;
              }
            }
            // Nothing looks better than the default even on the race's own (flattering) samples: done.
            if (!(store.Relative(w) < 1 - opt.min_gain / 2)) return Converge(Config{});
            if (store.Count(w) >= internal::kEarlyMinSamples &&
                internal::Decide(w, store, opt.min_gain, 0, internal::kEarlyZ).switch_to_winner) {
              ++stats.early;
              return Converge(w);
            }
            winner = w;
            stage = Stage::kDecide;
            decide_target = opt.final_samples;
            // The decision counts only samples that arrive from here on: the race chose the winner on the
            // earlier ones, which flatter it (of several noisy configs, the luckiest wins); those still on
            // their way played no part in the choice.
            decide_from = store.total();
            cursor = 0;
            continue;
          }
          ++round;
          const int keep = std::max(1, static_cast<int>(pool.size() + 1) / 2);
          StartRound(internal::Survivors(pool, store, keep), kRoundTarget[round]);
          continue;
        }
        case Stage::kDecide: {
          if (!RoundComplete()) return;
          const internal::Verdict v =
              internal::Decide(winner, store, opt.min_gain, decide_from, internal::kDecideZ, kDecideCap);
          if (v.undecided && decide_target < kDecideCap) {
            decide_target += kDecideStep;
            continue;
          }
          return Converge(v.switch_to_winner ? winner : Config{});
        }
        case Stage::kDone:
          return;
      }
    }
  }

  Config Waiting() const {
    switch (stage) {
      case Stage::kRace: {
        const Config w = internal::Leader(pool, store);
        return !w.IsDefault() && store.Relative(w) < 1 ? w : Config{};
      }
      case Stage::kDecide:
        return store.Relative(winner) < 1 ? winner : Config{};
      case Stage::kDone:
        return incumbent;
      default:
        return Config{};
    }
  }

  // The configs the next round will likely race (the better half of this one's, or the winner while
  // deciding), and the samples it will want of each.
  std::pair<std::vector<Config>, int> LikelyNext() const {
    switch (stage) {
      case Stage::kScreen: {
        // The better half of what was screened so far, to the first race round's target; before any
        // screening sample is back, every screened config (any of them may survive).
        std::vector<Config> measured;
        for (const Config& c : pool)
          if (store.Count(c) > 0) measured.push_back(c);
        const int next = WideOr(kRoundTarget[1]);
        if (measured.empty()) return {pool, std::max(next, ScreenTarget())};
        return {
            internal::Survivors(measured, store, wide ? 2 : std::max<int>(1, static_cast<int>(pool.size() + 1) / 2)),
            next};
      }
      case Stage::kRace:
        return {internal::Survivors(pool, store, std::max<int>(1, static_cast<int>(pool.size() + 1) / 2)),
                kRoundTarget[std::min(round + 1, kMaxRounds)]};
      case Stage::kDecide:
        return {{winner}, std::min(decide_target + kDecideStep, kDecideCap)};
      default:
        return {{}, 0};
    }
  }

  // The next entry, or nothing when every sample worth asking for now is asked for.
  std::optional<Config> PickNext(int stream, std::optional<std::pair<std::vector<Config>, int>>* likely) {
    std::vector<Config> need;
    for (const Config& c : Contenders())
      if (Have(c) < TargetOf(c)) need.push_back(c);
    const bool default_short = Have(Config{}) < DefaultMin();
    if (need.empty() && !default_short) {
      // Everything of this round is asked for and its answers are on their way: ask now for what the
      // next round will want of the configs likely to be in it (the better half, to the next target),
      // so the schedule does not run dry while the round is decided.
      if (TotalPending() == 0) return std::nullopt;
      if (!likely->has_value()) *likely = LikelyNext();  // once per Next(): it ranks the contenders
      for (const Config& c : (*likely)->first)
        if (Have(c) < (*likely)->second) need.push_back(c);
      if (need.empty()) {
        // Still waiting: the likely winner's samples are wanted by every later round and by the decision
        // (those arriving after it starts are fresh), the default's by every comparison.
        const std::vector<Config>& l = (*likely)->first;
        if (!l.empty() && stage != Stage::kDecide && Have(l.front()) < kSpeculateCap) need.push_back(l.front());
      }
      if (need.empty()) return std::nullopt;
    }
    const int every = stage == Stage::kDecide ? 2 : kDefaultEvery;
    // A stream starts with a default sample: its others are read against it.
    int& since = since_default.try_emplace(stream, every).first->second;
    if (need.empty() || since >= every) {
      since = 0;
      return Config{};
    }
    ++since;
    return need[cursor++ % need.size()];
  }

  std::vector<Candidate> Next(int max_candidates, int stream) {
    std::vector<Candidate> out;
    Advance();
    std::optional<std::pair<std::vector<Config>, int>> likely;
    while (static_cast<int>(out.size()) < max_candidates && stage != Stage::kDone) {
      std::optional<Config> c = PickNext(stream, &likely);
      if (!c) break;
      ++pending[KeyOf(KeyFor(*c))];
      ++stats.requested;
      if (!out.empty() && out.back().config == *c) {
        ++out.back().calls;
      } else {
        out.push_back(Candidate{*c, 1});
      }
    }
    return out;
  }

  void AddSample(const Config& asked, double us, int stream, bool requested) {
    if (!(us > 0) || !std::isfinite(us)) return;
    if (stage == Stage::kDone) {
      if (KeyFor(asked) == KeyFor(incumbent)) Monitor(us, stream);
      return;
    }
    const Config key = KeyFor(asked);
    if (auto it = pending.find(KeyOf(key)); requested && it != pending.end() && it->second > 0) --it->second;
    store.Add(asked, us, stream);
    dirty = true;
    // Only a completed round moves the search on (the leader calls this for every timing it gets;
    // Next() advances anyway).
    if (RoundComplete()) Advance();
  }

  void NoteRan(const Config& asked, const Config& ran) {
    const Config before = KeyFor(asked);
    store.NoteRan(asked, ran);
    const Config after = KeyFor(asked);
    if (!(before == after)) {
      auto it = pending.find(KeyOf(before));
      if (it != pending.end()) {
        pending[KeyOf(after)] += it->second;
        pending.erase(KeyOf(before));
      }
    }
  }

  // After convergence: the incumbent's samples (the caller samples it now and then), per stream. The
  // first full window of a stream is its baseline; two consecutive windows away from it by more than
  // drift_ratio re-open the search (one window can be dragged off by a burst of outliers).
  struct Watch {
    std::deque<double> window;
    double baseline = 0;
    int strikes = 0;
  };
  std::map<int, Watch> watch;

  void Monitor(double us, int stream) {
    Watch& w = watch[stream];
    w.window.push_back(us);
    if (static_cast<int>(w.window.size()) < opt.monitor_window) return;
    const double m = internal::Median(std::vector<double>(w.window.begin(), w.window.end()));
    w.window.clear();
    if (!(w.baseline > 0)) {
      w.baseline = m;
      return;
    }
    if (std::fabs(m / w.baseline - 1) > opt.drift_ratio) {
      if (++w.strikes >= 2) Reopen();
    } else {
      w.strikes = 0;
    }
  }

  void Reopen() {
    ++stats.reopened;
    store.Clear();
    pending.clear();
    pool.clear();
    stage = Stage::kScreen;
    round = 0;
    refine_steps = 0;
    refining = false;
    target = 1;
    cursor = 0;
    since_default.clear();
    stats.requested = 0;
    dirty = true;
    Advance();
  }

  void Adopt(const Config& c, double us) {
    Converge(c);
    incumbent_us = us > 0 ? us : 0;
  }

  Stats GetStats() const {
    Stats s = stats;
    const double d = store.Absolute(Config{});
    s.default_us = std::isfinite(d) ? d : 0;
    s.incumbent_us = incumbent_us;
    s.noise = store.Noise();
    s.samples = static_cast<int>(store.total());
    s.configs = static_cast<int>(store.Measured().size());
    return s;
  }

  std::string Describe(int max_configs) const {
    std::vector<std::pair<double, Config>> rows;
    for (const Config& c : store.Measured()) rows.emplace_back(store.Relative(c), c);
    std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    static constexpr const char* kStage[] = {"screen", "race", "decide", "done"};
    char buf[128];
    std::snprintf(buf, sizeof(buf), "%s round %d, %d samples (%d asked, %d lost, %d pending), relative to default:",
                  kStage[static_cast<int>(stage)], round, static_cast<int>(store.total()), stats.requested, stats.lost,
                  TotalPending());
    std::string out = buf;
    int shown = 0;
    for (const auto& [v, c] : rows) {
      if (shown >= max_configs && !c.IsDefault()) continue;
      ++shown;
      std::snprintf(buf, sizeof(buf), " %s%s=%.3f/%d", c.IsDefault() ? "*" : "", c.ToString().c_str(), v,
                    store.Count(c));
      out += buf;
    }
    if (shown < static_cast<int>(rows.size())) out += " +" + std::to_string(rows.size() - shown) + " more";
    std::snprintf(buf, sizeof(buf), "; noise %.3f; incumbent %s", store.Noise(), incumbent.ToString().c_str());
    out += buf;
    if (stage == Stage::kDone) {
      std::snprintf(buf, sizeof(buf), " %.2f us (converged)", incumbent_us);
      out += buf;
    }
    return out;
  }
};

Search::Search(const SearchSpace& space, const Options& options, const Prior& prior)
    : impl_(std::make_unique<Impl>(space, options, prior)) {
  impl_->Advance();
}
Search::~Search() = default;
Search::Search(Search&&) noexcept = default;
Search& Search::operator=(Search&&) noexcept = default;

State Search::state() const { return impl_->stage == Impl::Stage::kDone ? State::kConverged : State::kSearching; }
std::vector<Candidate> Search::Next(int max_candidates, int stream) { return impl_->Next(max_candidates, stream); }
void Search::AddSample(const Config& config, double us, int stream, bool requested) {
  impl_->AddSample(config, us, stream, requested);
}
void Search::NoteRan(const Config& asked, const Config& ran) { impl_->NoteRan(asked, ran); }
void Search::NoteLost(const Config& config) {
  auto it = impl_->pending.find(KeyOf(impl_->KeyFor(config)));
  if (it != impl_->pending.end() && it->second > 0) --it->second;
  ++impl_->stats.lost;
  impl_->dirty = true;
  impl_->Advance();
}
void Search::DropPending() {
  impl_->stats.lost += impl_->TotalPending();
  impl_->pending.clear();
  impl_->dirty = true;
  impl_->Advance();
}
Config Search::incumbent() const { return impl_->incumbent; }
Config Search::waiting() const { return impl_->Waiting(); }
void Search::Adopt(const Config& config, double us) { impl_->Adopt(config, us); }
void Search::Reopen() { impl_->Reopen(); }
Stats Search::stats() const { return impl_->GetStats(); }
int Search::pending() const { return impl_->TotalPending(); }
int Search::round_id() const { return impl_->round_id + (impl_->stage == Impl::Stage::kDecide ? 1000 : 0); }
std::string Search::Describe(int max_configs) const { return impl_->Describe(max_configs); }

std::vector<Config> EnumerateSpace(const SearchSpace& space) {
  std::vector<Config> out;
  out.push_back(Config{});
  const int mc = std::max(1, space.max_channels);
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) {
      if (!space.subspaces.Valid(a, p)) continue;
      std::vector<int64_t> chunks = {0};
      const std::vector<int64_t> v = internal::ChunkValues(space, p);
      chunks.insert(chunks.end(), v.begin(), v.end());
      for (int c = 1; c <= mc; ++c)
        for (int64_t ck : chunks) out.push_back(Config{a, p, c, ck});
    }
  return out;
}

}  // namespace ccltune::optimizer
