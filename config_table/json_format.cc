// The versioned JSON export and its import.
//
// Schema 1 (stable: a change of meaning or of a required field is a new schema number):
// {
//   "schema": 1,
//   "producer": "ccltune 0.1.0",
//   "written_at": "2025-01-31T12:00:00Z",                  // ISO-8601, UTC
//   "configs": [ {                                          // one block per fingerprint
//     "fingerprint": {"gpu": "NVIDIA H200", "nranks": 8, "nnodes": 1, "nccl_version": 22809,
//                     "plugin_version": 6, "channel_budget": 32, "channels": 32, "ccltune_version": "0.1.0"},
//     "workloads": [ {
//       "key": {"grouped": false,
//               "calls": [{"collective": "allreduce", "dtype": "float32", "op": "sum", "bytes": 1048576}]},
//       "config": {"algorithm": "ring", "protocol": "ll128", "channels": 16, "chunk_bytes": 0},
//       "state": "converged",
//       "nccl_choice": "ring/simple",                       // informative: NCCL's own pick, or null
//       "valid_subspaces": ["tree/ll", "ring/ll", ...],     // informative: cost-table entries != -1
//       "ran": {"algorithm": "ring", "protocol": "ll128", "channels": 16},  // informative: what NCCL ran
//                                                           // for the config (channel truth), or null
//       "size_class": {"min_bytes": 1048576, "max_bytes": 2097151},  // informative: the bytes range whose
//                                                           // workloads shared the search, or null
//       "default_us": 41.5, "tuned_us": 30.25, "samples": 120, "calls": 4000, "converge_calls": 900
//     } ]
//   } ]
// }
// Names, never numbers: collective (CollName), dtype (DtypeName), op (RedOpName; null for
// broadcast/allgather), algorithm (AlgoName, "default" = NCCL's choice), protocol (ProtoName),
// state (StateName). channels 0 and chunk_bytes 0 mean NCCL's choice. No communicator hash.
//
// Import is strict: every required field must be present with its type, every name must be known
// (never defaulted), every number in range; otherwise the whole file is DataLoss. "producer",
// "written_at", "nccl_choice", "valid_subspaces", "ran", "size_class" and the fingerprint's "channels"
// (the communicator's channels as NCCL ran them; 0 unknown) are informative and not required, but
// checked like the rest when present (a typo there is still a typo; ccltune show and convert keep them). Only
// workloads in a final state (converged, imported) are returned: a "searching" incumbent is not
// an answer another run should skip tuning on.
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "config_table/config_table.hpp"
#include "config_table/internal/export_common.hpp"

namespace ccltune::config_table {
namespace {

using internal::OneLine;
using nlohmann::json;
using ojson = nlohmann::ordered_json;

std::string NowIso8601Utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double Finite(double v) { return std::isfinite(v) ? v : 0.0; }

std::string SubspaceName(int algo, int proto) { return internal::Cat(AlgoName(algo), "/", ProtoName(proto)); }

// What NCCL ran for the workload's config (channel truth): null where unknown.
ojson RanJson(const Entry& e) {
  const Config r = e.RanFor(e.config);
  if (!r.HasSubspace()) return nullptr;
  return ojson{{"algorithm", AlgoName(r.algo)}, {"protocol", ProtoName(r.proto)}, {"channels", r.channels}};
}

ojson WorkloadJson(const Entry& e) {
  ojson calls = ojson::array();
  for (const CallDesc& c : e.key.calls) {
    calls.push_back({{"collective", CollName(c.coll)},
                     {"dtype", DtypeName(c.dtype)},
                     {"op", c.op >= 0 ? ojson(RedOpName(c.op)) : ojson(nullptr)},
                     {"bytes", c.bytes}});
  }
  ojson valid = ojson::array();
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p)
      if (e.subspaces.Valid(a, p)) valid.push_back(SubspaceName(a, p));
  const bool has_choice = e.subspaces.nccl_algo >= 0 && e.subspaces.nccl_algo < kNumAlgos &&
                          e.subspaces.nccl_proto >= 0 && e.subspaces.nccl_proto < kNumProtos;
  return ojson{
      {"key", {{"grouped", e.key.grouped}, {"calls", std::move(calls)}}},
      {"config",
       {{"algorithm", AlgoName(e.config.algo)},
        {"protocol", ProtoName(e.config.proto)},
        {"channels", e.config.channels},
        {"chunk_bytes", e.config.chunk_bytes}}},
      {"state", StateName(e.state)},
      {"nccl_choice", has_choice ? ojson(SubspaceName(e.subspaces.nccl_algo, e.subspaces.nccl_proto)) : ojson(nullptr)},
      {"valid_subspaces", std::move(valid)},
      {"ran", RanJson(e)},
      {"size_class", e.class_max_bytes > 0 ? ojson{{"min_bytes", e.class_min_bytes}, {"max_bytes", e.class_max_bytes}}
                                           : ojson(nullptr)},
      {"default_us", Finite(e.default_us)},
      {"tuned_us", Finite(e.tuned_us)},
      {"samples", e.samples},
      {"calls", e.calls},
      {"converge_calls", e.converge_calls}};
}

// ---- import ----

// A field that is missing, of the wrong type or out of range: `what` is the reason, prefixed by
// the field's path in the document. Thrown inside this file only, caught in ParseJson.
struct BadField {
  std::string what;
};

[[noreturn]] void Bad(const std::string& at, std::string_view why) { throw BadField{internal::Cat(at, ": ", why)}; }

const json& Field(const json& obj, const std::string& at, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end()) Bad(at, internal::Cat("missing field \"", name, "\""));
  return *it;
}

const json& Object(const json& obj, const std::string& at, const char* name) {
  const json& v = Field(obj, at, name);
  if (!v.is_object()) Bad(internal::Cat(at, ".", name), "expected an object");
  return v;
}

const json& Array(const json& obj, const std::string& at, const char* name) {
  const json& v = Field(obj, at, name);
  if (!v.is_array()) Bad(internal::Cat(at, ".", name), "expected an array");
  return v;
}

std::string String(const json& obj, const std::string& at, const char* name) {
  const json& v = Field(obj, at, name);
  if (!v.is_string()) Bad(internal::Cat(at, ".", name), "expected a string");
  return v.get<std::string>();
}

bool Bool(const json& obj, const std::string& at, const char* name) {
  const json& v = Field(obj, at, name);
  if (!v.is_boolean()) Bad(internal::Cat(at, ".", name), "expected true or false");
  return v.get<bool>();
}

uint64_t Unsigned(const json& obj, const std::string& at, const char* name) {
  const json& v = Field(obj, at, name);
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) Bad(internal::Cat(at, ".", name), internal::Cat(v.dump(), " is negative"));
  Bad(internal::Cat(at, ".", name), "expected a non-negative integer");
}

int64_t Integer(const json& obj, const std::string& at, const char* name, int64_t lo, int64_t hi) {
  const json& v = Field(obj, at, name);
  if (!v.is_number_integer()) Bad(internal::Cat(at, ".", name), "expected an integer");
  // nlohmann stores non-negative literals as uint64: compare without converting to int64 first.
  const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(hi) &&
                                                     (lo <= 0 || v.get<uint64_t>() >= static_cast<uint64_t>(lo))
                                               : v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
  if (!in_range) {
    Bad(internal::Cat(at, ".", name), internal::Cat(v.dump(), " out of range [", lo, ", ", hi, "]"));
  }
  return v.get<int64_t>();
}

double Micros(const json& obj, const std::string& at, const char* name) {
  const json& v = Field(obj, at, name);
  if (!v.is_number()) Bad(internal::Cat(at, ".", name), "expected a number");
  const double d = v.get<double>();
  if (!(d >= 0)) Bad(internal::Cat(at, ".", name), internal::Cat(v.dump(), " is negative"));
  return d;
}

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

Fingerprint ParseFingerprint(const json& block, const std::string& at) {
  const json& f = Object(block, at, "fingerprint");
  const std::string fat = at + ".fingerprint";
  Fingerprint fp;
  fp.gpu = String(f, fat, "gpu");
  fp.nranks = static_cast<int>(Integer(f, fat, "nranks", 1, kIntMax));
  fp.nnodes = static_cast<int>(Integer(f, fat, "nnodes", 1, kIntMax));
  fp.nccl_version = static_cast<int>(Integer(f, fat, "nccl_version", 0, kIntMax));
  fp.plugin_version = static_cast<int>(Integer(f, fat, "plugin_version", 0, kIntMax));
  fp.channel_budget = static_cast<int>(Integer(f, fat, "channel_budget", 0, internal::kMaxChannels));
  // Informative (channel truth; older exports have none): read when present, for show, convert and merge.
  if (f.contains("channels")) fp.channels = static_cast<int>(Integer(f, fat, "channels", 0, internal::kMaxChannels));
  fp.ccltune_version = String(f, fat, "ccltune_version");
  return fp;
}

WorkloadKey ParseKey(const json& w, const std::string& at) {
  const json& k = Object(w, at, "key");
  const std::string kat = at + ".key";
  WorkloadKey key;
  key.grouped = Bool(k, kat, "grouped");
  const json& calls = Array(k, kat, "calls");
  if (calls.empty()) Bad(kat + ".calls", "empty");
  if (!key.grouped && calls.size() != 1)
    Bad(kat + ".calls", internal::Cat(calls.size(), " calls in a key that is not grouped"));
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string cat = internal::Cat(kat, ".calls[", i, "]");
    const json& c = calls[i];
    if (!c.is_object()) Bad(cat, "expected an object");
    CallDesc d;
    const std::string coll = String(c, cat, "collective");
    const auto parsed_coll = ParseColl(coll);
    if (!parsed_coll) Bad(cat + ".collective", internal::Cat("unknown collective \"", coll, "\""));
    d.coll = *parsed_coll;
    const std::string dtype = String(c, cat, "dtype");
    const auto parsed_dtype = ParseDtype(dtype);
    if (!parsed_dtype) Bad(cat + ".dtype", internal::Cat("unknown dtype \"", dtype, "\""));
    d.dtype = *parsed_dtype;
    const json& op = Field(c, cat, "op");
    if (op.is_null()) {
      if (internal::IsReduction(d.coll)) Bad(cat + ".op", internal::Cat(coll, " needs a reduction op"));
      d.op = -1;
    } else if (op.is_string()) {
      const auto parsed_op = internal::ParseRedOp(op.get<std::string>());
      if (!parsed_op) Bad(cat + ".op", internal::Cat("unknown op \"", op.get<std::string>(), "\""));
      if (!internal::IsReduction(d.coll)) Bad(cat + ".op", internal::Cat(coll, " has no reduction op (use null)"));
      d.op = *parsed_op;
    } else {
      Bad(cat + ".op", "expected a string or null");
    }
    d.bytes = Unsigned(c, cat, "bytes");
    key.calls.push_back(d);
  }
  return key;
}

Config ParseConfig(const json& w, const std::string& at, int channel_budget) {
  const json& c = Object(w, at, "config");
  const std::string cat = at + ".config";
  Config cfg;
  const std::string algo = String(c, cat, "algorithm");
  const auto parsed_algo = ParseAlgo(algo);
  if (!parsed_algo) Bad(cat + ".algorithm", internal::Cat("unknown algorithm \"", algo, "\""));
  const std::string proto = String(c, cat, "protocol");
  const auto parsed_proto = ParseProto(proto);
  if (!parsed_proto) Bad(cat + ".protocol", internal::Cat("unknown protocol \"", proto, "\""));
  if ((*parsed_algo < 0) != (*parsed_proto < 0))
    Bad(cat, "algorithm and protocol must both be set or both be \"default\"");
  cfg.algo = *parsed_algo;
  cfg.proto = *parsed_proto;
  // A config never asks for more channels than the communicator that measured it had.
  const int max_channels = channel_budget > 0 ? channel_budget : internal::kMaxChannels;
  cfg.channels = static_cast<int>(Integer(c, cat, "channels", 0, max_channels));
  cfg.chunk_bytes = Integer(c, cat, "chunk_bytes", 0, std::numeric_limits<int64_t>::max());
  return cfg;
}

// Problems found while reading a document. Null: the first one throws (import, ParseExport: a file is
// all or nothing). Set: each is recorded and the reader goes on with the next field (ValidateJson).
using Problems = std::vector<std::string>;

// Runs `read` (which throws BadField on a bad field); false when it threw and `problems` took the message.
template <typename Fn>
bool Attempt(Problems* problems, Fn&& read) {
  if (problems == nullptr) {
    read();
    return true;
  }
  try {
    read();
    return true;
  } catch (const BadField& e) {
    problems->push_back(e.what);
    return false;
  }
}

// "ring/simple" -> (algo, proto), as nccl_choice and valid_subspaces write them.
std::pair<int, int> ParseSubspace(const json& v, const std::string& at) {
  if (!v.is_string()) Bad(at, "expected a string \"algorithm/protocol\"");
  const std::string s = v.get<std::string>();
  const size_t slash = s.find('/');
  const auto algo = slash == std::string::npos ? std::nullopt : ParseAlgo(s.substr(0, slash));
  const auto proto = slash == std::string::npos ? std::nullopt : ParseProto(s.substr(slash + 1));
  if (!algo || !proto || *algo < 0 || *proto < 0) Bad(at, internal::Cat("unknown subspace \"", s, "\""));
  return {*algo, *proto};
}

// The informative fields: not required, but checked when present (a typo there is still a typo).
SubspaceSet ParseSubspaces(const json& w, const std::string& at) {
  SubspaceSet s;
  if (auto it = w.find("valid_subspaces"); it != w.end()) {
    if (!it->is_array()) Bad(at + ".valid_subspaces", "expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const auto [a, p] = ParseSubspace((*it)[i], internal::Cat(at, ".valid_subspaces[", i, "]"));
      s.valid_mask |= 1u << (a * kNumProtos + p);
    }
  }
  if (auto it = w.find("nccl_choice"); it != w.end() && !it->is_null()) {
    std::tie(s.nccl_algo, s.nccl_proto) = ParseSubspace(*it, at + ".nccl_choice");
  }
  return s;
}

// What NCCL ran for the workload's config (channel truth), as RanJson writes it: null or absent where
// unknown. An algorithm and a protocol NCCL ran are never "default".
void ParseRan(const json& w, const std::string& at, Entry& e) {
  auto it = w.find("ran");
  if (it == w.end() || it->is_null()) return;
  const std::string rat = at + ".ran";
  if (!it->is_object()) Bad(rat, "expected an object or null");
  Config ran;
  const std::string algo = String(*it, rat, "algorithm");
  const auto parsed_algo = ParseAlgo(algo);
  if (!parsed_algo || *parsed_algo < 0) Bad(rat + ".algorithm", internal::Cat("unknown algorithm \"", algo, "\""));
  const std::string proto = String(*it, rat, "protocol");
  const auto parsed_proto = ParseProto(proto);
  if (!parsed_proto || *parsed_proto < 0) Bad(rat + ".protocol", internal::Cat("unknown protocol \"", proto, "\""));
  ran.algo = *parsed_algo;
  ran.proto = *parsed_proto;
  ran.channels = static_cast<int>(Integer(*it, rat, "channels", 0, internal::kMaxChannels));
  e.ran.emplace_back(e.config, ran);
}

// The size class whose search decided the workload: null or absent where unknown, else a range of the
// key's bytes (min_bytes <= max_bytes).
void ParseSizeClass(const json& w, const std::string& at, Entry& e) {
  auto it = w.find("size_class");
  if (it == w.end() || it->is_null()) return;
  const std::string cat = at + ".size_class";
  if (!it->is_object()) Bad(cat, "expected an object or null");
  const uint64_t lo = Unsigned(*it, cat, "min_bytes");
  const uint64_t hi = Unsigned(*it, cat, "max_bytes");
  if (hi == 0 || lo > hi) Bad(cat, internal::Cat("[", lo, ", ", hi, "] is not a range of bytes"));
  e.class_min_bytes = lo;
  e.class_max_bytes = hi;
}

struct ParsedBlock {
  Fingerprint fp;
  std::vector<Entry> workloads;
};

// A workload, every field read even after a bad one when problems are collected; nullopt if any was bad.
std::optional<Entry> ParseWorkload(const json& w, const std::string& wat, int channel_budget, Problems* problems) {
  if (!Attempt(problems, [&] {
        if (!w.is_object()) Bad(wat, "expected an object");
      })) {
    return std::nullopt;
  }
  Entry e;
  bool ok = Attempt(problems, [&] { e.key = ParseKey(w, wat); });
  ok &= Attempt(problems, [&] { e.config = ParseConfig(w, wat, channel_budget); });
  ok &= Attempt(problems, [&] {
    const std::string state = String(w, wat, "state");
    const auto parsed_state = internal::ParseState(state);
    if (!parsed_state) Bad(wat + ".state", internal::Cat("unknown state \"", state, "\""));
    e.state = *parsed_state;
  });
  ok &= Attempt(problems, [&] { e.default_us = Micros(w, wat, "default_us"); });
  ok &= Attempt(problems, [&] { e.tuned_us = Micros(w, wat, "tuned_us"); });
  ok &= Attempt(problems, [&] { e.samples = Unsigned(w, wat, "samples"); });
  ok &= Attempt(problems, [&] { e.calls = Unsigned(w, wat, "calls"); });
  ok &= Attempt(problems, [&] { e.converge_calls = Unsigned(w, wat, "converge_calls"); });
  ok &= Attempt(problems, [&] { e.subspaces = ParseSubspaces(w, wat); });
  ok &= Attempt(problems, [&] { ParseSizeClass(w, wat, e); });
  // After the config: what ran is recorded against the config asked for.
  if (ok) ok &= Attempt(problems, [&] { ParseRan(w, wat, e); });
  if (!ok) return std::nullopt;
  return e;
}

std::vector<ParsedBlock> ParseDocument(const json& doc, Problems* problems) {
  std::vector<ParsedBlock> blocks;
  const json* configs = nullptr;
  if (!Attempt(problems, [&] { configs = &Array(doc, "document", "configs"); })) return blocks;
  for (size_t b = 0; b < configs->size(); ++b) {
    const std::string at = internal::Cat("configs[", b, "]");
    const json& block_json = (*configs)[b];
    if (!Attempt(problems, [&] {
          if (!block_json.is_object()) Bad(at, "expected an object");
        })) {
      continue;
    }
    ParsedBlock block;
    const bool fp_ok = Attempt(problems, [&] { block.fp = ParseFingerprint(block_json, at); });
    const json* workloads = nullptr;
    if (!Attempt(problems, [&] { workloads = &Array(block_json, at, "workloads"); })) continue;
    for (size_t i = 0; i < workloads->size(); ++i) {
      const std::string wat = internal::Cat(at, ".workloads[", i, "]");
      std::optional<Entry> e = ParseWorkload((*workloads)[i], wat, block.fp.channel_budget, problems);
      if (e) block.workloads.push_back(std::move(*e));
    }
    if (fp_ok) blocks.push_back(std::move(block));
  }
  return blocks;
}

// The first of the fields import requires to match that differs, as "<field> <theirs> (this run: <ours>)".
std::optional<std::string> Mismatch(const Fingerprint& theirs, const Fingerprint& ours) {
  if (theirs.gpu != ours.gpu) return internal::Cat("gpu ", theirs.gpu, " (this run: ", ours.gpu, ")");
  if (theirs.nranks != ours.nranks) return internal::Cat("nranks ", theirs.nranks, " (this run: ", ours.nranks, ")");
  if (theirs.nnodes != ours.nnodes) return internal::Cat("nnodes ", theirs.nnodes, " (this run: ", ours.nnodes, ")");
  if (theirs.nccl_version != ours.nccl_version)
    return internal::Cat("nccl_version ", theirs.nccl_version, " (this run: ", ours.nccl_version, ")");
  return std::nullopt;
}

}  // namespace

std::string ToJson(const ExportSet& set) {
  ojson configs = ojson::array();
  for (const auto& [fp, entries] : internal::MergeByFingerprint(set)) {
    ojson workloads = ojson::array();
    for (const Entry& e : entries) workloads.push_back(WorkloadJson(e));
    configs.push_back({{"fingerprint",
                        {{"gpu", fp.gpu},
                         {"nranks", fp.nranks},
                         {"nnodes", fp.nnodes},
                         {"nccl_version", fp.nccl_version},
                         {"plugin_version", fp.plugin_version},
                         {"channel_budget", fp.channel_budget},
                         {"channels", fp.channels},
                         {"ccltune_version", fp.ccltune_version}}},
                       {"workloads", std::move(workloads)}});
  }
  // ordered_json: fields appear in the documented order (schema first), stable and diffable.
  ojson doc = {{"schema", kSchemaVersion},
               {"producer", internal::Cat("ccltune ", CCLTUNE_VERSION_STRING)},
               {"written_at", NowIso8601Utc()},
               {"configs", std::move(configs)}};
  return doc.dump(2, ' ', /*ensure_ascii=*/false, ojson::error_handler_t::replace) + "\n";
}

namespace {

// The document's header (schema, informative strings) and blocks. A syntax error or a bad header is
// returned as a status; field problems throw BadField (problems null) or are collected.
absl::StatusOr<std::vector<ParsedBlock>> ReadDocument(const std::string& text, const std::string& prefix,
                                                      Problems* problems) {
  auto data_loss = [&](std::string_view reason) {
    return absl::DataLossError(OneLine(internal::Cat(prefix, " does not parse: ", reason)));
  };
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    return data_loss(e.what());
  }
  try {
    if (!doc.is_object()) Bad("document", "expected an object");
    const json& schema = Field(doc, "document", "schema");
    if (!schema.is_number_integer()) Bad("schema", "expected an integer");
    if (!(schema.is_number_unsigned() && schema.get<uint64_t>() == static_cast<uint64_t>(kSchemaVersion))) {
      return absl::FailedPreconditionError(
          OneLine(internal::Cat(prefix, " has schema ", schema.dump(), ", expected ", kSchemaVersion)));
    }
    for (const char* name : {"producer", "written_at"}) {
      Attempt(problems, [&] {
        auto it = doc.find(name);
        if (it != doc.end() && !it->is_string()) Bad(name, "expected a string");
      });
    }
    return ParseDocument(doc, problems);
  } catch (const BadField& e) {
    return data_loss(e.what);
  } catch (const json::exception& e) {  // not expected after the type checks; never let one escape
    return data_loss(e.what());
  }
}

}  // namespace

absl::StatusOr<std::vector<ImportedWorkload>> ParseJson(const std::string& text, const Fingerprint& fp,
                                                        const std::string& source_name) {
  const std::string prefix = internal::Cat("ccltune: import file ", source_name);
  absl::StatusOr<std::vector<ParsedBlock>> blocks = ReadDocument(text, prefix, nullptr);
  if (!blocks.ok()) return blocks.status();

  // Blocks whose fingerprint matches; workloads of the same key from several blocks merge like
  // export does (more samples wins).
  std::map<std::string, Entry> merged;
  std::optional<std::string> first_mismatch;
  bool any_match = false;
  for (ParsedBlock& block : *blocks) {
    if (auto m = Mismatch(block.fp, fp)) {
      if (!first_mismatch) first_mismatch = std::move(m);
      continue;
    }
    any_match = true;
    for (Entry& e : block.workloads) {
      if (!internal::IsFinal(e.state)) continue;
      const std::string k = e.key.ToString();
      auto it = merged.find(k);
      if (it == merged.end()) {
        merged.emplace(k, std::move(e));
      } else if (e.samples > it->second.samples) {
        it->second = std::move(e);
      }
    }
  }
  if (!any_match && first_mismatch) {
    return absl::FailedPreconditionError(OneLine(internal::Cat(prefix, " was made on ", *first_mismatch, "; ignored")));
  }
  std::vector<ImportedWorkload> out;
  out.reserve(merged.size());
  for (auto& [k, e] : merged) out.push_back(ImportedWorkload{e.key, e.config, e.tuned_us, e.default_us});
  return out;
}

absl::StatusOr<ExportSet> ParseExport(const std::string& text, const std::string& source_name) {
  absl::StatusOr<std::vector<ParsedBlock>> blocks =
      ReadDocument(text, internal::Cat("ccltune: ", source_name), nullptr);
  if (!blocks.ok()) return blocks.status();
  ExportSet set;
  for (ParsedBlock& b : *blocks) set.comms.emplace_back(std::move(b.fp), std::move(b.workloads));
  return set;
}

absl::StatusOr<ExportSet> ReadExport(const std::string& path) {
  absl::StatusOr<std::string> text = internal::ReadFileNamed(path, "file");
  if (!text.ok()) return text.status();
  return ParseExport(*text, path);
}

std::vector<std::string> ValidateJson(const std::string& text, const std::string& source_name, const Fingerprint* fp) {
  Problems problems;
  absl::StatusOr<std::vector<ParsedBlock>> blocks = ReadDocument(text, source_name, &problems);
  std::vector<std::string> out;
  if (!blocks.ok()) {
    out.push_back(std::string(blocks.status().message()));
    return out;
  }
  for (const std::string& p : problems) out.push_back(OneLine(internal::Cat(source_name, ": ", p)));
  // What parses but cannot be what the file means: duplicate keys in a block (import keeps one of
  // them silently), configs NCCL's cost table did not allow for the call (NCCL would choose instead).
  std::optional<std::string> first_mismatch;
  bool any_match = false;
  for (size_t b = 0; b < blocks->size(); ++b) {
    const ParsedBlock& block = (*blocks)[b];
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < block.workloads.size(); ++i) {
      const Entry& e = block.workloads[i];
      const std::string k = e.key.ToString();
      if (auto [it, inserted] = seen.emplace(k, i); !inserted) {
        out.push_back(OneLine(internal::Cat(source_name, ": configs[", b, "]: workload ", k,
                                            " appears twice; an import would keep only one of them")));
      }
      if (e.config.HasSubspace() && e.subspaces.valid_mask != 0 && !e.subspaces.Valid(e.config.algo, e.config.proto)) {
        out.push_back(OneLine(internal::Cat(source_name, ": configs[", b, "]: workload ", k, ": ",
                                            SubspaceName(e.config.algo, e.config.proto),
                                            " is not among its valid_subspaces; NCCL would run its own choice")));
      }
    }
    if (fp != nullptr) {
      if (auto m = Mismatch(block.fp, *fp)) {
        if (!first_mismatch) first_mismatch = std::move(m);
      } else {
        any_match = true;
      }
    }
  }
  if (fp != nullptr && !any_match && first_mismatch) {
    out.push_back(OneLine(
        internal::Cat(source_name, ": was made on ", *first_mismatch, "; an import into that run would ignore it")));
  }
  return out;
}

absl::StatusOr<std::vector<ImportedWorkload>> ImportJson(const std::string& path, const Fingerprint& fp) {
  absl::StatusOr<std::string> text = internal::ReadImportFile(path);
  if (!text.ok()) return text.status();
  return ParseJson(*text, fp, path);
}

}  // namespace ccltune::config_table
