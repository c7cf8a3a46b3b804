// Export for NCCL's example tuner plugin (plugins/tuner/example, read via NCCL_TUNER_CONFIG_FILE).
//
// Format, as that plugin reads it (NCCL 2.28.9 and 2.30): one config per line,
//   collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff
// lines starting with '#' and empty lines are skipped, lines are read into a 256-byte buffer
// (so every line we write, comments included, stays well under 255 characters), fields are split
// on ',' with no quoting. The plugin maps an unknown collective to allreduce and an unknown
// algorithm/protocol to ring/simple without a word, so we write only the spellings it knows:
//   collectives broadcast reduce allgather reducescatter allreduce
//   algorithms  tree ring collnet_direct collnet_chain nvls nvls_tree pat  (note the underscores,
//               unlike ccltune's own names) ; protocols ll ll128 simple
// channels -1, nNodes -1, nRanks -1, numPipeOps -1 and regBuff -1 mean "any"/"keep NCCL's".
//
// What we write: one line per final (converged, or imported and kept), ungrouped workload whose
// config is not NCCL's default: min_bytes and max_bytes the nBytes getCollInfo sees (NcclTunerBytes)
// for the bounds of the workload's size class (the sizes whose workloads shared one search, so one
// line covers the sizes of a run's DDP buckets and those between), or for its own bytes where the class
// is unknown; nNodes/nRanks from the fingerprint, numPipeOps and regBuff -1.
// What the format cannot say, and what we do:
//   - no "NCCL's choice" for algorithm/protocol: a config that keeps NCCL's algorithm but sets
//     channels (or chunk size) is skipped;
//   - no chunk size: a config with a chunk size is written without it;
//   - channels 0 (NCCL's choice) is written as -1. Caveat: the example plugin (2.28.9, 2.30)
//     starts every getCollInfo by setting *nChannels = 1 and only overwrites it for channels != -1,
//     so under that plugin -1 (and every call no line matches) runs on one channel, contrary to
//     its README. That is the plugin's behaviour, not the format's; we follow the format.
//   - one nBytes range can come from several keys (float32 vs bfloat16, sum vs max, the members of
//     one size class): the plugin takes the first matching line, so we keep one line per
//     (collective, min_bytes, nNodes, nRanks): the entry with more samples, a tie going to the smaller
//     key string.
#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <tuple>

#include "config_table/config_table.hpp"
#include "config_table/internal/export_common.hpp"

namespace ccltune::config_table {
namespace {

using internal::kCsvAlgo;
using internal::kCsvColl;
using internal::kCsvProto;

struct Row {
  CsvRule rule;
  uint64_t samples = 0;
  std::string key;
};

}  // namespace

std::string CsvLine(const CsvRule& r) {
  const int coll = static_cast<int>(r.coll);
  return internal::Cat(kCsvColl[coll], ",", r.min_bytes, ",", r.max_bytes, ",", kCsvAlgo[r.config.algo], ",",
                       kCsvProto[r.config.proto], ",", r.config.channels > 0 ? r.config.channels : -1, ",", r.nnodes,
                       ",", r.nranks, ",", r.num_pipe_ops, ",", r.reg_buff);
}

std::string ToCsv(const std::vector<CsvRule>& rules) {
  std::string out = internal::Cat("# ccltune ", CCLTUNE_VERSION_STRING,
                                  " export for NCCL's example tuner plugin (NCCL_TUNER_CONFIG_FILE)\n",
                                  "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,"
                                  "numPipeOps,regBuff\n");
  for (const CsvRule& r : rules) out += CsvLine(r) + "\n";
  return out;
}

std::string ToCsv(const ExportSet& set) {
  // (nNodes, nRanks, collective, min_bytes) -> row; the map's order is the file's order.
  std::map<std::tuple<int, int, int, uint64_t>, Row> rows;
  for (const auto& [fp, entries] : internal::MergeByFingerprint(set)) {
    for (const Entry& e : entries) {
      if (!internal::IsFinal(e.state) || e.key.grouped || e.key.calls.size() != 1) continue;
      const Config& c = e.config;
      if (c.IsDefault() || !c.HasSubspace() || c.algo >= kNumAlgos || c.proto >= kNumProtos) continue;
      const CallDesc& call = e.key.calls[0];
      uint64_t lo = NcclTunerBytes(call, fp.nranks), hi = lo;
      if (auto range = SizeClassTunerBytes(e, fp.nranks)) std::tie(lo, hi) = *range;
      const int coll = static_cast<int>(call.coll);
      Row row;
      row.rule.coll = call.coll;
      row.rule.min_bytes = lo;
      row.rule.max_bytes = hi;
      row.rule.config = Config{c.algo, c.proto, c.channels, 0};
      row.rule.nnodes = fp.nnodes;
      row.rule.nranks = fp.nranks;
      row.samples = e.samples;
      row.key = e.key.ToString();
      auto [it, inserted] = rows.try_emplace({fp.nnodes, fp.nranks, coll, lo}, row);
      if (!inserted &&
          (row.samples > it->second.samples || (row.samples == it->second.samples && row.key < it->second.key))) {
        it->second = std::move(row);
      }
    }
  }
  std::vector<CsvRule> lines;
  for (const auto& [k, row] : rows) lines.push_back(row.rule);
  return ToCsv(lines);
}

}  // namespace ccltune::config_table
