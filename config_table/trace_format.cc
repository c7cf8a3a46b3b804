// The tuning trace's CSV: writer and strict reader (format in trace_format.hpp).
#include "config_table/trace_format.hpp"

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "config_table/internal/export_common.hpp"

namespace ccltune::config_table {
namespace {

constexpr std::array<std::string_view, 4> kRoleNames = {"candidate", "incumbent", "default", "monitor"};

std::string Field(std::string s) {
  for (char& c : s)
    if (c == ',' || c == '\n' || c == '\r') c = ';';
  return s;
}

template <typename T>
bool Number(std::string_view f, T* out) {
  const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), *out);
  return !f.empty() && ec == std::errc() && end == f.data() + f.size();
}

std::string FormatMicros(double us) {
  char out[32];
  std::snprintf(out, sizeof(out), "%.3f", std::isfinite(us) ? us : 0.0);
  return out;
}

bool ParseMicros(std::string_view f, double* out) { return Number(f, out) && std::isfinite(*out) && *out >= 0; }

}  // namespace

std::string_view TraceRoleName(TraceRole role) { return kRoleNames[static_cast<size_t>(role)]; }

std::optional<TraceRole> ParseTraceRole(std::string_view name) {
  for (size_t i = 0; i < kRoleNames.size(); ++i)
    if (name == kRoleNames[i]) return static_cast<TraceRole>(i);
  return std::nullopt;
}

bool IsTraceHeader(std::string_view line) { return line == kTraceHeader || line == kTraceHeaderV1; }

std::string TraceLine(const TraceRow& r) {
  return internal::Cat(Field(r.comm), ",", Field(r.workload), ",", r.call, ",", r.unit, ",", Field(r.config), ",",
                       FormatMicros(r.us), ",", TraceRoleName(r.role), ",", FormatMicros(r.min_us.value_or(0.0)), ",",
                       FormatMicros(r.max_us.value_or(0.0)));
}

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return absl::Status(
        absl::ErrnoToStatusCode(errno),
        internal::OneLine(internal::Cat("ccltune: cannot write trace ", path, ": ", std::strerror(errno))));
  }
  std::unique_ptr<TraceWriter> w(new TraceWriter(f, path));
  const std::string header = internal::Cat(kTraceHeader, "\n");
  if (std::fwrite(header.data(), 1, header.size(), f) != header.size() || std::fflush(f) != 0) {
    return absl::DataLossError(internal::OneLine(internal::Cat("ccltune: cannot write trace ", path)));
  }
  return w;
}

TraceWriter::~TraceWriter() { std::fclose(f_); }

absl::Status TraceWriter::Append(const TraceRow& row) {
  const std::string line = TraceLine(row) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0) {
    return absl::DataLossError(internal::OneLine(internal::Cat("ccltune: cannot write trace ", path_)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TraceRow>> ParseTrace(const std::string& text, const std::string& source_name) {
  std::vector<TraceRow> rows;
  std::string_view rest(text);
  int number = 0;
  size_t fields = 0;  // per line: 9 under kTraceHeader, 7 under kTraceHeaderV1
  auto bad = [&](std::string_view why) {
    return absl::DataLossError(
        internal::OneLine(internal::Cat("ccltune: trace ", source_name, ": line ", number, ": ", why)));
  };
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (number == 1) {
      if (!IsTraceHeader(line)) {
        return bad(internal::Cat("expected the header \"", kTraceHeader, "\" (or the older \"", kTraceHeaderV1, "\")"));
      }
      fields = line == kTraceHeader ? 9 : 7;
      continue;
    }
    if (line.empty()) continue;
    std::vector<std::string_view> f;
    for (size_t start = 0;;) {
      const size_t comma = line.find(',', start);
      f.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (f.size() != fields) {
      return bad(internal::Cat(f.size(), " fields; expected ", fields == 9 ? kTraceHeader : kTraceHeaderV1));
    }
    TraceRow r;
    r.comm = std::string(f[0]);
    r.workload = std::string(f[1]);
    r.config = std::string(f[4]);
    if (r.comm.empty() || r.workload.empty() || r.config.empty()) return bad("comm, workload and config must be set");
    if (!Number(f[2], &r.call)) return bad(internal::Cat("call \"", f[2], "\" is not a non-negative integer"));
    if (!Number(f[3], &r.unit)) return bad(internal::Cat("unit \"", f[3], "\" is not a non-negative integer"));
    if (!ParseMicros(f[5], &r.us)) return bad(internal::Cat("us \"", f[5], "\" is not a non-negative number"));
    const auto role = ParseTraceRole(f[6]);
    if (!role) return bad(internal::Cat("unknown role \"", f[6], "\" (candidate, incumbent, default, monitor)"));
    r.role = *role;
    if (fields == 9) {
      double lo = 0, hi = 0;
      if (!ParseMicros(f[7], &lo)) return bad(internal::Cat("min_us \"", f[7], "\" is not a non-negative number"));
      if (!ParseMicros(f[8], &hi)) return bad(internal::Cat("max_us \"", f[8], "\" is not a non-negative number"));
      r.min_us = lo;
      r.max_us = hi;
    }
    rows.push_back(std::move(r));
  }
  if (number == 0) return bad("empty file; expected the header");
  return rows;
}

absl::StatusOr<std::vector<TraceRow>> ReadTrace(const std::string& path) {
  absl::StatusOr<std::string> text = internal::ReadFileNamed(path, "trace");
  if (!text.ok()) return text.status();
  return ParseTrace(*text, path);
}

}  // namespace ccltune::config_table
