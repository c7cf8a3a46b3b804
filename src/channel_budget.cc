// CCLTUNE_CHANNEL_BUDGET: communicators created with more channels than NCCL gives them, NCCL's default
// kept as NCCL runs it on its own budget (see CommLifecycle::RaiseBudget).
//
// How: NCCL creates the communicator as the user asked (C0). A probe reads how many channels NCCL gave it
// (B0): one all-reduce of 4 MiB on a stream of ccltune's, ring/LL asked for on every channel; channel truth
// (ccltune's profiler plugin) reports what ran, which NCCL clamps to the communicator's channels. The ranks
// agree on it (the minimum over ranks, in the same buffer), then split C0 into C1 with ncclConfig_t
// minCTAs = maxCTAs = the budget (NCCL copies channels up to minCTAs), destroy C0 and hand C1 to the user.
//
// NCCL's cost table does not depend on the communicator's channel count on one node (its bandwidths come
// from the topology graphs, which minCTAs leaves alone), so on C1 NCCL picks the algorithm and protocol it
// picks on C0; what differs is the channel count it starts from before taking fewer for a small message.
// NCCL's default on C1 is therefore run with NCCL's own algorithm and protocol on min(what NCCL ran
// untouched on C1, B0) channels (PluginBridge::GetCollInfo), which is what it runs on C0.
//
// Every rank of a communicator takes the same path when they all have the same setting (as with NCCL's own
// environment); what a rank alone could find out (a failed probe, no channel truth) is agreed on first. A rank
// that cannot allocate the probe's 4 MiB or a stream at creation takes part in neither all-reduce, and its
// peers wait in the probe, as they would in NCCL's own init on a rank out of memory.
#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_format.h"
#include "src/comm_lifecycle.hpp"
#include "src/comm_state.hpp"
#include "src/inflight.hpp"
#include "src/log.hpp"
#include "src/nccl_api.hpp"
#include "src/plugin_bridge.hpp"
#include "src/runtime.hpp"

namespace ccltune {
namespace {

constexpr size_t kProbeFloats = size_t{1} << 20;  // 4 MiB: at least a few KiB per channel on every protocol

bool EnvSet(const char* name) {
  const char* v = getenv(name);
  return v != nullptr && *v != '\0';
}

}  // namespace

std::string CommLifecycle::WhyNotRaise(const ncclConfig_t* user) const {
  if (user != nullptr && (user->minCTAs != NCCL_CONFIG_UNDEF_INT || user->maxCTAs != NCCL_CONFIG_UNDEF_INT)) {
    return "the communicator's config sets minCTAs or maxCTAs";
  }
  for (const char* env : {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS"}) {
    if (EnvSet(env)) return absl::StrFormat("%s is set", env);
  }
  if (!Blocking(user)) return "non-blocking communicator";
  if (Real().CommSplit == nullptr || Real().CommDestroy == nullptr || Real().AllReduce == nullptr) {
    return "this NCCL has no ncclCommSplit";
  }
  if (rt_.device() == nullptr) return "no device backend";
  return "";
}

int CommLifecycle::ProbeChannels(ncclComm_t comm) {
  executor::Device* dev = rt_.device();
  absl::StatusOr<void*> buf = dev->Alloc(kProbeFloats * sizeof(float));
  absl::StatusOr<executor::Stream> stream = dev->CreateStream();
  int agreed = 0;
  if (buf.ok() && stream.ok()) {
    int mine = 0;
    if (dev->MemsetAsync(*buf, 0, kProbeFloats * sizeof(float), *stream).ok()) {
      ChannelProbe& probe = ThisThread().probe;
      probe = ChannelProbe{true, 0};
      const ncclResult_t r =
          Real().AllReduce(*buf, *buf, kProbeFloats, ncclFloat32, ncclSum, comm, static_cast<cudaStream_t>(*stream));
      probe.active = false;
      // No channel truth (ccltune is not NCCL's profiler plugin here) leaves it at 0: no raise, on every rank.
      mine = (r == ncclSuccess && rt_.plugin().channel_truth()) ? probe.ran : 0;
    }
    // The ranks agree: the smallest count read (0 where a rank could not read one).
    int32_t word = mine;
    if (dev->CopyToDeviceAsync(*buf, &word, sizeof(word), *stream).ok() &&
        Real().AllReduce(*buf, *buf, 1, ncclInt32, ncclMin, comm, static_cast<cudaStream_t>(*stream)) == ncclSuccess &&
        dev->CopyToHostAsync(&word, *buf, sizeof(word), *stream).ok() && dev->StreamSynchronize(*stream).ok()) {
      agreed = word;
    }
  }
  if (stream.ok()) dev->DestroyStream(*stream);
  if (buf.ok()) dev->Free(*buf);
  return agreed;
}

ncclComm_t CommLifecycle::RaiseBudget(ncclComm_t c0, const ncclConfig_t* user, int* baseline) {
  *baseline = 0;
  const int budget = rt_.settings().channel_budget;
  if (budget <= 0 || c0 == nullptr) return c0;
  int rank = 0;
  if (Real().CommUserRank(c0, &rank) != ncclSuccess) return c0;
  SetLogRank(rank);
  if (const std::string why = WhyNotRaise(user); !why.empty()) {
    if (rank == 0) {
      CCLTUNE_INFO(kInit, "communicator %p keeps NCCL's channel budget (CCLTUNE_CHANNEL_BUDGET=%d): %s",
                   static_cast<void*>(c0), budget, why);
    }
    return c0;
  }
  const int b0 = ProbeChannels(c0);
  if (b0 <= 0) {
    if (rank == 0) {
      CCLTUNE_WARN(kInit,
                   "communicator %p keeps NCCL's channel budget: CCLTUNE_CHANNEL_BUDGET=%d needs the channels NCCL "
                   "gave it, which channel truth (ccltune as NCCL's profiler plugin) could not read on every rank",
                   static_cast<void*>(c0), budget);
    }
    return c0;
  }
  if (b0 >= budget) {
    if (rank == 0) {
      CCLTUNE_INFO(kInit, "communicator %p has %d channels, CCLTUNE_CHANNEL_BUDGET=%d: nothing to raise",
                   static_cast<void*>(c0), b0, budget);
    }
    return c0;
  }
  ncclConfig_t raised = NCCL_CONFIG_INITIALIZER;
  if (user != nullptr) raised = *user;
  raised.minCTAs = budget;
  raised.maxCTAs = budget;
  ncclComm_t c1 = nullptr;
  if (Real().CommSplit(c0, 0, rank, &c1, &raised) != ncclSuccess || c1 == nullptr) {
    CCLTUNE_WARN(kInit, "communicator %p: creating it with %d channels (ncclCommSplit) failed; it keeps NCCL's %d",
                 static_cast<void*>(c0), budget, b0);
    return c0;
  }
  Real().CommDestroy(c0);
  *baseline = b0;
  if (rank == 0) {
    LogAlways(absl::StrFormat(
        "ccltune: communicator %p created with %d channels (CCLTUNE_CHANNEL_BUDGET), NCCL gave it %d; NCCL's "
        "default runs as on %d",
        static_cast<void*>(c1), budget, b0, b0));
  }
  return c1;
}

}  // namespace ccltune
