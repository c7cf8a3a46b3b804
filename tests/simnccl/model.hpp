// Time model of the simulated NCCL: duration of one collective for a given (collective, bytes, ranks, algorithm,
// protocol, channels, chunk), either built in or interpolated from a measured table (../shared/data format).
// Shared by libnccl.so.2 (simnccl), the simnccl-model CLI and the unit tests; knows nothing of shared memory.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace simnccl {

enum Coll { kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4, kNumColls = 5 };
inline constexpr int kNumAlgos = 7;
inline constexpr int kNumProtos = 3;
inline constexpr int kMaxChannels = 32;

const char* CollName(int coll);             // nccl-tests spelling: all_reduce, all_gather, ...
int CollFromName(const std::string& name);  // -1 if unknown

// Protocol constants as NCCL 2.28 derives them from its default buffer sizes.
size_t ProtoGrain(int proto);         // LL 16, LL128 1920, Simple 512
size_t ProtoMaxChunk(int proto);      // buffer-derived ceiling for a tuner's chunk size
size_t ProtoDefaultChunk(int proto);  // what the simulated NCCL uses without getChunkSize

struct Config {
  int algo = -1, proto = -1, nc = 0;
  size_t chunk = 0;  // per-slice chunk; 0 = protocol default
};

// What a table recorded on a machine says about it (0: not known; the simulated NCCL's settings apply).
struct RecordedMachine {
  int ranks = 0;     // the `# ranks N` header line
  int channels = 0;  // the communicator's channels: the most any recorded run used (tables with channel truth only)
  int ringSimpleThreads = 512;  // 256 when each rank was its own host (`NCCL_HOSTID` in the `# environment` line)
};

// One model instance per process. nBytes is NCCL's nBytes (allgather: total output; reducescatter: total input).
class Model {
 public:
  virtual ~Model() = default;
  // Valid (algo, proto) pairs: the entries NCCL would not mark -1 in the cost table.
  virtual bool Valid(int coll, int algo, int proto) const = 0;
  // Duration of a call forced to cfg (nc already clamped to the budget by the caller, chunk 0 = default).
  virtual double Duration(int coll, size_t nBytes, int nranks, const Config& cfg, int budget) const = 0;
  // What the simulated NCCL runs without any override: its own pick and channel count.
  virtual Config DefaultConfig(int coll, size_t nBytes, int nranks, int budget) const = 0;
  virtual double DefaultDuration(int coll, size_t nBytes, int nranks, int budget) const {
    return Duration(coll, nBytes, nranks, DefaultConfig(coll, nBytes, nranks, budget), budget);
  }
  // The cost estimate handed to the plugin (µs; -1 for invalid pairs). Its argmin is DefaultConfig's pair.
  virtual void CostTable(int coll, size_t nBytes, int nranks, int budget, float table[kNumAlgos][kNumProtos]) const = 0;
  // The machine a recorded table comes from; the built-in model's is all defaults.
  virtual RecordedMachine Machine() const { return {}; }

  struct Best {
    Config cfg;
    double us;
  };
  // Exhaustive best over valid pairs × nc in [1, budget] (× chunk powers of two when withChunk).
  Best Exhaustive(int coll, size_t nBytes, int nranks, int budget, bool withChunk) const;
};

std::unique_ptr<Model> MakeBuiltinModel();
// Loads a table file; returns nullptr and sets *err on failure. A table written by ccltune-bench's landscape mode
// (tests/data/landscapes) also gives, from its comment lines, the machine it was recorded on (RecordedMachine) and
// its `# alias` lines; and from the `.samples` file beside it (PATH with .txt replaced), what NCCL's default ran:
// DefaultConfig returns that algorithm and protocol (at the nearest recorded size) and the cost table's argmin
// points at it. A collective without forced rows (a landscape has no broadcast or reduce) gets the built-in
// model's validity restricted to the pairs a recorded collective ran (so the protocols the topology allows), that
// collective's times at equal bus bandwidth, and the fastest of its valid pairs as NCCL's default.
std::unique_ptr<Model> LoadTableModel(const std::string& path, std::string* err);

// The interference knob (DESIGN §8): a compute load sharing the GPU that takes `level` (0 <= level < 1) of its
// SM time. Each channel is one CTA that waits for an SM the load holds, so a call's duration is the base model's
// times 1 + level * channels / 32: the more channels, the more the load costs (all 32: 1 + level). NCCL's cost
// table and default pick are the base model's (real NCCL does not see the load either), so under load the
// default stays where it was while the best config moves to fewer channels. level 0 returns `base` unchanged.
inline constexpr double kInterferenceChannels = kMaxChannels;
std::unique_ptr<Model> WithInterference(std::unique_ptr<Model> base, double level);
// Parses a level: a whole number in [0, 1). False (and *level untouched) for anything else.
bool ParseInterferenceLevel(const std::string& text, double* level);

// Multiplicative noise for call `seq` of the communicator with hash `commHash`: lognormal(sigma) with rare outliers.
double NoiseFactor(unsigned long long seed, unsigned long long commHash, unsigned long long seq, double sigma);

}  // namespace simnccl
