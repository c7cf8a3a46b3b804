// How many channels NCCL really runs a collective on. A tuner's nChannels (or NCCL's own choice) is only an
// upper bound: the planner clamps the plan's channels to the communicator's, then spreads each task's traffic
// over channels with a minimum traffic per channel, so small messages run on fewer channels than asked and
// two requests can run identically. Pure functions following NCCL 2.28's getAlgoInfo/topoGetAlgoInfo (the
// default bound and warps) and scheduleCollTasksToPlan (the spread), with NCCL 2.29+'s constants where they
// differ; docs/simulated-cluster.md states the rule. Used by the simulated NCCL, its CLI and the unit tests.
#pragma once

#include <cstddef>
#include <vector>

namespace simnccl {

inline constexpr int kAlgoTree = 0, kAlgoRing = 1, kAlgoCollNetDirect = 2, kAlgoCollNetChain = 3, kAlgoNvls = 4,
                     kAlgoNvlsTree = 5, kAlgoPat = 6;
inline constexpr int kProtoLL = 0, kProtoLL128 = 1, kProtoSimple = 2;

// Minimum traffic the planner puts on a channel: 16 KiB in NCCL 2.28, 32 KiB from 2.29.
size_t MinTrafficPerChannel(int ncclVersion);

// Traffic per byte of a task's buffer: allreduce 2, allgather and reducescatter nranks, others 1 (LL: 4x that).
size_t TrafficPerByte(int coll, int nranks, int proto);

// Ring/Simple threads per channel NCCL gives a communicator (tuning.cc): 512 when its rings run over NVLink, 256
// when a ring's bandwidth is at most PCIe's (bwIntra x channels <= PCI_BW), as when every rank is its own node and
// rings cross the network (the one-GPU testbed).
inline constexpr int kRingSimpleThreadsNvlink = 512, kRingSimpleThreadsPcie = 256;

// NCCL's own channel bound and warps for a chosen (algo, proto) at nBytes (topoGetAlgoInfo): from the
// communicator's channels down while nBytes < channels x threads x threshold, for NCCL's default thresholds and
// threads (NCCL_NTHREADS / NCCL_THREAD_THRESHOLDS unset; Ring/Simple's as given).
struct AlgoChannels {
  int nMaxChannels = 0;
  int nWarps = 0;
};
AlgoChannels NcclAlgoChannels(int algo, int proto, size_t nBytes, int nranks, int commChannels,
                              int ringSimpleThreads = kRingSimpleThreadsNvlink);

// One collective task as NCCL's planner holds it.
struct ChannelTask {
  int coll = 0;         // simnccl::Coll
  size_t count = 0;     // elements; allgather and broadcast: bytes (NCCL recasts them to int8)
  size_t elemSize = 1;  // 1 for allgather and broadcast
  int proto = kProtoSimple;
  int nMaxChannels = 0;  // the tuner's nChannels when it set one (not clamped), else NcclAlgoChannels'
};
// Where the planner put a task: channels [channelLo, channelLo + nChannels), with countLo elements on the first,
// countMid on each of the nMidChannels middle ones and countHi on the last (0 when the task fits in the first).
struct ChannelSpan {
  int channelLo = 0, nChannels = 0, nMidChannels = 0;
  size_t countLo = 0, countMid = 0, countHi = 0;
};
// scheduleCollTasksToPlan for the tasks of one plan, in NCCL's queue order (Ring/Tree/PAT tasks; the CollNet and
// NVLS channel pools are not modelled and are treated like Ring's). Every task's count must be above zero.
std::vector<ChannelSpan> ScheduleChannels(const std::vector<ChannelTask>& tasks, int nranks, int commChannels,
                                          int ncclVersion);

// A task as NCCL builds it from a call: allgather and broadcast counted in bytes of int8.
ChannelTask MakeChannelTask(int coll, size_t count, size_t typeSize, int proto, int nMaxChannels);
// NCCL's nBytes for getAlgoInfo (and the tuner) of a task: allgather and reducescatter count every rank's part.
size_t AlgoBytes(const ChannelTask& task, int nranks);

// One ungrouped collective: the channels it really runs on. requested is the tuner's nChannels (0: NCCL's own).
int ChannelsRun(int coll, size_t count, size_t typeSize, int nranks, int algo, int proto, int requested,
                int commChannels, int ncclVersion, int ringSimpleThreads = kRingSimpleThreadsNvlink);

// NCCL >= 2.29 runs a group of broadcasts from several roots as one AllGatherV kernel, each broadcast cut into
// nParts parts at 256-byte boundaries, part p on channel p: the channels that get any bytes.
int AllGatherVChannels(const std::vector<size_t>& bytes, int nParts);

}  // namespace simnccl
