// Import of NCCL's example-tuner CSV (the file csv_export.cc writes, or one written for NCCL's
// example plugin by hand). Unlike that plugin, which maps an unknown name to allreduce or
// ring/simple without a word, a line ccltune cannot read makes the whole file DataLoss with the
// line's number: a typo must never turn into a config nobody asked for.
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "config_table/config_table.hpp"
#include "config_table/internal/export_common.hpp"

namespace ccltune::config_table {
namespace {

struct BadLine {
  std::string what;
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string Quoted(std::string_view s) {
  constexpr size_t kMax = 40;  // enough to recognise a typo, short enough for one line
  return internal::Cat("\"", s.substr(0, kMax), s.size() > kMax ? "...\"" : "\"");
}

template <size_t N>
int Spelling(const std::array<std::string_view, N>& names, std::string_view field, const char* what) {
  for (size_t i = 0; i < N; ++i)
    if (field == names[i]) return static_cast<int>(i);
  throw BadLine{internal::Cat("unknown ", what, " ", Quoted(field))};
}

uint64_t Bytes(std::string_view field, const char* what) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (field.empty() || ec != std::errc() || end != field.data() + field.size()) {
    throw BadLine{internal::Cat(what, " ", Quoted(field), " is not a non-negative integer")};
  }
  return v;
}

// -1 ("any") or lo..hi.
int AnyOr(std::string_view field, const char* what, int lo, int hi) {
  int v = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (field.empty() || ec != std::errc() || end != field.data() + field.size() || (v != -1 && (v < lo || v > hi))) {
    throw BadLine{internal::Cat(what, " ", Quoted(field), " is not -1 or ", lo, "..", hi)};
  }
  return v;
}

CsvRule ParseLine(std::string_view line, int number) {
  std::vector<std::string_view> f;
  size_t start = 0;
  for (;;) {
    const size_t comma = line.find(',', start);
    f.push_back(Trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (f.size() < 8 || f.size() > 10) {
    throw BadLine{internal::Cat(f.size(), " fields; expected collective_type,min_bytes,max_bytes,algorithm,protocol,",
                                "channels,nNodes,nRanks[,numPipeOps[,regBuff]]")};
  }
  CsvRule r;
  r.line = number;
  r.coll = static_cast<Coll>(Spelling(internal::kCsvColl, f[0], "collective_type"));
  r.min_bytes = Bytes(f[1], "min_bytes");
  r.max_bytes = Bytes(f[2], "max_bytes");
  if (r.min_bytes > r.max_bytes) throw BadLine{"min_bytes above max_bytes"};
  r.config.algo = Spelling(internal::kCsvAlgo, f[3], "algorithm");
  r.config.proto = Spelling(internal::kCsvProto, f[4], "protocol");
  const int channels = AnyOr(f[5], "channels", 1, internal::kMaxChannels);
  r.config.channels = channels > 0 ? channels : 0;
  r.nnodes = AnyOr(f[6], "nNodes", 1, 1 << 30);
  r.nranks = AnyOr(f[7], "nRanks", 1, 1 << 30);
  if (f.size() > 8) r.num_pipe_ops = AnyOr(f[8], "numPipeOps", 1, 1 << 30);
  if (f.size() > 9) r.reg_buff = AnyOr(f[9], "regBuff", 0, 1);
  return r;
}

bool ForThisComm(const CsvRule& r, int nranks, int nnodes) {
  return (r.nranks == -1 || r.nranks == nranks) && (r.nnodes == -1 || r.nnodes == nnodes);
}

// Calls `on_line(number, line)` for every line that is neither blank nor a comment.
template <typename Fn>
void ForEachLine(const std::string& text, Fn&& on_line) {
  std::string_view rest(text);
  int number = 0;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = Trim(rest.substr(0, nl));
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    ++number;
    if (line.empty() || line.front() == '#') continue;
    if (!on_line(number, line)) return;
  }
}

}  // namespace

absl::StatusOr<std::vector<CsvRule>> ParseCsv(const std::string& text, const std::string& source_name) {
  std::vector<CsvRule> rules;
  absl::Status status;
  ForEachLine(text, [&](int number, std::string_view line) {
    try {
      rules.push_back(ParseLine(line, number));
      return true;
    } catch (const BadLine& e) {
      status = absl::DataLossError(internal::OneLine(
          internal::Cat("ccltune: import file ", source_name, " does not parse: line ", number, ": ", e.what)));
      return false;
    }
  });
  if (!status.ok()) return status;
  return rules;
}

std::vector<std::string> ValidateCsv(const std::string& text, const std::string& source_name, int nranks, int nnodes) {
  std::vector<std::string> problems;
  int lines = 0, for_comm = 0;
  ForEachLine(text, [&](int number, std::string_view line) {
    ++lines;
    try {
      if (ForThisComm(ParseLine(line, number), nranks, nnodes)) ++for_comm;
    } catch (const BadLine& e) {
      problems.push_back(internal::OneLine(internal::Cat(source_name, ": line ", number, ": ", e.what)));
    }
    return true;
  });
  if (nranks > 0 && nnodes > 0 && lines > 0 && problems.empty() && for_comm == 0) {
    problems.push_back(internal::OneLine(internal::Cat(source_name, ": no line for nRanks ", nranks, ", nNodes ",
                                                       nnodes, "; an import into that run would ignore the file")));
  }
  return problems;
}

absl::StatusOr<std::vector<CsvRule>> ImportCsv(const std::string& path, int nranks, int nnodes) {
  absl::StatusOr<std::string> text = internal::ReadImportFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<CsvRule>> all = ParseCsv(*text, path);
  if (!all.ok()) return all.status();
  std::vector<CsvRule> mine;
  for (const CsvRule& r : *all)
    if (ForThisComm(r, nranks, nnodes)) mine.push_back(r);
  if (mine.empty() && !all->empty()) {
    return absl::FailedPreconditionError(internal::OneLine(internal::Cat(
        "ccltune: import file ", path, " has no line for nRanks ", nranks, ", nNodes ", nnodes, "; ignored")));
  }
  return mine;
}

std::optional<Config> MatchCsv(const std::vector<CsvRule>& rules, const CallDesc& call, int nranks, int nnodes) {
  const uint64_t nbytes = NcclTunerBytes(call, nranks);
  for (const CsvRule& r : rules) {
    if (r.coll != call.coll || nbytes < r.min_bytes || nbytes > r.max_bytes) continue;
    if (!ForThisComm(r, nranks, nnodes)) continue;
    if (r.num_pipe_ops != -1 && r.num_pipe_ops != 1) continue;
    if (r.reg_buff != -1) continue;
    return r.config;
  }
  return std::nullopt;
}

}  // namespace ccltune::config_table
