// The one registry of CCLTUNE_* settings (CONVENTIONS.md): each variable is declared once with its
// type, default and a one-line doc; docs/environment.md is checked against this table by a test.
// Like NCCL's own variables, every setting must be the same on all ranks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ccltune {

enum class SettingType { kBool, kInt, kString, kEnum };

struct SettingSpec {
  const char* name;
  SettingType type;
  const char* default_value;
  const char* allowed;  // kEnum: comma-separated accepted values; kInt: "min..max"
  const char* doc;
};

std::span<const SettingSpec> AllSettings();

enum class LogLevel { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

// Parsed values. Invalid values keep the default and leave a warning in `warnings`.
struct Settings {
  bool disable = false;
  LogLevel debug = LogLevel::kWarn;
  std::string debug_subsys = "ALL";
  std::string export_path;
  int export_interval_s = 60;  // 0: export only at exit and on request
  std::string import_path;
  int channel_budget = 0;  // 0: auto
  int min_interval = 1;
  int settle_us = 1000;  // CCLTUNE_SETTLE_US (0: never)
  int sync_warn_s = 5;
  bool sync_split = false;        // CCLTUNE_SYNC_COMM (default same): split: sync ops on a communicator of their own
  bool timing_max = true;         // CCLTUNE_TIMING (default max): the search compares the per-call maximum over ranks
  bool drop_idle_samples = true;  // CCLTUNE_IDLE_SAMPLES (default drop): executor::IdleFilter's marks apply
  bool search_chunk = true;       // CCLTUNE_SEARCH_CHUNK: under tuner v6 the chunk size is a dimension
  int max_batch = 24;
  double min_gain = 0.02;
  int screen_cost_ratio = 6;  // CCLTUNE_SCREEN_COST_RATIO (0: every valid subspace screened)
  int race_budget = 18;       // CCLTUNE_RACE_BUDGET: optimizer::Options::race_budget
  int low_stakes_pct = 3;     // CCLTUNE_LOW_STAKES_PCT: Leader::Options::low_stakes_share, in percent
  bool guard = true;          // CCLTUNE_GUARD: after convergence, the default probed now and then
  int test_fail_setup_rank = -1;
  int test_export_pause = 0;  // testing only: the Nth export pauses before its rename
  bool summary = true;
  std::string trace_path;  // CCLTUNE_TRACE: where the tuning trace goes (empty: none)

  std::vector<std::string> warnings;

  // Reads the environment through `getenv_fn` (the real getenv in production).
  static Settings FromEnv(const char* (*getenv_fn)(const char*));
};

// Parsing helpers, exposed for tests. Return false on an invalid value.
bool ParseBoolSetting(std::string_view v, bool* out);
bool ParseIntSetting(std::string_view v, int64_t lo, int64_t hi, int64_t* out);

}  // namespace ccltune
