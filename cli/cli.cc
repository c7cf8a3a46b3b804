// The `ccltune` command line (CLI11 for the arguments): show, diff, merge, convert, validate, plot.
// Every command reads files through config_table, so what it accepts is exactly what an import accepts.
#include "cli/cli.hpp"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/plot.hpp"
#include "config_table/config_table.hpp"
#include "config_table/trace_format.hpp"

namespace ccltune::cli {
namespace {

using config_table::Entry;
using config_table::ExportSet;
using config_table::Fingerprint;

// A command that cannot go on: the message is one line, printed as "ccltune <command>: <message>".
struct Failure {
  int status;
  std::string message;
};

enum class Kind { kExport, kBench, kNcclCsv, kTrace };

struct Input {
  std::string path;
  std::string text;
  Kind kind;
};

std::string KindName(Kind k) {
  switch (k) {
    case Kind::kExport:
      return "a ccltune JSON export";
    case Kind::kBench:
      return "a ccltune-bench report";
    case Kind::kNcclCsv:
      return "NCCL's example-tuner CSV";
    case Kind::kTrace:
      return "a ccltune tuning trace";
  }
  return "?";
}

// What a file is, from its content: JSON (an export, or a bench report with "meta" and "results"), a
// tuning trace (its header line), else NCCL's example-tuner CSV.
Kind Sniff(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    return (text.find("\"results\"") != std::string::npos && text.find("\"meta\"") != std::string::npos)
               ? Kind::kBench
               : Kind::kExport;
  }
  const size_t nl = text.find('\n');
  std::string head = text.substr(0, nl);
  if (!head.empty() && head.back() == '\r') head.pop_back();
  return config_table::IsTraceHeader(head) ? Kind::kTrace : Kind::kNcclCsv;
}

Input Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Failure{kError, absl::StrCat("cannot read ", path, ": ", std::strerror(errno))};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Failure{kError, absl::StrCat("cannot read ", path, ": ", std::strerror(errno))};
  Input f{path, ss.str(), Kind::kExport};
  f.kind = Sniff(f.text);
  return f;
}

Input ReadOf(const std::string& path, std::initializer_list<Kind> accepted, std::string_view command) {
  Input f = Read(path);
  for (Kind k : accepted)
    if (f.kind == k) return f;
  std::string names;
  for (Kind k : accepted) names += (names.empty() ? "" : " or ") + KindName(k);
  throw Failure{kError, absl::StrCat(path, " is ", KindName(f.kind), "; ", std::string(command), " reads ", names)};
}

template <typename T>
T OrFail(absl::StatusOr<T> v) {
  if (!v.ok()) throw Failure{kError, std::string(v.status().message())};
  return *std::move(v);
}

ExportSet ReadExportFile(const std::string& path, std::string_view command) {
  const Input f = ReadOf(path, {Kind::kExport}, command);
  return OrFail(config_table::ParseExport(f.text, path));
}

std::string NcclVersionText(int v) { return absl::StrFormat("%d.%d.%d", v / 10000, (v / 100) % 100, v % 100); }

// The fields an import matches on: the identity diff pairs blocks by.
std::string Where(const Fingerprint& fp) {
  return absl::StrFormat("%s, %d ranks, %d node%s, NCCL %s", fp.gpu, fp.nranks, fp.nnodes, fp.nnodes == 1 ? "" : "s",
                         NcclVersionText(fp.nccl_version));
}

std::string FingerprintText(const Fingerprint& fp) {
  return absl::StrFormat("%s; tuner ABI v%d, channel budget %d, ccltune %s", Where(fp), fp.plugin_version,
                         fp.channel_budget, fp.ccltune_version);
}

void WriteOutput(const std::string& path, const std::string& content, std::ostream& out) {
  if (path.empty() || path == "-") {
    out << content;
    return;
  }
  if (absl::Status st = config_table::WriteFileAtomic(path, content); !st.ok()) {
    throw Failure{kError, std::string(st.message())};
  }
}

// ---- show ----

int Show(const std::string& path, std::ostream& out) {
  const Input f = ReadOf(path, {Kind::kExport, Kind::kNcclCsv}, "show");
  if (f.kind == Kind::kNcclCsv) {
    const auto rules = OrFail(config_table::ParseCsv(f.text, path));
    out << path << ": NCCL example-tuner CSV, " << rules.size() << " line" << (rules.size() == 1 ? "" : "s")
        << " (the first line that matches a call wins)\n";
    out << absl::StrFormat("  %-5s %-14s %12s %12s %-22s %6s %6s %10s %7s\n", "line", "collective", "min_bytes",
                           "max_bytes", "config", "nNodes", "nRanks", "numPipeOps", "regBuff");
    for (const auto& r : rules) {
      out << absl::StrFormat("  %-5d %-14s %12d %12d %-22s %6d %6d %10d %7d\n", r.line, CollName(r.coll), r.min_bytes,
                             r.max_bytes, r.config.ToString(), r.nnodes, r.nranks, r.num_pipe_ops, r.reg_buff);
    }
    return kOk;
  }
  const ExportSet set = OrFail(config_table::ParseExport(f.text, path));
  out << path << ": ccltune JSON export, " << set.comms.size() << " block" << (set.comms.size() == 1 ? "" : "s")
      << "\n";
  for (const auto& [fp, entries] : set.comms) {
    out << "\n" << FingerprintText(fp) << "\n";
    config_table::TableOptions o;
    o.nranks = fp.nranks;
    out << config_table::FormatTable(entries, o) << "\n";
  }
  return kOk;
}

// ---- diff ----

// Per import identity (gpu, ranks, nodes, NCCL version), per workload: the entry the merge rule keeps.
std::map<std::string, std::map<std::string, Entry>> ByWhere(const ExportSet& set) {
  std::map<std::string, std::map<std::string, Entry>> out;
  for (const auto& [fp, entries] : set.comms) {
    auto& block = out[Where(fp)];
    for (const Entry& e : entries) {
      auto [it, inserted] = block.try_emplace(e.key.ToString(), e);
      if (!inserted && config_table::Supersedes(e, it->second)) it->second = e;
    }
  }
  return out;
}

std::string EntryText(const Entry& e) {
  return absl::StrFormat("%s %s%s", e.config.ToString(), config_table::StateName(e.state),
                         e.tuned_us > 0 ? absl::StrFormat(" %.2f us", e.tuned_us) : std::string());
}

int Diff(const std::string& a_path, const std::string& b_path, std::ostream& out) {
  const auto a = ByWhere(ReadExportFile(a_path, "diff"));
  const auto b = ByWhere(ReadExportFile(b_path, "diff"));
  std::map<std::string, bool> wheres;
  for (const auto& [w, _] : a) wheres[w] = true;
  for (const auto& [w, _] : b) wheres[w] = true;
  int changed = 0, only_a = 0, only_b = 0, same = 0;
  out << "--- " << a_path << "\n+++ " << b_path << "\n";
  static const std::map<std::string, Entry> kNone;
  for (const auto& [w, _] : wheres) {
    const auto& ea = a.count(w) ? a.at(w) : kNone;
    const auto& eb = b.count(w) ? b.at(w) : kNone;
    std::string lines;
    for (const auto& [k, x] : ea) {
      auto it = eb.find(k);
      if (it == eb.end()) {
        lines += absl::StrCat("- ", k, "  ", EntryText(x), "\n");
        ++only_a;
      } else if (!(x.config == it->second.config) || x.state != it->second.state) {
        lines += absl::StrCat("~ ", k, "  ", EntryText(x), " -> ", EntryText(it->second), "\n");
        ++changed;
      } else {
        ++same;
      }
    }
    for (const auto& [k, y] : eb) {
      if (!ea.count(k)) {
        lines += absl::StrCat("+ ", k, "  ", EntryText(y), "\n");
        ++only_b;
      }
    }
    if (!lines.empty()) out << "@@ " << w << "\n" << lines;
  }
  out << absl::StrFormat("%d changed, %d only in %s, %d only in %s, %d the same\n", changed, only_a, a_path, only_b,
                         b_path, same);
  return (changed + only_a + only_b) > 0 ? kNo : kOk;
}

// ---- merge ----

int Merge(const std::vector<std::string>& inputs, const std::string& output, std::ostream& out) {
  ExportSet all;
  for (const std::string& path : inputs) {
    ExportSet s = ReadExportFile(path, "merge");
    for (auto& block : s.comms) all.comms.push_back(std::move(block));
  }
  const std::string json = config_table::ToJson(all);  // merges blocks of one fingerprint by the rule
  const ExportSet merged = OrFail(config_table::ParseExport(json, output));
  size_t workloads = 0;
  for (const auto& [fp, entries] : merged.comms) workloads += entries.size();
  WriteOutput(output, json, out);
  out << absl::StrFormat("ccltune merge: %d workloads in %d blocks from %d files -> %s\n", workloads,
                         merged.comms.size(), inputs.size(), output);
  return kOk;
}

// ---- convert ----

int Convert(const std::string& path, const std::string& to, const std::string& output, std::ostream& out) {
  const Input f = ReadOf(path, {Kind::kExport, Kind::kNcclCsv}, "convert");
  std::string result;
  if (f.kind == Kind::kExport) {
    const ExportSet set = OrFail(config_table::ParseExport(f.text, path));
    result = to == "json" ? config_table::ToJson(set) : config_table::ToCsv(set);
  } else if (to == "nccl-csv") {
    result = config_table::ToCsv(OrFail(config_table::ParseCsv(f.text, path)));
  } else {
    throw Failure{kError, absl::StrCat(path,
                                       " is NCCL's example-tuner CSV: its lines are byte ranges without datatype or "
                                       "reduction op, which a JSON export cannot hold; convert a JSON export instead")};
  }
  WriteOutput(output, result, out);
  return kOk;
}

// ---- validate ----

struct ValidateOptions {
  std::string gpu;
  int nranks = 0;
  int nnodes = 0;
  std::string nccl_version;
};

int ParseNcclVersion(const std::string& v) {
  int major = 0, minor = 0, patch = 0;
  char tail = 0;
  if (std::sscanf(v.c_str(), "%d.%d.%d%c", &major, &minor, &patch, &tail) == 3 && major >= 0 && minor >= 0 &&
      minor < 100 && patch >= 0 && patch < 100) {
    return major * 10000 + minor * 100 + patch;
  }
  int code = 0;
  if (std::sscanf(v.c_str(), "%d%c", &code, &tail) == 1 && code > 0) return code;
  throw Failure{kError, absl::StrCat("--nccl-version ", v, ": expected MAJOR.MINOR.PATCH (2.28.9) or a code (22809)")};
}

int Validate(const std::string& path, const ValidateOptions& o, std::ostream& out) {
  const Input f = Read(path);
  std::vector<std::string> problems;
  switch (f.kind) {
    case Kind::kExport: {
      std::optional<Fingerprint> fp;
      if (!o.gpu.empty()) {
        fp = Fingerprint{};
        fp->gpu = o.gpu;
        fp->nranks = o.nranks;
        fp->nnodes = o.nnodes;
        fp->nccl_version = ParseNcclVersion(o.nccl_version);
      }
      problems = config_table::ValidateJson(f.text, path, fp ? &*fp : nullptr);
      break;
    }
    case Kind::kNcclCsv:
      problems = config_table::ValidateCsv(f.text, path, o.nranks, o.nnodes);
      break;
    case Kind::kTrace:
      if (auto rows = config_table::ParseTrace(f.text, path); !rows.ok()) {
        problems.push_back(std::string(rows.status().message()));
      }
      break;
    case Kind::kBench:
      problems.push_back(absl::StrCat(path, ": a ccltune-bench report; validate reads exports, CSVs and traces"));
      break;
  }
  for (const std::string& p : problems) out << p << "\n";
  if (!problems.empty()) return kNo;
  out << path << ": valid (" << KindName(f.kind) << ")\n";
  return kOk;
}

// ---- plot ----

int Plot(const std::string& path, const std::string& png, const std::string& comm, const std::string& workload,
         const std::string& gnuplot, std::ostream& out) {
  const Input f = ReadOf(path, {Kind::kBench, Kind::kTrace}, "plot");
  PlotSpec spec;
  if (f.kind == Kind::kBench) {
    spec = OrFail(BenchPlot(f.text, path));
  } else {
    spec = OrFail(TracePlot(OrFail(config_table::ParseTrace(f.text, path)), comm, workload));
  }
  if (absl::Status st = RunGnuplot(gnuplot, GnuplotScript(spec, png), png); !st.ok()) {
    throw Failure{kError, std::string(st.message())};
  }
  out << "ccltune plot: wrote " << png << "\n";
  return kOk;
}

constexpr const char* kMergeRules =
    "Blocks whose fingerprints are equal in every field merge; within a block, for each workload key, a final "
    "entry (converged, imported) beats one that is not, then the one with more samples wins, and a tie keeps the "
    "file named first. Blocks of different fingerprints stay apart (an import picks the block of its run).";

}  // namespace

int Run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "ccltune: read, check, compare, merge, convert and plot what ccltune writes (exports, NCCL "
      "example-tuner CSVs, ccltune-bench reports, tuning traces).\nExit status: 0 done, 1 the answer is no "
      "(validate found problems, diff found differences), 2 error.",
      "ccltune"};
  app.set_version_flag("--version", std::string("ccltune ") + CCLTUNE_VERSION_STRING);
  app.require_subcommand(1, 1);
  app.set_help_all_flag("--help-all", "Print the help of every command");

  std::string file, file_b, output, to, comm, workload, gnuplot = "gnuplot";
  std::vector<std::string> inputs;
  ValidateOptions vo;

  auto* show = app.add_subcommand("show", "Print the tuned table of an export (as the exit summary) or a CSV's lines");
  show->add_option("FILE", file, "JSON export or NCCL example-tuner CSV")->required();

  auto* diff = app.add_subcommand(
      "diff",
      "Compare two exports per GPU/ranks/nodes/NCCL version and workload: - only in A, + only in B, ~ config "
      "or state changed; exit 1 if they differ");
  diff->add_option("A", file, "JSON export")->required();
  diff->add_option("B", file_b, "JSON export")->required();

  auto* merge = app.add_subcommand("merge", std::string("Merge exports into one. ") + kMergeRules);
  merge->add_option("FILES", inputs, "JSON exports (two or more)")->required()->expected(2, 1 << 20);
  merge->add_option("-o,--output", output, "the merged JSON export (written atomically)")->required();

  auto* convert = app.add_subcommand(
      "convert",
      "Convert an export to NCCL's example-tuner CSV (NCCL_TUNER_CONFIG_FILE) or to normalised JSON; a "
      "CSV to a normalised CSV");
  convert->add_option("FILE", file, "JSON export or NCCL example-tuner CSV")->required();
  convert->add_option("--to", to, "nccl-csv or json")->required()->check(CLI::IsMember({"nccl-csv", "json"}));
  convert->add_option("-o,--output", output, "output file (default: standard output)");

  auto* validate = app.add_subcommand(
      "validate", "Check an export, a CSV or a trace as an import would: one line per problem, exit 1 if any");
  validate->add_option("FILE", file, "JSON export, NCCL example-tuner CSV or tuning trace")->required();
  auto* gpu = validate->add_option("--gpu", vo.gpu, "with --nranks, --nnodes, --nccl-version: the run to import into");
  auto* nranks =
      validate->add_option("--nranks", vo.nranks, "ranks of the run to import into")->check(CLI::Range(1, 1 << 30));
  auto* nnodes =
      validate->add_option("--nnodes", vo.nnodes, "nodes of the run to import into")->check(CLI::Range(1, 1 << 30));
  auto* ver = validate->add_option("--nccl-version", vo.nccl_version, "NCCL version of that run (2.28.9)");
  gpu->needs(nranks, nnodes, ver);
  ver->needs(gpu);
  nranks->needs(nnodes);
  nnodes->needs(nranks);

  auto* plot = app.add_subcommand(
      "plot",
      "Draw a PNG with gnuplot: from a ccltune-bench JSON report, bus bandwidth (GB/s) against size for NCCL's "
      "default, the tuned config and the oracle; from a tuning trace (CCLTUNE_TRACE), time per call against "
      "the call index of one workload, candidates, NCCL's default and the incumbent marked");
  plot->add_option("FILE", file, "ccltune-bench JSON report or tuning trace CSV")->required();
  plot->add_option("-o,--output", output, "the PNG to write")->required();
  plot->add_option("--comm", comm, "trace: the communicator (default: the one with the most rows)");
  plot->add_option("--workload", workload, "trace: the workload key (default: the one with the most rows)");
  plot->add_option("--gnuplot", gnuplot, "the gnuplot program")->capture_default_str();

  std::string command = "";
  try {
    app.parse(argc, argv);
    command = app.get_subcommands().front()->get_name();
    if (command == "show") return Show(file, out);
    if (command == "diff") return Diff(file, file_b, out);
    if (command == "merge") return Merge(inputs, output, out);
    if (command == "convert") return Convert(file, to, output, out);
    if (command == "validate") return Validate(file, vo, out);
    return Plot(file, output, comm, workload, gnuplot, out);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e, out, err);  // --help, --version
    std::string msg = e.what();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    err << "ccltune: " << msg << " (ccltune --help)\n";
    return kError;
  } catch (const Failure& f) {
    err << "ccltune " << command << ": " << f.message << "\n";
    return f.status;
  }
}

}  // namespace ccltune::cli
