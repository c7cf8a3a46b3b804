// optimizer: the per-workload search (see optimizer.hpp and DESIGN.md §6).
//
// Structure: one "lane" per valid subspace runs a compass search (coordinate descent with an
// adaptive step) over channel index and, where offered, chunk index. Every lane proposes its next
// probes at once and all of them go into the same batch, so a round of the search costs one
// batch. Measured configs are memoised: a probe of a point already measured costs nothing.
// Lanes far behind the global best are pruned. When every lane is done, the best point is
// confirmed against NCCL's default in an interleaved batch and adopted only on a gain larger
// than the measured noise; otherwise the default stays.
// Spaces without a chunk axis use the staged search instead (AdvanceStaged): a few rounds of
// parallel bracket refinement on a channel ladder for every subspace still close to the best,
// a re-measure of the best few points, then the same confirmation. The lanes serve chunk spaces.
#include "optimizer/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <tuple>

#include "optimizer/internal/stats.hpp"

namespace ccltune::optimizer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Step growth after a success: step *= 1 + kStepGain * relative improvement (10% gain doubles it).
constexpr double kStepGain = 10.0;
// A probe replaces the lane's point only when it is better by this fraction: moves on pure noise
// cost probes and win nothing.
constexpr double kMoveEps = 0.01;
// Safety cap on rounds per lane (a compass search on <= 2 dims of <= 64 values needs far fewer).
constexpr int kMaxLaneRounds = 40;
// Confirmation runs default and best alternately in this many blocks per side.
constexpr int kConfirmBlocks = 2;
// z-score of the switch test: best must beat default by 2.5 standard errors of the difference
// (2 let about 2% of flat landscapes switch for nothing).
constexpr double kSwitchZ = 2.5;

using Key = std::tuple<int, int, int, int64_t>;
Key KeyOf(const Config& c) { return {c.algo, c.proto, c.channels, c.chunk_bytes}; }

std::vector<int64_t> ChunkValues(const SearchSpace& sp, int proto) {
  std::vector<int64_t> v;
  if (proto < 0 || proto >= kNumProtos) return v;
  const int64_t g = sp.chunk_grain[proto];
  if (g <= 0) return v;
  for (int64_t c = g; c <= sp.chunk_max[proto] && c > 0; c *= 2) {
    if (c >= sp.chunk_min[proto]) v.push_back(c);
    if (c > std::numeric_limits<int64_t>::max() / 2) break;
  }
  return v;
}

int MaxChannels(const SearchSpace& sp) { return std::max(1, sp.max_channels); }

}  // namespace

struct Search::Impl {
  // A point of a lane: channel value and chunk index (-1 = chunk 0, NCCL's choice).
  struct Probe {
    int dim = -1;  // -1: start / spread probe
    int dir = 0;
    int ch = 0;
    int chunk_idx = -1;
  };
  struct Lane {
    int algo = 0, proto = 0;
    std::vector<int64_t> chunks;  // explicit chunk values, ascending
    bool started = false;
    int ch = 0, chunk_idx = -1;
    double f = kInf;
    int step[2] = {1, 1};
    int momentum_dim = -1, momentum_dir = 0;
    bool chunk_tried = false;
    bool model_tried = false;
    bool pruned = false, converged = false;
    int rounds = 0;
    std::vector<Probe> probes;  // this round's
    bool Active() const { return !pruned && !converged; }
  };
  struct Measure {
    std::vector<double> samples;
    bool scheduled = false;
  };
  enum class Phase { kExplore, kConfirm, kDone };
  enum class Role { kExplore, kConfirmDefault, kConfirmBest };
  struct Entry {
    Candidate cand;
    Role role = Role::kExplore;
    int seen = 0;
  };

  SearchSpace space;
  Options opt;
  State state = State::kNeedBatch;
  Phase phase = Phase::kExplore;

  std::map<Key, Measure> memo;
  std::vector<Lane> lanes;
  bool default_probed = false;
  std::deque<Entry> pending;
  std::vector<Entry> batch;
  size_t cursor = 0;

  // Staged search (no chunk axis): rounds of parallel bracket refinement on a channel ladder.
  bool staged = false;
  int round = 0;
  std::vector<int> ladder;
  std::vector<char> sub_alive;  // per lane
  std::vector<Config> finalists;
  bool final_done = false;
  int explore_calls = 0;

  Config best;  // confirmation challenger
  std::vector<double> confirm_default, confirm_best;

  Config incumbent;
  double incumbent_us = 0;
  double default_us = 0;

  // Monitoring after convergence.
  int64_t monitor_count = 0;
  std::deque<double> window;
  int drift_strikes = 0;

  Stats stats;

  Impl(const SearchSpace& s, const Options& o) : space(s), opt(o) {
    opt.warmup_calls = std::max(0, opt.warmup_calls);
    opt.samples_per_candidate = std::max(1, opt.samples_per_candidate);
    opt.confirm_samples = std::max(2, opt.confirm_samples);
    opt.max_batch = std::max(1, opt.max_batch);
    opt.monitor_every = std::max(1, opt.monitor_every);
    opt.monitor_window = std::max(1, opt.monitor_window);
    Start();
  }

  Config LaneConfig(const Lane& l, int ch, int chunk_idx) const {
    Config c;
    c.algo = l.algo;
    c.proto = l.proto;
    c.channels = ch;
    c.chunk_bytes = chunk_idx >= 0 ? l.chunks[chunk_idx] : 0;
    return c;
  }

  double Value(const Config& c) const {
    auto it = memo.find(KeyOf(c));
    if (it == memo.end()) return kInf;
    return internal::RobustEstimate(it->second.samples);
  }
  bool Measured(const Config& c) const {
    auto it = memo.find(KeyOf(c));
    return it != memo.end() && it->second.scheduled;
  }

  void Start() {
    phase = Phase::kExplore;
    memo.clear();
    lanes.clear();
    pending.clear();
    batch.clear();
    cursor = 0;
    confirm_default.clear();
    confirm_best.clear();
    default_probed = false;
    for (int a = 0; a < kNumAlgos; ++a)
      for (int p = 0; p < kNumProtos; ++p) {
        if (!space.subspaces.Valid(a, p)) continue;
        Lane l;
        l.algo = a;
        l.proto = p;
        if (space.chunk_dim) l.chunks = ChunkValues(space, p);
        lanes.push_back(std::move(l));
      }
    // NCCL's own pick first: if the batch is split, the most likely winner is measured early.
    std::stable_partition(lanes.begin(), lanes.end(), [&](const Lane& l) {
      return l.algo == space.subspaces.nccl_algo && l.proto == space.subspaces.nccl_proto;
    });
    staged = !space.chunk_dim;
    round = 0;
    finalists.clear();
    final_done = false;
    explore_calls = 0;
    sub_alive.assign(lanes.size(), 1);
    ladder.clear();
    {
      const int mc = MaxChannels(space);
      for (int c : {1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128})
        if (c < mc) ladder.push_back(c);
      for (int c = 160; c < mc; c += 32) ladder.push_back(c);
      ladder.push_back(mc);
    }
    Advance();
  }

  void Schedule(const Config& c) {
    Measure& m = memo[KeyOf(c)];
    if (m.scheduled) return;
    m.scheduled = true;
    pending.push_back({Candidate{c, opt.warmup_calls + opt.samples_per_candidate}, Role::kExplore, 0});
  }

  // Start points of a lane: NCCL's usual choice (all channels) and a geometric spread down to 2
  // channels, so that a lane whose optimum is at few channels is not judged (and pruned) by its
  // worst end. The cost of a channel count is roughly a/c + b*c: a log-scale spread keeps every
  // optimum within a factor sqrt(ratio) of a start point.
  void ProposeStart(Lane& l) {
    const int mc = MaxChannels(space);
    std::vector<int> pts = {mc, static_cast<int>(std::lround(std::sqrt(2.0 * mc))), 2};
    std::vector<int> seen;
    for (int c : pts) {
      c = std::clamp(c, 1, mc);
      if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
      seen.push_back(c);
      l.probes.push_back({-1, 0, c, -1});
    }
  }

  void Propose(Lane& l) {
    l.probes.clear();
    if (!l.Active()) return;
    if (!l.started) return ProposeStart(l);
    const int mc = MaxChannels(space);
    const int kc = static_cast<int>(l.chunks.size());
    auto add = [&](int dim, int dir) {
      int ch = l.ch, ci = l.chunk_idx;
      if (dim == 0)
        ch = std::clamp(l.ch + dir * l.step[0], 1, mc);
      else
        ci = std::clamp(l.chunk_idx + dir * l.step[1], 0, kc - 1);
      if (ch == l.ch && ci == l.chunk_idx) return false;
      l.probes.push_back({dim, dir, ch, ci});
      return true;
    };
    if (l.momentum_dim >= 0 && add(l.momentum_dim, l.momentum_dir)) {
      // Keep going the way that just paid; the other dimension is probed as usual.
      if (l.chunk_idx >= 0) {
        const int other = 1 - l.momentum_dim;
        add(other, -1);
        add(other, +1);
      }
    } else {
      l.momentum_dim = -1;
      add(0, -1);
      add(0, +1);
      if (l.chunk_idx >= 0) {
        add(1, -1);
        add(1, +1);
      }
    }
    if (l.probes.empty()) {
      // Nothing left along any axis (a one-value space): try chunks, else done.
      if (!TryChunkSpread(l)) l.converged = true;
    }
  }

  // Before a lane settles, one probe where a fit of t(c) = a/c + b*c + g (per-channel bandwidth
  // against per-channel overhead) through all of its measured channel counts puts the minimum. The
  // fit pools every sample of the lane, so it sees past the noise of single points; the probe is
  // only a proposal and wins only if it measures better.
  bool TryModelProbe(Lane& l) {
    if (l.model_tried) return false;
    l.model_tried = true;
    std::vector<std::pair<double, double>> pts;  // (channels, time)
    for (const auto& [k, m] : memo) {
      const auto& [a, p, ch, chunk] = k;
      if (a != l.algo || p != l.proto || chunk != (l.chunk_idx >= 0 ? l.chunks[l.chunk_idx] : 0)) continue;
      const double v = internal::RobustEstimate(m.samples);
      if (std::isfinite(v)) pts.emplace_back(ch, v);
    }
    if (pts.size() < 4) return false;
    // Normal equations of least squares in (a, b, g) with regressors 1/c, c, 1.
    double A[3][4] = {};
    for (const auto& [c, t] : pts) {
      const double x[3] = {1 / c, c, 1};
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) A[i][j] += x[i] * x[j];
        A[i][3] += x[i] * t;
      }
    }
    for (int i = 0; i < 3; ++i) {
      int piv = i;
      for (int r = i + 1; r < 3; ++r)
        if (std::fabs(A[r][i]) > std::fabs(A[piv][i])) piv = r;
      if (std::fabs(A[piv][i]) < 1e-12) return false;
      for (int j = 0; j < 4; ++j) std::swap(A[i][j], A[piv][j]);
      for (int r = 0; r < 3; ++r) {
        if (r == i) continue;
        const double f = A[r][i] / A[i][i];
        for (int j = i; j < 4; ++j) A[r][j] -= f * A[i][j];
      }
    }
    const double a = A[0][3] / A[0][0], b = A[1][3] / A[1][1];
    const int mc = MaxChannels(space);
    int c = a <= 0 ? 1 : b <= 0 ? mc : static_cast<int>(std::lround(std::sqrt(a / b)));
    c = std::clamp(c, 1, mc);
    if (std::abs(c - l.ch) < 2 || Measured(LaneConfig(l, c, l.chunk_idx))) return false;
    l.probes.push_back({-2, 0, c, l.chunk_idx});
    return true;
  }

  // Chunk dimension: once channels settled at chunk 0 (NCCL's choice), try a spread of explicit
  // chunk sizes; a winner makes chunk a regular axis of the compass search.
  bool TryChunkSpread(Lane& l) {
    if (l.chunk_tried || l.chunks.empty() || l.chunk_idx >= 0) return false;
    l.chunk_tried = true;
    const int kc = static_cast<int>(l.chunks.size());
    std::vector<int> idx = {0, kc / 2, kc - 1};
    std::sort(idx.begin(), idx.end());
    idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
    for (int i : idx) l.probes.push_back({-1, 0, l.ch, i});
    return true;
  }

  void Evaluate(Lane& l) {
    if (l.probes.empty()) return;
    ++l.rounds;
    double bv = kInf;
    const Probe* bp = nullptr;
    for (const Probe& p : l.probes) {
      const double v = Value(LaneConfig(l, p.ch, p.chunk_idx));
      if (v < bv) bv = v, bp = &p;
    }
    if (!l.started) {
      l.started = true;
      if (bp) l.ch = bp->ch, l.chunk_idx = bp->chunk_idx, l.f = bv;
      l.step[0] = std::max(1, (l.ch + 1) / 3);
      l.probes.clear();
      return;
    }
    const bool improved = bp && bv < l.f * (1 - kMoveEps);
    if (improved && bp->dim == -2) {
      l.ch = bp->ch;
      l.f = bv;
      l.step[0] = 1;
      l.momentum_dim = -1;
    } else if (improved && bp->dim < 0) {
      // Chunk spread found a better chunk: chunk becomes an axis, channels are re-opened.
      l.chunk_idx = bp->chunk_idx;
      l.f = bv;
      l.step[1] = std::max(1, static_cast<int>(l.chunks.size()) / 4);
      l.step[0] = std::max(1, l.ch / 4);
      l.momentum_dim = -1;
    } else if (improved) {
      const double r = (l.f - bv) / l.f;
      const int d = bp->dim;
      l.ch = bp->ch;
      l.chunk_idx = bp->chunk_idx;
      l.f = bv;
      const int range = d == 0 ? MaxChannels(space) : static_cast<int>(l.chunks.size());
      l.step[d] =
          std::clamp(static_cast<int>(std::ceil(l.step[d] * (1 + kStepGain * r))), l.step[d], std::max(1, range - 1));
      l.momentum_dim = d;
      l.momentum_dir = bp->dir;
    } else if (l.momentum_dim >= 0) {
      // The direction that paid stopped paying: look both ways again with a smaller step.
      l.momentum_dim = -1;
      l.step[0] = std::max(1, l.step[0] / 2);
      l.step[1] = std::max(1, l.step[1] / 2);
    } else {
      const bool has_chunk_axis = l.chunk_idx >= 0;
      if (l.step[0] == 1 && (!has_chunk_axis || l.step[1] == 1)) {
        // Every direction of every dimension failed at the finest step.
        l.probes.clear();
        if (!TryModelProbe(l) && !TryChunkSpread(l)) l.converged = true;
        return;
      }
      l.step[0] = std::max(1, l.step[0] / 2);
      l.step[1] = std::max(1, l.step[1] / 2);
    }
    l.probes.clear();
    if (l.rounds >= kMaxLaneRounds) l.converged = true;
  }

  double DefaultValue() const { return Value(Config{}); }

  void Prune() {
    double g = DefaultValue();
    for (const Lane& l : lanes) g = std::min(g, l.f);
    if (!std::isfinite(g)) return;
    for (Lane& l : lanes)
      if (l.Active() && l.started && l.f > opt.prune_ratio * g) l.pruned = true;
  }

  bool RoundMeasured(const Lane& l) const {
    for (const Probe& p : l.probes) {
      auto it = memo.find(KeyOf(LaneConfig(l, p.ch, p.chunk_idx)));
      if (it == memo.end() || !it->second.scheduled) return false;
    }
    return true;
  }

  // Runs the search forward until it needs measurements (pending non-empty) or is done.
  void Advance() {
    if (staged) return AdvanceStaged();
    while (pending.empty() && phase == Phase::kExplore) {
      if (!default_probed) {
        default_probed = true;
        Schedule(Config{});
        for (Lane& l : lanes) {
          Propose(l);
          for (const Probe& p : l.probes) Schedule(LaneConfig(l, p.ch, p.chunk_idx));
        }
        continue;
      }
      // All probes of the round are measured (pending is empty): evaluate, prune, propose.
      for (Lane& l : lanes)
        if (RoundMeasured(l)) Evaluate(l);
      Prune();
      bool any = false;
      for (Lane& l : lanes) {
        if (!l.Active()) continue;
        if (l.probes.empty()) Propose(l);
        for (const Probe& p : l.probes) Schedule(LaneConfig(l, p.ch, p.chunk_idx));
        any = any || !l.probes.empty();
      }
      if (!any) FinishExplore();
    }
    if (!pending.empty()) {
      state = State::kNeedBatch;
    } else if (phase == Phase::kDone) {
      state = State::kConverged;
    }
  }

  // ---- Staged search (spaces without a chunk axis) ---------------------------------------------
  // Round 0: the default and every subspace at a log-spread of channel counts, in one batch. Each
  // later round keeps the subspaces within a shrinking margin of the global best (so close
  // competitors all stay) and halves, on a ladder of channel counts, the bracket around each
  // kept subspace's best from both sides at once; off-ladder neighbours polish at the end. Then
  // the few best points (and the default) are measured again, and the best of the pooled samples
  // is confirmed against the default. Every round is one batch.

  static constexpr int kMaxStagedRounds = 4;  // exploration batches, round 0 included
  static constexpr int kMaxFinalists = 4;
  static constexpr int kGridLanes = 2;  // leading subspaces that get the full round grid in round 1
  static constexpr double kFinalistMargin = 0.06;
  static constexpr int kFinalExtraSamples = 2;  // finalists get this many samples more than explorers
  static constexpr int kCallBudget = 200;       // soft cap on candidate calls of one search
  static constexpr int kConfirmReserve = 52;    // calls kept for the final re-measure and confirmation

  int CallsPerCandidate() const { return opt.warmup_calls + opt.samples_per_candidate; }

  bool ScheduleNew(const Config& c) {
    Measure& m = memo[KeyOf(c)];
    if (m.scheduled) return false;
    m.scheduled = true;
    pending.push_back({Candidate{c, CallsPerCandidate()}, Role::kExplore, 0});
    explore_calls += CallsPerCandidate();
    return true;
  }

  // Measured channel counts of a lane with their estimates, ascending by channels.
  std::vector<std::pair<int, double>> LanePoints(const Lane& l) const {
    std::vector<std::pair<int, double>> pts;
    for (const auto& [k, m] : memo) {
      const auto& [a, p, ch, chunk] = k;
      if (a != l.algo || p != l.proto || chunk != 0 || !m.scheduled) continue;
      pts.emplace_back(ch, internal::RobustEstimate(m.samples));
    }
    std::sort(pts.begin(), pts.end());
    return pts;
  }

  static double BestOf(const std::vector<std::pair<int, double>>& pts, int* at) {
    double b = kInf;
    for (size_t i = 0; i < pts.size(); ++i)
      if (pts[i].second < b) b = pts[i].second, *at = static_cast<int>(i);
    return b;
  }

  // Round channel counts below the budget: where measured tables put their points and where
  // performance steps tend to be (per-channel work crossing a power-of-two boundary).
  std::vector<int> RoundPoints() const {
    std::vector<int> nice;
    for (int c : {2, 4, 8, 12, 16, 24, 32, 48, 64})
      if (c < MaxChannels(space)) nice.push_back(c);
    return nice;
  }

  std::vector<int> InitialPoints(int k) const {
    const int mc = MaxChannels(space);
    std::vector<int> out = {mc};  // NCCL's usual channel count first
    // Round channel counts when there is room for them, else a log-spread from 2 to the budget
    // snapped to the ladder.
    const std::vector<int> nice = RoundPoints();
    if (k >= static_cast<int>(nice.size()) + 1) {
      out.insert(out.end(), nice.begin(), nice.end());
    } else if (k >= 2) {
      auto snap = [&](double x) {
        int best = ladder.front();
        for (int c : ladder)
          if (std::fabs(std::log(c / x)) < std::fabs(std::log(best / x))) best = c;
        return best;
      };
      const double lo = std::min(2.0, static_cast<double>(mc));
      for (int i = 0; i < k - 1; ++i) out.push_back(snap(lo * std::pow(mc / lo, static_cast<double>(i) / (k - 1))));
    }
    std::vector<int> uniq;
    for (int c : out)
      if (std::find(uniq.begin(), uniq.end(), c) == uniq.end()) uniq.push_back(c);
    return uniq;
  }

  // Probes strictly between measured channel counts a < b: with three or more ladder entries in
  // the gap, two at its thirds (the bracket shrinks three-fold per round), else the middle ladder
  // entry, else the integer middle; none once the gap is closed.
  std::vector<int> Between(int a, int b) const {
    std::vector<int> in;
    for (int c : ladder)
      if (c > a && c < b) in.push_back(c);
    const int n = static_cast<int>(in.size());
    if (n >= 3) return {in[n / 3], in[(2 * n) / 3]};
    if (n >= 1) return {in[(n - (a < 1 ? 1 : 0)) / 2]};
    if (b - a >= 2) return {(a + b) / 2};
    return {};
  }

  double KeepMargin() const {
    const double pr = std::max(1.0, opt.prune_ratio);
    if (round <= 1) return pr;
    if (round == 2) return 1 + (pr - 1) * 0.4;
    return 1 + (pr - 1) * 0.2;
  }

  bool ProposeRound() {
    double g = DefaultValue();
    std::vector<double> lbest(lanes.size(), kInf);
    for (size_t i = 0; i < lanes.size(); ++i) {
      int at = 0;
      lbest[i] = BestOf(LanePoints(lanes[i]), &at);
      g = std::min(g, lbest[i]);
    }
    if (!std::isfinite(g)) return false;
    const double margin = KeepMargin();
    std::vector<size_t> order;
    for (size_t i = 0; i < lanes.size(); ++i) {
      if (!sub_alive[i]) continue;
      if (!(lbest[i] <= g * margin)) {
        sub_alive[i] = 0;
        continue;
      }
      order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lbest[a] < lbest[b]; });
    const int mc = MaxChannels(space);
    bool any = false;
    for (size_t n = 0; n < order.size(); ++n) {
      const Lane& l = lanes[order[n]];
      const auto pts = LanePoints(l);
      int at = 0;
      if (!std::isfinite(BestOf(pts, &at))) continue;
      std::vector<int> probes;
      if (round == 1 && static_cast<int>(n) < kGridLanes) {
        // The leading subspaces first get every round channel count: measured landscapes have
        // isolated dips (one channel count 5-10% better than both neighbours) that a bracket
        // search started from a sparse spread walks past.
        for (int c : RoundPoints())
          if (!Measured(LaneConfig(l, c, -1))) probes.push_back(c);
      }
      const int ch = pts[at].first;
      const int lo = at > 0 ? pts[at - 1].first : 0;
      const int hi = at + 1 < static_cast<int>(pts.size()) ? pts[at + 1].first : mc + 1;
      if (probes.empty()) {
        for (int c : Between(lo, ch))
          if (c >= 1) probes.push_back(c);
        for (int c : Between(ch, hi))
          if (c >= 1 && c <= mc) probes.push_back(c);
      }
      int added = 0;
      for (int c : probes) {
        if (explore_calls + CallsPerCandidate() > kCallBudget - kConfirmReserve) break;
        added += ScheduleNew(LaneConfig(l, c, -1));
      }
      any = any || added > 0;
    }
    return any;
  }

  void PickFinalists() {
    std::vector<std::pair<double, Config>> all;
    for (const Lane& l : lanes)
      for (const auto& [ch, v] : LanePoints(l))
        if (std::isfinite(v)) all.emplace_back(v, LaneConfig(l, ch, -1));
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const double dv = DefaultValue();
    if (all.empty() || !(all[0].first < dv * (1 - opt.min_gain))) return;
    for (const auto& [v, c] : all) {
      if (static_cast<int>(finalists.size()) >= kMaxFinalists || v > all[0].first * (1 + kFinalistMargin)) break;
      finalists.push_back(c);
    }
    pending.push_back({Candidate{Config{}, CallsPerCandidate()}, Role::kExplore, 0});
    for (const Config& c : finalists)
      pending.push_back({Candidate{c, CallsPerCandidate() + kFinalExtraSamples}, Role::kExplore, 0});
  }

  void FinishStaged() {
    const double dv = DefaultValue();
    default_us = std::isfinite(dv) ? dv : 0;
    stats.noise = Noise();
    double bv = kInf;
    for (const Config& c : finalists)
      if (const double v = Value(c); v < bv) bv = v, best = c;
    if (finalists.empty() || !(bv < dv * (1 - opt.min_gain))) {
      Converge(Config{}, default_us);
      return;
    }
    StartConfirm();
  }

  void AdvanceStaged() {
    while (pending.empty() && phase == Phase::kExplore) {
      if (round == 0) {
        ++round;
        ScheduleNew(Config{});
        const int n = static_cast<int>(lanes.size());
        const int k = n == 0 ? 0 : std::clamp((opt.max_batch - 1) / n, 1, 8);
        for (const Lane& l : lanes)
          for (int c : InitialPoints(k)) ScheduleNew(LaneConfig(l, c, -1));
        if (!pending.empty()) continue;
      }
      if (!final_done && finalists.empty()) {
        const bool proposed = round < kMaxStagedRounds && ProposeRound();
        ++round;
        if (proposed) continue;
        PickFinalists();
        if (!pending.empty()) continue;
      }
      final_done = true;
      FinishStaged();
    }
    if (!pending.empty()) {
      state = State::kNeedBatch;
    } else if (phase == Phase::kDone) {
      state = State::kConverged;
    }
  }

  void FinishExplore() {
    const double dv = DefaultValue();
    default_us = std::isfinite(dv) ? dv : 0;
    double bv = kInf;
    const Lane* bl = nullptr;
    for (const Lane& l : lanes)
      if (l.started && l.f < bv) bv = l.f, bl = &l;
    stats.noise = Noise();
    if (!bl || !(bv < dv * (1 - opt.min_gain))) {
      // Nothing looked better than the default even before confirmation.
      Converge(Config{}, default_us);
      return;
    }
    best = LaneConfig(*bl, bl->ch, bl->chunk_idx);
    StartConfirm();
  }

  void StartConfirm() {
    phase = Phase::kConfirm;
    const int per_block = std::max(1, (opt.confirm_samples + kConfirmBlocks - 1) / kConfirmBlocks);
    for (int b = 0; b < kConfirmBlocks; ++b) {
      pending.push_back({Candidate{Config{}, opt.warmup_calls + per_block}, Role::kConfirmDefault, 0});
      pending.push_back({Candidate{best, opt.warmup_calls + per_block}, Role::kConfirmBest, 0});
    }
  }

  double Noise() const {
    internal::NoiseEstimator ne;
    for (const auto& [k, m] : memo) ne.AddGroup(m.samples);
    ne.AddGroup(confirm_default);
    ne.AddGroup(confirm_best);
    return ne.Sigma();
  }

  // Relative gain the best must show over the default on the confirmation samples.
  double RequiredGain(int nd, int nb) const {
    const double sigma = Noise();
    const double se = sigma * std::sqrt(std::pow(internal::EstimateStdErrFactor(nd), 2) +
                                        std::pow(internal::EstimateStdErrFactor(nb), 2));
    return std::max(opt.min_gain, kSwitchZ * se);
  }

  void FinishConfirm() {
    std::vector<double> ds = confirm_default, bs = confirm_best;
    if (staged) {
      // Pool every sample of both sides: the default's are unbiased; the best's exploration samples
      // carry a little selection bias, diluted by its re-measure and confirmation samples.
      if (auto it = memo.find(KeyOf(Config{})); it != memo.end())
        ds.insert(ds.end(), it->second.samples.begin(), it->second.samples.end());
      if (auto it = memo.find(KeyOf(best)); it != memo.end())
        bs.insert(bs.end(), it->second.samples.begin(), it->second.samples.end());
    }
    const double d = internal::RobustEstimate(ds);
    const double b = internal::RobustEstimate(bs);
    stats.noise = Noise();
    if (std::isfinite(d)) default_us = d;
    if (std::isfinite(b) && std::isfinite(d) &&
        b < d * (1 - RequiredGain(static_cast<int>(ds.size()), static_cast<int>(bs.size())))) {
      Converge(best, b);
    } else {
      Converge(Config{}, default_us);
    }
  }

  void Converge(const Config& c, double us) {
    phase = Phase::kDone;
    incumbent = c;
    incumbent_us = us;
    monitor_count = 0;
    window.clear();
    drift_strikes = 0;
    pending.clear();
  }

  std::vector<Candidate> NextBatch(int max_candidates) {
    std::vector<Candidate> out;
    if (state != State::kNeedBatch || max_candidates <= 0) return out;
    const int n = std::min({max_candidates, opt.max_batch, static_cast<int>(pending.size())});
    batch.clear();
    cursor = 0;
    for (int i = 0; i < n; ++i) {
      batch.push_back(pending.front());
      pending.pop_front();
      out.push_back(batch.back().cand);
    }
    if (out.empty()) {
      state = phase == Phase::kDone ? State::kConverged : State::kNeedBatch;
      return out;
    }
    ++stats.batches;
    state = State::kWaiting;
    return out;
  }

  void Record(Entry& e, double us) {
    ++e.seen;
    if (e.seen <= opt.warmup_calls) return;
    switch (e.role) {
      case Role::kExplore:
        memo[KeyOf(e.cand.config)].samples.push_back(us);
        break;
      case Role::kConfirmDefault:
        confirm_default.push_back(us);
        break;
      case Role::kConfirmBest:
        confirm_best.push_back(us);
        break;
    }
  }

  void BatchDone() {
    for (const Entry& e : batch)
      if (e.role == Role::kExplore) ++stats.candidates_measured;
    batch.clear();
    cursor = 0;
    if (!pending.empty()) {
      state = State::kNeedBatch;
      return;
    }
    if (phase == Phase::kConfirm) {
      FinishConfirm();
      state = State::kConverged;
      return;
    }
    state = State::kWaiting;  // Advance() sets the real state
    Advance();
  }

  void AddSample(const Config& c, double us) {
    if (!(us > 0) || !std::isfinite(us)) return;
    if (state == State::kWaiting && cursor < batch.size()) {
      if (!(batch[cursor].cand.config == c)) {
        // A lost sample would leave the cursor behind: re-synchronise on the next entry with this
        // config. A sample of the incumbent after the batch started means the batch is over.
        size_t j = cursor + 1;
        while (j < batch.size() && !(batch[j].cand.config == c)) ++j;
        if (j < batch.size() && batch[cursor].seen > 0) {
          cursor = j;
        } else if (j == batch.size() && c == incumbent && (cursor > 0 || batch[0].seen > 0)) {
          BatchDone();
          return;
        } else {
          return;  // incumbent calls before the schedule took effect, or a stray config
        }
      }
      Entry& e = batch[cursor];
      Record(e, us);
      if (e.seen >= e.cand.calls && ++cursor == batch.size()) BatchDone();
      return;
    }
    if (state == State::kConverged && c == incumbent) Monitor(us);
  }

  void Monitor(double us) {
    if (++monitor_count % opt.monitor_every != 0) return;
    window.push_back(us);
    while (static_cast<int>(window.size()) > opt.monitor_window) window.pop_front();
    if (static_cast<int>(window.size()) < opt.monitor_window) return;
    const double m = internal::Median(std::vector<double>(window.begin(), window.end()));
    if (!(incumbent_us > 0)) {
      incumbent_us = m;  // adopted without a known time: the first full window is the baseline
      window.clear();
      return;
    }
    // Sustained: two consecutive disjoint windows must both have drifted (a single window can be
    // dragged off by a burst of interference outliers).
    if (std::fabs(m / incumbent_us - 1) > opt.drift_ratio) {
      window.clear();
      if (++drift_strikes >= 2) Reopen();
    } else {
      drift_strikes = 0;
    }
  }

  void Reopen() {
    ++stats.reopened;
    monitor_count = 0;
    window.clear();
    state = State::kWaiting;
    Start();
  }

  void Adopt(const Config& c, double us) {
    pending.clear();
    batch.clear();
    cursor = 0;
    Converge(c, us > 0 ? us : 0);
    if (c.IsDefault() && us > 0) default_us = us;
    state = State::kConverged;
  }

  std::string Describe(int max_configs) const {
    std::vector<std::tuple<double, Config, size_t>> rows;
    for (const auto& [k, m] : memo) {
      if (m.samples.empty()) continue;
      const auto& [a, p, ch, chunk] = k;
      Config c;
      c.algo = a;
      c.proto = p;
      c.channels = ch;
      c.chunk_bytes = chunk;
      rows.emplace_back(internal::RobustEstimate(m.samples), c, m.samples.size());
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& x, const auto& y) { return std::get<0>(x) < std::get<0>(y); });
    char buf[96];
    std::string out = "measured";
    int shown = 0;
    for (const auto& [v, c, n] : rows) {
      if (shown >= max_configs && !c.IsDefault()) continue;
      ++shown;
      std::snprintf(buf, sizeof(buf), " %s%s=%.2f/%zu", c.IsDefault() ? "*" : "", c.ToString().c_str(), v, n);
      out += buf;
    }
    if (shown < static_cast<int>(rows.size())) out += " +" + std::to_string(rows.size() - shown) + " more";
    if (!confirm_default.empty() || !confirm_best.empty()) {
      std::snprintf(buf, sizeof(buf), "; confirm default=%.2f/%zu %s=%.2f/%zu",
                    internal::RobustEstimate(confirm_default), confirm_default.size(), best.ToString().c_str(),
                    internal::RobustEstimate(confirm_best), confirm_best.size());
      out += buf;
    }
    std::snprintf(buf, sizeof(buf), "; noise %.4f; incumbent %s", Noise(), incumbent.ToString().c_str());
    out += buf;
    if (phase == Phase::kDone) {
      std::snprintf(buf, sizeof(buf), " %.2f (converged)", incumbent_us);
      out += buf;
    }
    return out;
  }

  Stats GetStats() const {
    Stats s = stats;
    s.default_us = default_us > 0 ? default_us : (std::isfinite(DefaultValue()) ? DefaultValue() : 0);
    s.incumbent_us = incumbent_us;
    if (phase != Phase::kDone) s.noise = Noise();
    return s;
  }
};

Search::Search(const SearchSpace& space, const Options& options) : impl_(std::make_unique<Impl>(space, options)) {}
Search::~Search() = default;
Search::Search(Search&&) noexcept = default;
Search& Search::operator=(Search&&) noexcept = default;

State Search::state() const { return impl_->state; }
std::vector<Candidate> Search::NextBatch(int max_candidates) { return impl_->NextBatch(max_candidates); }
void Search::AddSample(const Config& config, double us) { impl_->AddSample(config, us); }
Config Search::incumbent() const { return impl_->incumbent; }
void Search::Adopt(const Config& config, double us) { impl_->Adopt(config, us); }
void Search::Reopen() { impl_->Reopen(); }
Stats Search::stats() const { return impl_->GetStats(); }
std::string Search::Describe(int max_configs) const { return impl_->Describe(max_configs); }

std::vector<Config> EnumerateSpace(const SearchSpace& space) {
  std::vector<Config> out;
  out.push_back(Config{});
  const int mc = MaxChannels(space);
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) {
      if (!space.subspaces.Valid(a, p)) continue;
      std::vector<int64_t> chunks = {0};
      if (space.chunk_dim) {
        const auto v = ChunkValues(space, p);
        chunks.insert(chunks.end(), v.begin(), v.end());
      }
      for (int c = 1; c <= mc; ++c)
        for (int64_t ck : chunks) out.push_back(Config{a, p, c, ck});
    }
  return out;
}

}  // namespace ccltune::optimizer
