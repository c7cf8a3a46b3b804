// Multi-rank checks of a recorded landscape of the one-GPU testbed as the simulated NCCL's model, and of the fitted
// noise model in the library, run as `mpirun -np N simnccl_landscape_mpi_test` with SIMNCCL_LANDSCAPE=PREFIX
// (tests/data/landscapes/testbed-...), SIMNCCL_MODEL_FILE=PREFIX.txt, NCCL_TUNER_PLUGIN=STATIC_PLUGIN (this program is
// the tuner: it forces the config under test) and, for the replay, SIMNCCL_NOISE_MODEL. SIMNCCL_CHANNELS is left
// unset: the communicator gets the channels the landscape was recorded with.
#include <gtest/gtest.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "landscape_files.hpp"
#include "mpi_gtest_main.hpp"
#include "noise_fit.hpp"
#include "noise_model.hpp"
#include "tuner_abi.h"

extern "C" {
double simncclVirtualTimeUs(void);
double simncclVirtualStartTimeUs(void);
double simncclLastModelUs(void);
void simncclLastConfig(int* algo, int* proto, int* channels);
unsigned long long simncclCommNoiseKey(ncclComm_t comm);
unsigned long long simncclProcessNoiseKey(void);
unsigned long long simncclProcessCollectives(void);
}

namespace {

int gRank = 0, gSize = 1;
ncclComm_t gWorld = nullptr;
const auto kStream = reinterpret_cast<cudaStream_t>(0x5eed);

// The config the tuner forces on the next calls (algo < 0: none, NCCL's default).
struct Force {
  int algo = -1, proto = -1, nc = 0;
} gForce;

ncclResult_t TunerInit(void** ctx, uint64_t, size_t, size_t, ncclDebugLogger_t, ncclNvlDomainInfo_v5_t*,
                       ncclTunerConstants_v5_t*) {
  *ctx = &gForce;
  return ncclSuccess;
}
ncclResult_t TunerGetCollInfo(void*, ncclFunc_t, size_t, int, float** table, int, int, int, int* nChannels) {
  if (gForce.algo < 0) return ncclSuccess;
  auto cost = reinterpret_cast<float(*)[3]>(table);
  if (cost[gForce.algo][gForce.proto] >= 0) cost[gForce.algo][gForce.proto] = 0;
  *nChannels = gForce.nc;
  return ncclSuccess;
}
ncclResult_t TunerFinalize(void*) { return ncclSuccess; }

std::string Prefix() {
  const char* p = std::getenv("SIMNCCL_LANDSCAPE");
  return p ? p : "";
}

// Buffers for the largest recorded message (16 MiB of float32, every collective's send and receive side).
std::vector<float> gSend, gRecv;

void Call(ncclComm_t comm, int coll, uint64_t bytes) {
  const size_t count = simnccl::Count(coll, bytes, gSize);
  if (gSend.size() < bytes / 4) gSend.assign(bytes / 4, 1.0f), gRecv.assign(bytes / 4, 0.0f);
  ncclResult_t rc = ncclInvalidArgument;
  if (coll == simnccl::kAllReduce)
    rc = ncclAllReduce(gSend.data(), gRecv.data(), count, ncclFloat32, ncclSum, comm, kStream);
  if (coll == simnccl::kAllGather) rc = ncclAllGather(gSend.data(), gRecv.data(), count, ncclFloat32, comm, kStream);
  if (coll == simnccl::kReduceScatter)
    rc = ncclReduceScatter(gSend.data(), gRecv.data(), count, ncclFloat32, ncclSum, comm, kStream);
  if (rc != ncclSuccess) MPI_Abort(MPI_COMM_WORLD, 1);
}

void SetForce(const std::string& config) {
  gForce = Force{};
  if (config != "default")
    ASSERT_EQ(std::sscanf(config.c_str(), "a%d.p%d.nc%d", &gForce.algo, &gForce.proto, &gForce.nc), 3) << config;
}

TEST(RecordedLandscape, EveryConfigAndAliasRunsAsRecordedAtTheTableMedian) {
  simnccl::RecordedSet samples;
  std::string err;
  ASSERT_TRUE(simnccl::ReadRecordedSet(Prefix() + ".samples", &samples, &err)) << err;
  ASSERT_EQ(samples.ranks, gSize);
  const simnccl::Table table = simnccl::ReadTable(Prefix() + ".txt");
  // Every recorded config, NCCL's default included (no override): what ran and the model's time (noise off).
  std::set<std::tuple<std::string, uint64_t, std::string>> seen;
  int checked = 0;
  auto check = [&](const std::string& coll, uint64_t bytes, const std::string& config, const simnccl::Ran& ran,
                   double us) {
    SetForce(config);
    Call(gWorld, simnccl::CollFromName(coll), bytes);
    int algo = -1, proto = -1, nc = 0;
    simncclLastConfig(&algo, &proto, &nc);
    const std::string what = coll + " " + std::to_string(bytes) + " " + config;
    EXPECT_EQ(algo, ran.algo) << what;
    EXPECT_EQ(proto, ran.proto) << what;
    EXPECT_EQ(nc, ran.nc) << what;
    EXPECT_NEAR(simncclLastModelUs(), us, 1e-9 * us) << what;
    checked++;
  };
  for (const simnccl::RecordedCall& c : samples.calls)
    if (seen.insert({c.coll, c.bytes, c.config}).second)
      check(c.coll, c.bytes, c.config, simnccl::ParseRan(c.ran), table.us.at({c.coll, c.bytes, c.config}));
  for (const simnccl::Alias& a : table.aliases)
    check(a.coll, a.bytes, a.config, a.ran, table.us.at({a.coll, a.bytes, a.target}));
  EXPECT_EQ(checked, static_cast<int>(table.us.size() + table.aliases.size()));
}

TEST(FittedNoise, ReplayOfTheRecordedScheduleIsTheModelsAndMatchesTheRecordedStatistics) {
  const char* noiseFile = std::getenv("SIMNCCL_NOISE_MODEL");
  if (!noiseFile) GTEST_SKIP() << "SIMNCCL_NOISE_MODEL unset";
  simnccl::RecordedSet schedule;
  simnccl::NoiseParams params;
  std::string err;
  ASSERT_TRUE(simnccl::ReadRecordedSet(Prefix() + ".samples", &schedule, &err)) << err;
  ASSERT_TRUE(simnccl::LoadNoiseParams(noiseFile, &params, &err)) << err;
  // A communicator of its own, so the replay's calls are its calls 1, 2, ... (and the process's calls from
  // simncclProcessCollectives() on, which the slow periods follow).
  ncclUniqueId id;
  if (gRank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, gSize, id, gRank), ncclSuccess);
  // The recorded schedule: per block, its config forced, warm-up calls, then the timed calls, each timed by reading
  // this rank's clock around it.
  std::vector<double> mine;
  const unsigned long long seq0 = simncclProcessCollectives();
  for (size_t i = 0; i < schedule.calls.size();) {
    const simnccl::RecordedCall& first = schedule.calls[i];
    size_t j = i;
    while (j < schedule.calls.size() && schedule.calls[j].config == first.config &&
           schedule.calls[j].bytes == first.bytes && schedule.calls[j].coll == first.coll &&
           schedule.calls[j].round == first.round && schedule.calls[j].pos == first.pos)
      j++;
    SetForce(first.config);
    const int coll = simnccl::CollFromName(first.coll);
    for (size_t k = 0; k < static_cast<size_t>(schedule.warmupCalls) + (j - i); k++) {
      const double t0 = simncclVirtualTimeUs();
      Call(comm, coll, first.bytes);
      const double t1 = simncclVirtualTimeUs();
      if (k >= static_cast<size_t>(schedule.warmupCalls)) mine.push_back(t1 - t0);
    }
    i = j;
  }
  ASSERT_EQ(mine.size(), schedule.calls.size());
  std::vector<double> lo(mine.size()), hi(mine.size());
  MPI_Reduce(mine.data(), lo.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
  MPI_Reduce(mine.data(), hi.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  const unsigned long long key = simncclCommNoiseKey(comm);
  ncclCommDestroy(comm);
  if (gRank != 0) return;
  // The library's calls are the model's (noise_fit.hpp's SimulateSet of the same schedule, seed and key), up to the
  // table's rounding of the recorded medians to 0.01 µs.
  const char* seedEnv = std::getenv("SIMNCCL_SEED");
  const uint64_t seed = seedEnv ? std::strtoull(seedEnv, nullptr, 10) : 1;
  const simnccl::RecordedSet model =
      simnccl::SimulateSet(simnccl::FittedNoise(params), schedule, seed, key, simncclProcessNoiseKey(), seq0);
  simnccl::RecordedSet replay = schedule;
  int differ = 0;
  for (size_t k = 0; k < replay.calls.size(); k++) {
    replay.calls[k].minUs = lo[k], replay.calls[k].maxUs = hi[k];
    const bool same = std::fabs(lo[k] - model.calls[k].minUs) <= 1e-3 * model.calls[k].minUs &&
                      std::fabs(hi[k] - model.calls[k].maxUs) <= 1e-3 * model.calls[k].maxUs;
    if (!same && differ++ < 5)
      ADD_FAILURE() << "call " << k << ": library min/max " << lo[k] << "/" << hi[k] << ", model "
                    << model.calls[k].minUs << "/" << model.calls[k].maxUs;
  }
  EXPECT_EQ(differ, 0);
  // And its statistics are the recorded ones, within the tolerances: the median over this run and four more
  // seeds of the model it was just shown to be (one run's slow periods are a handful of blocks).
  std::vector<simnccl::NoiseStats> runs{simnccl::ComputeNoiseStats({replay})};
  for (uint64_t s = 1; s <= 4; s++)
    runs.push_back(simnccl::ComputeNoiseStats(
        {simnccl::SimulateSet(simnccl::FittedNoise(params), schedule, seed + s, key, simncclProcessNoiseKey(), seq0)}));
  const auto checks = simnccl::CompareNoiseStats(simnccl::ComputeNoiseStats({schedule}), runs);
  std::printf("%s", simnccl::FormatChecks(checks, "this run of the library (SIMNCCL_SEED=" + std::to_string(seed) +
                                                      ") and the model at the next 4 seeds")
                        .c_str());
  for (const simnccl::StatCheck& c : checks) EXPECT_TRUE(c.pass) << c.name;
}

// A timer's start reads the clock after the rank's lag from its last collective, also where nothing read the clock
// at that collective's end (an untimed call): a call timed right after an untimed 16 MiB reduce-scatter measures
// what it measures after a timed one. Its start is the rank's clock as a plain read after the collective's end leaves
// it; and the lags differ by rank (the fitted noise), so the starts spread over ranks.
TEST(FittedNoise, ATimersStartComesAfterTheRanksLagAlsoAfterAnUntimedCall) {
  if (!std::getenv("SIMNCCL_NOISE_MODEL")) GTEST_SKIP() << "SIMNCCL_NOISE_MODEL unset: no lags";
  ncclUniqueId id;
  if (gRank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, gSize, id, gRank), ncclSuccess);
  SetForce("default");
  double spread = 0;
  for (int i = 0; i < 8; i++) {
    Call(comm, simnccl::kReduceScatter, 16 << 20);  // untimed
    const double start = simncclVirtualStartTimeUs();
    EXPECT_EQ(simncclVirtualTimeUs(), start) << "the lag was already added at the start";
    Call(comm, simnccl::kReduceScatter, 16 << 20);  // timed: stop, then a plain read after it
    const double end = simncclVirtualTimeUs();
    EXPECT_GT(simncclVirtualTimeUs(), end) << "the second read after a call comes after the rank's lag";
    double lo = start, hi = start;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    spread = std::max(spread, hi - lo);
  }
  EXPECT_GT(spread, 0) << "every rank started at the collective's end: no lag was added";
  ncclCommDestroy(comm);
}

}  // namespace

extern "C" {
__attribute__((visibility("default")))
ncclTuner_v5_t ncclTunerPlugin_v5 = {"landscape-test", TunerInit, TunerGetCollInfo, TunerFinalize};
}

int main(int argc, char** argv) { return simnccl_test::RunMpiTests(argc, argv, &gRank, &gSize, &gWorld); }
