// The tuned table as people read it: the exit summary of each tuned communicator and `ccltune show`
// print the same columns (docs/running.md explains each).
#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
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

std::string Row(const std::string& indent, const std::string& coll, const std::string& bytes, const std::string& dtype,
                const std::string& op, const std::string& nccl, const std::string& default_us, const std::string& tuned,
                const std::string& tuned_us, const std::string& speedup, const std::string& samples,
                const std::string& state) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%s%-14s %12s %-9s %-5s %-14s %10s %-22s %10s %8s %8s %s", indent.c_str(),
                coll.c_str(), bytes.c_str(), dtype.c_str(), op.c_str(), nccl.c_str(), default_us.c_str(), tuned.c_str(),
                tuned_us.c_str(), speedup.c_str(), samples.c_str(), state.c_str());
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

std::string RunConfigText(const Entry& e, bool nccl_env_forces_algo) {
  const Config& c = e.config;
  if (c.IsDefault()) return "default";
  std::string s;
  const bool nccl_picks =
      !c.HasSubspace() || nccl_env_forces_algo || (e.subspaces.valid_mask != 0 && !e.subspaces.Valid(c.algo, c.proto));
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
  std::string out = Row(o.indent, "collective", "bytes", "dtype", "op", "nccl_default", "default_us", "tuned",
                        "tuned_us", "speedup", "samples", "state");
  bool any_imported = false;
  for (const Entry& e : entries) {
    const bool group = e.key.grouped || e.key.calls.size() != 1;
    const CallDesc first = e.key.calls.empty() ? CallDesc{} : e.key.calls.front();
    const std::string coll =
        group ? internal::Cat("group[", e.key.calls.size(), "]") : std::string(CollName(first.coll));
    const bool known_pick = e.subspaces.nccl_algo >= 0 && e.subspaces.nccl_proto >= 0;
    const std::string nccl =
        known_pick ? internal::Cat(AlgoName(e.subspaces.nccl_algo), "/", ProtoName(e.subspaces.nccl_proto))
                   : std::string("?");
    const std::string speedup =
        (e.default_us > 0 && e.tuned_us > 0) ? internal::Cat(Micros(e.default_us / e.tuned_us), "x") : "-";
    const std::string state(StateName(e.state));
    any_imported |= e.state == WorkloadState::kImported;
    out += "\n" + Row(o.indent, coll, internal::Cat(DisplayBytes(e.key, o.nranks)),
                      group ? "-" : std::string(DtypeName(first.dtype)),
                      group || first.op < 0 ? "-" : std::string(RedOpName(first.op)), nccl, Micros(e.default_us),
                      RunConfigText(e, o.nccl_env_forces_algo), Micros(e.tuned_us), speedup, internal::Cat(e.samples),
                      state);
  }
  if (any_imported) {
    out += "\n" + o.indent + "(state imported: the config came from an import (CCLTUNE_IMPORT) and was not searched)";
  }
  return out;
}

}  // namespace ccltune::config_table
