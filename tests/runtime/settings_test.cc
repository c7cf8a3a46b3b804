// Pins the settings registry: parsing, warnings for bad values, and docs/environment.md agreeing
// with the registry (every variable documented with its default, nothing undocumented).
#include "src/settings.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

// NCCL's cost-table screening rule is on at 6 unless set; 0 turns it off; out of range keeps 6 with a warning.
TEST(Settings, ScreenCostRatio) {
  g_env = {};
  EXPECT_EQ(Settings::FromEnv(&FakeGetenv).screen_cost_ratio, 6);
  g_env = {{"CCLTUNE_SCREEN_COST_RATIO", "0"}};
  EXPECT_EQ(Settings::FromEnv(&FakeGetenv).screen_cost_ratio, 0);
  g_env = {{"CCLTUNE_SCREEN_COST_RATIO", "1001"}};
  Settings s = Settings::FromEnv(&FakeGetenv);
  EXPECT_EQ(s.screen_cost_ratio, 6);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0],
            "invalid value '1001' for CCLTUNE_SCREEN_COST_RATIO (accepted: 0..1000); using the default 6");
}

// The search's race budget is 18 unless set; 0 is accepted (3 entries per screened arm only); out of range keeps 18.
TEST(Settings, RaceBudget) {
  g_env = {};
  EXPECT_EQ(Settings::FromEnv(&FakeGetenv).race_budget, 18);
  g_env = {{"CCLTUNE_RACE_BUDGET", "0"}};
  EXPECT_EQ(Settings::FromEnv(&FakeGetenv).race_budget, 0);
  g_env = {{"CCLTUNE_RACE_BUDGET", "12"}};
  EXPECT_EQ(Settings::FromEnv(&FakeGetenv).race_budget, 12);
  g_env = {{"CCLTUNE_RACE_BUDGET", "-1"}};
  Settings s = Settings::FromEnv(&FakeGetenv);
  EXPECT_EQ(s.race_budget, 18);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], "invalid value '-1' for CCLTUNE_RACE_BUDGET (accepted: 0..1000); using the default 18");
}

TEST(Settings, ExportInterval) {
  g_env = {{"CCLTUNE_EXPORT_INTERVAL", "0"}};
  EXPECT_EQ(Settings::FromEnv(&FakeGetenv).export_interval_s, 0);
  g_env = {{"CCLTUNE_EXPORT_INTERVAL", "86400"}};
  EXPECT_EQ(Settings::FromEnv(&FakeGetenv).export_interval_s, 86400);
  g_env = {{"CCLTUNE_EXPORT_INTERVAL", "-1"}};
  Settings s = Settings::FromEnv(&FakeGetenv);
  EXPECT_EQ(s.export_interval_s, 60);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], "invalid value '-1' for CCLTUNE_EXPORT_INTERVAL (accepted: 0..86400); using the default 60");
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
