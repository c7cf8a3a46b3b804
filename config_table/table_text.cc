// The tuned table as people read it: the exit summary of each tuned communicator and `ccltune show`
// print the same columns (docs/running.md explains each).
#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "config_table/config_table.hpp"
#include "config_table/internal/export_common.hpp"

namespace ccltune::config_table {
namespace {

std::string Micros(double us) {
  if (!(us > 0)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", us);
  return buf;
}

// The table's columns, in order (FormatTable in config_table.hpp says what each holds).
struct Columns {
  std::string coll, bytes, size_class, dtype, op, nccl, default_us, tuned, ran, tuned_us, speedup, samples, state;
};

std::string Row(const std::string& indent, const Columns& c) {
  char buf[640];
  std::snprintf(buf, sizeof(buf), "%s%-14s %12s %-21s %-9s %-5s %-14s %10s %-22s %-18s %10s %8s %8s %s", indent.c_str(),
                c.coll.c_str(), c.bytes.c_str(), c.size_class.c_str(), c.dtype.c_str(), c.op.c_str(), c.nccl.c_str(),
                c.default_us.c_str(), c.tuned.c_str(), c.ran.c_str(), c.tuned_us.c_str(), c.speedup.c_str(),
                c.samples.c_str(), c.state.c_str());
  std::string line = buf;
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

}  // namespace

uint64_t DisplayBytes(const WorkloadKey& key, int nranks) {
  // nccl-tests' size is NCCL's nBytes for the tuner: the larger of the send and receive buffers.
  uint64_t total = 0;
  for (const CallDesc& c : key.calls) total += NcclTunerBytes(c, nranks);
  return total;
}

std::optional<std::pair<uint64_t, uint64_t>> SizeClassTunerBytes(const Entry& e, int nranks) {
  if (e.key.grouped || e.key.calls.size() != 1 || e.class_max_bytes == 0) return std::nullopt;
  const CallDesc& call = e.key.calls[0];
  if (call.bytes < e.class_min_bytes || call.bytes > e.class_max_bytes) return std::nullopt;
  // NCCL's nBytes grows with the call's bytes by a whole factor (ranks for an all-gather), so the class's
  // last byte count maps to one below the nBytes of the next class's first.
  CallDesc b = call;
  b.bytes = e.class_min_bytes;
  const uint64_t lo = NcclTunerBytes(b, nranks);
  b.bytes = e.class_max_bytes + 1;
  return std::make_pair(lo, NcclTunerBytes(b, nranks) - 1);
}

std::string RunConfigText(const Entry& e) {
  const Config& c = e.config;
  if (c.IsDefault()) return "default";
  std::string s;
  const bool nccl_picks = !c.HasSubspace() || (e.subspaces.valid_mask != 0 && !e.subspaces.Valid(c.algo, c.proto));
  s = nccl_picks ? std::string("nccl") : internal::Cat(AlgoName(c.algo), "/", ProtoName(c.proto));
  s += c.channels > 0 ? internal::Cat("/nc", c.channels) : std::string("/nc-nccl");
  if (c.chunk_bytes > 0) s += internal::Cat("/chunk", c.chunk_bytes);
  return s;
}

std::string FormatTable(const std::vector<Entry>& entries_in, const TableOptions& o) {
  // By collective, dtype, op, then size as a number (groups last): the order nccl-tests prints.
  std::vector<Entry> entries = entries_in;
  auto order = [&](const Entry& e) {
    const CallDesc c = e.key.calls.empty() ? CallDesc{} : e.key.calls.front();
    return std::make_tuple(e.key.grouped, static_cast<int>(c.coll), c.dtype, c.op, DisplayBytes(e.key, o.nranks));
  };
  std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) { return order(a) < order(b); });
  std::string out = Row(o.indent, Columns{"collective", "bytes", "size_class", "dtype", "op", "nccl_default",
                                          "default_us", "tuned", "ran", "tuned_us", "speedup", "samples", "state"});
  bool any_imported = false;
  for (const Entry& e : entries) {
    const bool group = e.key.grouped || e.key.calls.size() != 1;
    const CallDesc first = e.key.calls.empty() ? CallDesc{} : e.key.calls.front();
    Columns c;
    c.coll = group ? internal::Cat("group[", e.key.calls.size(), "]") : std::string(CollName(first.coll));
    c.bytes = internal::Cat(DisplayBytes(e.key, o.nranks));
    const auto range = SizeClassTunerBytes(e, o.nranks);
    c.size_class = range ? internal::Cat(range->first, "-", range->second) : std::string("-");
    c.dtype = group ? "-" : std::string(DtypeName(first.dtype));
    c.op = group || first.op < 0 ? "-" : std::string(RedOpName(first.op));
    const bool known_pick = e.subspaces.nccl_algo >= 0 && e.subspaces.nccl_proto >= 0;
    c.nccl = known_pick ? internal::Cat(AlgoName(e.subspaces.nccl_algo), "/", ProtoName(e.subspaces.nccl_proto))
                        : std::string("?");
    c.default_us = Micros(e.default_us);
    c.tuned = RunConfigText(e);
    // What NCCL ran for the config, as its profiler reported it (the channels it really used).
    const Config ran = e.RanFor(e.config);
    c.ran = ran.HasSubspace() ? ran.ToString() : std::string("?");
    c.tuned_us = Micros(e.tuned_us);
    c.speedup = (e.default_us > 0 && e.tuned_us > 0) ? internal::Cat(Micros(e.default_us / e.tuned_us), "x") : "-";
    c.samples = internal::Cat(e.samples);
    c.state = std::string(StateName(e.state));
    any_imported |= e.state == WorkloadState::kImported;
    out += "\n" + Row(o.indent, c);
  }
  if (any_imported) {
    out += "\n" + o.indent + "(state imported: the config came from an import (CCLTUNE_IMPORT) and was not searched)";
  }
  return out;
}

}  // namespace ccltune::config_table
