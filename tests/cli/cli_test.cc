// Pins the ccltune command line: every subcommand on good and bad input (exit status, one-line
// messages), merge's conflict rule, convert's CSV in NCCL's example-tuner columns and its round trip,
// validate against each bad-input class of docs/failure-semantics.md, the tuned table (bytes as
// nccl-tests counts them), the trace format, and the plots (data, script, and a PNG drawn by gnuplot).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/plot.hpp"
#include "config_table/config_table.hpp"
#include "config_table/trace_format.hpp"

namespace ccltune {
namespace {

namespace fs = std::filesystem;
using config_table::Entry;
using config_table::ExportSet;
using config_table::Fingerprint;
using config_table::WorkloadState;

constexpr int kFloat32 = 7, kSum = 0;

struct Result {
  int status;
  std::string out, err;
};

Result Cli(std::vector<std::string> args) {
  args.insert(args.begin(), "ccltune");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int status = cli::Run(static_cast<int>(argv.size()), argv.data(), out, err);
  return {status, out.str(), err.str()};
}

int Lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

class Dir {
 public:
  Dir() {
    char tmpl[] = "/tmp/ccltune-cli-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~Dir() { fs::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& content) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << content;
    return p;
  }
  std::string Path(const std::string& name) const { return path_ + "/" + name; }
  static std::string Read(const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string path_;
};

Fingerprint Fp(int nranks = 4) {
  Fingerprint fp;
  fp.gpu = "NVIDIA H200";
  fp.nranks = nranks;
  fp.nnodes = 1;
  fp.nccl_version = 22809;
  fp.plugin_version = 5;
  fp.channel_budget = 32;
  fp.ccltune_version = "0.1.0";
  return fp;
}

Entry E(Coll coll, uint64_t bytes, Config cfg, WorkloadState state = WorkloadState::kConverged, uint64_t samples = 50,
        double default_us = 40, double tuned_us = 30) {
  Entry e;
  const bool red = coll == Coll::kAllReduce || coll == Coll::kReduce || coll == Coll::kReduceScatter;
  e.key = WorkloadKey{{CallDesc{coll, kFloat32, red ? kSum : -1, bytes}}, false};
  e.config = cfg;
  e.state = state;
  e.samples = samples;
  e.calls = samples * 2;
  e.default_us = default_us;
  e.tuned_us = tuned_us;
  e.subspaces.valid_mask = 0x3f;  // tree and ring, every protocol
  e.subspaces.nccl_algo = kAlgoRing;
  e.subspaces.nccl_proto = kProtoSimple;
  return e;
}

std::string Export(std::vector<Entry> entries, Fingerprint fp = Fp()) {
  ExportSet s;
  s.comms.emplace_back(fp, std::move(entries));
  return config_table::ToJson(s);
}

const Config kRingLL128{kAlgoRing, kProtoLL128, 16, 0};
const Config kTreeLL{kAlgoTree, kProtoLL, 8, 0};

// ---------------------------------------------------------------- usage

TEST(Usage, HelpEverywhereAndVersion) {
  auto r = Cli({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("Subcommands:"), std::string::npos) << r.out;
  for (const char* sub : {"show", "diff", "merge", "convert", "validate", "plot"}) {
    r = Cli({sub, "--help"});
    EXPECT_EQ(r.status, 0) << sub;
    EXPECT_NE(r.out.find("Usage:"), std::string::npos) << sub;
  }
  EXPECT_NE(Cli({"merge", "--help"}).out.find("a final entry (converged, imported) beats"), std::string::npos);
  r = Cli({"--version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, std::string("ccltune ") + CCLTUNE_TEST_VERSION + "\n");
}

TEST(Usage, BadUsageIsOneLineAndStatus2) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{},
                                               {"frobnicate"},
                                               {"show"},
                                               {"diff", "a.json"},
                                               {"merge", "a.json", "-o", "x"},
                                               {"convert", "a.json", "--to", "yaml"},
                                               {"validate", "f", "--nranks", "0", "--nnodes", "1"},
                                               {"validate", "f", "--gpu", "H200"},
                                               {"plot", "f"}}) {
    const auto r = Cli(args);
    EXPECT_EQ(r.status, cli::kError) << testing::PrintToString(args);
    EXPECT_EQ(Lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("ccltune: ", 0), 0u) << r.err;
  }
}

TEST(Usage, UnreadableFilesAreOneLineAndStatus2) {
  Dir d;
  for (const char* sub : {"show", "validate", "plot"}) {
    std::vector<std::string> args = {sub, d.Path("missing.json")};
    if (std::string(sub) == "plot") args.insert(args.end(), {"-o", d.Path("x.png")});
    const auto r = Cli(args);
    EXPECT_EQ(r.status, cli::kError) << sub;
    EXPECT_EQ(r.err, std::string("ccltune ") + sub + ": cannot read " + d.Path("missing.json") +
                         ": No such file or directory\n");
  }
  const auto r = Cli({"show", d.Write("bad.json", "{\"schema\": 1, \"configs\": [")});
  EXPECT_EQ(r.status, cli::kError);
  EXPECT_EQ(Lines(r.err), 1);
  EXPECT_NE(r.err.find("does not parse"), std::string::npos) << r.err;
}

// ---------------------------------------------------------------- show and the table

TEST(Show, TableAsTheExitSummary) {
  Dir d;
  Entry imported = E(Coll::kAllGather, 1 << 20, kTreeLL, WorkloadState::kImported, 0, 0, 0);
  // The all-reduce's search covered 1-2 MiB, and NCCL ran its config on the communicator's 2 channels.
  Entry searched = E(Coll::kAllReduce, 1 << 20, kRingLL128);
  searched.class_min_bytes = 1 << 20;
  searched.class_max_bytes = (2 << 20) - 1;
  Config ran = searched.config;
  ran.channels = 2;
  searched.ran.emplace_back(searched.config, ran);
  const std::string f = d.Write("e.json", Export({searched, imported}));
  const auto r = Cli({"show", f});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("NVIDIA H200, 4 ranks, 1 node, NCCL 2.28.9"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("collective"), std::string::npos);
  // allreduce: the buffer; allgather: the output, 4 ranks x 1 MiB (as nccl-tests prints it).
  EXPECT_TRUE(std::regex_search(
      r.out,
      std::regex(
          R"(allreduce +1048576 1048576-2097151 +float32 +sum +ring/simple +40\.00 ring/ll128/nc16 +ring/ll128/nc2 +30\.00 +1\.33x +50 converged)")))
      << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(allgather +4194304 - +float32 +- +ring/simple +- tree/ll/nc8 +\? +- +- +0 imported)")))
      << r.out;
  EXPECT_NE(r.out.find("the config came from an import"), std::string::npos);
}

TEST(Table, ConfigAsNcclRunsIt) {
  Entry e = E(Coll::kAllReduce, 4096, Config{kAlgoTree, kProtoLL128, 0, 0});
  EXPECT_EQ(config_table::RunConfigText(e), "tree/ll128/nc-nccl");
  e.subspaces.valid_mask = 1u << (kAlgoRing * kNumProtos + kProtoSimple);  // NCCL allowed ring/simple only
  EXPECT_EQ(config_table::RunConfigText(e), "nccl/nc-nccl");
  e.config = kRingLL128;
  e.subspaces.valid_mask = 0x3f;
  EXPECT_EQ(config_table::RunConfigText(e), "ring/ll128/nc16");
  e.config = Config{};
  EXPECT_EQ(config_table::RunConfigText(e), "default");
}

TEST(Show, CsvLines) {
  Dir d;
  const auto r = Cli({"show", d.Write("t.csv", "# c\nallreduce,0,65536,tree,simple,2,1,-1,-1,1\n")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("1 line"), std::string::npos);
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(2 +allreduce +0 +65536 tree/simple/nc2 +1 +-1 +-1 +1)"))) << r.out;
}

// ---------------------------------------------------------------- diff

TEST(Diff, SameChangedOnlyInEither) {
  Dir d;
  const std::string a =
      d.Write("a.json", Export({E(Coll::kAllReduce, 1 << 20, kRingLL128), E(Coll::kAllReduce, 1 << 22, kRingLL128)}));
  const std::string a2 =
      d.Write("a2.json", Export({E(Coll::kAllReduce, 1 << 20, kRingLL128), E(Coll::kAllReduce, 1 << 22, kRingLL128)}));
  auto r = Cli({"diff", a, a2});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("0 changed, 0 only in"), std::string::npos) << r.out;

  const std::string b =
      d.Write("b.json", Export({E(Coll::kAllReduce, 1 << 20, kTreeLL), E(Coll::kAllGather, 4096, kTreeLL)}));
  r = Cli({"diff", a, b});
  EXPECT_EQ(r.status, cli::kNo);
  EXPECT_NE(r.out.find("@@ NVIDIA H200, 4 ranks, 1 node, NCCL 2.28.9"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("~ allreduce/float32/sum/1048576  ring/ll128/nc16 converged 30.00 us -> tree/ll/nc8 converged"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("- allreduce/float32/sum/4194304"), std::string::npos);
  EXPECT_NE(r.out.find("+ allgather/float32/4096"), std::string::npos);
  EXPECT_NE(r.out.find("1 changed, 1 only in " + a + ", 1 only in " + b + ", 0 the same"), std::string::npos);

  r = Cli({"diff", a, d.Write("c.csv", "allreduce,0,1,ring,simple,-1,-1,-1\n")});
  EXPECT_EQ(r.status, cli::kError);
  EXPECT_NE(r.err.find("is NCCL's example-tuner CSV; diff reads a ccltune JSON export"), std::string::npos) << r.err;
}

// ---------------------------------------------------------------- merge

TEST(Merge, ConflictRules) {
  Dir d;
  // 1 MiB: converged (10 samples) in A, searching (99) in B -> the final entry wins despite fewer samples.
  // 4 MiB: both converged, B has more samples -> B. 16 MiB: a tie -> the file named first (A).
  const std::string a =
      d.Write("a.json", Export({E(Coll::kAllReduce, 1 << 20, kRingLL128, WorkloadState::kConverged, 10),
                                E(Coll::kAllReduce, 1 << 22, kRingLL128, WorkloadState::kConverged, 10),
                                E(Coll::kAllReduce, 1 << 24, kRingLL128, WorkloadState::kConverged, 10)}));
  const std::string b =
      d.Write("b.json", Export({E(Coll::kAllReduce, 1 << 20, kTreeLL, WorkloadState::kSearching, 99),
                                E(Coll::kAllReduce, 1 << 22, kTreeLL, WorkloadState::kConverged, 20),
                                E(Coll::kAllReduce, 1 << 24, kTreeLL, WorkloadState::kConverged, 10)}));
  const std::string other = d.Write("o.json", Export({E(Coll::kAllReduce, 1 << 20, kTreeLL)}, Fp(8)));
  const auto r = Cli({"merge", a, b, other, "-o", d.Path("m.json")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "ccltune merge: 4 workloads in 2 blocks from 3 files -> " + d.Path("m.json") + "\n");
  auto merged = config_table::ReadExport(d.Path("m.json"));
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_EQ(merged->comms.size(), 2u);
  std::map<uint64_t, Config> got;
  for (const Entry& e : merged->comms[0].second) got[e.key.calls[0].bytes] = e.config;
  EXPECT_EQ(got[1 << 20], kRingLL128);
  EXPECT_EQ(got[1 << 22], kTreeLL);
  EXPECT_EQ(got[1 << 24], kRingLL128);
  EXPECT_EQ(merged->comms[1].first.nranks, 8);
  // A CSV cannot be merged.
  EXPECT_EQ(Cli({"merge", a, d.Write("c.csv", "allreduce,0,1,ring,simple,-1,-1,-1\n"), "-o", d.Path("n.json")}).status,
            cli::kError);
  EXPECT_FALSE(fs::exists(d.Path("n.json")));
}

// ---------------------------------------------------------------- convert

TEST(Convert, NcclCsvInTheExampleTunersColumnsAndRoundTrip) {
  Dir d;
  std::vector<Entry> entries = {E(Coll::kAllReduce, 1 << 20, kRingLL128), E(Coll::kAllGather, 1 << 16, kTreeLL),
                                E(Coll::kReduceScatter, 1 << 18, Config{kAlgoRing, kProtoSimple, 0, 0}),
                                E(Coll::kAllReduce, 1 << 24, Config{})};
  const std::string f = d.Write("e.json", Export(entries));
  const auto r = Cli({"convert", f, "--to", "nccl-csv", "-o", d.Path("t.csv")});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string csv = Dir::Read(d.Path("t.csv"));
  // NCCL's plugins/tuner/example/README.md: collective_type,min_bytes,max_bytes,algorithm,protocol,channels,
  // nNodes,nRanks,numPipeOps,regBuff with its spellings, -1 for "any"/"keep NCCL's".
  const std::regex line_re(
      R"((broadcast|reduce|allgather|reducescatter|allreduce),\d+,\d+,(tree|ring|collnet_direct|collnet_chain|nvls|nvls_tree|pat),(ll|ll128|simple),(-1|\d+),(-1|\d+),(-1|\d+),(-1|\d+),(-1|0|1))");
  int lines = 0;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++lines;
    EXPECT_TRUE(std::regex_match(line, line_re)) << line;
    EXPECT_LT(line.size(), 255u);  // the example plugin reads lines into 256 bytes
  }
  EXPECT_EQ(lines, 3);  // NCCL's default is not a line
  // Round trip: every converged non-default workload is matched by its line, with its config.
  auto rules = config_table::ParseCsv(csv, "t.csv");
  ASSERT_TRUE(rules.ok()) << rules.status();
  for (const Entry& e : entries) {
    auto cfg = config_table::MatchCsv(*rules, e.key.calls[0], 4, 1);
    if (e.config.IsDefault()) {
      EXPECT_FALSE(cfg.has_value());
    } else {
      ASSERT_TRUE(cfg.has_value()) << e.key.ToString();
      EXPECT_EQ(*cfg, e.config) << e.key.ToString();
    }
  }
  // CSV -> CSV is stable.
  const auto again = Cli({"convert", d.Path("t.csv"), "--to", "nccl-csv"});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out, csv);
  // JSON -> JSON keeps every workload.
  const auto json = Cli({"convert", f, "--to", "json"});
  ASSERT_EQ(json.status, 0);
  auto back = config_table::ParseExport(json.out, "stdout");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->comms[0].second.size(), entries.size());
}

TEST(Convert, BadInput) {
  Dir d;
  auto r = Cli({"convert", d.Write("t.csv", "allreduce,0,1,ring,simple,-1,-1,-1\n"), "--to", "json"});
  EXPECT_EQ(r.status, cli::kError);
  EXPECT_NE(r.err.find("a JSON export cannot hold"), std::string::npos) << r.err;
  r = Cli({"convert", d.Write("u.csv", "allreduce,0,1,rng,simple,-1,-1,-1\n"), "--to", "nccl-csv"});
  EXPECT_EQ(r.status, cli::kError);
  EXPECT_EQ(r.err, "ccltune convert: ccltune: import file " + d.Path("u.csv") +
                       " does not parse: line 1: unknown algorithm \"rng\"\n");
}

// ---------------------------------------------------------------- validate

struct ValidateCase {
  const char* name;
  std::string content;  // the file ("" with missing: no file)
  std::vector<std::string> options;
  int status;
  std::vector<std::string> lines;  // each expected line (after "<file>: "), in order
};

class Validate : public testing::TestWithParam<ValidateCase> {};

TEST_P(Validate, OneLinePerProblem) {
  const ValidateCase& c = GetParam();
  Dir d;
  const std::string f = d.Write(std::string(c.name) + (c.content[0] == '{' ? ".json" : ".csv"), c.content);
  std::vector<std::string> args = {"validate", f};
  args.insert(args.end(), c.options.begin(), c.options.end());
  const auto r = Cli(args);
  EXPECT_EQ(r.status, c.status) << r.out << r.err;
  std::vector<std::string> got;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) got.push_back(line);
  ASSERT_EQ(got.size(), c.lines.size()) << r.out;
  for (size_t i = 0; i < got.size(); ++i) {
    std::string want = c.lines[i];
    const size_t at = want.find("{F}");
    EXPECT_EQ(got[i], at == std::string::npos ? f + want : want.replace(at, 3, f));
  }
}

std::string Good() { return Export({E(Coll::kAllReduce, 1 << 20, kRingLL128)}); }
std::string Edit(const std::string& from, const std::string& to, std::string s = Good()) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

// The import classes of docs/failure-semantics.md, and what validate adds.
INSTANTIATE_TEST_SUITE_P(
    FailureSemantics, Validate,
    testing::Values(
        ValidateCase{"valid_json", Good(), {}, 0, {": valid (a ccltune JSON export)"}},
        ValidateCase{"schema", Edit("\"schema\": 1", "\"schema\": 2"), {}, 1, {" has schema 2, expected 1"}},
        ValidateCase{"missing_and_unknown_fields",
                     Edit("\"samples\"", "\"smples\"", Edit("\"state\": \"converged\"", "\"state\": \"done\"")),
                     {},
                     1,
                     {": configs[0].workloads[0].state: unknown state \"done\"",
                      ": configs[0].workloads[0]: missing field \"samples\""}},
        ValidateCase{"wrong_type",
                     Edit("\"channels\": 16", "\"channels\": \"16\""),
                     {},
                     1,
                     {": configs[0].workloads[0].config.channels: expected an integer"}},
        ValidateCase{"out_of_range",
                     Edit("\"channels\": 16", "\"channels\": 65"),
                     {},
                     1,
                     {": configs[0].workloads[0].config.channels: 65 out of range [0, 32]"}},
        ValidateCase{"not_a_valid_subspace",
                     Edit("\"ring/ll128\",", ""),
                     {},
                     1,
                     {": configs[0]: workload allreduce/float32/sum/1048576: ring/ll128 is not among its "
                      "valid_subspaces; NCCL would run its own choice"}},
        ValidateCase{"fingerprint_matches",
                     Good(),
                     {"--gpu", "NVIDIA H200", "--nranks", "4", "--nnodes", "1", "--nccl-version", "2.28.9"},
                     0,
                     {": valid (a ccltune JSON export)"}},
        ValidateCase{"fingerprint_mismatch",
                     Good(),
                     {"--gpu", "NVIDIA H200", "--nranks", "8", "--nnodes", "1", "--nccl-version", "22809"},
                     1,
                     {": was made on nranks 4 (this run: 8); an import into that run would ignore it"}},
        ValidateCase{"valid_csv",
                     "# x\nallreduce,0,65536,tree,simple,2,1,-1,-1,1\n",
                     {},
                     0,
                     {": valid (NCCL's example-tuner CSV)"}},
        ValidateCase{"csv_lines",
                     "allreduce,0,65536,tree,simple,2,1,-1\nallreduce,0,1,tree\nalltoall,0,1,ring,simple,-1,-1,-1\n"
                     "allreduce,9,1,ring,simple,-1,-1,-1\nallreduce,0,1,ring,simple,65,-1,-1\n",
                     {},
                     1,
                     {": line 2: 4 fields; expected collective_type,min_bytes,max_bytes,algorithm,protocol,channels,"
                      "nNodes,nRanks[,numPipeOps[,regBuff]]",
                      ": line 3: unknown collective_type \"alltoall\"", ": line 4: min_bytes above max_bytes",
                      ": line 5: channels \"65\" is not -1 or 1..64"}},
        ValidateCase{"csv_other_shape",
                     "allreduce,0,1,ring,simple,-1,2,16\n",
                     {"--nranks", "4", "--nnodes", "1"},
                     1,
                     {": no line for nRanks 4, nNodes 1; an import into that run would ignore the file"}},
        ValidateCase{"trace_bad_role",
                     "comm,workload,call,unit,config,us,role\nc,w,1,2,default,3.5,best\n",
                     {},
                     1,
                     {"ccltune: trace {F}: line 2: unknown role \"best\" (candidate, incumbent, default, monitor)"}}),
    [](const testing::TestParamInfo<ValidateCase>& info) { return std::string(info.param.name); });

TEST(ValidateMore, SyntaxErrorIsOneLine) {
  Dir d;
  const std::string f = d.Write("s.json", "{\"schema\": 1,");
  const auto r = Cli({"validate", f});
  EXPECT_EQ(r.status, cli::kNo);
  EXPECT_EQ(Lines(r.out), 1);
  EXPECT_EQ(r.out.rfind(f + " does not parse: ", 0), 0u) << r.out;
}

// ---------------------------------------------------------------- trace format

TEST(Trace, WriterAndReaderAgree) {
  Dir d;
  auto w = config_table::TraceWriter::Open(d.Path("t.csv"));
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<config_table::TraceRow> rows = {
      {"0x1", "allreduce/float32/sum/1048576", 0, 1, "default", 41.5, config_table::TraceRole::kDefault, 40.0, 41.5},
      {"0x1", "allreduce/float32/sum/1048576", 1, 17, "ring/ll128/nc16", 30.25, config_table::TraceRole::kCandidate,
       30.25, 33.0},
      {"0x1", "group[a,b]", 2, 33, "ring/ll128/nc16", 29.0, config_table::TraceRole::kMonitor, 28.5, 29.0}};
  for (const auto& r : rows) ASSERT_TRUE((*w)->Append(r).ok());
  w->reset();
  auto back = config_table::ReadTrace(d.Path("t.csv"));
  ASSERT_TRUE(back.ok()) << back.status();
  rows[2].workload = "group[a;b]";  // a comma never splits a field
  EXPECT_EQ(*back, rows);
  auto bad = config_table::ParseTrace("comm,workload,call,unit,config,us,role\nc,w,x,1,default,2,candidate\n", "t");
  EXPECT_EQ(bad.status().message(), "ccltune: trace t: line 2: call \"x\" is not a non-negative integer");
  bad = config_table::ParseTrace("c,w\n", "t");
  EXPECT_FALSE(bad.ok());
  // The new header wants nine fields, the older one seven; each form is read under its own header only.
  bad = config_table::ParseTrace(std::string(config_table::kTraceHeader) + "\nc,w,1,1,default,2,candidate\n", "t");
  EXPECT_EQ(bad.status().message(),
            "ccltune: trace t: line 2: 7 fields; expected comm,workload,call,unit,config,us,role,min_us,max_us");
  bad = config_table::ParseTrace(std::string(config_table::kTraceHeader) + "\nc,w,1,1,default,2,candidate,1,-3\n", "t");
  EXPECT_EQ(bad.status().message(), "ccltune: trace t: line 2: max_us \"-3\" is not a non-negative number");
  auto old = config_table::ParseTrace("comm,workload,call,unit,config,us,role\nc,w,1,2,default,2.5,candidate\n", "t");
  ASSERT_TRUE(old.ok()) << old.status();
  ASSERT_EQ(old->size(), 1u);
  EXPECT_EQ((*old)[0].us, 2.5);
  EXPECT_FALSE((*old)[0].min_us.has_value());
  EXPECT_FALSE((*old)[0].max_us.has_value());
}

// ---------------------------------------------------------------- plots

TEST(Plot, BusBandwidthAsNcclTests) {
  EXPECT_DOUBLE_EQ(cli::BusBandwidthFactor("allreduce", 4), 1.5);
  EXPECT_DOUBLE_EQ(cli::BusBandwidthFactor("allgather", 4), 0.75);
  EXPECT_DOUBLE_EQ(cli::BusBandwidthFactor("broadcast", 4), 1.0);
  const std::string report = R"({"meta": {"nranks": 4, "device": "simulated", "nccl_version": "2.28.9",
    "backend": "simulated"}, "results": [
    {"collective": "allreduce", "dtype": "float32", "bytes": 1048576, "default_us": 100, "tuned_us": 50, "oracle_us": 40},
    {"collective": "allreduce", "dtype": "float32", "bytes": 4194304, "default_us": 200, "tuned_us": null, "oracle_us": 150},
    {"collective": "allgather", "dtype": "float32", "bytes": 1048576, "default_us": 100}]})";
  auto spec = cli::BenchPlot(report, "r.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->panels.size(), 2u);
  ASSERT_EQ(spec->panels[0].series.size(), 3u);
  EXPECT_EQ(spec->panels[0].series[0].label, "NCCL default");
  EXPECT_EQ(spec->panels[0].series[1].label, "ccltune (tuned)");
  EXPECT_EQ(spec->panels[0].series[2].label, "oracle (best config of the searched space)");
  // 1 MiB in 100 us: algbw 10.48576 GB/s, x 2(n-1)/n = 15.72864 GB/s.
  EXPECT_DOUBLE_EQ(spec->panels[0].series[0].points[0].second, 1048576.0 / 100 / 1e3 * 1.5);
  EXPECT_EQ(spec->panels[0].series[1].points.size(), 1u);  // the null tuned_us is left out
  EXPECT_EQ(spec->panels[1].series.size(), 1u);
  const std::string script = cli::GnuplotScript(*spec, "/tmp/x.png");
  EXPECT_NE(script.find("set ylabel \"bus bandwidth (GB/s)\""), std::string::npos);
  EXPECT_NE(script.find("size (bytes"), std::string::npos);
  EXPECT_NE(script.find("title \"oracle (best config of the searched space)\""), std::string::npos);
  EXPECT_FALSE(cli::BenchPlot("{\"schema\": 1}", "e.json").ok());
}

bool IsPng(const std::string& path, int* width, int* height) {
  const std::string s = Dir::Read(path);
  if (s.size() < 24 || s.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return false;
  auto be32 = [&](size_t at) {
    return (static_cast<unsigned char>(s[at]) << 24) | (static_cast<unsigned char>(s[at + 1]) << 16) |
           (static_cast<unsigned char>(s[at + 2]) << 8) | static_cast<unsigned char>(s[at + 3]);
  };
  *width = static_cast<int>(be32(16));
  *height = static_cast<int>(be32(20));
  return true;
}

TEST(Plot, BenchReportToPng) {
  Dir d;
  const std::string png = d.Path("bench.png");
  const auto r = Cli({"plot", std::string(CCLTUNE_DOCS_DIR) + "/results/data/sim-builtin.json", "-o", png});
  ASSERT_EQ(r.status, 0) << r.err;
  int w = 0, h = 0;
  ASSERT_TRUE(IsPng(png, &w, &h));
  EXPECT_EQ(w, 1100);
  EXPECT_EQ(h, 60 + 420 * 3);  // allreduce, allgather, reducescatter
}

TEST(Plot, TraceToPngAndBadInput) {
  Dir d;
  auto w = config_table::TraceWriter::Open(d.Path("t.csv"));
  ASSERT_TRUE(w.ok());
  using config_table::TraceRole;
  for (uint64_t i = 0; i < 60; ++i) {
    const TraceRole role = i < 5 ? TraceRole::kDefault : i < 40 ? TraceRole::kCandidate : TraceRole::kMonitor;
    const double us = 40.0 - (i > 40 ? 8 : 0) + (i % 7);
    ASSERT_TRUE((*w)->Append({"0x1", "allreduce/float32/sum/1048576", i, i,
                              role == TraceRole::kCandidate ? "ring/ll/nc4" : "default", us, role, us - 1, us})
                    .ok());
  }
  w->reset();
  const std::string png = d.Path("trace.png");
  auto r = Cli({"plot", d.Path("t.csv"), "-o", png});
  ASSERT_EQ(r.status, 0) << r.err;
  int width = 0, height = 0;
  EXPECT_TRUE(IsPng(png, &width, &height));
  auto rows = config_table::ReadTrace(d.Path("t.csv"));
  auto spec = cli::TracePlot(*rows, "", "");
  ASSERT_TRUE(spec.ok());
  ASSERT_EQ(spec->panels[0].series.size(), 3u);
  EXPECT_EQ(spec->panels[0].series[0].label, "candidate (a config on trial)");
  EXPECT_EQ(spec->panels[0].series[0].points.size(), 35u);
  r = Cli({"plot", d.Path("t.csv"), "-o", png, "--workload", "nope"});
  EXPECT_EQ(r.status, cli::kError);
  EXPECT_EQ(r.err, "ccltune plot: no rows of workload nope on communicator 0x1\n");
  r = Cli({"plot", d.Write("e.json", Good()), "-o", png});
  EXPECT_EQ(r.status, cli::kError);
  EXPECT_NE(r.err.find("is a ccltune JSON export; plot reads a ccltune-bench report or a ccltune tuning trace"),
            std::string::npos)
      << r.err;
  r = Cli({"plot", d.Path("t.csv"), "-o", png, "--gnuplot", "/nonexistent/gnuplot"});
  EXPECT_EQ(r.status, cli::kError);
  EXPECT_NE(r.err.find("apt-get install gnuplot-nox"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ccltune
