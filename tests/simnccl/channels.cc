// NCCL's channel rule (channels.hpp): the default channel bound and the planner's spread of traffic over channels.
#include "channels.hpp"

#include <algorithm>

#include "model.hpp"

namespace simnccl {

namespace {
size_t DivUp(size_t a, size_t b) { return (a + b - 1) / b; }
size_t AlignUp(size_t a, size_t b) { return DivUp(a, b) * b; }

constexpr int kWarp = 32;
constexpr int kMaxThreads = 640;  // NCCL_MAX_NTHREADS

// Threads per channel NCCL starts from, per algorithm and protocol (Ring/Simple's as the communicator's rings
// allow: 512 over NVLink, 256 for a PCIe-bound ring). PAT is never given a thread count, which keeps it on every
// channel.
int MaxThreads(int algo, int proto, int ringSimpleThreads) {
  switch (algo) {
    case kAlgoTree:
      return proto == kProtoLL128 ? 640 : 512;
    case kAlgoRing:
      return proto == kProtoLL128 ? 640 : proto == kProtoSimple ? ringSimpleThreads : 512;
    case kAlgoCollNetDirect:
    case kAlgoCollNetChain:
    case kAlgoNvls:
    case kAlgoNvlsTree:
      return proto == kProtoSimple ? kMaxThreads : 0;
    default:
      return 0;
  }
}

// Bytes per thread before NCCL adds a channel: LL 8 (Ring: 8 per rank), LL128 8, Simple 64 (CollNet: 512).
size_t ThreadThreshold(int algo, int proto, int nranks) {
  if (proto == kProtoLL) return algo == kAlgoRing ? 8 * static_cast<size_t>(nranks) : 8;
  if (proto == kProtoLL128) return 8;
  return algo == kAlgoCollNetDirect || algo == kAlgoCollNetChain ? 512 : 64;
}
}  // namespace

size_t MinTrafficPerChannel(int ncclVersion) { return ncclVersion >= 22900 ? 32 << 10 : 16 << 10; }

size_t TrafficPerByte(int coll, int nranks, int proto) {
  size_t perByte = 1;
  if (coll == kAllReduce) perByte = 2;
  if (coll == kAllGather || coll == kReduceScatter) perByte = static_cast<size_t>(nranks);
  return proto == kProtoLL ? 4 * perByte : perByte;  // LL moves a flag with every 4 bytes of data
}

AlgoChannels NcclAlgoChannels(int algo, int proto, size_t nBytes, int nranks, int commChannels, int ringSimpleThreads) {
  int nc = commChannels;
  int nt = MaxThreads(algo, proto, ringSimpleThreads);
  const size_t threshold = ThreadThreshold(algo, proto, nranks);
  auto tooMany = [&] { return nBytes < static_cast<size_t>(nc) * static_cast<size_t>(nt) * threshold; };
  const bool fixedChannels = algo == kAlgoNvls || algo == kAlgoNvlsTree || algo == kAlgoCollNetDirect;
  if (!fixedChannels) {
    while (tooMany() && nc >= 2) nc--;
    while (tooMany() && nt % 128 == 0) nt /= 2;  // then fewer threads, in halves down to 64
  }
  if (proto == kProtoSimple) {
    if (algo == kAlgoRing) nt += kWarp;      // a sync warp
    if (algo == kAlgoTree) nt += 4 * kWarp;  // split thread model
  }
  if (nt / kWarp < 3) nt = 3 * kWarp;
  if (algo == kAlgoTree || algo == kAlgoPat) nt = kMaxThreads;
  return AlgoChannels{nc, nt / kWarp};
}

ChannelTask MakeChannelTask(int coll, size_t count, size_t typeSize, int proto, int nMaxChannels) {
  ChannelTask t;
  t.coll = coll;
  t.count = count;
  t.elemSize = typeSize;
  if (coll == kAllGather || coll == kBroadcast) t.count *= typeSize, t.elemSize = 1;
  t.proto = proto;
  t.nMaxChannels = nMaxChannels;
  return t;
}

size_t AlgoBytes(const ChannelTask& task, int nranks) {
  const size_t bytes = task.count * task.elemSize;
  return task.coll == kAllGather || task.coll == kReduceScatter ? bytes * static_cast<size_t>(nranks) : bytes;
}

std::vector<ChannelSpan> ScheduleChannels(const std::vector<ChannelTask>& tasks, int nranks, int commChannels,
                                          int ncclVersion) {
  std::vector<ChannelSpan> spans(tasks.size());
  if (tasks.empty() || commChannels < 1) return spans;
  const size_t minTraffic = MinTrafficPerChannel(ncclVersion);
  // First pass: the plan's traffic (each task at least the minimum) and its channels (the tasks' bounds summed,
  // capped by the communicator's channels).
  size_t planTraffic = 0;
  int planChannels = 0;
  for (const ChannelTask& t : tasks) {
    planTraffic += std::max(minTraffic, t.count * t.elemSize * TrafficPerByte(t.coll, nranks, t.proto));
    planChannels = std::min(planChannels + t.nMaxChannels, commChannels);
  }
  planChannels = std::max(planChannels, 1);
  const size_t perChannel =
      ncclVersion >= 22900 ? AlignUp(planTraffic / planChannels, 16) : std::max(minTraffic, planTraffic / planChannels);
  // Second pass: fill channels in order, in cells of about the minimum traffic; a task starts on the channel the
  // previous one left room on.
  int channel = 0;
  size_t used = 0;  // traffic already on `channel`
  for (size_t i = 0; i < tasks.size(); i++) {
    const ChannelTask& t = tasks[i];
    const size_t perByte = TrafficPerByte(t.coll, nranks, t.proto);
    const size_t cellBytes = AlignUp(DivUp(minTraffic, perByte), 16);
    const size_t elemsPerCell = cellBytes / t.elemSize;
    const size_t cells = DivUp(t.count * t.elemSize, cellBytes);
    const size_t cellTraffic = cellBytes * perByte;
    size_t cellsPerChannel = std::min(cells, DivUp(perChannel, cellTraffic));
    const bool lastChannel = channel + 1 == commChannels;
    size_t lo = lastChannel ? cells : std::min(cells, DivUp(perChannel - used, cellTraffic));
    int mid = static_cast<int>((cells - lo) / cellsPerChannel);
    size_t hi = (cells - lo) % cellsPerChannel;
    const int wanted = (lo != 0 ? 1 : 0) + mid + (hi != 0 ? 1 : 0);
    if (channel + wanted > commChannels) {  // would overflow: squeeze the rest into the channels left
      mid = commChannels - channel - 2;
      cellsPerChannel = (cells - lo) / static_cast<size_t>(mid + 1);
      hi = cellsPerChannel + (cells - lo) % static_cast<size_t>(mid + 1);
    }
    if (hi == 0 && mid != 0) hi = cellsPerChannel, mid -= 1;
    if (lo == 0) {  // no room left on this channel: start on the next one
      channel += 1;
      if (mid == 0) {
        lo = hi, hi = 0;
      } else {
        lo = cellsPerChannel, mid -= 1;
      }
    }
    ChannelSpan& s = spans[i];
    s.channelLo = channel;
    s.nMidChannels = mid;
    s.countMid = mid != 0 ? cellsPerChannel * elemsPerCell : 0;
    s.countLo = lo * elemsPerCell;
    s.countHi = hi * elemsPerCell;
    (s.countHi != 0 ? s.countHi : s.countLo) -= cells * elemsPerCell - t.count;  // the last cell is partial
    s.nChannels = (s.countLo != 0 ? 1 : 0) + mid + (hi != 0 ? 1 : 0);
    const size_t perElement = t.elemSize * perByte;
    if (s.countHi != 0) {
      channel += s.nChannels - 1;
      used = hi * elemsPerCell * perElement;
    } else if (mid != 0) {
      channel += s.nChannels;
      used = 0;
    } else {
      used += lo * elemsPerCell * perElement;
    }
    if (used >= perChannel && channel + 1 != commChannels) channel += 1, used = 0;
  }
  return spans;
}

int ChannelsRun(int coll, size_t count, size_t typeSize, int nranks, int algo, int proto, int requested,
                int commChannels, int ncclVersion, int ringSimpleThreads) {
  ChannelTask t = MakeChannelTask(coll, count, typeSize, proto, requested);
  if (requested == 0)
    t.nMaxChannels =
        NcclAlgoChannels(algo, proto, AlgoBytes(t, nranks), nranks, commChannels, ringSimpleThreads).nMaxChannels;
  return ScheduleChannels({t}, nranks, commChannels, ncclVersion)[0].nChannels;
}

int AllGatherVChannels(const std::vector<size_t>& bytes, int nParts) {
  int used = 0;
  for (int part = 0; part < nParts; part++) {
    const bool any = std::any_of(bytes.begin(), bytes.end(), [&](size_t b) {
      const size_t partBytes = DivUp(b, static_cast<size_t>(nParts));
      const size_t lo = std::min(AlignUp(part * partBytes, 256), b);
      const size_t hi = std::min(AlignUp((part + 1) * partBytes, 256), b);
      return hi > lo;
    });
    if (any) used++;
  }
  return used;
}

}  // namespace simnccl
