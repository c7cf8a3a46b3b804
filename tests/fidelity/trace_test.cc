// Unit tests of the fidelity trace parser and the real-vs-simulated comparison.
#include "trace.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ccltune::fidelity {
namespace {

using ::testing::HasSubstr;

constexpr char kReal[] = R"(# comment
0 main meta nccl=22809 nranks=2 backend=cuda device=NVIDIA_H200
0 main mark program=1 name=init-world
0 t0 init abi=5 comm=0 nRanks=2 nNodes=1 nvl=1/2/2 constants=1
0 main mark program=2 name=group
0 main getCollInfo comm=0 coll=AllReduce bytes=1048576 numPipeOps=1 valid=111/111/000 regBuff=0 nChannelsIn=0
0 main getCollInfo comm=0 coll=AllGather bytes=4096 numPipeOps=1 valid=111/111/000 regBuff=0 nChannelsIn=0
1 main meta nccl=22809 nranks=2
1 main mark program=1 name=init-world
1 t0 init abi=5 comm=0 nRanks=2 nNodes=1 nvl=1/2/2 constants=1
1 main mark program=2 name=group
1 main getCollInfo comm=0 coll=AllReduce bytes=1048576 numPipeOps=1 valid=111/111/000 regBuff=0 nChannelsIn=0
1 main getCollInfo comm=0 coll=AllGather bytes=4096 numPipeOps=1 valid=111/111/000 regBuff=0 nChannelsIn=0
)";

Trace Parse(const std::string& text) {
  Trace t;
  std::string err;
  EXPECT_TRUE(ParseTrace(text, &t, &err)) << err;
  return t;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

TEST(FidelityTrace, ParsesRanksSegmentsAndMeta) {
  Trace t = Parse(kReal);
  ASSERT_EQ(t.ranks.size(), 2u);
  const RankTrace& r0 = t.ranks.at(0);
  EXPECT_EQ(r0.meta.at("nranks"), "2");
  ASSERT_EQ(r0.segments.size(), 2u);
  EXPECT_EQ(r0.segments[0].program, "1 init-world");
  ASSERT_EQ(r0.segments[1].events.size(), 2u);
  const Event& e = r0.segments[1].events[1];
  EXPECT_EQ(e.thread, "main");
  EXPECT_EQ(e.kind, "getCollInfo");
  EXPECT_EQ(e.Field("bytes"), "4096");
  EXPECT_EQ(e.Field("absent"), "");
}

TEST(FidelityTrace, CallsBeforeTheFirstMarkerGetTheirOwnSegment) {
  Trace t = Parse("0 main init abi=5 comm=0\n0 main mark program=1 name=x\n");
  ASSERT_EQ(t.ranks.at(0).segments.size(), 2u);
  EXPECT_EQ(t.ranks.at(0).segments[0].program, "(before the first program)");
}

TEST(FidelityTrace, RejectsMalformedLinesWithTheirNumber) {
  Trace t;
  std::string err;
  EXPECT_FALSE(ParseTrace("0 main mark program=1 name=x\nzero main init\n", &t, &err));
  EXPECT_THAT(err, HasSubstr("line 2"));
  err.clear();
  EXPECT_FALSE(ParseTrace("0 main getCollInfo bytes\n", &t, &err));
  EXPECT_THAT(err, HasSubstr("not key=value"));
  std::vector<Allowance> a;
  EXPECT_FALSE(ParseAllowances("* init\n", &a, &err));
}

TEST(FidelityTrace, IdenticalTracesMatch) {
  Comparison c = CompareTraces(Parse(kReal), Parse(kReal), {});
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.callsCompared, 6);
  EXPECT_EQ(c.programsCompared, 4);
  EXPECT_TRUE(c.allowed.empty());
}

TEST(FidelityTrace, AFieldDifferenceIsReportedWithBothCalls) {
  std::string sim = Replace(kReal, "bytes=4096 numPipeOps=1", "bytes=4096 numPipeOps=2");
  Comparison c = CompareTraces(Parse(kReal), Parse(sim), {});
  ASSERT_EQ(c.failures.size(), 1u);
  EXPECT_THAT(c.failures[0], HasSubstr("rank 0, program 2 group"));
  EXPECT_THAT(c.failures[0], HasSubstr("- real only (line 7): main getCollInfo comm=0 coll=AllGather bytes=4096 "
                                       "numPipeOps=1"));
  EXPECT_THAT(c.failures[0], HasSubstr("+ sim only  (line 7): main getCollInfo comm=0 coll=AllGather bytes=4096 "
                                       "numPipeOps=2"));
  EXPECT_THAT(c.failures[0], HasSubstr("= main getCollInfo comm=0 coll=AllReduce"));
}

TEST(FidelityTrace, AMissingCallIsOneLineNotAShift) {
  std::string sim =
      Replace(kReal,
              "0 main getCollInfo comm=0 coll=AllReduce bytes=1048576 numPipeOps=1 valid=111/111/000 regBuff=0 "
              "nChannelsIn=0\n",
              "");
  Comparison c = CompareTraces(Parse(kReal), Parse(sim), {});
  ASSERT_EQ(c.failures.size(), 1u);
  EXPECT_THAT(c.failures[0], HasSubstr("1 real call(s) the simulation does not make, 0 simulated call(s)"));
  EXPECT_THAT(c.failures[0], HasSubstr("= main getCollInfo comm=0 coll=AllGather"));
}

TEST(FidelityTrace, AllowancesCoverOnlyTheirProgramKindAndField) {
  std::string sim = Replace(kReal, "0 t0 init", "0 main init");
  std::vector<Allowance> allow;
  std::string err;
  ASSERT_TRUE(ParseAllowances("# why\ninit-world init thread the simulation initialises in the caller\n", &allow, &err))
      << err;
  Comparison c = CompareTraces(Parse(kReal), Parse(sim), allow);
  EXPECT_TRUE(c.ok());
  ASSERT_EQ(c.allowed.size(), 1u);
  EXPECT_THAT(c.allowed[0], HasSubstr("allowed thread (t0 vs main): the simulation initialises in the caller"));

  for (const char* other : {"group init thread x\n", "init-world getCollInfo thread x\n", "* init comm x\n"}) {
    std::vector<Allowance> wrong;
    ASSERT_TRUE(ParseAllowances(other, &wrong, &err));
    EXPECT_FALSE(CompareTraces(Parse(kReal), Parse(sim), wrong).ok()) << other;
  }
}

TEST(FidelityTrace, ACommOrderAllowanceComparesEachCommunicatorsCallsNotTheirInterleaving) {
  const std::string ar1 = "0 main getCollInfo comm=1 coll=AllReduce bytes=2097152 numPipeOps=1\n";
  const std::string ar0 = "0 main getCollInfo comm=0 coll=AllReduce bytes=1048576 numPipeOps=1\n";
  const std::string ag0 = "0 main getCollInfo comm=0 coll=AllGather bytes=1048576 numPipeOps=1\n";
  const std::string mark = "0 main mark program=1 name=two-comms\n";
  const std::string real = mark + ar1 + ar0 + ag0;
  const std::string interleaved = mark + ar0 + ag0 + ar1;
  std::vector<Allowance> allow, other;
  std::string err;
  ASSERT_TRUE(ParseAllowances("two-comms getCollInfo comm-order by hash\n", &allow, &err)) << err;
  ASSERT_TRUE(ParseAllowances("other getCollInfo comm-order by hash\n", &other, &err)) << err;

  EXPECT_FALSE(CompareTraces(Parse(real), Parse(interleaved), {}).ok());
  EXPECT_FALSE(CompareTraces(Parse(real), Parse(interleaved), other).ok());
  Comparison c = CompareTraces(Parse(real), Parse(interleaved), allow);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.callsCompared, 3);
  ASSERT_EQ(c.allowed.size(), 1u);
  EXPECT_THAT(c.allowed[0], HasSubstr("real: calls on communicators 1,0,0\n  sim : calls on communicators 0,0,1"));
  EXPECT_THAT(c.allowed[0], HasSubstr("allowed comm-order: by hash"));
  EXPECT_TRUE(CompareTraces(Parse(real), Parse(real), allow).allowed.empty());

  // One communicator's own order, or a call of it, still has to match.
  c = CompareTraces(Parse(real), Parse(mark + ar1 + ag0 + ar0), allow);
  ASSERT_EQ(c.failures.size(), 1u);
  EXPECT_THAT(c.failures[0], HasSubstr("rank 0, program 1 two-comms (communicator 0)"));
  EXPECT_FALSE(CompareTraces(Parse(real), Parse(mark + ar0 + ag0), allow).ok());
}

TEST(FidelityTrace, DifferentProgramListsOrRanksFail) {
  std::string sim = Replace(kReal, "1 main mark program=2 name=group", "1 main mark program=2 name=other");
  Comparison c = CompareTraces(Parse(kReal), Parse(sim), {});
  ASSERT_EQ(c.failures.size(), 1u);
  EXPECT_THAT(c.failures[0], HasSubstr("rank 1: the traces ran different programs"));

  Trace oneRank = Parse(kReal);
  oneRank.ranks.erase(1);
  c = CompareTraces(Parse(kReal), oneRank, {});
  ASSERT_EQ(c.failures.size(), 1u);
  EXPECT_THAT(c.failures[0], HasSubstr("rank 1 is only in the real trace"));
}

}  // namespace
}  // namespace ccltune::fidelity
