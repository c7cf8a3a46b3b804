// Drawing a chaos program from a seed. Every choice comes from one Rng in a fixed order, so the
// launcher and every rank get the same Program; change the order of draws only with a reason (seeds
// recorded in docs/results/chaos.md would then name other programs).
#include "program.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <tuple>

namespace chaos {
namespace {

// ncclDataType_t values: int8 0, uint8 1, int32 2, uint32 3, int64 4, uint64 5, float16 6, float32 7,
// float64 8, bfloat16 9, float8e4m3 10, float8e5m2 11.
const std::vector<int> kDtypes = {7, 7, 7, 9, 9, 6, 8, 2, 4, 1, 0, 3, 5, 10, 11};
const std::vector<size_t> kBytes = {1024, 4096, 4096, 16384, 65536, 65536, 262144, 1048576};
const char* const kDtypeNames[] = {"i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "bf16", "e4m3", "e5m2"};
const char* const kOpNames[] = {"sum", "prod", "max", "min", "avg"};

bool Rooted(int coll) { return coll == kBroadcast || coll == kReduce; }
bool Reduces(int coll) { return coll == kReduce || coll == kReduceScatter || coll == kAllReduce; }

Call DrawCall(Rng& r, int ncomms, bool checked) {
  Call c;
  c.comm = static_cast<int>(r.Below(ncomms));
  c.coll = static_cast<int>(r.Below(5));
  c.dtype = r.Pick(kDtypes);
  // Checked ops use sums, maxima and minima of small integers: exact in every type but fp8.
  if (checked && c.dtype >= 10) c.dtype = 7;
  c.op = Reduces(c.coll) ? static_cast<int>(r.Below(checked ? 4 : 5)) : -1;
  if (checked && c.op == 1) c.op = 0;
  size_t bytes = r.Pick(kBytes);
  if (c.coll == kAllGather || c.coll == kReduceScatter) bytes = std::min<size_t>(bytes, 65536);
  if (checked) bytes = std::min<size_t>(bytes, 16384);  // data moves on every checked call
  c.count = std::max<size_t>(1, bytes / DtypeSize(c.dtype));
  c.root = Rooted(c.coll) ? static_cast<int>(r.Below(16)) : 0;
  return c;
}

P2P DrawP2P(Rng& r, int ncomms) {
  P2P p;
  p.comm = static_cast<int>(r.Below(ncomms));
  p.pattern = static_cast<int>(r.Below(2));
  p.dtype = r.Pick(kDtypes);
  p.count = std::max<size_t>(1, r.Pick(kBytes) / 4 / DtypeSize(p.dtype));
  return p;
}

std::string CallString(const Call& c) {
  char b[96];
  std::snprintf(b, sizeof b, "%s(c%d,%s%s%s,%zu%s)", CollName(c.coll), c.comm, kDtypeNames[c.dtype],
                c.op >= 0 ? "," : "", c.op >= 0 ? kOpNames[c.op] : "", c.count,
                Rooted(c.coll) ? (",r" + std::to_string(c.root)).c_str() : "");
  return b;
}

}  // namespace

const char* CollName(int coll) {
  static const char* const names[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
  return coll >= 0 && coll < 5 ? names[coll] : "?";
}

const char* ImportKindName(int kind) {
  static const char* const names[] = {"truncated",         "garbage", "empty",    "wrong-schema",
                                      "wrong-fingerprint", "missing", "directory"};
  return kind >= 0 && kind < kNumImportKinds ? names[kind] : "none";
}

size_t DtypeSize(int dtype) {
  switch (dtype) {
    case 0:
    case 1:
    case 10:
    case 11:
      return 1;
    case 6:
    case 9:
      return 2;
    case 2:
    case 3:
    case 7:
      return 4;
    default:
      return 8;
  }
}

Program Generate(uint64_t seed) {
  Program p;
  p.seed = seed;
  Rng r(seed * 0x2545f4914f6cdd1dull + 17);

  // Ranks: mostly small (fast on a 2-core machine), up to 16.
  const int band = static_cast<int>(r.Below(100));
  p.nranks = band < 45 ? r.Range(2, 4) : band < 80 ? r.Range(5, 8) : r.Range(9, 16);

  // Communicators: world, then up to two splits of world or inits of a subset with their own id.
  p.comms.push_back(CommSpec{});
  const int extra = static_cast<int>(r.Below(100)) < 35 ? 0 : static_cast<int>(r.Below(100)) < 60 ? 1 : 2;
  for (int i = 0; i < extra; ++i) {
    CommSpec c;
    if (r.Chance(0.7)) {
      c.kind = CommKind::kSplit;
      const int mode = static_cast<int>(r.Below(4));
      const int k = r.Range(2, 3);
      for (int w = 0; w < p.nranks; ++w) {
        int color = mode == 0   ? w % k
                    : mode == 1 ? (w < p.nranks / 2 ? 0 : 1)
                    : mode == 2 ? 0
                                : (w % 3 == 2 ? -1 : w % 2);
        c.color.push_back(color);
      }
      c.reverse_key = r.Chance(0.5);
    } else {
      c.kind = CommKind::kInit;
      std::vector<int> all(p.nranks);
      std::iota(all.begin(), all.end(), 0);
      for (int j = p.nranks - 1; j > 0; --j) std::swap(all[j], all[r.Below(j + 1)]);
      const int size = r.Chance(0.3) ? p.nranks : r.Range(std::min(2, p.nranks), p.nranks);
      c.members.assign(all.begin(), all.begin() + size);
      c.id = p.ids++;
    }
    p.comms.push_back(c);
  }
  const int ncomms = static_cast<int>(p.comms.size());

  // One iteration of the body.
  const int nops = r.Range(1, 6);
  for (int i = 0; i < nops; ++i) {
    Op op;
    const int kind = static_cast<int>(r.Below(100));
    op.checked = r.Chance(0.2);
    if (kind < 55) {
      op.kind = Op::kColl;
      op.calls.push_back(DrawCall(r, ncomms, op.checked));
    } else if (kind < 80) {
      op.kind = Op::kGroup;
      const int n = r.Range(2, 4);
      for (int j = 0; j < n; ++j) op.calls.push_back(DrawCall(r, ncomms, op.checked));
      if (r.Chance(0.2)) {
        op.with_p2p = true;
        op.p2p = DrawP2P(r, ncomms);
        op.p2p.pattern = 1;  // inside a group, both directions are posted together
      }
    } else {
      op.kind = Op::kP2P;
      op.p2p = DrawP2P(r, ncomms);
    }
    p.body.push_back(op);
  }
  // Enough iterations for several sync intervals and tuning decisions; fewer with many ranks.
  const int units = p.nranks > 8 ? r.Range(120, 260) : r.Range(160, 420);
  p.iters = std::max(24, units / nops);

  // Destroy or abort in the middle of tuning, sometimes twice; sometimes the communicator is made again.
  const int nevents = r.Chance(0.4) ? (r.Chance(0.25) ? 2 : 1) : 0;
  for (int i = 0; i < nevents; ++i) {
    Event e;
    e.iter = r.Range(p.iters / 5, p.iters * 4 / 5);
    e.before_op = static_cast<int>(r.Below(nops));
    e.comm = static_cast<int>(r.Below(ncomms));
    e.abort = r.Chance(0.5);
    e.recreate = e.comm == 0 || r.Chance(0.6);  // world always comes back (splits are made from it)
    if (e.recreate && p.comms[e.comm].kind != CommKind::kSplit) e.new_id = p.ids++;
    p.events.push_back(e);
  }
  std::sort(p.events.begin(), p.events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.iter, a.before_op) < std::tie(b.iter, b.before_op);
  });
  p.abort_at_end = r.Chance(0.2);

  // Faults.
  p.delay_max_us.assign(p.nranks, 0);
  if (r.Chance(0.3)) {
    for (int w = 0; w < p.nranks; ++w)
      if (r.Chance(0.5)) p.delay_max_us[w] = r.Range(50, 1500);
    p.delay_pct = r.Range(10, 50);
  }
  if (r.Chance(0.2)) p.slow_leader_us = r.Range(100, 800);
  if (r.Chance(0.2)) {
    p.slow_create_rank = static_cast<int>(r.Below(p.nranks));
    p.slow_create_comm = static_cast<int>(r.Below(ncomms));
    p.slow_create_ms = r.Range(20, 200);
  }
  if (r.Chance(0.25)) {
    static const char* const factors[] = {"0.3", "0.5", "2", "3"};
    const int algo = static_cast<int>(r.Below(3)) - 1;  // all, tree, ring
    p.drift =
        std::to_string(r.Range(40, 300)) + "," + factors[r.Below(4)] + (algo >= 0 ? "," + std::to_string(algo) : "");
  }
  if (r.Chance(0.12)) p.fail_setup_rank = static_cast<int>(r.Below(p.nranks));
  if (r.Chance(0.15)) p.import_kind = static_cast<int>(r.Below(kNumImportKinds));

  // Settings, the same on every rank.
  p.env.emplace_back("SIMNCCL_SEED", std::to_string(seed));
  p.env.emplace_back("SIMNCCL_VERSION", r.Chance(0.3) ? "23000" : "22809");
  static const std::vector<std::string> channels = {"2", "4", "8", "16", "24", "32"};
  p.env.emplace_back("SIMNCCL_CHANNELS", r.Pick(channels));
  static const std::vector<std::string> noise = {"0.03", "0.05", "0.1", "0.3"};
  p.env.emplace_back("SIMNCCL_NOISE", r.Pick(noise));
  p.env.emplace_back("CCLTUNE_TIMING", r.Chance(0.5) ? "min" : "max");
  static const std::vector<std::string> intervals = {"1", "2", "4", "8"};
  p.env.emplace_back("CCLTUNE_MIN_INTERVAL", r.Pick(intervals));
  static const std::vector<std::string> batches = {"4", "8", "24", "64"};
  p.env.emplace_back("CCLTUNE_MAX_BATCH", r.Pick(batches));
  if (r.Chance(0.2)) p.env.emplace_back("CCLTUNE_EXPORT", "@RUN@/export.json");
  // Data moves on checked ops and ccltune's sync ops only (the results of the others are not read, and
  // moving them on each new config costs seconds with fp8 types).
  p.env.emplace_back("SIMNCCL_MOVE_DATA", "requested");
  // Where the sync ops run: every third seed on a communicator of their own. Taken from the seed, not
  // drawn, so that the draws name the same programs as before.
  p.env.emplace_back("CCLTUNE_SYNC_COMM", seed % 3 == 0 ? "split" : "same");

  // Public API mode switches (drawn last, so the draws above name the same programs as before).
  const int nmodes = r.Chance(0.2) ? r.Range(1, 3) : 0;
  for (int i = 0; i < nmodes; ++i) {
    ModeSwitch m;
    m.iter = r.Range(p.iters / 6, p.iters * 5 / 6);
    m.before_op = static_cast<int>(r.Below(nops));
    m.comm = static_cast<int>(r.Below(ncomms));
    m.mode = static_cast<int>(r.Below(4));
    if (m.mode == 3) {
      m.algo = static_cast<int>(r.Below(3)) - 1;  // NCCL decides, tree, ring
      m.proto = m.algo < 0 ? -1 : static_cast<int>(r.Below(3));
      m.channels = r.Chance(0.5) ? 0 : r.Range(1, 32);
      m.chunk = r.Chance(0.7) ? 0 : static_cast<int64_t>(r.Range(1, 64)) * 4096;
    }
    p.modes.push_back(m);
  }
  std::sort(p.modes.begin(), p.modes.end(), [](const ModeSwitch& a, const ModeSwitch& b) {
    return std::tie(a.iter, a.before_op) < std::tie(b.iter, b.before_op);
  });
  return p;
}

std::string Program::Describe() const {
  std::string s = "seed " + std::to_string(seed) + ": " + std::to_string(nranks) + " ranks;";
  for (size_t i = 0; i < comms.size(); ++i) {
    const CommSpec& c = comms[i];
    s += " c" + std::to_string(i) + "=";
    if (c.kind == CommKind::kWorld) {
      s += "world";
    } else if (c.kind == CommKind::kSplit) {
      s += "split[";
      for (size_t w = 0; w < c.color.size(); ++w) s += (w ? "," : "") + std::to_string(c.color[w]);
      s += c.reverse_key ? "]rev" : "]";
    } else {
      s += "init[";
      for (size_t w = 0; w < c.members.size(); ++w) s += (w ? "," : "") + std::to_string(c.members[w]);
      s += "]";
    }
  }
  s += "; " + std::to_string(iters) + " x {";
  for (size_t i = 0; i < body.size(); ++i) {
    const Op& op = body[i];
    s += i ? " " : "";
    if (op.checked) s += "!";
    if (op.kind == Op::kColl) s += CallString(op.calls[0]);
    if (op.kind == Op::kGroup) {
      s += "group(";
      for (size_t j = 0; j < op.calls.size(); ++j) s += (j ? " " : "") + CallString(op.calls[j]);
      if (op.with_p2p) s += " +p2p(c" + std::to_string(op.p2p.comm) + ")";
      s += ")";
    }
    if (op.kind == Op::kP2P) {
      s += std::string(op.p2p.pattern == 0 ? "pipeline" : "ring") + "(c" + std::to_string(op.p2p.comm) + "," +
           kDtypeNames[op.p2p.dtype] + "," + std::to_string(op.p2p.count) + ")";
    }
  }
  s += "}";
  for (const Event& e : events) {
    s += "; at " + std::to_string(e.iter) + "." + std::to_string(e.before_op) + (e.abort ? " abort" : " destroy") +
         " c" + std::to_string(e.comm) + (e.recreate ? " and recreate" : "");
  }
  if (abort_at_end) s += "; abort at end";
  static const char* const mode_names[] = {"tune", "default", "frozen", "forced"};
  for (const ModeSwitch& m : modes) {
    s += "; at " + std::to_string(m.iter) + "." + std::to_string(m.before_op) + " mode c" + std::to_string(m.comm) +
         " " + mode_names[m.mode];
    if (m.mode == 3) {
      s += "(" + std::to_string(m.algo) + "," + std::to_string(m.proto) + "," + std::to_string(m.channels) + "," +
           std::to_string(m.chunk) + ")";
    }
  }
  bool delays = false;
  for (int d : delay_max_us) delays |= d > 0;
  if (delays) {
    s += "; delays " + std::to_string(delay_pct) + "% up to [";
    for (size_t w = 0; w < delay_max_us.size(); ++w) s += (w ? "," : "") + std::to_string(delay_max_us[w]);
    s += "]us";
  }
  if (slow_leader_us > 0) s += "; slow leader " + std::to_string(slow_leader_us) + "us";
  if (slow_create_rank >= 0) {
    s += "; rank " + std::to_string(slow_create_rank) + " creates c" + std::to_string(slow_create_comm) + " " +
         std::to_string(slow_create_ms) + "ms late";
  }
  if (!drift.empty()) s += "; drift " + drift;
  if (fail_setup_rank >= 0) s += "; set-up fails on rank " + std::to_string(fail_setup_rank);
  if (import_kind != kNoImport) s += std::string("; import ") + ImportKindName(import_kind);
  for (const auto& [k, v] : env) s += "; " + k + "=" + v;
  return s;
}

std::vector<std::string> Program::Classes() const {
  std::vector<std::string> out;
  auto add = [&](bool on, const char* name) {
    if (on) out.push_back(name);
  };
  bool split = false, init = false, group = false, multi = false, p2p = false, p2p_group = false, checked = false;
  for (const CommSpec& c : comms) split |= c.kind == CommKind::kSplit, init |= c.kind == CommKind::kInit;
  for (const Op& op : body) {
    group |= op.kind == Op::kGroup;
    p2p |= op.kind == Op::kP2P || op.with_p2p;
    p2p_group |= op.with_p2p;
    checked |= op.checked;
    for (const Call& c : op.calls) multi |= c.comm != op.calls[0].comm;
  }
  bool destroy = false, abort = false, recreate = false, delays = false;
  for (const Event& e : events) destroy |= !e.abort, abort |= e.abort, recreate |= e.recreate;
  for (int d : delay_max_us) delays |= d > 0;
  bool v6 = false, exporting = false, sync_split = false;
  for (const auto& [k, v] : env) {
    v6 |= k == "SIMNCCL_VERSION" && v == "23000", exporting |= k == "CCLTUNE_EXPORT";
    sync_split |= k == "CCLTUNE_SYNC_COMM" && v == "split";
  }
  // Features.
  add(nranks > 8, "ranks>8");
  add(comms.size() > 1, "comms>1");
  add(comms.size() > 2, "comms=3");
  add(split, "split");
  add(init, "init-subset");
  add(group, "group");
  add(multi, "group-2-comms");
  add(p2p, "p2p");
  add(p2p_group, "p2p-in-group");
  add(checked, "data-checked");
  add(destroy, "destroy");
  add(abort || abort_at_end, "abort");
  add(recreate, "recreate");
  add(v6, "tuner-v6");
  add(exporting, "export");
  add(sync_split, "sync-split");
  add(!modes.empty(), "mode-switch");
  // Faults.
  add(delays, "delays");
  add(slow_leader_us > 0, "slow-leader");
  add(slow_create_rank >= 0, "slow-create");
  add(!drift.empty(), "drift");
  add(fail_setup_rank >= 0, "setup-fail");
  add(import_kind != kNoImport, "corrupt-import");
  return out;
}

}  // namespace chaos
