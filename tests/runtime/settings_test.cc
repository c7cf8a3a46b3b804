// Pins the settings registry: parsing, warnings for bad values, and docs/environment.md agreeing
// with the registry (every variable documented with its default, nothing undocumented).
#include "src/settings.hpp"

#include "src/comm_lifecycle.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace ccltune {
namespace {

std::map<std::string, std::string> g_env;
const char* FakeGetenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

TEST(Settings, Defaults) {
  g_env.clear();
  Settings s = Settings::FromEnv(&FakeGetenv);
  EXPECT_FALSE(s.disable);
  EXPECT_EQ(s.debug, LogLevel::kWarn);
  EXPECT_EQ(s.channel_budget, 0);
  EXPECT_EQ(s.min_interval, 1);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(Settings, ValidValues) {
  g_env = {{"CCLTUNE_DISABLE", "1"},
           {"CCLTUNE_DEBUG", "info"},
           {"CCLTUNE_CHANNEL_BUDGET", "32"},
           {"CCLTUNE_EXPORT", "/tmp/x.json"},
           {"CCLTUNE_DEBUG_SUBSYS", "^PLUGIN,COORD"}};
  Settings s = Settings::FromEnv(&FakeGetenv);
  EXPECT_TRUE(s.disable);
  EXPECT_EQ(s.debug, LogLevel::kInfo);
  EXPECT_EQ(s.channel_budget, 32);
  EXPECT_EQ(s.export_path, "/tmp/x.json");
  EXPECT_EQ(s.debug_subsys, "^PLUGIN,COORD");
  EXPECT_TRUE(s.warnings.empty());
}

TEST(Settings, InvalidValuesWarnAndKeepDefault) {
  g_env = {{"CCLTUNE_DISABLE", "maybe"},
           {"CCLTUNE_CHANNEL_BUDGET", "65"},
           {"CCLTUNE_DEBUG", "LOUD"},
           {"CCLTUNE_MAX_BATCH", "3x"}};
  Settings s = Settings::FromEnv(&FakeGetenv);
  EXPECT_FALSE(s.disable);
  EXPECT_EQ(s.channel_budget, 0);
  EXPECT_EQ(s.max_batch, 24);
  ASSERT_EQ(s.warnings.size(), 4u);
  EXPECT_EQ(s.warnings[0], "invalid value 'maybe' for CCLTUNE_DISABLE (accepted: 0,1); using the default 0");
  EXPECT_EQ(s.warnings[2], "invalid value '65' for CCLTUNE_CHANNEL_BUDGET (accepted: 0..64); using the default 0");
}

TEST(Settings, WarningsAreOnePrintableLineWhateverTheValue) {
  g_env = {{"CCLTUNE_MAX_BATCH", "3\nCCLTUNE_FAKE=1"},
           {"CCLTUNE_DEBUG", "\x1b[31mred\xff"},
           {"CCLTUNE_EXPORT_INTERVAL", std::string(100, '9')}};
  Settings s = Settings::FromEnv(&FakeGetenv);
  EXPECT_EQ(s.max_batch, 24);
  EXPECT_EQ(s.export_interval_s, 60);
  ASSERT_EQ(s.warnings.size(), 3u);
  EXPECT_EQ(
      s.warnings[0],
      "invalid value '\\x1b[31mred\\xff' for CCLTUNE_DEBUG (accepted: NONE,WARN,INFO,TRACE); using the default WARN");
  EXPECT_EQ(s.warnings[1], "invalid value '" + std::string(64, '9') +
                               "...' for CCLTUNE_EXPORT_INTERVAL (accepted: 0..86400); using the default 60");
  EXPECT_EQ(s.warnings[2],
            "invalid value '3\\x0aCCLTUNE_FAKE=1' for CCLTUNE_MAX_BATCH (accepted: 1..64); using the default 24");
}

TEST(Settings, TimingOverRanks) {
  g_env = {};
  EXPECT_TRUE(Settings::FromEnv(&FakeGetenv).timing_max);
  g_env = {{"CCLTUNE_TIMING", "MIN"}};
  EXPECT_FALSE(Settings::FromEnv(&FakeGetenv).timing_max);
  g_env = {{"CCLTUNE_TIMING", "median"}};
  Settings s = Settings::FromEnv(&FakeGetenv);
  EXPECT_TRUE(s.timing_max);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], "invalid value 'median' for CCLTUNE_TIMING (accepted: min,max); using the default max");
}

// The sync ops stay on the tuned communicator unless CCLTUNE_SYNC_COMM=split; anything else keeps that.
TEST(Settings, SyncComm) {
  g_env = {};
  EXPECT_FALSE(Settings::FromEnv(&FakeGetenv).sync_split);
  g_env = {{"CCLTUNE_SYNC_COMM", "Split"}};
  EXPECT_TRUE(Settings::FromEnv(&FakeGetenv).sync_split);
  g_env = {{"CCLTUNE_SYNC_COMM", "same"}};
  EXPECT_FALSE(Settings::FromEnv(&FakeGetenv).sync_split);
  g_env = {{"CCLTUNE_SYNC_COMM", "side"}};
  Settings s = Settings::FromEnv(&FakeGetenv);
  EXPECT_FALSE(s.sync_split);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], "invalid value 'side' for CCLTUNE_SYNC_COMM (accepted: same,split); using the default same");
}

// Every integer setting, driven by the registry: unset gives the registry's default; both ends of its range are
// taken; one past either end keeps the default with one warning naming the range. The table says which field each
// variable sets, and must name every integer setting the registry has (a new one is checked once it is added here).
// CCLTUNE_SCREEN_COST_RATIO 0 turns the cost-table screening off; CCLTUNE_RACE_BUDGET 0 leaves 3 entries per
// screened arm.
TEST(Settings, IntegerSettingsTakeTheirRangeAndKeepTheDefaultOutsideIt) {
  using Field = std::function<int64_t(const Settings&)>;
  const std::map<std::string, Field> fields = {
      {"CCLTUNE_EXPORT_INTERVAL", [](const Settings& s) { return s.export_interval_s; }},
      {"CCLTUNE_CHANNEL_BUDGET", [](const Settings& s) { return s.channel_budget; }},
      {"CCLTUNE_MIN_INTERVAL", [](const Settings& s) { return s.min_interval; }},
      {"CCLTUNE_SETTLE_US", [](const Settings& s) { return s.settle_us; }},
      {"CCLTUNE_SYNC_WARN_S", [](const Settings& s) { return s.sync_warn_s; }},
      {"CCLTUNE_MAX_BATCH", [](const Settings& s) { return s.max_batch; }},
      {"CCLTUNE_MIN_GAIN_PCT", [](const Settings& s) { return std::llround(s.min_gain * 100); }},
      {"CCLTUNE_SCREEN_COST_RATIO", [](const Settings& s) { return s.screen_cost_ratio; }},
      {"CCLTUNE_RACE_BUDGET", [](const Settings& s) { return s.race_budget; }},
      {"CCLTUNE_LOW_STAKES_PCT", [](const Settings& s) { return s.low_stakes_pct; }},
      {"CCLTUNE_TEST_FAIL_SETUP_RANK", [](const Settings& s) { return s.test_fail_setup_rank; }},
      {"CCLTUNE_TEST_EXPORT_PAUSE", [](const Settings& s) { return s.test_export_pause; }},
  };
  size_t checked = 0;
  for (const SettingSpec& sp : AllSettings()) {
    if (sp.type != SettingType::kInt) continue;
    SCOPED_TRACE(sp.name);
    ++checked;
    auto it = fields.find(sp.name);
    ASSERT_NE(it, fields.end()) << "integer setting without a row in this test";
    const Field& field = it->second;
    const std::string range = sp.allowed;
    const size_t dots = range.find("..");
    ASSERT_NE(dots, std::string::npos) << range;
    const int64_t lo = std::stoll(range.substr(0, dots));
    const int64_t hi = std::stoll(range.substr(dots + 2));
    const int64_t def = std::stoll(sp.default_value);
    ASSERT_LE(lo, def);
    ASSERT_LE(def, hi);
    g_env = {};
    EXPECT_EQ(field(Settings::FromEnv(&FakeGetenv)), def);
    for (const int64_t v : {lo, hi}) {
      g_env = {{sp.name, std::to_string(v)}};
      const Settings s = Settings::FromEnv(&FakeGetenv);
      EXPECT_EQ(field(s), v);
      EXPECT_TRUE(s.warnings.empty());
    }
    for (const int64_t v : {lo - 1, hi + 1}) {
      g_env = {{sp.name, std::to_string(v)}};
      const Settings s = Settings::FromEnv(&FakeGetenv);
      EXPECT_EQ(field(s), def);
      ASSERT_EQ(s.warnings.size(), 1u);
      EXPECT_EQ(s.warnings[0], "invalid value '" + std::to_string(v) + "' for " + sp.name + " (accepted: " + range +
                                   "); using the default " + sp.default_value);
    }
  }
  EXPECT_EQ(checked, fields.size()) << "a row of this test names no integer setting of the registry";
}

// What the search settings set reaches the search every leader runs, and unset they leave optimizer::Options'
// defaults (the registry's defaults and the optimizer's agree).
TEST(Settings, SearchSettingsReachTheSearchOptions) {
  g_env = {};
  const optimizer::Options defaults;
  const optimizer::Options unset = SearchOptionsFrom(Settings::FromEnv(&FakeGetenv));
  EXPECT_EQ(unset.min_gain, defaults.min_gain);
  EXPECT_EQ(unset.guard, defaults.guard);
  EXPECT_EQ(unset.screen_cost_ratio, defaults.screen_cost_ratio);
  EXPECT_EQ(unset.race_budget, defaults.race_budget);
  g_env = {{"CCLTUNE_MIN_GAIN_PCT", "7"},
           {"CCLTUNE_GUARD", "0"},
           {"CCLTUNE_SCREEN_COST_RATIO", "0"},
           {"CCLTUNE_RACE_BUDGET", "12"}};
  const Settings s = Settings::FromEnv(&FakeGetenv);
  ASSERT_TRUE(s.warnings.empty());
  const optimizer::Options set = SearchOptionsFrom(s);
  EXPECT_DOUBLE_EQ(set.min_gain, 0.07);
  EXPECT_FALSE(set.guard);
  EXPECT_EQ(set.screen_cost_ratio, 0);
  EXPECT_EQ(set.race_budget, 12);
  // The options no setting names keep their defaults.
  EXPECT_EQ(set.max_screen, defaults.max_screen);
  EXPECT_EQ(set.monitor_window, defaults.monitor_window);
  EXPECT_EQ(set.drift_ratio, defaults.drift_ratio);
}

// The same for the leader's options: CCLTUNE_MAX_BATCH, CCLTUNE_MIN_INTERVAL, CCLTUNE_SETTLE_US and
// CCLTUNE_LOW_STAKES_PCT reach them, with the search's; unset they leave Leader::Options' defaults, except the
// shortest interval: CCLTUNE_MIN_INTERVAL's 1 (coordinator::IntervalOptions' own default, 8, is not what a job runs).
TEST(Settings, LeaderSettingsReachTheLeaderOptions) {
  g_env = {};
  const Leader::Options defaults;
  const Leader::Options unset = LeaderOptionsFrom(Settings::FromEnv(&FakeGetenv));
  EXPECT_EQ(unset.max_entries, defaults.max_entries);
  EXPECT_EQ(unset.interval.min_units, 1u);
  EXPECT_EQ(unset.settle_below_us, defaults.settle_below_us);
  EXPECT_DOUBLE_EQ(unset.low_stakes_share, defaults.low_stakes_share);
  EXPECT_EQ(unset.search.race_budget, defaults.search.race_budget);
  g_env = {{"CCLTUNE_MAX_BATCH", "9"},
           {"CCLTUNE_MIN_INTERVAL", "5"},
           {"CCLTUNE_SETTLE_US", "0"},
           {"CCLTUNE_LOW_STAKES_PCT", "0"},
           {"CCLTUNE_RACE_BUDGET", "12"}};
  const Settings s = Settings::FromEnv(&FakeGetenv);
  ASSERT_TRUE(s.warnings.empty());
  const Leader::Options set = LeaderOptionsFrom(s);
  EXPECT_EQ(set.max_entries, 9);
  EXPECT_EQ(set.interval.min_units, 5u);
  EXPECT_EQ(set.settle_below_us, 0);
  EXPECT_EQ(set.low_stakes_share, 0);
  EXPECT_EQ(set.search.race_budget, 12);
  g_env = {{"CCLTUNE_LOW_STAKES_PCT", "7"}};
  EXPECT_DOUBLE_EQ(LeaderOptionsFrom(Settings::FromEnv(&FakeGetenv)).low_stakes_share, 0.07);
}

TEST(Settings, DocsTableMatchesRegistry) {
  std::ifstream in(std::string(CCLTUNE_DOCS_DIR) + "/environment.md");
  ASSERT_TRUE(in.good()) << "docs/environment.md is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  std::set<std::string> declared;
  for (const SettingSpec& sp : AllSettings()) {
    declared.insert(sp.name);
    const std::string def = *sp.default_value ? sp.default_value : "(unset)";
    const std::string row = std::string("| `") + sp.name + "` | " + def + " |";
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/environment.md lacks the row starting " << row;
  }
  std::regex name_re("CCLTUNE_[A-Z_]+");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), name_re); it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE(declared.count(it->str())) << it->str() << " is documented but not in the registry";
  }
}

// Every CCLTUNE_* name anywhere in the docs and the README is a registered environment variable, or a
// build option the CMake files define (CCLTUNE_SANITIZE, ...): a doc cannot name a variable that does
// nothing.
TEST(Settings, EveryVariableTheDocsNameIsRegistered) {
  namespace fs = std::filesystem;
  const fs::path src = fs::path(CCLTUNE_DOCS_DIR).parent_path();
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  std::string build_files;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    const std::string name = e.path().filename().string();
    const std::string rel = fs::relative(e.path(), src).string();
    if (rel.rfind("build", 0) == 0 || rel.rfind(".deps", 0) == 0) continue;
    if (name == "CMakeLists.txt" || e.path().extension() == ".cmake") build_files += read(e.path());
  }
  std::set<std::string> declared;
  for (const SettingSpec& sp : AllSettings()) declared.insert(sp.name);
  std::vector<fs::path> docs = {src / "README.md"};
  for (const auto& e : fs::recursive_directory_iterator(src / "docs"))
    if (e.path().extension() == ".md") docs.push_back(e.path());
  std::regex name_re("CCLTUNE_[A-Z_]+");
  int checked = 0;
  for (const fs::path& d : docs) {
    const std::string text = read(d);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), name_re); it != std::sregex_iterator(); ++it) {
      ++checked;
      const std::string n = it->str();
      EXPECT_TRUE(declared.count(n) || build_files.find(n) != std::string::npos)
          << d.string() << " names " << n << ", which is neither a registered setting nor a build option";
    }
  }
  EXPECT_GT(checked, 20);
}

}  // namespace
}  // namespace ccltune
