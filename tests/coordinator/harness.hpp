// Test harness for the coordinator: n ranks as threads over a FakeHub, each running the same scripted
// sequence of units (each unit a few collective calls, sometimes preceded by calls made while
// capturing), recording the config every call got. The leader's schedules come from a deterministic
// generator. Shared by coordinator_test and the planted-bug negative control.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "coordinator/coordinator.hpp"

namespace ccltune::coordinator::testing {

struct Unit {
  std::vector<uint64_t> calls;     // workloads of the unit's collectives (several: a user group)
  std::vector<uint64_t> captured;  // calls made while capturing just before it (never a unit)
};

// A training-like loop: an iteration of 7 units, one of them a group, one with captured calls before.
inline std::vector<Unit> MakeScript(int units) {
  const std::vector<Unit> iteration = {
      {{101}, {}}, {{102}, {}}, {{101}, {}}, {{103, 104}, {}}, {{101}, {105}}, {{102}, {}}, {{106}, {}},
  };
  std::vector<Unit> s;
  for (int i = 0; i < units; ++i) s.push_back(iteration[i % iteration.size()]);
  return s;
}

// Deterministic leader schedules: every sync updates a few workloads with 1-4 candidates and an
// incumbent, and asks for a short interval (3..9 units) so many payloads take effect in a test.
inline LeaderMessage GeneratedMessage(uint64_t sync_id) {
  static const uint64_t kWorkloads[] = {101, 102, 103, 104, 105, 106};
  LeaderMessage m;
  m.interval = 3 + sync_id % 7;
  for (uint64_t i = 0; i < 1 + sync_id % 3; ++i) {
    WorkloadUpdate u;
    u.workload = kWorkloads[(sync_id + 2 * i) % 6];
    const int candidates = static_cast<int>((sync_id + i) % 5);
    for (int c = 0; c < candidates; ++c) {
      Config cfg{.algo = (c + static_cast<int>(sync_id)) % 2,
                 .proto = c % 3,
                 .channels = 1 + c + static_cast<int>(i),
                 .chunk_bytes = c == 2 ? 131072 : 0};
      u.entries.push_back({cfg, static_cast<uint32_t>(1 + (sync_id + c) % 3)});
    }
    Config inc{.algo = kAlgoRing, .proto = kProtoSimple, .channels = static_cast<int>(2 + sync_id % 30)};
    u.entries.push_back({inc, 0});
    u.converged = candidates == 0;
    m.updates.push_back(u);
  }
  return m;
}

struct RankResult {
  std::vector<Config> configs;      // every call, in order (captured ones included)
  std::vector<uint64_t> call_unit;  // for each call: the unit it belongs to (1-based)
  std::vector<bool> tuning_after_unit;
  std::vector<std::string> stops;  // on_stop reasons
  uint64_t stop_unit = 0;          // units() when on_stop fired; 0 if it never did
  int updates = 0;
  uint64_t timed = 0;  // calls the schedule said to time (NoteTimed numbers 0..timed-1)
  // Leader: carried timings as delivered, (number, sample) in delivery order, and the unit each came at.
  std::vector<std::pair<uint64_t, std::optional<CarriedSample>>> carried;
  std::vector<uint64_t> carried_unit;
  std::vector<bool> carried_window;  // each came in a window's run (Hooks::on_samples's `window`), not an early copy
  std::vector<uint64_t> timed_unit;  // the unit of each timed call (by its number)
  std::vector<uint64_t> sync_units;  // the units after which this rank issued its syncs, in order
  int slow_waits = 0;
  std::vector<uint64_t> slow_wait_ids;
  absl::Status first_error = absl::OkStatus();
};

struct RunOptions {
  int nranks = 4;
  int units = 700;
  std::function<LeaderMessage(uint64_t)> build_message = GeneratedMessage;
  absl::Duration warn_after = absl::Seconds(5);
  // Called on each rank before unit `u` (1-based) completes: raise flags, sleep, ...
  std::function<void(int rank, uint64_t unit, CommCoordinator&)> before_unit_complete;
  // Wraps a rank's endpoint (fault injection on the wire).
  std::function<std::unique_ptr<Transport>(int rank, std::unique_ptr<Transport>)> wrap;
  // Called on slow waits (after recording), from the waiting rank's thread.
  std::function<void(int rank, uint64_t sync_id)> on_slow_wait;
  FakeHub* hub = nullptr;  // optional: a hub the test keeps a handle on
  // This rank's timing of timed call `seq` (nullopt: this rank could not time it).
  std::function<std::optional<double>(int rank, uint64_t seq)> timing = [](int rank, uint64_t seq) {
    return std::optional<double>(10.0 + static_cast<double>(seq) + rank);
  };
  // ... when the rank makes an early copy of it (unset: `timing`; nullopt: no timing yet, its GPU is behind);
  // `this_interval`: the call was issued since the rank's last sync point (the copy made at the sync right after it).
  std::function<std::optional<double>(int rank, uint64_t seq, bool this_interval)> early_timing;
};

inline std::vector<RankResult> RunRanks(const RunOptions& o) {
  std::unique_ptr<FakeHub> own;
  FakeHub* hub = o.hub;
  if (hub == nullptr) {
    own = std::make_unique<FakeHub>(o.nranks);
    hub = own.get();
  }
  const std::vector<Unit> script = MakeScript(o.units);
  std::vector<RankResult> results(o.nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < o.nranks; ++r) {
    threads.emplace_back([&, r] {
      RankResult& res = results[r];
      std::unique_ptr<Transport> t = hub->Endpoint(r);
      if (o.wrap) t = o.wrap(r, std::move(t));
      CommCoordinator* self = nullptr;
      CommCoordinator::Hooks hooks;
      if (r == 0) hooks.build_message = o.build_message;
      hooks.on_update = [&res](const WorkloadUpdate&, const std::vector<ScheduleEntry>&) { ++res.updates; };
      hooks.fill_samples = [&o, &res, r](uint64_t first, int n, int slot0, bool early, SampleWords* words) {
        for (int i = 0; i < n; ++i) {
          const uint64_t seq = first + static_cast<uint64_t>(i);
          // This sync point is not in sync_units yet: the last one there is the one before it.
          const bool this_interval =
              seq < res.timed_unit.size() && (res.sync_units.empty() || res.timed_unit[seq] > res.sync_units.back());
          std::optional<double> us = early && o.early_timing ? o.early_timing(r, seq, this_interval) : o.timing(r, seq);
          if (us) {
            EncodeSample(words, slot0 + i, *us);
          } else if (early) {
            EncodeNotYetSample(words, slot0 + i);
          }
        }
      };
      if (r == 0) {
        hooks.on_samples = [&res, &self](uint64_t first, const std::vector<std::optional<CarriedSample>>& s,
                                         bool window) {
          for (size_t i = 0; i < s.size(); ++i) {
            res.carried.emplace_back(first + i, s[i]);
            res.carried_unit.push_back(self->units());
            res.carried_window.push_back(window);
          }
        };
      }
      hooks.on_stop = [&res, &self](const std::string& reason) {
        res.stops.push_back(reason);
        res.stop_unit = self->units();
      };
      hooks.on_slow_wait = [&res, &o, r](uint64_t id, absl::Duration) {
        ++res.slow_waits;
        res.slow_wait_ids.push_back(id);
        if (o.on_slow_wait) o.on_slow_wait(r, id);
      };
      CommCoordinator c(r, std::move(t), hooks, o.warn_after);
      self = &c;
      for (const Unit& u : script) {
        for (uint64_t w : u.captured) {
          res.configs.push_back(c.ConfigFor(w, /*capturing=*/true).config);
          res.call_unit.push_back(c.units() + 1);
        }
        for (uint64_t w : u.calls) {
          const ScheduleBook::Call call = c.ConfigFor(w, /*capturing=*/false);
          res.configs.push_back(call.config);
          res.call_unit.push_back(c.units() + 1);
          if (call.timed) {
            res.timed = c.NoteTimed() + 1;
            res.timed_unit.push_back(c.units() + 1);
          }
        }
        if (o.before_unit_complete) o.before_unit_complete(r, c.units() + 1, c);
        const uint64_t syncs = c.syncs_issued();
        absl::Status s = c.OnUnitComplete(nullptr);
        if (c.syncs_issued() > syncs) res.sync_units.push_back(c.units());
        if (!s.ok() && res.first_error.ok()) res.first_error = s;
        res.tuning_after_unit.push_back(c.tuning());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

inline int CountNonDefault(const std::vector<Config>& v) {
  int n = 0;
  for (const Config& c : v) n += c.IsDefault() ? 0 : 1;
  return n;
}

}  // namespace ccltune::coordinator::testing
