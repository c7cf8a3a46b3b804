// Recorded landscapes replayed to the search (see replay.hpp).
#include "tests/optimizer/replay.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

namespace ccltune::optimizer::testing {
namespace {

double MedianOf(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::infinity();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// "default" or "a1.p2.nc8" -> Config; false if not a config name.
bool ParseName(const std::string& name, Config* c) {
  if (name == "default") {
    *c = Config{};
    return true;
  }
  int a = 0, p = 0, n = 0;
  if (std::sscanf(name.c_str(), "a%d.p%d.nc%d", &a, &p, &n) != 3) return false;
  *c = Config{a, p, n, 0};
  return true;
}

// "ring/simple/nc2" -> Config (Config{} for "?").
Config ParseRan(const std::string& ran) {
  Config c;
  const size_t s1 = ran.find('/'), s2 = ran.rfind('/');
  if (s1 == std::string::npos || s2 == s1) return c;
  const std::optional<int> a = ParseAlgo(ran.substr(0, s1));
  const std::optional<int> p = ParseProto(ran.substr(s1 + 1, s2 - s1 - 1));
  if (!a || !p || ran.compare(s2 + 1, 2, "nc") != 0) return c;
  c.algo = *a;
  c.proto = *p;
  c.channels = std::atoi(ran.c_str() + s2 + 3);
  return c;
}

std::string Name(const Config& c) {
  if (c.IsDefault()) return "default";
  return "a" + std::to_string(c.algo) + ".p" + std::to_string(c.proto) + ".nc" + std::to_string(c.channels);
}

}  // namespace

const RecordedConfig* RecordedRow::Find(const Config& asked) const {
  std::string name = Name(Config{asked.algo, asked.proto, asked.channels, 0});
  if (auto it = alias.find(name); it != alias.end()) name = it->second;
  for (const RecordedConfig& rc : configs)
    if (Name(rc.config) == name) return &rc;
  return nullptr;
}

double RecordedRow::Truth(const Config& asked) const {
  const RecordedConfig* rc = Find(asked);
  if (rc == nullptr) return std::numeric_limits<double>::infinity();
  // NCCL runs it exactly as its default: it is the default.
  if (!asked.IsDefault() && configs[0].ran.HasSubspace() && rc->ran == configs[0].ran) return configs[0].truth;
  return rc->truth;
}

double RecordedRow::OracleTruth() const {
  double best = std::numeric_limits<double>::infinity();
  for (const RecordedConfig& rc : configs) best = std::min(best, Truth(rc.config));
  return best;
}

std::vector<RecordedRow> LoadRecorded(const std::string& prefix) {
  std::vector<RecordedRow> rows;
  std::ifstream in(prefix + ".samples");
  if (!in) {
    ADD_FAILURE() << "cannot read " << prefix << ".samples";
    return rows;
  }
  std::map<std::pair<std::string, uint64_t>, size_t> row_of;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string coll, name, ran;
    uint64_t bytes = 0;
    int round = 0, pos = 0, seq = 0;
    double mn = 0, mx = 0;
    if (!(ss >> coll >> bytes >> name >> round >> pos >> seq >> mn >> mx >> ran)) {
      ADD_FAILURE() << "bad line in " << prefix << ".samples: " << line;
      return {};
    }
    auto [it, inserted] = row_of.try_emplace({coll, bytes}, rows.size());
    if (inserted) {
      rows.emplace_back();
      rows.back().coll = coll;
      rows.back().bytes = bytes;
    }
    RecordedRow& row = rows[it->second];
    Config c;
    if (!ParseName(name, &c)) {
      ADD_FAILURE() << "bad config " << name;
      return {};
    }
    RecordedConfig* rc = nullptr;
    for (RecordedConfig& x : row.configs)
      if (x.config == c) rc = &x;
    if (rc == nullptr) {
      row.configs.emplace_back();
      rc = &row.configs.back();
      rc->config = c;
      rc->ran = ParseRan(ran);
    }
    rc->min_us.push_back(mn);
    rc->max_us.push_back(mx);
    rc->block.push_back(round * 1000 + pos);
  }
  std::ifstream table(prefix + ".txt");
  while (std::getline(table, line)) {
    // "# alias all_reduce a0.p0.nc3 65536 runs as a0.p0.nc2 (NCCL ran tree/ll/nc2)"
    if (line.rfind("# alias ", 0) != 0) continue;
    std::istringstream ss(line.substr(8));
    std::string coll, name, runs, as, target;
    uint64_t bytes = 0;
    ss >> coll >> name >> bytes >> runs >> as >> target;
    auto it = row_of.find({coll, bytes});
    if (it != row_of.end()) rows[it->second].alias[name] = target;
  }
  for (RecordedRow& row : rows) {
    std::stable_partition(row.configs.begin(), row.configs.end(),
                          [](const RecordedConfig& c) { return c.config.IsDefault(); });
    if (row.configs.empty() || !row.configs[0].config.IsDefault()) {
      ADD_FAILURE() << row.coll << " " << row.bytes << ": no default recorded";
      return {};
    }
    for (RecordedConfig& rc : row.configs) rc.truth = MedianOf(rc.max_us);
    int max_ch = 1;
    for (const RecordedConfig& rc : row.configs) {
      if (rc.config.IsDefault()) continue;
      row.space.subspaces.valid_mask |= 1u << (rc.config.algo * kNumProtos + rc.config.proto);
      max_ch = std::max(max_ch, rc.config.channels);
    }
    for (const auto& [name, target] : row.alias) {
      Config c;
      if (ParseName(name, &c)) max_ch = std::max(max_ch, c.channels);
    }
    row.space.max_channels = max_ch;
    row.space.subspaces.nccl_algo = row.configs[0].ran.algo;
    row.space.subspaces.nccl_proto = row.configs[0].ran.proto;
  }
  return rows;
}

std::vector<double> DriftFactors(const std::vector<RecordedRow>& rows) {
  std::vector<double> out;
  for (const RecordedRow& row : rows) {
    const RecordedConfig& d = row.configs[0];
    const double m = MedianOf(d.min_us);
    std::map<int, std::vector<double>> blocks;
    for (size_t i = 0; i < d.min_us.size(); ++i) blocks[d.block[i]].push_back(d.min_us[i]);
    for (auto& [b, v] : blocks) out.push_back(MedianOf(v) / m);
  }
  return out;
}

const char* NoiseModeName(NoiseMode mode) {
  switch (mode) {
    case NoiseMode::kRecorded:
      return "recorded";
    case NoiseMode::kDrift:
      return "drift";
    case NoiseMode::kSequential:
      return "sequential";
  }
  return "?";
}

NoiseMode ParseNoiseMode(const std::string& name) {
  for (NoiseMode m : {NoiseMode::kDrift, NoiseMode::kSequential})
    if (name == NoiseModeName(m)) return m;
  return NoiseMode::kRecorded;
}

Replay::Replay(const RecordedRow& row, NoiseMode mode, uint64_t seed, std::vector<double> drift, OverRanks over)
    : row_(row), mode_(mode), rng_(seed), drift_(std::move(drift)), over_(over) {}

Config Replay::Ran(const Config& asked) const {
  if (asked.IsDefault()) return row_.configs[0].ran;
  const RecordedConfig* rc = row_.Find(asked);
  return rc != nullptr && rc->ran.HasSubspace() ? rc->ran : asked;
}

double Replay::Sample(const Config& asked, int64_t t) {
  const RecordedConfig* rc = row_.Find(asked);
  if (rc == nullptr) return 0;  // not in the landscape: no sample
  const std::vector<double>& us = over_ == OverRanks::kMin ? rc->min_us : rc->max_us;
  std::uniform_int_distribution<size_t> pick(0, us.size() - 1);
  size_t i = pick(rng_);
  if (mode_ == NoiseMode::kSequential) {
    // The recorded calls of a block are stored in call order, the blocks one after another: continue the
    // stretch while the same config runs and its block has calls left, else start at a random call.
    if (rc == run_config_ && run_next_ < us.size() && rc->block[run_next_] == rc->block[run_next_ - 1]) {
      i = run_next_;
    }
    run_config_ = rc;
    run_next_ = i + 1;
  }
  if (mode_ == NoiseMode::kRecorded) return us[i];
  // kDrift: the sample's deviation from its own block's median, at the config's overall level, times
  // the slow-period factor of this stretch of calls.
  if (t / kDriftBlock != drift_block_) {
    drift_block_ = t / kDriftBlock;
    if (!drift_.empty()) {
      std::uniform_int_distribution<size_t> d(0, drift_.size() - 1);
      drift_now_ = drift_[d(rng_)];
    }
  }
  std::vector<double> block;
  for (size_t j = 0; j < us.size(); ++j)
    if (rc->block[j] == rc->block[i]) block.push_back(us[j]);
  return us[i] / MedianOf(block) * MedianOf(us) * drift_now_;
}

namespace {

// A timed call's sample on its way to the search.
struct Flying {
  int64_t arrive;  // the call index it arrives at
  Config asked;
  double us;  // <= 0: no sample (a config the landscape lacks): it arrives as a lost one
  bool requested;
};

// Hands the search the samples that arrived by call `t`, in order (a lost one as the leader reports a call no
// rank could time); returns how many were samples.
int64_t Deliver(Search& s, std::deque<Flying>* flying, int64_t t) {
  int64_t n = 0;
  while (!flying->empty() && flying->front().arrive <= t) {
    const Flying& f = flying->front();
    if (f.us > 0) {
      s.AddSample(f.asked, f.us, 0, f.requested);
      ++n;
    } else if (f.requested) {
      s.NoteLost(f.asked);
    }
    flying->pop_front();
  }
  return n;
}

}  // namespace

SearchSpace SpaceOf(const RecordedRow& row, bool channel_truth) {
  SearchSpace s = row.space;
  s.channel_truth = channel_truth;
  return s;
}

DriveResult DriveWith(Search& s, const SampleFn& sample, const RanFn& ran, const DriveOptions& o) {
  DriveResult res;
  std::deque<Config> schedule;
  std::deque<Flying> flying;
  Config waiting;
  // The workload's first call ran NCCL's default before its search started: the leader hands what NCCL ran
  // for it to the search as it starts.
  if (o.channel_truth) s.NoteRan(Config{}, ran(Config{}));
  for (int64_t t = 0; t < o.max_calls; ++t) {
    if (s.state() == State::kConverged) {
      res.converged = true;
      res.calls = t;
      break;
    }
    while (static_cast<int>(schedule.size()) < o.lookahead) {
      std::vector<Candidate> c = s.Next(o.lookahead - static_cast<int>(schedule.size()));
      if (c.empty()) break;
      for (const Candidate& x : c)
        for (int k = 0; k < x.calls; ++k) schedule.push_back(x.config);
    }
    // The leader ships the search's waiting config as the schedule's final entry (at its latest update).
    if (t % 2 == 0) waiting = s.waiting();
    const bool scheduled = !schedule.empty();
    if (!scheduled) ++res.idle;
    const Config cfg = scheduled ? schedule.front() : (o.time_waiting ? waiting : s.incumbent());
    if (scheduled) schedule.pop_front();
    if (o.channel_truth) s.NoteRan(cfg, ran(cfg));
    // Every call of a searching workload is timed: a scheduled one is a sample asked for, the
    // incumbent's while the schedule waits one the search takes all the same (ScheduleBook::Next).
    if (scheduled || o.time_waiting) {
      // No sample (a config the landscape lacks) arrives as a lost one, as the leader reports a call no
      // rank could time.
      flying.push_back({t + o.latency, cfg, sample(cfg, t), scheduled});
    }
    res.samples += Deliver(s, &flying, t);
    // The leader's rule: a schedule that ran dry with samples still awaited will not bring them.
    if (schedule.empty() && flying.empty() && s.state() != State::kConverged && s.pending() > 0) s.DropPending();
  }
  if (!res.converged && s.state() == State::kConverged) {
    res.converged = true;
    res.calls = o.max_calls;
  }
  res.incumbent = s.incumbent();
  return res;
}

SteadyResult RunConverged(Search& s, const SampleFn& sample, const SteadyOptions& o, int64_t t0) {
  SteadyResult res;
  struct Entry {
    Config config;
    bool timed;
  };
  std::deque<Entry> schedule;
  std::deque<Flying> flying;
  const Config incumbent = s.incumbent();
  int64_t served = 0;                                      // calls of the final entry (the incumbent)
  int64_t interval = o.first_interval / 2, next_sync = 0;  // doubled at the first sync
  bool shipped = false;                                    // at the last sync
  for (int64_t i = 0; i < o.calls; ++i) {
    if (s.state() != State::kConverged) {
      res.reopened = true;
      break;
    }
    const int64_t t = t0 + i;
    if (i == next_sync) {
      const bool in_flight = shipped;
      shipped = false;
      if (!in_flight)
        for (const Candidate& c : s.Next(1))
          for (int k = 0; k < c.calls; ++k) {
            if (k == 0 && c.config.IsDefault()) schedule.push_back({c.config, false});
            schedule.push_back({c.config, true});
            shipped = true;
          }
      interval = std::min(2 * interval, s.checking() ? o.checking_cap : o.max_interval);
      next_sync = i + interval;
    }
    Config cfg = incumbent;
    bool timed = served % o.monitor_every == 0, requested = false;
    if (!schedule.empty()) {
      cfg = schedule.front().config;
      timed = schedule.front().timed;
      requested = true;
      schedule.pop_front();
      ++res.probe_calls;
    } else {
      ++served;
    }
    if (cfg.IsDefault()) ++res.default_calls;
    ++res.calls;
    if (timed) flying.push_back({t + o.latency, cfg, sample(cfg, t), requested});
    Deliver(s, &flying, t);
  }
  if (s.state() != State::kConverged) res.reopened = true;
  return res;
}

DriveResult Drive(Search& s, Replay& r, const DriveOptions& o) {
  return DriveWith(
      s, [&](const Config& c, int64_t t) { return r.Sample(c, t); }, [&](const Config& c) { return r.Ran(c); }, o);
}

}  // namespace ccltune::optimizer::testing
