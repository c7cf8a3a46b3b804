// Declarations and parsing of every CCLTUNE_* setting.
#include "src/settings.hpp"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ccltune {
namespace {

constexpr std::array<SettingSpec, 24> kSettings = {{
    {"CCLTUNE_DISABLE", SettingType::kBool, "0", "0,1", "1: pure pass-through to NCCL (set it on all ranks)"},
    {"CCLTUNE_DEBUG", SettingType::kEnum, "WARN", "NONE,WARN,INFO,TRACE", "log level"},
    {"CCLTUNE_DEBUG_SUBSYS", SettingType::kString, "ALL", "ALL or list of INIT,PLUGIN,COORD,OPT,EXPORT",
     "subsystems to log (a leading ^ excludes)"},
    {"CCLTUNE_EXPORT", SettingType::kString, "", "a file path",
     "write the converged configs as JSON (and NCCL example-tuner CSV beside it) at exit"},
    {"CCLTUNE_EXPORT_INTERVAL", SettingType::kInt, "60", "0..86400",
     "seconds between exports to CCLTUNE_EXPORT while the job runs (0: only at exit and on ccltuneExport)"},
    {"CCLTUNE_IMPORT", SettingType::kString, "", "a file path",
     "read an export at start (leader rank only) and apply its configs without tuning"},
    {"CCLTUNE_CHANNEL_BUDGET", SettingType::kInt, "0", "0..64",
     "create each communicator with this many channels where NCCL gives it fewer (ncclConfig_t minCTAs/maxCTAs; "
     "not where its config or NCCL's environment sets them), NCCL's default still run as on NCCL's own count; "
     "channels searched [1, budget]. 0: NCCL's budget, channels searched up to the communicator's maxCTAs, "
     "NCCL_MAX_NCHANNELS/NCCL_MAX_CTAS, else 32"},
    {"CCLTUNE_MIN_INTERVAL", SettingType::kInt, "1", "1..65536", "fewest units between two sync ops"},
    {"CCLTUNE_SETTLE_US", SettingType::kInt, "1000", "0..1000000",
     "while a workload that runs back to back alone, and that NCCL could run with tree, is searched and NCCL's "
     "default takes less than this (us), "
     "sync ops come every 3 units at the fewest and no call right after one is a sample (its time holds the "
     "ranks' alignment by the sync op); 0: never"},
    {"CCLTUNE_SYNC_WARN_S", SettingType::kInt, "5", "1..3600", "log loudly when a sync wait lasts longer"},
    {"CCLTUNE_SYNC_COMM", SettingType::kEnum, "same", "same,split",
     "where the sync ops run: same (the tuned communicator, on the user's stream after a call) or split (a "
     "communicator split off it at creation, on a stream of ccltune's that the user's stream never waits for); "
     "set it alike on every rank"},
    {"CCLTUNE_TIMING", SettingType::kEnum, "max", "min,max",
     "which per-call time over ranks the search compares: max (the slowest rank: what the job waits for) or min "
     "(the rank that arrived last: the collective's own time)"},
    {"CCLTUNE_IDLE_SAMPLES", SettingType::kEnum, "drop", "drop,keep",
     "drop: a timed call that started on an idle stream on some rank (its time holds the launch and the ranks' "
     "late arrival) is not a sample, unless most of that rank's timed calls do; keep: every timed call is one"},
    {"CCLTUNE_SEARCH_CHUNK", SettingType::kBool, "1", "0,1",
     "under tuner v6 (NCCL >= 2.30) search the chunk size too; 0: channels only, NCCL picks the chunk size"},
    {"CCLTUNE_MAX_BATCH", SettingType::kInt, "24", "1..64", "most schedule entries sent for one workload at once"},
    {"CCLTUNE_MIN_GAIN_PCT", SettingType::kInt, "2", "0..50",
     "switch away from NCCL's default only for a gain above this (and above the measured noise)"},
    {"CCLTUNE_SCREEN_COST_RATIO", SettingType::kInt, "6", "0..1000",
     "screen no algorithm/protocol whose estimate in NCCL's cost table is more than this many times that of "
     "NCCL's own pick (an imported config is still tried); 0: screen every valid one"},
    {"CCLTUNE_RACE_BUDGET", SettingType::kInt, "18", "0..1000",
     "a workload's search asks for at most this many calls plus 3 per algorithm/protocol/channel point screened, "
     "then decides on what it measured; lower settles sooner, on configs a little further from the best"},
    {"CCLTUNE_LOW_STAKES_PCT", SettingType::kInt, "3", "0..100",
     "a size class whose running workloads take less than this share of their communicator's time (NCCL's default's "
     "measured time times calls) is searched on a budget of 6 in place of CCLTUNE_RACE_BUDGET while no config reads "
     "10% faster than the default, the calls it runs while waiting for timings counted in it; 0: every search has the "
     "full budget"},
    {"CCLTUNE_GUARD", SettingType::kBool, "1", "0,1",
     "after convergence on a config other than NCCL's default, run the default now and then and search again "
     "when the config reads significantly slower than it; 0: never"},
    {"CCLTUNE_SUMMARY", SettingType::kBool, "1", "0,1", "print the summary table at exit (leader ranks)"},
    {"CCLTUNE_TRACE", SettingType::kString, "", "a file path",
     "tuning trace CSV (config_table/trace_format.hpp) of the leader's timed calls, for `ccltune plot`"},
    {"CCLTUNE_TEST_FAIL_SETUP_RANK", SettingType::kInt, "-1", "-1..1048576",
     "testing only: this rank reports that it cannot tune (all ranks must then stay on NCCL's default)"},
    {"CCLTUNE_TEST_EXPORT_PAUSE", SettingType::kInt, "0", "0..1000000",
     "testing only: the Nth export of this process stops before its rename and waits to be killed (0: never)"},
}};

// A value as it may appear in a one-line warning: printable ASCII kept, anything else (newlines,
// escapes, bytes of another encoding) as \xNN, and at most 64 characters of it.
std::string Printable(std::string_view v) {
  constexpr size_t kMax = 64;
  std::string out;
  for (size_t i = 0; i < v.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(v[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      out += {'\\', 'x', kHex[c >> 4], kHex[c & 0xf]};
    }
  }
  if (v.size() > kMax) out += "...";
  return out;
}

}  // namespace

std::span<const SettingSpec> AllSettings() { return kSettings; }

bool ParseBoolSetting(std::string_view v, bool* out) {
  const std::string s = absl::AsciiStrToLower(std::string(v));
  if (s == "1" || s == "true" || s == "yes" || s == "on") {
    *out = true;
    return true;
  }
  if (s == "0" || s == "false" || s == "no" || s == "off") {
    *out = false;
    return true;
  }
  return false;
}

bool ParseIntSetting(std::string_view v, int64_t lo, int64_t hi, int64_t* out) {
  int64_t x = 0;
  if (!absl::SimpleAtoi(absl::string_view(v.data(), v.size()), &x) || x < lo || x > hi) return false;
  *out = x;
  return true;
}

Settings Settings::FromEnv(const char* (*getenv_fn)(const char*)) {
  Settings s;
  auto raw = [&](const char* name) -> const char* {
    const char* v = getenv_fn(name);
    return (v != nullptr && *v != '\0') ? v : nullptr;
  };
  auto spec_of = [](const char* name) -> const SettingSpec& {
    for (const SettingSpec& sp : kSettings)
      if (std::string_view(sp.name) == name) return sp;
    std::abort();  // a programming error: every setting read here is declared above
  };
  auto warn = [&](const char* name, const char* value) {
    const SettingSpec& sp = spec_of(name);
    s.warnings.push_back(absl::StrCat("invalid value '", Printable(value), "' for ", name, " (accepted: ", sp.allowed,
                                      "); using the default ", sp.default_value));
  };
  auto get_bool = [&](const char* name, bool* field) {
    if (const char* v = raw(name); v != nullptr && !ParseBoolSetting(v, field)) warn(name, v);
  };
  auto get_int = [&](const char* name, int* field, int64_t lo, int64_t hi) {
    int64_t x = 0;
    if (const char* v = raw(name); v != nullptr) {
      if (ParseIntSetting(v, lo, hi, &x)) {
        *field = static_cast<int>(x);
      } else {
        warn(name, v);
      }
    }
  };

  // A setting of two values, either case: `*first` says whether it is `first`.
  auto get_choice = [&](const char* name, std::string_view first, std::string_view second, bool* is_first) {
    if (const char* v = raw(name); v != nullptr) {
      const std::string u = absl::AsciiStrToLower(v);
      if (u == first || u == second) {
        *is_first = u == first;
      } else {
        warn(name, v);
      }
    }
  };

  get_bool("CCLTUNE_DISABLE", &s.disable);
  if (const char* v = raw("CCLTUNE_DEBUG"); v != nullptr) {
    const std::string u = absl::AsciiStrToUpper(v);
    if (u == "NONE")
      s.debug = LogLevel::kNone;
    else if (u == "WARN")
      s.debug = LogLevel::kWarn;
    else if (u == "INFO")
      s.debug = LogLevel::kInfo;
    else if (u == "TRACE")
      s.debug = LogLevel::kTrace;
    else
      warn("CCLTUNE_DEBUG", v);
  }
  if (const char* v = raw("CCLTUNE_DEBUG_SUBSYS"); v != nullptr) {
    bool ok = true;
    absl::string_view list(v);
    if (!list.empty() && list[0] == '^') list.remove_prefix(1);
    for (absl::string_view part : absl::StrSplit(list, ',')) {
      const std::string u = absl::AsciiStrToUpper(part);
      if (u != "ALL" && u != "INIT" && u != "PLUGIN" && u != "COORD" && u != "OPT" && u != "EXPORT") ok = false;
    }
    if (ok) {
      s.debug_subsys = absl::AsciiStrToUpper(v);
    } else {
      warn("CCLTUNE_DEBUG_SUBSYS", v);
    }
  }
  if (const char* v = raw("CCLTUNE_EXPORT")) s.export_path = v;
  get_int("CCLTUNE_EXPORT_INTERVAL", &s.export_interval_s, 0, 86400);
  if (const char* v = raw("CCLTUNE_IMPORT")) s.import_path = v;
  get_int("CCLTUNE_CHANNEL_BUDGET", &s.channel_budget, 0, 64);
  get_int("CCLTUNE_MIN_INTERVAL", &s.min_interval, 1, 65536);
  get_int("CCLTUNE_SETTLE_US", &s.settle_us, 0, 1000000);
  get_int("CCLTUNE_SYNC_WARN_S", &s.sync_warn_s, 1, 3600);
  get_choice("CCLTUNE_SYNC_COMM", "split", "same", &s.sync_split);
  get_choice("CCLTUNE_TIMING", "max", "min", &s.timing_max);
  get_choice("CCLTUNE_IDLE_SAMPLES", "drop", "keep", &s.drop_idle_samples);
  get_bool("CCLTUNE_SEARCH_CHUNK", &s.search_chunk);
  get_int("CCLTUNE_MAX_BATCH", &s.max_batch, 1, 64);
  int gain_pct = 2;
  get_int("CCLTUNE_MIN_GAIN_PCT", &gain_pct, 0, 50);
  s.min_gain = gain_pct / 100.0;
  get_int("CCLTUNE_SCREEN_COST_RATIO", &s.screen_cost_ratio, 0, 1000);
  get_int("CCLTUNE_RACE_BUDGET", &s.race_budget, 0, 1000);
  get_int("CCLTUNE_LOW_STAKES_PCT", &s.low_stakes_pct, 0, 100);
  get_bool("CCLTUNE_GUARD", &s.guard);
  get_bool("CCLTUNE_SUMMARY", &s.summary);
  if (const char* v = raw("CCLTUNE_TRACE")) s.trace_path = v;
  get_int("CCLTUNE_TEST_FAIL_SETUP_RANK", &s.test_fail_setup_rank, -1, 1 << 20);
  get_int("CCLTUNE_TEST_EXPORT_PAUSE", &s.test_export_pause, 0, 1000000);
  return s;
}

}  // namespace ccltune
