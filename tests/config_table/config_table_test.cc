// Pins config_table: JSON export/import round trip and merge rule, the example-tuner CSV, the
// atomic write, and every import error with its exact one-line message.
#include "config_table/config_table.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

namespace ccltune::config_table {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int kFloat32 = 7, kBfloat16 = 9, kInt8 = 0, kFloat64 = 8;
constexpr int kSum = 0, kMax = 2;

Fingerprint Fp() {
  Fingerprint fp;
  fp.gpu = "NVIDIA H200";
  fp.nranks = 8;
  fp.nnodes = 1;
  fp.nccl_version = 22809;
  fp.plugin_version = 6;
  fp.channel_budget = 32;
  fp.ccltune_version = "0.1.0";
  return fp;
}

CallDesc Call(Coll c, int dtype, uint64_t bytes, int op = -2) {
  const bool red = c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter;
  return CallDesc{c, dtype, op == -2 ? (red ? kSum : -1) : op, bytes};
}

WorkloadKey Key(CallDesc c) { return WorkloadKey{{c}, false}; }

Config Cfg(int algo, int proto, int channels, int64_t chunk = 0) { return Config{algo, proto, channels, chunk}; }

Entry MakeEntry(WorkloadKey key, Config cfg, WorkloadState state = WorkloadState::kConverged, uint64_t samples = 10,
                double default_us = 40.5, double tuned_us = 30.25) {
  Entry e;
  e.key = std::move(key);
  e.config = cfg;
  e.state = state;
  e.samples = samples;
  e.calls = samples * 3;
  e.converge_calls = samples * 2;
  e.default_us = default_us;
  e.tuned_us = tuned_us;
  return e;
}

ExportSet Set(std::vector<Entry> entries, Fingerprint fp = Fp()) {
  ExportSet s;
  s.comms.emplace_back(std::move(fp), std::move(entries));
  return s;
}

std::vector<ImportedWorkload> MustParse(const std::string& text, const Fingerprint& fp = Fp()) {
  auto r = ParseJson(text, fp, "x.json");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::vector<ImportedWorkload>{};
}

// ---------------------------------------------------------------- round trip

using RoundTripParam = std::tuple<Coll, int, Config, bool>;
class RoundTrip : public ::testing::TestWithParam<RoundTripParam> {};

TEST_P(RoundTrip, ExportThenImportGivesTheSameWorkload) {
  const auto [coll, dtype, cfg, grouped] = GetParam();
  WorkloadKey key;
  key.grouped = grouped;
  key.calls.push_back(Call(coll, dtype, 1u << 20));
  if (grouped) {
    key.calls.push_back(Call(Coll::kAllGather, kBfloat16, 4096));
    key.calls.push_back(Call(coll, dtype, (1ull << 33) + 7));  // > 4 GiB survives
  }
  Entry e = MakeEntry(key, cfg, WorkloadState::kConverged, 99, 123.456789012345, 0.1 + 0.2);
  auto got = MustParse(ToJson(Set({e})));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key, key);
  EXPECT_EQ(got[0].key.Hash(), key.Hash());
  EXPECT_EQ(got[0].config, cfg);
  EXPECT_EQ(got[0].default_us, 123.456789012345);  // exact: the dump round-trips doubles
  EXPECT_EQ(got[0].tuned_us, 0.1 + 0.2);
}

INSTANTIATE_TEST_SUITE_P(
    Sweep, RoundTrip,
    ::testing::Combine(::testing::Values(Coll::kBroadcast, Coll::kReduce, Coll::kAllGather, Coll::kReduceScatter,
                                         Coll::kAllReduce),
                       ::testing::Values(kInt8, kFloat32, kFloat64, kBfloat16, 11 /*float8e5m2*/),
                       ::testing::Values(Config{}, Cfg(kAlgoRing, kProtoLL128, 16), Cfg(kAlgoTree, kProtoSimple, 0),
                                         Cfg(5 /*nvlstree*/, kProtoSimple, 4, 131072), Cfg(-1, -1, 32),
                                         Cfg(6 /*pat*/, kProtoLL, 1, 1 << 20), Cfg(-1, -1, 0, 65536)),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<RoundTripParam>& info) {
      // e.g. allreduce_float32_ring_ll128_nc16_grouped: gtest names allow [A-Za-z0-9_] only.
      std::string name = std::string(CollName(std::get<0>(info.param))) + "_" +
                         std::string(DtypeName(std::get<1>(info.param))) + "_" + std::get<2>(info.param).ToString() +
                         (std::get<3>(info.param) ? "_grouped" : "");
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

TEST(Json, UsesNamesAndNeverACommunicatorHash) {
  Entry ar = MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 1048576)), Cfg(kAlgoRing, kProtoLL128, 16));
  ar.subspaces.valid_mask =
      (1u << (kAlgoRing * kNumProtos + kProtoLL128)) | (1u << (kAlgoTree * kNumProtos + kProtoLL));
  ar.subspaces.nccl_algo = kAlgoRing;
  ar.subspaces.nccl_proto = kProtoSimple;
  Entry ag = MakeEntry(Key(Call(Coll::kAllGather, kBfloat16, 4096)), Config{}, WorkloadState::kSearching);
  const std::string text = ToJson(Set({ar, ag}));
  const json doc = json::parse(text);
  EXPECT_EQ(doc["schema"], 1);
  EXPECT_EQ(doc["producer"], "ccltune " CCLTUNE_TEST_VERSION);
  const std::string at = doc["written_at"];
  EXPECT_EQ(at.size(), 20u);
  EXPECT_EQ(at.back(), 'Z');
  EXPECT_EQ(at[10], 'T');
  ASSERT_EQ(doc["configs"].size(), 1u);
  const json& fp = doc["configs"][0]["fingerprint"];
  EXPECT_EQ(fp, (json{{"gpu", "NVIDIA H200"},
                      {"nranks", 8},
                      {"nnodes", 1},
                      {"nccl_version", 22809},
                      {"plugin_version", 6},
                      {"channel_budget", 32},
                      {"channels", 0},
                      {"ccltune_version", "0.1.0"}}));
  const json& w = doc["configs"][0]["workloads"];
  ASSERT_EQ(w.size(), 2u);
  // Sorted by key string: allgather before allreduce.
  EXPECT_EQ(
      w[0]["key"],
      (json{{"grouped", false},
            {"calls", {{{"collective", "allgather"}, {"dtype", "bfloat16"}, {"op", nullptr}, {"bytes", 4096}}}}}));
  EXPECT_EQ(w[0]["config"],
            (json{{"algorithm", "default"}, {"protocol", "default"}, {"channels", 0}, {"chunk_bytes", 0}}));
  EXPECT_EQ(w[0]["state"], "searching");
  EXPECT_EQ(w[0]["nccl_choice"], nullptr);
  EXPECT_EQ(w[1]["key"]["calls"][0]["op"], "sum");
  EXPECT_EQ(w[1]["config"], (json{{"algorithm", "ring"}, {"protocol", "ll128"}, {"channels", 16}, {"chunk_bytes", 0}}));
  EXPECT_EQ(w[1]["state"], "converged");
  EXPECT_EQ(w[1]["nccl_choice"], "ring/simple");
  EXPECT_EQ(w[1]["valid_subspaces"], (json{"tree/ll", "ring/ll128"}));
  EXPECT_EQ(w[1]["default_us"], 40.5);
  EXPECT_EQ(w[1]["tuned_us"], 30.25);
  EXPECT_EQ(w[1]["samples"], 10);
  EXPECT_EQ(w[1]["calls"], 30);
  EXPECT_EQ(w[1]["converge_calls"], 20);
  EXPECT_EQ(w[1]["ran"], nullptr);  // unknown: no channel truth in this entry
  EXPECT_EQ(w[1]["size_class"], nullptr);
  EXPECT_EQ(text.find("hash"), std::string::npos);
  EXPECT_EQ(text.find("comm"), std::string::npos);
}

// What NCCL ran for the config (channel truth), the size class whose search decided it, and the
// communicator's channels: informative fields, written, not required back.
TEST(Json, WritesWhatRanTheSizeClassAndTheChannels) {
  Entry ar = MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 1048576 + 4096)), Cfg(kAlgoRing, kProtoLL128, 32));
  ar.NoteRan(Config{}, Cfg(kAlgoRing, kProtoSimple, 2));
  ar.NoteRan(ar.config, Cfg(kAlgoRing, kProtoLL128, 2));  // asked 32, the communicator has 2
  ar.class_min_bytes = 1048576;
  ar.class_max_bytes = 2097151;
  Fingerprint fp = Fp();
  fp.channels = 2;
  const std::string text = ToJson(Set({ar}, fp));
  const json doc = json::parse(text);
  EXPECT_EQ(doc["configs"][0]["fingerprint"]["channels"], 2);
  const json& w = doc["configs"][0]["workloads"][0];
  EXPECT_EQ(w["ran"], (json{{"algorithm", "ring"}, {"protocol", "ll128"}, {"channels", 2}}));
  EXPECT_EQ(w["size_class"], (json{{"min_bytes", 1048576}, {"max_bytes", 2097151}}));
  // Import reads the config back; what ran and the class are informative.
  Fingerprint ours = Fp();
  ours.channels = 8;  // not matched
  const auto got = MustParse(text, ours);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].config, ar.config);
}

TEST(Json, CustomReductionOpsAreNotExported) {
  Entry premul = MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 64, 7)), Cfg(kAlgoRing, kProtoLL, 2));
  const json doc = json::parse(ToJson(Set({premul})));
  EXPECT_TRUE(doc["configs"][0]["workloads"].empty());
}

// ---------------------------------------------------------------- merge rule

TEST(Merge, SameFingerprintMergesAndMoreSamplesWins) {
  const WorkloadKey k = Key(Call(Coll::kAllReduce, kFloat32, 1 << 20));
  const WorkloadKey k2 = Key(Call(Coll::kAllReduce, kFloat32, 1 << 10));
  ExportSet s;
  s.comms.emplace_back(Fp(),
                       std::vector<Entry>{MakeEntry(k, Cfg(kAlgoRing, kProtoLL, 4), WorkloadState::kConverged, 10),
                                          MakeEntry(k2, Cfg(kAlgoTree, kProtoLL, 2), WorkloadState::kConverged, 5)});
  s.comms.emplace_back(
      Fp(), std::vector<Entry>{MakeEntry(k, Cfg(kAlgoTree, kProtoSimple, 8), WorkloadState::kConverged, 30),
                               MakeEntry(k2, Cfg(kAlgoRing, kProtoSimple, 2), WorkloadState::kConverged, 5)});
  const json doc = json::parse(ToJson(s));
  ASSERT_EQ(doc["configs"].size(), 1u);
  ASSERT_EQ(doc["configs"][0]["workloads"].size(), 2u);
  auto got = MustParse(ToJson(s));
  ASSERT_EQ(got.size(), 2u);
  std::map<uint64_t, Config> by_key;
  for (const auto& w : got) by_key[w.key.Hash()] = w.config;
  EXPECT_EQ(by_key[k.Hash()], Cfg(kAlgoTree, kProtoSimple, 8));  // 30 samples beat 10
  EXPECT_EQ(by_key[k2.Hash()], Cfg(kAlgoTree, kProtoLL, 2));     // a tie keeps the first communicator's
}

TEST(Merge, DifferentFingerprintsStaySeparateBlocks) {
  Fingerprint other = Fp();
  other.channel_budget = 16;
  ExportSet s;
  const WorkloadKey k = Key(Call(Coll::kAllReduce, kFloat32, 1 << 20));
  s.comms.emplace_back(Fp(),
                       std::vector<Entry>{MakeEntry(k, Cfg(kAlgoRing, kProtoLL, 4), WorkloadState::kConverged, 10)});
  s.comms.emplace_back(other,
                       std::vector<Entry>{MakeEntry(k, Cfg(kAlgoRing, kProtoLL, 12), WorkloadState::kConverged, 40)});
  const std::string text = ToJson(s);
  EXPECT_EQ(json::parse(text)["configs"].size(), 2u);
  // Both blocks match the import fingerprint (channel_budget is not compared): merged on import.
  auto got = MustParse(text);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].config, Cfg(kAlgoRing, kProtoLL, 12));
}

TEST(Import, OnlyFinalStatesAndOnlyMatchingBlocks) {
  Fingerprint other = Fp();
  other.nranks = 16;
  ExportSet s;
  s.comms.emplace_back(
      other, std::vector<Entry>{MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 8)), Cfg(kAlgoRing, kProtoLL, 1))});
  s.comms.emplace_back(
      Fp(),
      std::vector<Entry>{
          MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 1)), Cfg(kAlgoRing, kProtoLL, 1), WorkloadState::kConverged),
          MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 2)), Cfg(kAlgoRing, kProtoLL, 1), WorkloadState::kImported),
          MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 3)), Cfg(kAlgoRing, kProtoLL, 1), WorkloadState::kSearching),
          MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 4)), Config{}, WorkloadState::kDefault),
          MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 5)), Cfg(kAlgoRing, kProtoLL, 1), WorkloadState::kForced)});
  auto got = MustParse(ToJson(s));
  std::set<uint64_t> bytes;
  for (const auto& w : got) bytes.insert(w.key.calls[0].bytes);
  EXPECT_EQ(bytes, (std::set<uint64_t>{1, 2}));
}

TEST(Import, EmptyConfigsIsEmptyNotAnError) {
  auto got = MustParse(R"({"schema":1,"configs":[]})");
  EXPECT_TRUE(got.empty());
}

// ---------------------------------------------------------------- CSV

// The example plugin's reading rules (plugins/tuner/example/plugin.c, NCCL 2.28.9/2.30), checked
// strictly: where the plugin would silently default a name, this fails.
struct CsvLine {
  std::string coll, algo, proto;
  unsigned long long min_bytes, max_bytes;
  int channels, nnodes, nranks, pipeops = -1, regbuff = -1;
};
std::vector<CsvLine> ParseLikeExamplePlugin(const std::string& csv) {
  static const std::set<std::string> colls = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
  static const std::set<std::string> algos = {"tree",      "ring", "collnet_direct", "collnet_chain", "nvls",
                                              "nvls_tree", "pat"};
  static const std::set<std::string> protos = {"ll", "ll128", "simple"};
  std::vector<CsvLine> out;
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line)) {
    EXPECT_LT(line.size(), 255u) << "the plugin reads lines into a 256-byte buffer";
    EXPECT_EQ(line.find('\r'), std::string::npos);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string tok; std::getline(ls, tok, ',');) f.push_back(tok);
    EXPECT_GE(f.size(), 8u) << line;
    EXPECT_LE(f.size(), 10u) << line;
    if (f.size() < 8) continue;
    auto num = [&](const std::string& s) {
      size_t pos = 0;
      long long v = std::stoll(s, &pos);
      EXPECT_EQ(pos, s.size()) << line;
      return v;
    };
    EXPECT_TRUE(colls.count(f[0])) << f[0];
    EXPECT_TRUE(algos.count(f[3])) << f[3];
    EXPECT_TRUE(protos.count(f[4])) << f[4];
    CsvLine c{f[0],
              f[3],
              f[4],
              static_cast<unsigned long long>(num(f[1])),
              static_cast<unsigned long long>(num(f[2])),
              static_cast<int>(num(f[5])),
              static_cast<int>(num(f[6])),
              static_cast<int>(num(f[7]))};
    if (f.size() > 8) c.pipeops = static_cast<int>(num(f[8]));
    if (f.size() > 9) c.regbuff = static_cast<int>(num(f[9]));
    out.push_back(c);
  }
  return out;
}

TEST(Csv, ExactLinesForAKnownSet) {
  std::vector<Entry> e = {
      MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 1048576)), Cfg(kAlgoRing, kProtoLL128, 16)),
      MakeEntry(Key(Call(Coll::kAllGather, kBfloat16, 65536)), Cfg(kAlgoRing, kProtoSimple, 0)),  // nBytes x8
      MakeEntry(Key(Call(Coll::kReduceScatter, kFloat32, 4096)), Cfg(3 /*collnetchain*/, kProtoLL, 2, 8192)),
      MakeEntry(Key(Call(Coll::kBroadcast, kInt8, 128)), Cfg(5 /*nvlstree*/, kProtoSimple, 1)),
      MakeEntry(Key(Call(Coll::kReduce, kFloat64, 256, kMax)), Cfg(2 /*collnetdirect*/, kProtoLL, 3)),
      MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 512)), Cfg(4 /*nvls*/, kProtoSimple, 4), WorkloadState::kImported),
      MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 777)), Cfg(6 /*pat*/, kProtoSimple, 4)),
      // Not written: NCCL's default; default algorithm with channels; not final; grouped.
      MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 2048)), Config{}),
      MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 4096)), Cfg(-1, -1, 8)),
      MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 8192)), Cfg(kAlgoRing, kProtoLL, 8), WorkloadState::kSearching),
      MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 8192)), Cfg(kAlgoRing, kProtoLL, 8), WorkloadState::kForced),
      MakeEntry(WorkloadKey{{Call(Coll::kAllReduce, kFloat32, 16384)}, true}, Cfg(kAlgoRing, kProtoLL, 8)),
  };
  // Same nBytes as the first from another dtype with more samples: it wins the line.
  e.push_back(MakeEntry(Key(Call(Coll::kAllReduce, kBfloat16, 1048576)), Cfg(kAlgoTree, kProtoLL128, 24),
                        WorkloadState::kConverged, 50));
  Fingerprint two_nodes = Fp();
  two_nodes.nnodes = 2;
  two_nodes.nranks = 16;
  ExportSet s = Set(e);
  s.comms.emplace_back(two_nodes, std::vector<Entry>{MakeEntry(Key(Call(Coll::kAllGather, kFloat32, 1024)),
                                                               Cfg(kAlgoRing, kProtoLL, 2))});
  const std::string csv = ToCsv(s);
  EXPECT_EQ(csv, "# ccltune " CCLTUNE_TEST_VERSION
                 " export for NCCL's example tuner plugin (NCCL_TUNER_CONFIG_FILE)\n"
                 "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff\n"
                 "broadcast,128,128,nvls_tree,simple,1,1,8,-1,-1\n"
                 "reduce,256,256,collnet_direct,ll,3,1,8,-1,-1\n"
                 "allgather,524288,524288,ring,simple,-1,1,8,-1,-1\n"
                 "reducescatter,32768,32768,collnet_chain,ll,2,1,8,-1,-1\n"
                 "allreduce,512,512,nvls,simple,4,1,8,-1,-1\n"
                 "allreduce,777,777,pat,simple,4,1,8,-1,-1\n"
                 "allreduce,1048576,1048576,tree,ll128,24,1,8,-1,-1\n"
                 "allgather,16384,16384,ring,ll,2,2,16,-1,-1\n");
  const auto lines = ParseLikeExamplePlugin(csv);
  ASSERT_EQ(lines.size(), 8u);
  for (const CsvLine& l : lines) {
    EXPECT_EQ(l.min_bytes, l.max_bytes);
    EXPECT_EQ(l.pipeops, -1);
    EXPECT_EQ(l.regbuff, -1);
    EXPECT_TRUE(l.channels == -1 || l.channels > 0);
  }
}

// A workload whose search was its size class's: one line for the class's range (as NCCL's nBytes), and
// one line only for several members of the class.
TEST(Csv, ASizeClassIsOneLineOverItsRange) {
  std::vector<Entry> e;
  for (uint64_t bytes : {(20u << 20), (23u << 20), (29u << 20)}) {
    e.push_back(MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, bytes)), Cfg(kAlgoRing, kProtoSimple, 16),
                          WorkloadState::kConverged, bytes == (23u << 20) ? 40 : 10));
    e.back().class_min_bytes = 16u << 20;
    e.back().class_max_bytes = (32u << 20) - 1;
  }
  e.push_back(MakeEntry(Key(Call(Coll::kAllGather, kFloat32, 65536 + 4)), Cfg(kAlgoRing, kProtoLL, 2)));
  e.back().class_min_bytes = 65536;
  e.back().class_max_bytes = 131071;
  const auto lines = ParseLikeExamplePlugin(ToCsv(Set(e)));
  ASSERT_EQ(lines.size(), 2u);
  // All-gather: nBytes is 8 ranks x the call's bytes.
  EXPECT_EQ(lines[0].coll, "allgather");
  EXPECT_EQ(lines[0].min_bytes, 65536u * 8);
  EXPECT_EQ(lines[0].max_bytes, 131072u * 8 - 1);
  EXPECT_EQ(lines[1].coll, "allreduce");
  EXPECT_EQ(lines[1].min_bytes, 16u << 20);
  EXPECT_EQ(lines[1].max_bytes, (32u << 20) - 1);
  EXPECT_EQ(lines[1].channels, 16);
}

TEST(Csv, EmptySetIsOnlyTheHeader) {
  const auto lines = ParseLikeExamplePlugin(ToCsv(ExportSet{}));
  EXPECT_TRUE(lines.empty());
}

// ---------------------------------------------------------------- CSV import

TEST(CsvImport, ExportedLinesComeBackAsTheSameConfigs) {
  std::vector<Entry> e = {
      MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 1048576)), Cfg(kAlgoRing, kProtoLL128, 16)),
      MakeEntry(Key(Call(Coll::kAllGather, kBfloat16, 65536)), Cfg(kAlgoRing, kProtoSimple, 0)),
      MakeEntry(Key(Call(Coll::kReduceScatter, kFloat32, 4096)), Cfg(3, kProtoLL, 2, 8192)),
      MakeEntry(Key(Call(Coll::kBroadcast, kInt8, 128)), Cfg(5, kProtoSimple, 1)),
      MakeEntry(Key(Call(Coll::kReduce, kFloat64, 256, kMax)), Cfg(6, kProtoLL, 3)),
  };
  auto rules = ParseCsv(ToCsv(Set(e)), "t.csv");
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), e.size());
  for (const Entry& x : e) {
    const CallDesc& c = x.key.calls[0];
    Config want = x.config;
    want.chunk_bytes = 0;  // the format has no chunk size
    EXPECT_EQ(MatchCsv(*rules, c, Fp().nranks, Fp().nnodes), want) << x.key.ToString();
    // Another dtype or op with the same nBytes is the same line (what NCCL's plugin sees too).
    CallDesc other = c;
    other.dtype = kInt8;
    EXPECT_EQ(MatchCsv(*rules, other, Fp().nranks, Fp().nnodes), want);
    // Another size, collective or communicator shape: no line.
    other = c;
    other.bytes += 1;
    EXPECT_EQ(MatchCsv(*rules, other, Fp().nranks, Fp().nnodes), std::nullopt);
    EXPECT_EQ(MatchCsv(*rules, c, Fp().nranks * 2, Fp().nnodes), std::nullopt);
    EXPECT_EQ(MatchCsv(*rules, c, Fp().nranks, Fp().nnodes + 1), std::nullopt);
  }
}

TEST(CsvImport, RangesWildcardsAndFirstMatchWins) {
  const std::string text =
      "# a comment, then a blank line\n"
      "\n"
      "allreduce, 0, 65535, tree, ll, -1, -1, -1\r\n"
      "allreduce,0,1048576,ring,simple,8,1,4,-1,-1\n"
      "allreduce,0,1048576,ring,ll128,8,-1,-1,2,-1\n"  // numPipeOps 2: never an ungrouped call
      "allgather,0,1048576,ring,ll128,8,-1,-1,-1,1\n"  // regBuff 1: ccltune cannot know, never applies
      "allgather,0,1048576,pat,simple,4,-1,-1,1\n";
  auto rules = ParseCsv(text, "t.csv");
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 5u);
  EXPECT_EQ((*rules)[0].line, 3);
  EXPECT_EQ((*rules)[4].line, 7);
  EXPECT_EQ(MatchCsv(*rules, Call(Coll::kAllReduce, kFloat32, 4096), 4, 1), Cfg(kAlgoTree, kProtoLL, 0));
  EXPECT_EQ(MatchCsv(*rules, Call(Coll::kAllReduce, kFloat32, 65536), 4, 1), Cfg(kAlgoRing, kProtoSimple, 8));
  EXPECT_EQ(MatchCsv(*rules, Call(Coll::kAllReduce, kFloat32, 65536), 8, 1), std::nullopt);
  // allgather's nBytes is the whole output, 4 x 64 KiB: the regBuff line is skipped, the next one applies.
  EXPECT_EQ(MatchCsv(*rules, Call(Coll::kAllGather, kFloat32, 65536), 4, 1), Cfg(6, kProtoSimple, 4));
  EXPECT_EQ(MatchCsv(*rules, Call(Coll::kBroadcast, kFloat32, 16), 4, 1), std::nullopt);
}

void ExpectCsvError(const std::string& text, const std::string& reason) {
  auto r = ParseCsv(text, "t.csv");
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(), "ccltune: import file t.csv does not parse: " + reason);
}

TEST(CsvImport, EveryBadLineIsDataLossWithTheExactReason) {
  ExpectCsvError("allreduce,0,10,ring,ll,1,1\n",
                 "line 1: 7 fields; expected collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,"
                 "nRanks[,numPipeOps[,regBuff]]");
  ExpectCsvError("# c\nallreduce,0,10,ring,ll,1,1,1,1,1,1\n",
                 "line 2: 11 fields; expected collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,"
                 "nRanks[,numPipeOps[,regBuff]]");
  ExpectCsvError("all_reduce,0,10,ring,ll,1,1,1\n", "line 1: unknown collective_type \"all_reduce\"");
  ExpectCsvError("allreduce,0,10,nvlstree,ll,1,1,1\n", "line 1: unknown algorithm \"nvlstree\"");
  ExpectCsvError("allreduce,0,10,ring,LL,1,1,1\n", "line 1: unknown protocol \"LL\"");
  ExpectCsvError("allreduce,-1,10,ring,ll,1,1,1\n", "line 1: min_bytes \"-1\" is not a non-negative integer");
  ExpectCsvError("allreduce,0,1e6,ring,ll,1,1,1\n", "line 1: max_bytes \"1e6\" is not a non-negative integer");
  ExpectCsvError("allreduce,0,99999999999999999999,ring,ll,1,1,1\n",
                 "line 1: max_bytes \"99999999999999999999\" is not a non-negative integer");
  ExpectCsvError("allreduce,10,9,ring,ll,1,1,1\n", "line 1: min_bytes above max_bytes");
  ExpectCsvError("allreduce,0,10,ring,ll,0,1,1\n", "line 1: channels \"0\" is not -1 or 1..64");
  ExpectCsvError("allreduce,0,10,ring,ll,65,1,1\n", "line 1: channels \"65\" is not -1 or 1..64");
  ExpectCsvError("allreduce,0,10,ring,ll,1,,1\n", "line 1: nNodes \"\" is not -1 or 1..1073741824");
  ExpectCsvError("allreduce,0,10,ring,ll,1,1,-2\n", "line 1: nRanks \"-2\" is not -1 or 1..1073741824");
  ExpectCsvError("allreduce,0,10,ring,ll,1,1,1,0\n", "line 1: numPipeOps \"0\" is not -1 or 1..1073741824");
  ExpectCsvError("allreduce,0,10,ring,ll,1,1,1,1,2\n", "line 1: regBuff \"2\" is not -1 or 0..1");
  // A name that is a whole paragraph is cut, and the message stays one line.
  ExpectCsvError("all\rreduce,0,10,ring,ll,1,1,1\n", "line 1: unknown collective_type \"all reduce\"");
  ExpectCsvError(std::string("x") + std::string(100, 'y') + ",0,10,ring,ll,1,1,1\n",
                 "line 1: unknown collective_type \"x" + std::string(39, 'y') + "...\"");
}

TEST(CsvImport, EmptyAndCommentOnlyFilesHaveNoRules) {
  for (const std::string& text : {std::string(""), std::string("# only\n\n  \n"), ToCsv(ExportSet{})}) {
    auto r = ParseCsv(text, "t.csv");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->empty());
  }
}

TEST(CsvImport, FileErrorsNameTheFile) {
  auto missing = ImportCsv("/nonexistent/dir/tuned.csv", 8, 1);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "ccltune: import file /nonexistent/dir/tuned.csv not found");

  char tmpl[] = "/tmp/ccltune_csv_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/tuned.csv";
  ASSERT_TRUE(WriteFileAtomic(path, "allreduce,0,10,ring,ll,1,2,16\nallgather,0,10,ring,ll,1,-1,16\n").ok());
  // The CSV's fingerprint mismatch: lines, but none for this communicator's shape.
  auto other = ImportCsv(path, 8, 1);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(other.status().message(), "ccltune: import file " + path + " has no line for nRanks 8, nNodes 1; ignored");
  auto mine = ImportCsv(path, 16, 1);
  ASSERT_TRUE(mine.ok()) << mine.status();
  ASSERT_EQ(mine->size(), 1u);
  EXPECT_EQ((*mine)[0].coll, Coll::kAllGather);
  fs::remove_all(tmpl);
}

// ---------------------------------------------------------------- atomic write

class AtomicWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ccltune_ct_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string Read(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

TEST_F(AtomicWrite, WritesAndOverwritesLeavingNoTemporary) {
  const std::string path = (dir_ / "out.json").string();
  ASSERT_TRUE(WriteFileAtomic(path, "first\n").ok());
  EXPECT_EQ(Read(path), "first\n");
  ASSERT_TRUE(WriteFileAtomic(path, "second, longer\n").ok());
  EXPECT_EQ(Read(path), "second, longer\n");
  ASSERT_TRUE(WriteFileAtomic(path, "").ok());
  EXPECT_EQ(Read(path), "");
  EXPECT_EQ(Names(), std::vector<std::string>{"out.json"});
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::others_read, fs::perms::others_read);
}

TEST_F(AtomicWrite, MissingDirectoryFailsNamingThePath) {
  const std::string path = (dir_ / "no" / "such" / "out.json").string();
  const absl::Status st = WriteFileAtomic(path, "x");
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(st.message(), "ccltune: cannot write " + path + ": create temporary file: No such file or directory");
  EXPECT_TRUE(Names().empty());
}

TEST_F(AtomicWrite, FailedRenameKeepsTheTargetAndRemovesTheTemporary) {
  // The target is a non-empty directory: everything succeeds up to the rename, which fails.
  const fs::path target = dir_ / "out.json";
  fs::create_directory(target);
  std::ofstream(target / "keep") << "old";
  const absl::Status st = WriteFileAtomic(target.string(), "new content");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("ccltune: cannot write " + target.string() + ": rename: "), std::string::npos)
      << st.message();
  EXPECT_EQ(Read(target / "keep"), "old");
  EXPECT_EQ(Names(), std::vector<std::string>{"out.json"});
}

TEST_F(AtomicWrite, ExportedFilesImport) {
  const std::string path = (dir_ / "ccltune.json").string();
  ExportSet s = Set({MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 4096)), Cfg(kAlgoTree, kProtoLL, 2))});
  ASSERT_TRUE(WriteFileAtomic(path, ToJson(s)).ok());
  auto got = ImportJson(path, Fp());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].config, Cfg(kAlgoTree, kProtoLL, 2));
}

// A writer killed with SIGKILL in the middle of an export: the target is the previous export, whole.
TEST_F(AtomicWrite, SigkillBeforeTheRenameLeavesThePreviousExportWhole) {
  const std::string path = (dir_ / "ccltune.json").string();
  const ExportSet a = Set({MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 4096)), Cfg(kAlgoTree, kProtoLL, 2))});
  std::vector<Entry> many;
  for (uint64_t b = 1; b <= 2000; ++b)
    many.push_back(MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, b * 64)), Cfg(1, 2, 4)));
  const std::string first = ToJson(a), second = ToJson(Set(many));
  ASSERT_TRUE(WriteFileAtomic(path, first).ok());

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the writer: stops once the new content is durable, before the rename
    (void)WriteFileAtomic(path, second, [&](const std::string&) {
      (void)!::write(fds[1], "p", 1);
      for (;;) ::pause();
    });
    ::_exit(3);
  }
  char c = 0;
  ASSERT_EQ(::read(fds[0], &c, 1), 1);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ::close(fds[0]);
  ::close(fds[1]);

  EXPECT_EQ(Read(path), first);
  auto got = ImportJson(path, Fp());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].config, Cfg(kAlgoTree, kProtoLL, 2));
  // The killed export's temporary file is left beside it (hidden), complete but never renamed.
  const std::vector<std::string> names = Names();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0].rfind(".ccltune.json.ccltune-tmp.", 0), 0u) << names[0];
  EXPECT_EQ(Read(dir_ / names[0]), second);
  // The next export replaces the file as usual.
  ASSERT_TRUE(WriteFileAtomic(path, second).ok());
  EXPECT_EQ(Read(path), second);
}

// Killed at arbitrary points of a stream of exports: whatever is found is one of them, whole.
TEST_F(AtomicWrite, SigkillAtAnyPointNeverLeavesAHalfFile) {
  const std::string path = (dir_ / "ccltune.json").string();
  std::vector<Entry> many;
  for (uint64_t b = 1; b <= 500; ++b)
    many.push_back(MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, b * 64)), Cfg(1, 2, 4)));
  const std::string small = ToJson(Set({many[0]})), large = ToJson(Set(many));
  ASSERT_TRUE(WriteFileAtomic(path, small).ok());
  std::srand(12345);
  for (int round = 0; round < 20; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0;; ++i) (void)WriteFileAtomic(path, i % 2 ? small : large);
    }
    ::usleep(static_cast<useconds_t>(200 + std::rand() % 20000));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    const std::string found = Read(path);
    ASSERT_TRUE(found == small || found == large) << "round " << round << ": " << found.size() << " bytes";
    ASSERT_TRUE(ParseJson(found, Fp(), "found").ok());
  }
}

// ---------------------------------------------------------------- import errors

void ExpectError(const absl::StatusOr<std::vector<ImportedWorkload>>& r, absl::StatusCode code,
                 const std::string& message) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status();
  EXPECT_EQ(r.status().message(), message);
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
}

TEST(ImportErrors, MissingFile) {
  ExpectError(ImportJson("/nonexistent/dir/ccltune.json", Fp()), absl::StatusCode::kNotFound,
              "ccltune: import file /nonexistent/dir/ccltune.json not found");
}

TEST(ImportErrors, DirectoryIsNotAFile) {
  auto r = ImportJson("/tmp", Fp());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "ccltune: import file /tmp cannot be read: Is a directory");
}

std::string ValidDoc() {
  return ToJson(Set({MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 4096)), Cfg(kAlgoRing, kProtoLL128, 4))}));
}

TEST(ImportErrors, MalformedAndTruncated) {
  for (const std::string& text : {std::string(""), std::string("{"), std::string("not json"),
                                  ValidDoc().substr(0, ValidDoc().size() / 2), std::string("{\"schema\":1,}")}) {
    auto r = ParseJson(text, Fp(), "f.json");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(std::string(r.status().message())
                  .rfind("ccltune: import file f.json does not parse: [json.exception.parse_error", 0),
              0u)
        << r.status().message();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  }
}

TEST(ImportErrors, Schema) {
  ExpectError(ParseJson(R"({"schema":2,"configs":[]})", Fp(), "f.json"), absl::StatusCode::kFailedPrecondition,
              "ccltune: import file f.json has schema 2, expected 1");
  ExpectError(ParseJson(R"({"schema":0,"configs":"whatever"})", Fp(), "f.json"), absl::StatusCode::kFailedPrecondition,
              "ccltune: import file f.json has schema 0, expected 1");
  ExpectError(ParseJson(R"({"schema":"1","configs":[]})", Fp(), "f.json"), absl::StatusCode::kDataLoss,
              "ccltune: import file f.json does not parse: schema: expected an integer");
  ExpectError(ParseJson(R"({"configs":[]})", Fp(), "f.json"), absl::StatusCode::kDataLoss,
              "ccltune: import file f.json does not parse: document: missing field \"schema\"");
  ExpectError(ParseJson(R"([1,2])", Fp(), "f.json"), absl::StatusCode::kDataLoss,
              "ccltune: import file f.json does not parse: document: expected an object");
}

struct MismatchCase {
  std::string field;
  std::function<void(Fingerprint&)> change;
  std::string message;
};
class FingerprintMismatch : public ::testing::TestWithParam<MismatchCase> {};

TEST_P(FingerprintMismatch, NamesTheField) {
  Fingerprint theirs = Fp();
  GetParam().change(theirs);
  const std::string text =
      ToJson(Set({MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 4096)), Cfg(kAlgoRing, kProtoLL, 4))}, theirs));
  ExpectError(ParseJson(text, Fp(), "/p/ccltune.json"), absl::StatusCode::kFailedPrecondition,
              "ccltune: import file /p/ccltune.json was made on " + GetParam().message + "; ignored");
}

INSTANTIATE_TEST_SUITE_P(
    EachField, FingerprintMismatch,
    ::testing::Values(MismatchCase{"gpu", [](Fingerprint& f) { f.gpu = "NVIDIA A100-SXM4-80GB"; },
                                   "gpu NVIDIA A100-SXM4-80GB (this run: NVIDIA H200)"},
                      MismatchCase{"nranks", [](Fingerprint& f) { f.nranks = 4; }, "nranks 4 (this run: 8)"},
                      MismatchCase{"nnodes", [](Fingerprint& f) { f.nnodes = 2; }, "nnodes 2 (this run: 1)"},
                      MismatchCase{"nccl_version", [](Fingerprint& f) { f.nccl_version = 23007; },
                                   "nccl_version 23007 (this run: 22809)"}),
    [](const auto& info) { return info.param.field; });

TEST(FingerprintMatch, OtherFieldsDoNotMatter) {
  Fingerprint theirs = Fp();
  theirs.plugin_version = 5;
  theirs.channel_budget = 16;
  theirs.ccltune_version = "0.0.9";
  auto got = MustParse(
      ToJson(Set({MakeEntry(Key(Call(Coll::kAllReduce, kFloat32, 4096)), Cfg(kAlgoRing, kProtoLL, 4))}, theirs)));
  EXPECT_EQ(got.size(), 1u);
}

// One mutation of a valid document (JSON pointer -> new value, or removal) and the exact reason.
struct BadDocCase {
  std::string name;
  std::string pointer;
  std::optional<json> value;  // nullopt: remove the field
  std::string reason;
};
class BadDocument : public ::testing::TestWithParam<BadDocCase> {};

TEST_P(BadDocument, IsDataLossWithTheExactReason) {
  json doc = json::parse(ValidDoc());
  const json::json_pointer ptr(GetParam().pointer);
  if (GetParam().value) {
    doc[ptr] = *GetParam().value;
  } else {
    doc[ptr.parent_pointer()].erase(ptr.back());
  }
  ExpectError(ParseJson(doc.dump(), Fp(), "f.json"), absl::StatusCode::kDataLoss,
              "ccltune: import file f.json does not parse: " + GetParam().reason);
}

const std::string W = "/configs/0/workloads/0";
INSTANTIATE_TEST_SUITE_P(
    Cases, BadDocument,
    ::testing::Values(
        BadDocCase{"configs_missing", "/configs", std::nullopt, "document: missing field \"configs\""},
        BadDocCase{"configs_object", "/configs", json::object(), "document.configs: expected an array"},
        BadDocCase{"producer_number", "/producer", 3, "producer: expected a string"},
        BadDocCase{"block_not_object", "/configs/0", 1, "configs[0]: expected an object"},
        BadDocCase{"fingerprint_missing", "/configs/0/fingerprint", std::nullopt,
                   "configs[0]: missing field \"fingerprint\""},
        BadDocCase{"gpu_number", "/configs/0/fingerprint/gpu", 7, "configs[0].fingerprint.gpu: expected a string"},
        BadDocCase{"nranks_string", "/configs/0/fingerprint/nranks", "8",
                   "configs[0].fingerprint.nranks: expected an integer"},
        BadDocCase{"nranks_float", "/configs/0/fingerprint/nranks", 8.5,
                   "configs[0].fingerprint.nranks: expected an integer"},
        BadDocCase{"nranks_zero", "/configs/0/fingerprint/nranks", 0,
                   "configs[0].fingerprint.nranks: 0 out of range [1, 2147483647]"},
        BadDocCase{"nranks_huge", "/configs/0/fingerprint/nranks", json(18446744073709551615ull),
                   "configs[0].fingerprint.nranks: 18446744073709551615 out of range [1, 2147483647]"},
        BadDocCase{"nccl_version_missing", "/configs/0/fingerprint/nccl_version", std::nullopt,
                   "configs[0].fingerprint: missing field \"nccl_version\""},
        BadDocCase{"budget_range", "/configs/0/fingerprint/channel_budget", 65,
                   "configs[0].fingerprint.channel_budget: 65 out of range [0, 64]"},
        BadDocCase{"workloads_missing", "/configs/0/workloads", std::nullopt,
                   "configs[0]: missing field \"workloads\""},
        BadDocCase{"grouped_string", W + "/key/grouped", "false",
                   "configs[0].workloads[0].key.grouped: expected true or false"},
        BadDocCase{"calls_empty", W + "/key/calls", json::array(), "configs[0].workloads[0].key.calls: empty"},
        BadDocCase{"ungrouped_two_calls", W + "/key/calls/1",
                   json{{"collective", "allreduce"}, {"dtype", "float32"}, {"op", "sum"}, {"bytes", 4}},
                   "configs[0].workloads[0].key.calls: 2 calls in a key that is not grouped"},
        BadDocCase{"collective_unknown", W + "/key/calls/0/collective", "allreduse",
                   "configs[0].workloads[0].key.calls[0].collective: unknown collective \"allreduse\""},
        BadDocCase{"collective_number", W + "/key/calls/0/collective", 4,
                   "configs[0].workloads[0].key.calls[0].collective: expected a string"},
        BadDocCase{"dtype_unknown", W + "/key/calls/0/dtype", "float33",
                   "configs[0].workloads[0].key.calls[0].dtype: unknown dtype \"float33\""},
        BadDocCase{"op_unknown", W + "/key/calls/0/op", "custom",
                   "configs[0].workloads[0].key.calls[0].op: unknown op \"custom\""},
        BadDocCase{"op_null_on_reduction", W + "/key/calls/0/op", nullptr,
                   "configs[0].workloads[0].key.calls[0].op: allreduce needs a reduction op"},
        BadDocCase{"op_number", W + "/key/calls/0/op", 0,
                   "configs[0].workloads[0].key.calls[0].op: expected a string or null"},
        BadDocCase{"bytes_negative", W + "/key/calls/0/bytes", -1,
                   "configs[0].workloads[0].key.calls[0].bytes: -1 is negative"},
        BadDocCase{"bytes_string", W + "/key/calls/0/bytes", "4096",
                   "configs[0].workloads[0].key.calls[0].bytes: expected a non-negative integer"},
        BadDocCase{"algorithm_unknown", W + "/config/algorithm", "rings",
                   "configs[0].workloads[0].config.algorithm: unknown algorithm \"rings\""},
        BadDocCase{"protocol_unknown", W + "/config/protocol", "ll64",
                   "configs[0].workloads[0].config.protocol: unknown protocol \"ll64\""},
        BadDocCase{"algorithm_without_protocol", W + "/config/protocol", "default",
                   "configs[0].workloads[0].config: algorithm and protocol must both be set or both be \"default\""},
        BadDocCase{"channels_over_budget", W + "/config/channels", 33,
                   "configs[0].workloads[0].config.channels: 33 out of range [0, 32]"},
        BadDocCase{"channels_negative", W + "/config/channels", -1,
                   "configs[0].workloads[0].config.channels: -1 out of range [0, 32]"},
        BadDocCase{"chunk_negative", W + "/config/chunk_bytes", -4096,
                   "configs[0].workloads[0].config.chunk_bytes: -4096 out of range [0, 9223372036854775807]"},
        BadDocCase{"config_missing", W + "/config", std::nullopt, "configs[0].workloads[0]: missing field \"config\""},
        BadDocCase{"state_unknown", W + "/state", "done", "configs[0].workloads[0].state: unknown state \"done\""},
        BadDocCase{"tuned_us_string", W + "/tuned_us", "30", "configs[0].workloads[0].tuned_us: expected a number"},
        BadDocCase{"default_us_negative", W + "/default_us", -2.5,
                   "configs[0].workloads[0].default_us: -2.5 is negative"},
        BadDocCase{"samples_float", W + "/samples", 1.5,
                   "configs[0].workloads[0].samples: expected a non-negative integer"},
        BadDocCase{"calls_missing", W + "/calls", std::nullopt, "configs[0].workloads[0]: missing field \"calls\""}),
    [](const auto& info) { return info.param.name; });

TEST(ImportErrors, NonReductionWithOp) {
  json doc = json::parse(ValidDoc());
  doc["configs"][0]["workloads"][0]["key"]["calls"][0]["collective"] = "allgather";
  ExpectError(ParseJson(doc.dump(), Fp(), "f.json"), absl::StatusCode::kDataLoss,
              "ccltune: import file f.json does not parse: configs[0].workloads[0].key.calls[0].op: allgather has no "
              "reduction op (use null)");
}

TEST(ImportErrors, NewlinesInTheFileNameDoNotBreakTheLine) {
  auto r = ParseJson("{", Fp(), "a\nb.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
}

// ---------------------------------------------------------------- CommTable

TEST(CommTable, UpdateFindSnapshotSorted) {
  CommTable t(Fp());
  const WorkloadKey a = Key(Call(Coll::kAllReduce, kFloat32, 2048));
  const WorkloadKey b = Key(Call(Coll::kAllGather, kFloat32, 4096));
  t.Update(a, [](Entry& e) { e.samples = 3; });
  t.Update(b, [](Entry& e) { e.state = WorkloadState::kSearching; });
  t.Update(a, [](Entry& e) { e.samples += 1; });
  auto found = t.Find(a.Hash());
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->key, a);
  EXPECT_EQ(found->samples, 4u);
  EXPECT_FALSE(t.Find(12345).has_value());
  auto snap = t.Snapshot();
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_EQ(snap[0].key, b);  // "allgather/..." < "allreduce/..."
  EXPECT_EQ(snap[1].key, a);
  Fingerprint fp = Fp();
  fp.channel_budget = 8;
  t.set_fingerprint(fp);
  EXPECT_EQ(t.fingerprint(), fp);
}

TEST(CommTable, ConcurrentUpdatesAreNotLost) {
  CommTable t(Fp());
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&t, i] {
      for (int n = 0; n < 2000; ++n) {
        t.Update(Key(Call(Coll::kAllReduce, kFloat32, static_cast<uint64_t>(n % 8))), [](Entry& e) { ++e.calls; });
        if (n % 100 == 0) (void)t.Snapshot();
        (void)i;
      }
    });
  }
  for (auto& th : threads) th.join();
  uint64_t total = 0;
  for (const Entry& e : t.Snapshot()) total += e.calls;
  EXPECT_EQ(total, 8000u);
  EXPECT_EQ(StateName(WorkloadState::kConverged), "converged");
}

}  // namespace
}  // namespace ccltune::config_table
