// ccltune-bench: command-line parsing. Every name goes through the shared vocabulary (vocab/), so
// a typo is an error naming the accepted values rather than a silent default.
#include "bench/options.hpp"

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <map>

#include "absl/status/status.h"

namespace ccltune::bench {
namespace {

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

absl::StatusOr<int64_t> ParseInt(const std::string& opt, const std::string& text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < lo || v > hi) {
    return absl::InvalidArgumentError(opt + ": '" + text + "' is not an integer in [" + std::to_string(lo) + ", " +
                                      std::to_string(hi) + "]");
  }
  return v;
}

std::string Names(std::string_view (*name)(int), int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? "|" : "") + std::string(name(i));
  return s;
}
std::string_view CollNameOf(int i) { return CollName(static_cast<Coll>(i)); }

}  // namespace

absl::StatusOr<uint64_t> ParseBytes(const std::string& text) {
  if (text.empty()) return absl::InvalidArgumentError("empty size");
  uint64_t mult = 1;
  std::string digits = text;
  switch (text.back()) {
    case 'K':
    case 'k':
      mult = 1ull << 10;
      break;
    case 'M':
    case 'm':
      mult = 1ull << 20;
      break;
    case 'G':
    case 'g':
      mult = 1ull << 30;
      break;
    default:
      break;
  }
  if (mult != 1) digits.pop_back();
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(digits.c_str(), &end, 10);
  if (digits.empty() || errno != 0 || *end != '\0' || digits[0] == '-') {
    return absl::InvalidArgumentError("'" + text + "' is not a size (a number with an optional K, M or G suffix)");
  }
  return static_cast<uint64_t>(v) * mult;
}

std::vector<uint64_t> SweepSizes(const Options& o) {
  std::vector<uint64_t> sizes;
  for (uint64_t b = o.min_bytes; b <= o.max_bytes; b *= o.step_factor) {
    sizes.push_back(b);
    if (o.step_factor <= 1) break;
  }
  return sizes;
}

absl::StatusOr<Options> ParseOptions(const std::vector<std::string>& args) {
  Options o;
  using Handler = std::function<absl::Status(const std::string&)>;
  auto status_of = [](auto&& so, auto&& assign) -> absl::Status {
    if (!so.ok()) return so.status();
    assign(*so);
    return absl::OkStatus();
  };
  const std::map<std::string, Handler> handlers = {
      {"-c",
       [&](const std::string& v) -> absl::Status {
         o.colls.clear();
         for (const std::string& name : SplitCommas(v)) {
           std::optional<Coll> c = ParseColl(name);
           if (!c)
             return absl::InvalidArgumentError("-c: unknown collective '" + name +
                                               "' (accepted: " + Names(&CollNameOf, kNumColls) + ")");
           o.colls.push_back(*c);
         }
         if (o.colls.empty()) return absl::InvalidArgumentError("-c: no collective given");
         return absl::OkStatus();
       }},
      {"-b", [&](const std::string& v) { return status_of(ParseBytes(v), [&](uint64_t x) { o.min_bytes = x; }); }},
      {"-e", [&](const std::string& v) { return status_of(ParseBytes(v), [&](uint64_t x) { o.max_bytes = x; }); }},
      {"-f",
       [&](const std::string& v) {
         return status_of(ParseInt("-f", v, 2, 1 << 20), [&](int64_t x) { o.step_factor = x; });
       }},
      {"-d",
       [&](const std::string& v) -> absl::Status {
         o.dtypes.clear();
         for (const std::string& name : SplitCommas(v)) {
           std::optional<int> d = ParseDtype(name);
           if (!d)
             return absl::InvalidArgumentError("-d: unknown datatype '" + name +
                                               "' (accepted: " + Names(&DtypeName, 12) + ")");
           o.dtypes.push_back(*d);
         }
         if (o.dtypes.empty()) return absl::InvalidArgumentError("-d: no datatype given");
         return absl::OkStatus();
       }},
      {"-o",
       [&](const std::string& v) -> absl::Status {
         for (int op = 0; op < 5; ++op) {
           if (v == RedOpName(op)) {
             o.op = op;
             return absl::OkStatus();
           }
         }
         return absl::InvalidArgumentError("-o: unknown reduction '" + v + "' (accepted: " + Names(&RedOpName, 5) +
                                           ")");
       }},
      {"-r",
       [&](const std::string& v) { return status_of(ParseInt("-r", v, 0, 1 << 30), [&](int64_t x) { o.root = x; }); }},
      {"-n",
       [&](const std::string& v) { return status_of(ParseInt("-n", v, 1, 1 << 20), [&](int64_t x) { o.iters = x; }); }},
      {"-w",
       [&](const std::string& v) {
         return status_of(ParseInt("-w", v, 0, 1 << 20), [&](int64_t x) { o.warmup = x; });
       }},
      {"--check",
       [&](const std::string& v) {
         return status_of(ParseInt("--check", v, 0, 1), [&](int64_t x) { o.check = x != 0; });
       }},
      {"--mode",
       [&](const std::string& v) -> absl::Status {
         o.compare = o.oracle = o.overhead = o.landscape = o.loop = false;
         for (const std::string& m : SplitCommas(v)) {
           if (m == "compare") {
             o.compare = true;
           } else if (m == "oracle") {
             o.oracle = true;
           } else if (m == "overhead") {
             o.overhead = true;
           } else if (m == "landscape") {
             o.landscape = true;
           } else if (m == "loop") {
             o.loop = true;
           } else {
             return absl::InvalidArgumentError("--mode: unknown mode '" + m +
                                               "' (accepted: compare, oracle, overhead, landscape, loop)");
           }
         }
         if (!o.compare && !o.oracle && !o.overhead && !o.landscape && !o.loop)
           return absl::InvalidArgumentError("--mode: no mode given");
         if (o.loop && (o.compare || o.oracle || o.overhead || o.landscape))
           return absl::InvalidArgumentError("--mode: loop runs alone (not with compare or oracle)");
         if (o.overhead && (o.compare || o.oracle || o.landscape))
           return absl::InvalidArgumentError("--mode: overhead runs alone (not with compare or oracle)");
         if (o.landscape && (o.compare || o.oracle))
           return absl::InvalidArgumentError("--mode: landscape runs alone (not with compare or oracle)");
         return absl::OkStatus();
       }},
      {"--max-tune-calls",
       [&](const std::string& v) {
         return status_of(ParseInt("--max-tune-calls", v, 0, 1 << 30), [&](int64_t x) { o.max_tune_calls = x; });
       }},
      {"--tune-step",
       [&](const std::string& v) {
         return status_of(ParseInt("--tune-step", v, 1, 1 << 20), [&](int64_t x) { o.tune_step = x; });
       }},
      {"--search-cost",
       [&](const std::string& v) {
         return status_of(ParseInt("--search-cost", v, 0, 1), [&](int64_t x) { o.search_cost = x != 0; });
       }},
      {"--settle-calls",
       [&](const std::string& v) {
         return status_of(ParseInt("--settle-calls", v, 0, 1 << 30), [&](int64_t x) { o.settle_calls = x; });
       }},
      {"--loop-repeat",
       [&](const std::string& v) {
         return status_of(ParseInt("--loop-repeat", v, 1, 1 << 10), [&](int64_t x) { o.loop_repeat = x; });
       }},
      {"--loop-iters",
       [&](const std::string& v) {
         return status_of(ParseInt("--loop-iters", v, 1, 1 << 20), [&](int64_t x) { o.loop_iters = x; });
       }},
      {"--oracle-confirm",
       [&](const std::string& v) {
         return status_of(ParseInt("--oracle-confirm", v, 0, 64), [&](int64_t x) { o.oracle_confirm = x; });
       }},
      {"--oracle-both",
       [&](const std::string& v) {
         return status_of(ParseInt("--oracle-both", v, 0, 1), [&](int64_t x) { o.oracle_both = x != 0; });
       }},
      {"--json",
       [&](const std::string& v) -> absl::Status {
         if (v.empty()) return absl::InvalidArgumentError("--json: empty file name");
         o.json_path = v;
         return absl::OkStatus();
       }},
      {"--budget",
       [&](const std::string& v) {
         return status_of(ParseInt("--budget", v, 0, INT64_MAX), [&](int64_t x) { o.budget = x; });
       }},
      {"--overhead-calls",
       [&](const std::string& v) {
         return status_of(ParseInt("--overhead-calls", v, 10, 1 << 24), [&](int64_t x) { o.overhead_calls = x; });
       }},
      {"--interference",
       [&](const std::string& v) -> absl::Status {
         o.load.gemm = o.load.mem = false;
         for (const std::string& k : SplitCommas(v)) {
           if (k == "gemm") {
             o.load.gemm = true;
           } else if (k == "mem") {
             o.load.mem = true;
           } else if (k != "none") {
             return absl::InvalidArgumentError("--interference: unknown load '" + k + "' (accepted: gemm, mem, none)");
           }
         }
         return absl::OkStatus();
       }},
      {"--interference-mode",
       [&](const std::string& v) -> absl::Status {
         if (v == "step") {
           o.load.mode = LoadMode::kStep;
         } else if (v == "queue") {
           o.load.mode = LoadMode::kQueue;
         } else {
           return absl::InvalidArgumentError("--interference-mode: unknown mode '" + v + "' (accepted: step, queue)");
         }
         return absl::OkStatus();
       }},
      {"--interference-phase",
       [&](const std::string& v) -> absl::Status {
         if (v == "all") {
           o.load.while_tuning = true;
         } else if (v == "compare") {
           o.load.while_tuning = false;
         } else {
           return absl::InvalidArgumentError("--interference-phase: unknown phase '" + v +
                                             "' (accepted: all, compare)");
         }
         return absl::OkStatus();
       }},
      {"--interference-gemm-n",
       [&](const std::string& v) -> absl::Status {
         absl::StatusOr<int64_t> n = ParseInt("--interference-gemm-n", v, 64, 32768);
         if (!n.ok()) return n.status();
         if (*n % 64 != 0)
           return absl::InvalidArgumentError("--interference-gemm-n: " + v + " is not a multiple of 64");
         o.load.gemm_n = static_cast<int>(*n);
         return absl::OkStatus();
       }},
      {"--interference-mem-bytes",
       [&](const std::string& v) -> absl::Status {
         absl::StatusOr<uint64_t> b = ParseBytes(v);
         if (!b.ok()) return b.status();
         if (*b < (1u << 20)) return absl::InvalidArgumentError("--interference-mem-bytes: at least 1M");
         o.load.mem_bytes = *b;
         return absl::OkStatus();
       }},
      {"--interference-depth",
       [&](const std::string& v) {
         return status_of(ParseInt("--interference-depth", v, 1, 64), [&](int64_t x) { o.load.depth = x; });
       }},
      {"--landscape-out",
       [&](const std::string& v) -> absl::Status {
         if (v.empty()) return absl::InvalidArgumentError("--landscape-out: empty prefix");
         o.landscape_out = v;
         return absl::OkStatus();
       }},
      {"--landscape-rounds",
       [&](const std::string& v) {
         return status_of(ParseInt("--landscape-rounds", v, 1, 100), [&](int64_t x) { o.landscape_rounds = x; });
       }},
      {"--landscape-samples",
       [&](const std::string& v) {
         return status_of(ParseInt("--landscape-samples", v, 1, 10000), [&](int64_t x) { o.landscape_samples = x; });
       }},
      {"--landscape-switch",
       [&](const std::string& v) -> absl::Status {
         if (v != "0" && v != "1") return absl::InvalidArgumentError("--landscape-switch: 0 or 1");
         o.landscape_switch = v == "1";
         return absl::OkStatus();
       }},
      {"--landscape-channels",
       [&](const std::string& v) {
         return status_of(ParseInt("--landscape-channels", v, 0, 64), [&](int64_t x) { o.landscape_channels = x; });
       }},
      {"--seed",
       [&](const std::string& v) {
         return status_of(ParseInt("--seed", v, 0, INT64_MAX), [&](int64_t x) { o.seed = x; });
       }},
  };
  const std::map<std::string, std::string> aliases = {
      {"--collectives", "-c"},  {"--minbytes", "-b"}, {"--maxbytes", "-e"}, {"--stepfactor", "-f"},
      {"--datatype", "-d"},     {"--op", "-o"},       {"--root", "-r"},     {"--iters", "-n"},
      {"--warmup_iters", "-w"}, {"--warmup", "-w"}};

  for (size_t i = 0; i < args.size(); ++i) {
    std::string key = args[i];
    if (key == "-h" || key == "--help") {
      o.help = true;
      return o;
    }
    std::string value;
    bool has_value = false;
    if (size_t eq = key.find('='); key.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
      has_value = true;
    }
    if (auto a = aliases.find(key); a != aliases.end()) key = a->second;
    auto h = handlers.find(key);
    if (h == handlers.end()) return absl::InvalidArgumentError("unknown option '" + args[i] + "' (see --help)");
    if (!has_value) {
      if (i + 1 >= args.size()) return absl::InvalidArgumentError(key + ": missing value");
      value = args[++i];
    }
    if (absl::Status st = h->second(value); !st.ok()) return st;
  }
  if (o.min_bytes == 0 || o.max_bytes < o.min_bytes) {
    return absl::InvalidArgumentError("-b/-e: need 0 < minbytes <= maxbytes");
  }
  if (o.loop && o.load.on()) return absl::InvalidArgumentError("--mode loop: --interference is not supported");
  if (o.landscape && o.landscape_out.empty())
    return absl::InvalidArgumentError("--mode landscape needs --landscape-out PREFIX");
  // Results measured under interference must say so in their file name, not only inside.
  if (o.load.on() && !o.json_path.empty()) {
    const size_t slash = o.json_path.find_last_of('/');
    const std::string base = slash == std::string::npos ? o.json_path : o.json_path.substr(slash + 1);
    if (base.find("interference") == std::string::npos) {
      return absl::InvalidArgumentError("--json " + o.json_path +
                                        ": a file measured under --interference must have 'interference' in its name");
    }
  }
  return o;
}

std::string Usage() {
  return R"(ccltune-bench: NCCL default vs ccltune-tuned collectives, nccl-tests style (one MPI rank per GPU).
usage: mpirun -np N ccltune-bench [options]
  -c, --collectives LIST   allreduce,allgather,reducescatter,broadcast,reduce   [allreduce]
  -b, --minbytes SIZE      smallest size (K/M/G suffixes; nccl-tests sizes)      [256K]
  -e, --maxbytes SIZE      largest size                                          [256M]
  -f, --stepfactor F       size multiplier                                       [4]
  -d, --datatype LIST      float32,bfloat16,float16,... (ncclDataType_t names)   [float32]
  -o, --op OP              sum|prod|max|min|avg                                  [sum]
  -r, --root R             root of broadcast / reduce                            [0]
  -n, --iters N            timed calls per side                                  [100]
  -w, --warmup N           warm-up calls per side                                [5]
      --check 0|1          data check of every configuration measured            [1]
      --mode LIST          compare,oracle, or overhead, landscape or loop alone  [compare]
      --max-tune-calls N   cap on tuning calls per row (compare)                 [2000]
      --tune-step N        compare: calls per host-synchronized step while tuning [8]
      --settle-calls N     compare: calls of B after it converged, before timing  [0]
      --search-cost 0|1    compare: host wall time of the tuning loop, and of the
                           same loop on NCCL's default for as many calls           [0]
      --loop-repeat N      loop: calls of each workload per iteration            [1]
      --loop-iters N       loop: iterations at most until every workload settled [300]
      --oracle-confirm K   oracle: re-time the best K configs and the default in 3
                           alternating rounds; 0 keeps the screening pass's best   [4]
      --oracle-both 0|1    oracle with compare: each round also times every candidate
                           forced on B, the tuned communicator, after A            [0]
      --json FILE          write the results as JSON (rank 0)
      --budget N           recorded in the report only
      --seed N             offsets the data pattern; recorded in the report      [0]
      --interference LIST  gemm,mem: GPU compute load while tuning and timing    [none]
      --interference-mode step|queue  step: in lockstep with each call; queue: a
                                   queue kept full by a thread                    [step]
      --interference-phase all|compare  all: while B is tuned and while calls are
                                   timed; compare: while timed only (after B converged) [all]
      --interference-gemm-n N      gemm: n x n float matrices, multiple of 64    [1024]
      --interference-mem-bytes SIZE  mem: bytes of each triad array               [64M]
      --interference-depth N       step: kernels per step; queue: queued at most [4]
      --overhead-calls N   overhead: host-timed calls per communicator           [2000]
      --landscape-out PREFIX    landscape: writes PREFIX.txt (table) and PREFIX.samples
      --landscape-rounds N      landscape: passes over every config, new order each [3]
      --landscape-samples N     landscape: timed calls per config and pass          [16]
      --landscape-channels N    landscape: channels asked 1..N (0: ccltune's budget) [0]
      --landscape-switch 0|1    landscape: 1 times each config right after NCCL's default
                                and the default right after it, against their repeats [0]
  -h, --help
compare: communicator A runs NCCL's default (ccltuneModeDefault), B is tuned by ccltune; after B
converges (and --settle-calls more calls of B alone), A and B calls alternate and each is timed. oracle: every configuration of the search
space is forced on A and timed (screening); the best K and NCCL's default are timed again in 3
alternating rounds, and the best median of those re-timings is the oracle (the minimum of one pass
over ~100-200 noisy medians is biased low: the screening minimum is reported as oracle_screen_us). overhead: host time per enqueue call (the
GPU held back by a spin kernel so the host never waits) and GPU time per call of A (NCCL's default),
B (tuned to convergence) and C (forced to B's config: no timing, no sync ops), and device memory
used after default calls vs after tuning every row (MiB per rank). --interference: kernels on a
stream of their own (a tiled FMA GEMM, a memory-bound triad, alternating) keep the GPU busy while
the calls are tuned and timed, for A and B alike; never during data checks (--interference-phase
compare: not while B is tuned either, so the machine changes under a converged B). Step mode: each call is
a training step whose compute starts with the collective; rows then also report the steps'
makespans (default_step_us, tuned_step_us). Queue mode: a thread keeps the queue full; the load's
own throughput is in the report's meta. A JSON file measured under interference must have
'interference' in its name.
landscape: every configuration (NCCL's default, and every valid algorithm x protocol x channels
asked) is forced on A, data-checked once, and timed in several passes, each in a new seeded order
with NCCL's default re-timed after every 6 configs; configs NCCL runs identically to an earlier one
(ccltune's channel truth) are recorded as aliases, not timed. Every call's min and max over ranks
goes to PREFIX.samples, the medians to PREFIX.txt (the reference tables' format).
loop: every row of the sweep is one workload of a training loop on B (tuned): each iteration runs
every workload --loop-repeat times in sweep order, then synchronizes the stream and the ranks once
(the loss), until rank 0 reads every workload settled or --loop-iters; then -n iterations of A and
of B alternate (A B B A ...), each timed on the device from its first call to its last (maximum
over ranks): the iteration by which all converged, and the converged loop against NCCL's default.
The simulated backend accepts --interference and says it has no effect (it runs no kernels).
Sizes: allgather = output bytes,
reducescatter = input bytes. ccltune is reached through its C API with dlsym (LD_PRELOAD it);
without it only NCCL's default is measured.
)";
}

}  // namespace ccltune::bench
