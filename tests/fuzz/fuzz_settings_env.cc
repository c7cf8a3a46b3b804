// Fuzz target: the CCLTUNE_* environment parsing (Settings::FromEnv). The input is split at NUL
// bytes into values for the registry's variables, in registry order (an empty piece: unset).
// Properties: no crash or undefined behaviour; every parsed value within its declared range; at
// most one warning per variable, each a single printable line naming the variable.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>

#include "src/settings.hpp"

namespace {

std::map<std::string, std::string> g_env;

const char* FakeGetenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

[[noreturn]] void Fail(const std::string& what) {
  std::cerr << "fuzz_settings_env: " << what << "\n";
  std::abort();
}

void InRange(const char* name, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) Fail(std::string(name) + " = " + std::to_string(v) + " outside its declared range");
}

// "lo..hi" of a kInt spec.
void Bounds(const ccltune::SettingSpec& sp, int64_t* lo, int64_t* hi) {
  const std::string a = sp.allowed;
  const size_t dots = a.find("..");
  if (dots == std::string::npos) Fail(std::string(sp.name) + ": int setting without lo..hi");
  *lo = std::stoll(a.substr(0, dots));
  *hi = std::stoll(a.substr(dots + 2));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  g_env.clear();
  const auto specs = ccltune::AllSettings();
  size_t start = 0;
  for (size_t i = 0; i < specs.size() && start <= size; ++i) {
    size_t end = start;
    while (end < size && data[end] != 0) ++end;
    if (end > start) g_env[specs[i].name] = std::string(reinterpret_cast<const char*>(data) + start, end - start);
    start = end + 1;
  }
  const ccltune::Settings s = ccltune::Settings::FromEnv(&FakeGetenv);

  if (s.warnings.size() > g_env.size()) Fail("more warnings than variables set");
  for (const std::string& w : s.warnings) {
    for (char c : w) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
        Fail("warning with a non-printable character: " + w);
      }
    }
    bool names_one = false;
    for (const auto& [name, value] : g_env) names_one |= w.find(" for " + name + " (") != std::string::npos;
    if (!names_one) Fail("warning naming no variable that was set: " + w);
  }
  // Declared ranges hold for what was parsed, whatever the input.
  std::map<std::string, int64_t> ints = {{"CCLTUNE_CHANNEL_BUDGET", s.channel_budget},
                                         {"CCLTUNE_MIN_INTERVAL", s.min_interval},
                                         {"CCLTUNE_SETTLE_US", s.settle_us},
                                         {"CCLTUNE_SYNC_WARN_S", s.sync_warn_s},
                                         {"CCLTUNE_MAX_BATCH", s.max_batch},
                                         {"CCLTUNE_SCREEN_COST_RATIO", s.screen_cost_ratio},
                                         {"CCLTUNE_RACE_BUDGET", s.race_budget},
                                         {"CCLTUNE_LOW_STAKES_PCT", s.low_stakes_pct},
                                         {"CCLTUNE_EXPORT_INTERVAL", s.export_interval_s},
                                         {"CCLTUNE_TEST_FAIL_SETUP_RANK", s.test_fail_setup_rank},
                                         {"CCLTUNE_TEST_EXPORT_PAUSE", s.test_export_pause},
                                         {"CCLTUNE_MIN_GAIN_PCT", static_cast<int64_t>(s.min_gain * 100 + 0.5)}};
  for (const ccltune::SettingSpec& sp : specs) {
    if (sp.type != ccltune::SettingType::kInt) continue;
    auto it = ints.find(sp.name);
    if (it == ints.end()) Fail(std::string("int setting not checked by this target: ") + sp.name);
    int64_t lo = 0, hi = 0;
    Bounds(sp, &lo, &hi);
    InRange(sp.name, it->second, lo, hi);
  }
  const int level = static_cast<int>(s.debug);
  if (level < 0 || level > 3) Fail("log level out of range");
  if (auto it = g_env.find("CCLTUNE_EXPORT"); it != g_env.end() && s.export_path != it->second) Fail("export path");
  return 0;
}
