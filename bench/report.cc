// ccltune-bench: table and JSON report.
#include "bench/report.hpp"

#include <cstdio>
#include <fstream>

#include "nlohmann/json.hpp"

namespace ccltune::bench {
namespace {

Config ToVocab(const ccltuneConfig_t& c) {
  Config v;
  v.algo = c.algorithm;
  v.proto = c.protocol;
  v.channels = c.channels;
  v.chunk_bytes = c.chunkBytes;
  return v;
}

nlohmann::json ConfigJson(const std::optional<ccltuneConfig_t>& c) {
  if (!c) return nullptr;
  return {{"algorithm", std::string(AlgoName(c->algorithm))},
          {"protocol", std::string(ProtoName(c->protocol))},
          {"channels", c->channels},
          {"chunk_bytes", c->chunkBytes}};
}

template <typename T>
nlohmann::json Opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string Us(const std::optional<double>& v) {
  char buf[32];
  if (!v) return "n/a";
  std::snprintf(buf, sizeof(buf), "%.2f", *v);
  return buf;
}

}  // namespace

std::string ConfigText(const ccltuneConfig_t& c) { return ToVocab(c).ToString(); }

void PrintTableHeader(Coll coll, bool compare, bool oracle) {
  std::printf("#\n# %s\n", std::string(CollName(coll)).c_str());
  std::printf("# %12s %12s %9s %6s", "size", "count", "type", "redop");
  if (compare) std::printf(" %11s %11s %7s %-26s %8s", "default_us", "tuned_us", "ratio", "config", "converge");
  if (oracle) std::printf(" %11s %7s %-26s", "oracle_us", "t/orc", "oracle_config");
  std::printf(" %7s\n", "errors");
}

void PrintTableRow(const RowResult& r, bool compare, bool oracle) {
  std::printf("  %12llu %12zu %9s %6s", static_cast<unsigned long long>(r.bytes), r.count,
              std::string(DtypeName(r.dtype)).c_str(), std::string(RedOpName(r.op)).c_str());
  if (compare) {
    std::string ratio = (r.default_us && r.tuned_us && *r.tuned_us > 0) ? Us(*r.default_us / *r.tuned_us) : "n/a";
    std::string calls = r.converge_calls ? std::to_string(*r.converge_calls) : "n/a";
    if (!r.converged && r.tuned_us) calls += "*";
    std::printf(" %11s %11s %7s %-26s %8s", Us(r.default_us).c_str(), Us(r.tuned_us).c_str(), ratio.c_str(),
                r.config ? ConfigText(*r.config).c_str() : "n/a", calls.c_str());
  }
  if (oracle) {
    std::optional<double> reference = r.tuned_us ? r.tuned_us : r.default_us;
    std::string ratio = (reference && r.oracle_us && *r.oracle_us > 0) ? Us(*reference / *r.oracle_us) : "n/a";
    std::printf(" %11s %7s %-26s", Us(r.oracle_us).c_str(), ratio.c_str(),
                r.oracle_config ? ConfigText(*r.oracle_config).c_str() : "n/a");
  }
  std::printf(" %7lld\n", static_cast<long long>(r.check_errors));
  std::fflush(stdout);
}

absl::Status WriteJsonReport(const std::string& path, const Meta& meta, const std::vector<RowResult>& rows,
                             int64_t mismatches, const nlohmann::json& sections) {
  nlohmann::json results = nlohmann::json::array();
  for (const RowResult& r : rows) {
    nlohmann::json candidates = nlohmann::json::array();
    for (const RowResult::OracleCandidate& c : r.oracle_candidates)
      candidates.push_back({{"config", ConfigJson(c.config)},
                            {"screen_us", c.screen_us},
                            {"rounds_us", c.rounds},
                            {"rounds_min_us", c.rounds_min},
                            {"rounds_b_us", c.rounds_b},
                            {"us", Opt(c.us)}});
    results.push_back({{"collective", std::string(CollName(r.coll))},
                       {"bytes", r.bytes},
                       {"count", r.count},
                       {"dtype", std::string(DtypeName(r.dtype))},
                       {"op", std::string(RedOpName(r.op))},
                       {"default_us", Opt(r.default_us)},
                       {"tuned_us", Opt(r.tuned_us)},
                       {"oracle_us", Opt(r.oracle_us)},
                       {"default_step_us", Opt(r.default_step_us)},
                       {"tuned_step_us", Opt(r.tuned_step_us)},
                       {"oracle_config", ConfigJson(r.oracle_config)},
                       {"oracle_configs", r.oracle_configs},
                       {"oracle_aliases", r.oracle_aliases},
                       {"oracle_screen_us", Opt(r.oracle_screen_us)},
                       {"oracle_default_us", Opt(r.oracle_default_us)},
                       {"tuned_same_comm_us", Opt(r.tuned_same_comm_us)},
                       {"oracle_candidates", candidates},
                       {"config", ConfigJson(r.config)},
                       {"converge_calls", Opt(r.converge_calls)},
                       {"tune_calls", r.tune_calls},
                       {"tune_wall_us", Opt(r.tune_wall_us)},
                       {"default_wall_us", Opt(r.default_wall_us)},
                       {"converged", r.converged},
                       {"check_errors", r.check_errors}});
  }
  nlohmann::json doc = {{"meta",
                         {{"command", meta.command},
                          {"date", meta.date},
                          {"nranks", meta.nranks},
                          {"nccl_version", meta.nccl_version},
                          {"device", meta.device},
                          {"backend", meta.backend},
                          {"iters", meta.iters},
                          {"warmup", meta.warmup},
                          {"tune_step", meta.tune_step},
                          {"settle_calls", meta.settle_calls},
                          {"modes", meta.modes},
                          {"ccltune_version", meta.ccltune_version.empty() ? nlohmann::json(nullptr)
                                                                           : nlohmann::json(meta.ccltune_version)},
                          {"preloaded", meta.preloaded},
                          {"budget", meta.budget >= 0 ? nlohmann::json(meta.budget) : nlohmann::json(nullptr)},
                          {"seed", meta.seed},
                          {"interference", meta.interference},
                          {"interference_load", meta.interference_load}}},
                        {"results", results},
                        {"mismatches", mismatches}};
  if (sections.is_object())
    for (const auto& [name, section] : sections.items()) doc[name] = section;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return absl::UnavailableError("cannot open " + tmp + " for writing");
    out << doc.dump(2) << "\n";
    out.flush();
    if (!out) return absl::DataLossError("write to " + tmp + " failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return absl::UnavailableError("cannot rename " + tmp + " to " + path);
  return absl::OkStatus();
}

}  // namespace ccltune::bench
