// Unit tests of NCCL's channel rule (channels.hpp) against cases computed by hand from NCCL 2.28's topoGetAlgoInfo
// and scheduleCollTasksToPlan (and 2.29+'s constants): small messages run on fewer channels than asked, LL's 4x
// traffic spreads wider than Simple, requests above the communicator's channels are cut, different requests run
// identically, and tasks of one plan share channels.
#include "channels.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "model.hpp"

namespace simnccl {
namespace {

constexpr int k228 = 22809, k230 = 23000;

// One ungrouped collective: 4-byte elements unless said, Ring.
struct RunCase {
  const char* name;
  int version, coll;
  size_t count;
  int nranks, proto, requested, commChannels;
  int ran;  // computed by hand
};
std::ostream& operator<<(std::ostream& os, const RunCase& c) { return os << c.name; }

class ChannelsRunTest : public ::testing::TestWithParam<RunCase> {};

TEST_P(ChannelsRunTest, MatchesHandComputedNccl) {
  const RunCase& c = GetParam();
  EXPECT_EQ(ChannelsRun(c.coll, c.count, 4, c.nranks, kAlgoRing, c.proto, c.requested, c.commChannels, c.version),
            c.ran);
}

// The hand computations, 2.28 (16 KiB minimum per channel). Allreduce moves 2 bytes per byte: a cell is 8 KiB of
// buffer (16 KiB of traffic), cellsPerChannel = ceil(perChannel / 16 KiB), perChannel = max(16 KiB, traffic / n).
INSTANTIATE_TEST_SUITE_P(
    Nccl, ChannelsRunTest,
    ::testing::Values(
        // 4000 B: traffic 8000 < 16 KiB, one cell: one channel, whatever is asked.
        RunCase{"tiny_allreduce_asks_4_runs_1", k228, kAllReduce, 1000, 4, kProtoLL128, 4, 24, 1},
        RunCase{"tiny_allreduce_asks_24_runs_1", k228, kAllReduce, 1000, 4, kProtoSimple, 24, 24, 1},
        // 1 MiB, asked 8: perChannel 256 KiB = 16 cells; 128 cells = 16 + 6 x 16 + 16: 8 channels.
        RunCase{"1MiB_allreduce_asks_8_runs_8", k228, kAllReduce, 1 << 18, 4, kProtoSimple, 8, 24, 8},
        // Above the communicator's channels: the plan is cut to 24.
        RunCase{"64MiB_allreduce_asks_40_runs_24", k228, kAllReduce, 1 << 24, 4, kProtoSimple, 40, 24, 24},
        // 1 MiB: cell rounding makes 18 run on 16, 19-21 on 19 and 22-24 on 22 (perChannel 2 MiB / n rounded up to
        // 8, 7, 7, 7, 6, 6, 6 cells of the 128).
        RunCase{"1MiB_asks_18_runs_16", k228, kAllReduce, 1 << 18, 4, kProtoSimple, 18, 24, 16},
        RunCase{"1MiB_asks_19_runs_19", k228, kAllReduce, 1 << 18, 4, kProtoSimple, 19, 24, 19},
        RunCase{"1MiB_asks_21_runs_19", k228, kAllReduce, 1 << 18, 4, kProtoSimple, 21, 24, 19},
        RunCase{"1MiB_asks_22_runs_22", k228, kAllReduce, 1 << 18, 4, kProtoSimple, 22, 24, 22},
        RunCase{"1MiB_asks_24_runs_22", k228, kAllReduce, 1 << 18, 4, kProtoSimple, 24, 24, 22},
        // NCCL's own choice at 1 MiB Ring/Simple is all 24 channels (24 x 512 threads x 64 B <= 1 MiB): it runs 22.
        RunCase{"1MiB_default_runs_22", k228, kAllReduce, 1 << 18, 4, kProtoSimple, 0, 24, 22},
        // 16 KiB, asked 8. Simple: traffic 32 KiB = 2 cells of 16 KiB, one per channel: 2. LL: 4x the traffic,
        // cells of 2 KiB of buffer (16 KiB of LL traffic): 8 cells, one per channel: 8.
        RunCase{"16KiB_simple_asks_8_runs_2", k228, kAllReduce, 4096, 4, kProtoSimple, 8, 24, 2},
        RunCase{"16KiB_ll_asks_8_runs_8", k228, kAllReduce, 4096, 4, kProtoLL, 8, 24, 8},
        // 2.29+: 32 KiB per channel, and perChannel is traffic / n rounded to 16 B. Simple: one cell of 16 KiB of
        // buffer holds all 16 KiB: 1. LL: 4 cells of 4 KiB: 4.
        RunCase{"16KiB_simple_asks_8_runs_1_on_2.30", k230, kAllReduce, 4096, 4, kProtoSimple, 8, 24, 1},
        RunCase{"16KiB_ll_asks_8_runs_4_on_2.30", k230, kAllReduce, 4096, 4, kProtoLL, 8, 24, 4},
        // Allgather of 4 KiB per rank on 4 ranks: 16 KiB of traffic (4 per byte), one 4 KiB cell: 1.
        RunCase{"allgather_4KiB_asks_4_runs_1", k228, kAllGather, 1024, 4, kProtoSimple, 4, 24, 1},
        // Allgather of 256 KiB per rank: 1 MiB of traffic, perChannel 128 KiB = 8 cells of 16 KiB traffic; 64
        // cells: 8 + 6 x 8 + 8: 8.
        RunCase{"allgather_256KiB_asks_8_runs_8", k228, kAllGather, 1 << 16, 4, kProtoSimple, 8, 24, 8},
        // 8 ranks: the allgather traffic doubles, the cell halves: 2 KiB x 8 = 16 KiB; 4 KiB per rank is 2 cells.
        RunCase{"allgather_4KiB_8_ranks_asks_4_runs_2", k228, kAllGather, 1024, 8, kProtoSimple, 4, 24, 2},
        // Two channels on the communicator: a 256 KiB allreduce asked 4 is cut to 2 (2.30: 16 cells of 32 KiB).
        RunCase{"256KiB_asks_4_on_2_channels_runs_2_on_2.30", k230, kAllReduce, 1 << 16, 4, kProtoLL128, 4, 2, 2}),
    [](const ::testing::TestParamInfo<RunCase>& info) {
      std::string name = info.param.name;
      for (char& ch : name)
        if (ch == '.') ch = '_';
      return name;
    });

TEST(NcclAlgoChannels, DefaultBoundAndWarps) {
  // 1 MiB Ring/Simple: 24 x 512 x 64 = 768 KiB <= 1 MiB keeps 24 channels and 512 threads, + a sync warp: 17.
  AlgoChannels a = NcclAlgoChannels(kAlgoRing, kProtoSimple, 1 << 20, 4, 24);
  EXPECT_EQ(a.nMaxChannels, 24);
  EXPECT_EQ(a.nWarps, 17);
  // 64 KiB: Simple one channel per 32 KiB: 2; LL128 one per 5 KiB (640 x 8): 12, 20 warps; Ring LL one per 16 KiB
  // on 4 ranks (512 x 8 x 4): 4, 16 warps.
  EXPECT_EQ(NcclAlgoChannels(kAlgoRing, kProtoSimple, 65536, 4, 24).nMaxChannels, 2);
  a = NcclAlgoChannels(kAlgoRing, kProtoLL128, 65536, 4, 24);
  EXPECT_EQ(a.nMaxChannels, 12);
  EXPECT_EQ(a.nWarps, 20);
  a = NcclAlgoChannels(kAlgoRing, kProtoLL, 65536, 4, 24);
  EXPECT_EQ(a.nMaxChannels, 4);
  EXPECT_EQ(a.nWarps, 16);
  // 4000 B: one channel, threads halved down to 64 (+32 sync warp for Simple: 3 warps; LL: at least 3 warps).
  a = NcclAlgoChannels(kAlgoRing, kProtoSimple, 4000, 4, 24);
  EXPECT_EQ(a.nMaxChannels, 1);
  EXPECT_EQ(a.nWarps, 3);
  EXPECT_EQ(NcclAlgoChannels(kAlgoRing, kProtoLL, 4000, 4, 24).nWarps, 3);
  // Tree always uses every thread: 20 warps.
  a = NcclAlgoChannels(kAlgoTree, kProtoSimple, 65536, 4, 24);
  EXPECT_EQ(a.nMaxChannels, 2);
  EXPECT_EQ(a.nWarps, 20);
  // The communicator's channels bound it: 1 GiB on 8 channels.
  EXPECT_EQ(NcclAlgoChannels(kAlgoRing, kProtoSimple, 1ull << 30, 4, 8).nMaxChannels, 8);
}

TEST(NcclAlgoChannels, PcieBoundRingHasHalfTheSimpleThreads) {
  // 64 KiB Ring/Simple on 8 channels with 256 threads: 65536 < nc x 256 x 64 down to nc 4 (4 x 16 KiB = 64 KiB),
  // threads kept: 256 + a sync warp = 9 warps. With 512 threads the same message gets 2 channels. The one-GPU
  // testbed (NCCL_MIN_NCHANNELS=8) ran NCCL's default all-gather of 64 KiB on 4 channels.
  AlgoChannels a = NcclAlgoChannels(kAlgoRing, kProtoSimple, 65536, 4, 8, kRingSimpleThreadsPcie);
  EXPECT_EQ(a.nMaxChannels, 4);
  EXPECT_EQ(a.nWarps, 9);
  EXPECT_EQ(NcclAlgoChannels(kAlgoRing, kProtoSimple, 65536, 4, 8).nMaxChannels, 2);
  EXPECT_EQ(
      ChannelsRun(kAllGather, 65536 / (4 * 4), 4, 4, kAlgoRing, kProtoSimple, 0, 8, 22809, kRingSimpleThreadsPcie), 4);
  // Only Ring/Simple changes: Tree/Simple and Ring/LL keep their bounds.
  EXPECT_EQ(NcclAlgoChannels(kAlgoTree, kProtoSimple, 65536, 4, 8, kRingSimpleThreadsPcie).nMaxChannels, 2);
  EXPECT_EQ(NcclAlgoChannels(kAlgoRing, kProtoLL, 65536, 4, 8, kRingSimpleThreadsPcie).nMaxChannels, 4);
}

TEST(ScheduleChannels, SmallTasksOfAPlanTakeOneChannelEach) {
  // 2.28, two 4000 B allreduces asked 4 each: the plan has 32 KiB over 8 channels, perChannel 16 KiB; each task's
  // one cell fills a channel, so the second starts on the next one.
  const std::vector<ChannelTask> tasks{MakeChannelTask(kAllReduce, 1000, 4, kProtoLL128, 4),
                                       MakeChannelTask(kAllReduce, 1000, 4, kProtoLL128, 4)};
  const auto spans = ScheduleChannels(tasks, 4, 24, k228);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].channelLo, 0);
  EXPECT_EQ(spans[0].nChannels, 1);
  EXPECT_EQ(spans[0].countLo, 1000u);
  EXPECT_EQ(spans[1].channelLo, 1);
  EXPECT_EQ(spans[1].nChannels, 1);
}

TEST(ScheduleChannels, ALargeTaskFillsTheChannelASmallOneLeftRoomOn) {
  // 2.28, 4000 B then 1 MiB, asked 1 channel each: 2 channels, perChannel (16 KiB + 2 MiB) / 2 = 1032 KiB. The
  // small task leaves 1016 KiB on channel 0: the large one puts 64 cells there and its last 64 on channel 1.
  const std::vector<ChannelTask> tasks{MakeChannelTask(kAllReduce, 1000, 4, kProtoSimple, 1),
                                       MakeChannelTask(kAllReduce, 1 << 18, 4, kProtoSimple, 1)};
  const auto spans = ScheduleChannels(tasks, 4, 24, k228);
  EXPECT_EQ(spans[0].channelLo, 0);
  EXPECT_EQ(spans[0].nChannels, 1);
  EXPECT_EQ(spans[1].channelLo, 0);
  EXPECT_EQ(spans[1].nChannels, 2);
  EXPECT_EQ(spans[1].countLo, 64u * 2048);
  EXPECT_EQ(spans[1].countHi, 64u * 2048);
}

TEST(ScheduleChannels, OverflowSqueezesIntoTheChannelsLeft) {
  // 2.28, 2 channels. 9856 B then 37776 B: perChannel = (19712 + 75552) / 2 = 47632 B = 3 cells. The first task's
  // 2 cells stay on channel 0 (32 KiB used); the second's 5 cells would need 1 + 3 + 1 channels from channel 0,
  // more than the 2 there are: 1 cell on channel 0 and the other 4 on channel 1 (9444 - 2048 elements).
  const std::vector<ChannelTask> tasks{MakeChannelTask(kAllReduce, 2464, 4, kProtoSimple, 2),
                                       MakeChannelTask(kAllReduce, 9444, 4, kProtoSimple, 2)};
  const auto spans = ScheduleChannels(tasks, 4, 2, k228);
  EXPECT_EQ(spans[0].channelLo, 0);
  EXPECT_EQ(spans[0].nChannels, 1);
  EXPECT_EQ(spans[1].channelLo, 0);
  EXPECT_EQ(spans[1].nChannels, 2);
  EXPECT_EQ(spans[1].countLo, 2048u);
  EXPECT_EQ(spans[1].countHi, 9444u - 2048u);
}

TEST(ScheduleChannels, CountsAddUpAndStayOnTheCommunicatorsChannels) {
  for (int version : {k228, k230})
    for (int proto : {kProtoLL, kProtoLL128, kProtoSimple})
      for (size_t count = 1; count < (1u << 24); count = count * 3 + 7)
        for (int requested : {1, 3, 8, 24, 64}) {
          const ChannelTask t = MakeChannelTask(kReduceScatter, count, 2, proto, requested);
          const ChannelSpan s = ScheduleChannels({t}, 8, 24, version)[0];
          EXPECT_EQ(s.countLo + s.countMid * s.nMidChannels + s.countHi, t.count) << count << " " << requested;
          EXPECT_GE(s.nChannels, 1);
          EXPECT_LE(s.nChannels, std::min(requested, 24)) << count << " " << requested;
          EXPECT_LE(s.channelLo + s.nChannels, 24);
        }
}

TEST(MakeChannelTask, AllGatherAndBroadcastCountBytes) {
  const ChannelTask ag = MakeChannelTask(kAllGather, 1000, 4, kProtoSimple, 0);
  EXPECT_EQ(ag.count, 4000u);
  EXPECT_EQ(ag.elemSize, 1u);
  EXPECT_EQ(AlgoBytes(ag, 4), 16000u);
  const ChannelTask rs = MakeChannelTask(kReduceScatter, 1000, 4, kProtoSimple, 0);
  EXPECT_EQ(rs.count, 1000u);
  EXPECT_EQ(AlgoBytes(rs, 4), 16000u);
  EXPECT_EQ(MakeChannelTask(kBroadcast, 10, 8, kProtoSimple, 0).count, 80u);
}

TEST(AllGatherVChannels, PartsAt256ByteBoundaries) {
  // 1000 B in 4 parts of 250 B, rounded to 256: 0-256, 256-512, 512-768, 768-1000: all 4 parts hold bytes.
  EXPECT_EQ(AllGatherVChannels({1000, 1000}, 4), 4);
  // 300 B: parts 0-256, 256-256, 256-256, 256-300: 2 channels.
  EXPECT_EQ(AllGatherVChannels({300}, 4), 2);
  // A large broadcast among small ones uses every part.
  EXPECT_EQ(AllGatherVChannels({300, 1 << 20}, 8), 8);
}

}  // namespace
}  // namespace simnccl
