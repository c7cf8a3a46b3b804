// Pins the routing of ccltune's log lines through NCCL's logger: NCCL's own filter (NCCL_DEBUG,
// NCCL_DEBUG_SUBSYS) read as NCCL reads it, lines handed over one by one with "%s" as the format, and
// lines NCCL would drop (or every line before NCCL handed a logger over) left to ccltune's own stderr.
#include "src/nccl_log.hpp"

#include <gtest/gtest.h>

#include <cstdarg>
#include <map>
#include <string>
#include <vector>

namespace ccltune {
namespace {

std::map<std::string, std::string> g_env;
const char* FakeGetenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

struct Logged {
  int level;
  unsigned long flags;
  std::string text;
};
std::vector<Logged> g_logged;
void FakeLogger(ncclDebugLogLevel level, unsigned long flags, const char*, int, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  g_logged.push_back({level, flags, buf});
}

TEST(NcclDebugFilter, ReadsNcclsVariablesAsNcclDoes) {
  g_env.clear();
  NcclDebugFilter f = NcclDebugFilter::FromEnv(&FakeGetenv);
  EXPECT_FALSE(f.Prints(kNcclLogWarn, kNcclSubsysInit));  // NCCL_DEBUG unset: NCCL prints nothing
  g_env = {{"NCCL_DEBUG", "info"}};
  f = NcclDebugFilter::FromEnv(&FakeGetenv);
  EXPECT_TRUE(f.Prints(kNcclLogInfo, kNcclSubsysInit));     // INIT is in NCCL's default subsystems
  EXPECT_FALSE(f.Prints(kNcclLogInfo, kNcclSubsysTuning));  // TUNING is not
  EXPECT_FALSE(f.Prints(kNcclLogTrace, kNcclSubsysInit));   // above the level
  g_env = {{"NCCL_DEBUG", "WARN"}, {"NCCL_DEBUG_SUBSYS", "TUNING,COLL"}};
  f = NcclDebugFilter::FromEnv(&FakeGetenv);
  EXPECT_TRUE(f.Prints(kNcclLogWarn, kNcclSubsysTuning));
  EXPECT_FALSE(f.Prints(kNcclLogInfo, kNcclSubsysTuning));
  EXPECT_FALSE(f.Prints(kNcclLogWarn, kNcclSubsysInit));
  g_env = {{"NCCL_DEBUG", "TRACE"}, {"NCCL_DEBUG_SUBSYS", "^INIT"}};
  f = NcclDebugFilter::FromEnv(&FakeGetenv);
  EXPECT_FALSE(f.Prints(kNcclLogInfo, kNcclSubsysInit));
  EXPECT_TRUE(f.Prints(kNcclLogInfo, kNcclSubsysTuning));
}

TEST(RouteToNccl, OnlyWithALoggerAndWhereNcclPrints) {
  g_env = {{"NCCL_DEBUG", "INFO"}};
  const NcclDebugFilter info = NcclDebugFilter::FromEnv(&FakeGetenv);
  g_logged.clear();
  // No logger yet: the caller prints the line itself.
  EXPECT_FALSE(RouteToNccl(kNcclLogInfo, kNcclSubsysInit, "before init", &info));
  SetNcclLogger(&FakeLogger);
  SetNcclLogger(nullptr);  // a later null never replaces it
  EXPECT_TRUE(RouteToNccl(kNcclLogInfo, kNcclSubsysInit | kNcclSubsysTuning, "ccltune: 100% of %s", &info));
  EXPECT_FALSE(RouteToNccl(kNcclLogTrace, kNcclSubsysInit, "too verbose for NCCL_DEBUG=INFO", &info));
  ASSERT_EQ(g_logged.size(), 1u);
  EXPECT_EQ(g_logged[0].level, kNcclLogInfo);
  EXPECT_EQ(g_logged[0].flags, kNcclSubsysInit | kNcclSubsysTuning);
  EXPECT_EQ(g_logged[0].text, "ccltune: 100% of %s");  // never used as a format
}

}  // namespace
}  // namespace ccltune
