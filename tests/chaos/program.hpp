// The chaos suite's random programs (docs/simulated-cluster.md, "Chaos suite"): a seed determines the
// whole run, every rank's part of it and every fault, so a failing seed reproduces its program. The
// launcher and every rank draw the same Program from the seed; nothing here depends on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace chaos {

// splitmix64: portable (unlike std:: distributions), so a seed means the same program everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  int Range(int lo, int hi) { return lo + static_cast<int>(Below(static_cast<uint64_t>(hi - lo + 1))); }
  bool Chance(double p) { return static_cast<double>(Next() >> 11) * 0x1.0p-53 < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

 private:
  uint64_t s_;
};

// Collectives in simnccl / ccltune numbering (ncclFunc_t): broadcast 0, reduce 1, allgather 2, reducescatter 3,
// allreduce 4.
enum Coll { kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4 };
const char* CollName(int coll);

struct Call {
  int comm = 0;  // index into Program::comms
  int coll = kAllReduce;
  int dtype = 7;  // ncclDataType_t
  int op = 0;     // ncclRedOp_t; -1 for broadcast/allgather
  size_t count = 0;
  int root = 0;  // taken modulo the communicator's size
};

struct P2P {
  int comm = 0;
  int pattern = 0;  // 0: pipeline chain r-1 -> r -> r+1 (ungrouped); 1: grouped ring exchange
  int dtype = 7;
  size_t count = 0;
};

inline constexpr int kCheckEvery = 4;

struct Op {
  enum Kind { kColl, kGroup, kP2P } kind = kColl;
  std::vector<Call> calls;  // kColl: one; kGroup: 2-4 (may span communicators)
  P2P p2p;                  // kP2P; in a kGroup with with_p2p, also issued inside the group
  bool with_p2p = false;
  bool checked = false;  // data moves on this op and every rank verifies its results (every kCheckEvery-th
                         // iteration and the last)
};

enum class CommKind { kWorld, kSplit, kInit };
struct CommSpec {
  CommKind kind = CommKind::kWorld;
  std::vector<int> color;    // kSplit: per world rank, -1 = NCCL_SPLIT_NOCOLOR
  bool reverse_key = false;  // kSplit: ranks ordered by descending world rank
  std::vector<int> members;  // kInit: world ranks, in communicator rank order
  int id = 0;                // kWorld / kInit: index of the unique id
};

// At iteration `iter`, before body op `before_op`: every member destroys or aborts the communicator;
// with `recreate` it is made again (a world or an init with a fresh unique id, a split again from world).
struct Event {
  int iter = 0;
  int before_op = 0;
  int comm = 0;
  bool abort = false;
  bool recreate = false;
  int new_id = 0;
};

// At iteration `iter`, before body op `before_op`: every member of the communicator calls ccltuneSetMode
// (0 tune, 1 NCCL's default, 2 frozen, 3 forced to the given config), as the API requires: on every
// rank at the same point, outside a group.
struct ModeSwitch {
  int iter = 0;
  int before_op = 0;
  int comm = 0;
  int mode = 0;
  int algo = -1, proto = -1, channels = 0;
  int64_t chunk = 0;
};

// What the leader's import file holds (all ranks name the same path; only the leader reads it).
enum ImportKind {
  kNoImport = -1,
  kTruncated,
  kGarbage,
  kEmpty,
  kWrongSchema,
  kWrongFingerprint,
  kMissing,
  kDirectory,
  kNumImportKinds
};
const char* ImportKindName(int kind);

struct Program {
  uint64_t seed = 0;
  int nranks = 2;
  int ids = 1;  // unique ids the launcher must make
  std::vector<CommSpec> comms;
  std::vector<Op> body;  // one iteration
  int iters = 1;
  std::vector<Event> events;
  bool abort_at_end = false;  // abort instead of destroy after the last iteration
  std::vector<ModeSwitch> modes;

  // Faults.
  std::vector<int> delay_max_us;  // per world rank: sleep up to this long before an op (0 none)
  int delay_pct = 0;              // chance per op, percent
  int slow_leader_us = 0;         // world rank 0 sleeps this long before every op
  int slow_create_rank = -1;      // this world rank sleeps before creating communicator slow_create_comm
  int slow_create_comm = 0;
  int slow_create_ms = 0;
  std::string drift;  // SIMNCCL_DRIFT, empty for none
  int fail_setup_rank = -1;
  int import_kind = kNoImport;

  // Environment of every rank (same on all, as ccltune requires), besides the fault knobs above.
  std::vector<std::pair<std::string, std::string>> env;

  // One line: ranks, communicators, body, faults.
  std::string Describe() const;
  // Feature and fault classes this program exercises (names as in the runner's summary).
  std::vector<std::string> Classes() const;
};

Program Generate(uint64_t seed);

// Element size of an ncclDataType_t.
size_t DtypeSize(int dtype);

}  // namespace chaos
