// `ccltune plot`: bus bandwidth against size from ccltune-bench's report, time per call from a tuning
// trace. The data are computed here (tested without gnuplot); gnuplot only draws them.
#include "cli/plot.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

extern char** environ;

namespace ccltune::cli {
namespace {

using nlohmann::json;

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out + "\"";
}

std::optional<double> Number(const json& row, const char* name) {
  auto it = row.find(name);
  if (it == row.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return (std::isfinite(v) && v > 0) ? std::optional<double>(v) : std::nullopt;
}

std::string String(const json& obj, const char* name, const char* fallback) {
  auto it = obj.find(name);
  return (it != obj.end() && it->is_string()) ? it->get<std::string>() : fallback;
}

}  // namespace

double BusBandwidthFactor(std::string_view collective, int nranks) {
  const double n = std::max(1, nranks);
  if (collective == "allreduce") return 2 * (n - 1) / n;
  if (collective == "allgather" || collective == "reducescatter") return (n - 1) / n;
  return 1;
}

absl::StatusOr<PlotSpec> BenchPlot(const std::string& json_text, const std::string& source_name) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(source_name, ": ", std::string(why)));
  };
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    return bad(absl::StrCat("does not parse: ", e.what()));
  }
  if (!doc.is_object() || !doc.contains("meta") || !doc["meta"].is_object() || !doc.contains("results") ||
      !doc["results"].is_array()) {
    return bad("not a ccltune-bench report (no \"meta\" object and \"results\" array)");
  }
  const json& meta = doc["meta"];
  if (!meta.contains("nranks") || !meta["nranks"].is_number_integer() || meta["nranks"].get<int64_t>() < 1) {
    return bad("meta.nranks missing or not a positive integer");
  }
  const int nranks = static_cast<int>(meta["nranks"].get<int64_t>());
  // (collective, dtype) -> bytes -> (default, tuned, oracle) GB/s, in the report's first-seen order.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::map<double, std::array<std::optional<double>, 3>>> rows;
  for (size_t i = 0; i < doc["results"].size(); ++i) {
    const json& r = doc["results"][i];
    if (!r.is_object() || !r.contains("collective") || !r["collective"].is_string() || !r.contains("bytes") ||
        !r["bytes"].is_number_unsigned()) {
      return bad(absl::StrCat("results[", i, "]: needs a \"collective\" string and a \"bytes\" count"));
    }
    const std::string coll = r["collective"].get<std::string>();
    const double bytes = static_cast<double>(r["bytes"].get<uint64_t>());
    const auto key = std::make_pair(coll, String(r, "dtype", "?"));
    if (!rows.count(key)) order.push_back(key);
    auto& cell = rows[key][bytes];
    const double factor = BusBandwidthFactor(coll, nranks);
    const char* fields[3] = {"default_us", "tuned_us", "oracle_us"};
    for (int k = 0; k < 3; ++k) {
      // bytes / us = bytes per microsecond = 1e-3 GB/s units: GB/s = bytes / us / 1e3.
      if (auto us = Number(r, fields[k])) cell[k] = bytes / *us / 1e3 * factor;
    }
  }
  if (order.empty()) return bad("no results to plot");
  PlotSpec spec;
  spec.title = absl::StrFormat("ccltune-bench: %s, %d ranks, NCCL %s (%s backend)", String(meta, "device", "?"), nranks,
                               String(meta, "nccl_version", "?"), String(meta, "backend", "?"));
  spec.xlabel = "size (bytes, as nccl-tests counts them)";
  spec.ylabel = "bus bandwidth (GB/s)";
  spec.x_bytes = true;
  const char* labels[3] = {"NCCL default", "ccltune (tuned)", "oracle (best config of the searched space)"};
  const char* styles[3] = {"linespoints lw 2 pt 7 ps 1.2 lc rgb '#c0392b'",
                           "linespoints lw 2 pt 5 ps 1.2 lc rgb '#2471a3'",
                           "linespoints lw 2 dt 2 pt 9 ps 1.2 lc rgb '#229954'"};
  bool any = false;
  for (const auto& key : order) {
    Panel p;
    p.title = absl::StrFormat("%s, %s, %d ranks", key.first, key.second, nranks);
    for (int k = 0; k < 3; ++k) {
      Series s{labels[k], styles[k], {}};
      for (const auto& [bytes, cell] : rows[key])
        if (cell[k]) s.points.emplace_back(bytes, *cell[k]);
      any |= !s.points.empty();
      if (!s.points.empty()) p.series.push_back(std::move(s));
    }
    if (!p.series.empty()) spec.panels.push_back(std::move(p));
  }
  if (!any) return bad("no row has a default_us, tuned_us or oracle_us time");
  return spec;
}

absl::StatusOr<PlotSpec> TracePlot(const std::vector<config_table::TraceRow>& rows, const std::string& comm_in,
                                   const std::string& workload_in) {
  using config_table::TraceRole;
  auto most = [](const std::map<std::string, size_t>& counts) {
    std::string best;
    size_t n = 0;
    for (const auto& [k, c] : counts)
      if (c > n) best = k, n = c;
    return best;
  };
  std::map<std::string, size_t> comms;
  for (const auto& r : rows) ++comms[r.comm];
  const std::string comm = comm_in.empty() ? most(comms) : comm_in;
  if (!comms.count(comm)) return absl::NotFoundError(absl::StrCat("no rows of communicator ", comm));
  std::map<std::string, size_t> workloads;
  for (const auto& r : rows)
    if (r.comm == comm) ++workloads[r.workload];
  const std::string workload = workload_in.empty() ? most(workloads) : workload_in;
  if (!workloads.count(workload)) {
    return absl::NotFoundError(absl::StrCat("no rows of workload ", workload, " on communicator ", comm));
  }
  struct RoleStyle {
    TraceRole role;
    const char* label;
    const char* style;
  };
  const RoleStyle roles[] = {
      {TraceRole::kCandidate, "candidate (a config on trial)", "points pt 7 ps 0.8 lc rgb '#2471a3'"},
      {TraceRole::kDefault, "NCCL default", "points pt 5 ps 0.9 lc rgb '#c0392b'"},
      {TraceRole::kIncumbent, "incumbent (best so far, re-timed)", "points pt 9 ps 1.3 lc rgb '#229954'"},
      {TraceRole::kMonitor, "incumbent after convergence (monitor)", "points pt 13 ps 1.0 lc rgb '#7d3c98'"},
  };
  Panel p;
  std::string last_incumbent;
  for (const auto& r : rows)
    if (r.comm == comm && r.workload == workload && (r.role == TraceRole::kIncumbent || r.role == TraceRole::kMonitor))
      last_incumbent = r.config;
  p.title =
      absl::StrCat(workload, last_incumbent.empty() ? "" : absl::StrCat(" (last incumbent ", last_incumbent, ")"));
  for (const RoleStyle& rs : roles) {
    Series s{rs.label, rs.style, {}};
    for (const auto& r : rows)
      if (r.comm == comm && r.workload == workload && r.role == rs.role)
        s.points.emplace_back(static_cast<double>(r.call), r.us);
    if (!s.points.empty()) p.series.push_back(std::move(s));
  }
  PlotSpec spec;
  spec.title = absl::StrCat("ccltune tuning trace: communicator ", comm);
  spec.xlabel = "call of the workload (index)";
  spec.ylabel = "time per call (us)";
  spec.panels.push_back(std::move(p));
  return spec;
}

std::string GnuplotScript(const PlotSpec& spec, const std::string& png) {
  const size_t n = std::max<size_t>(1, spec.panels.size());
  std::string s = absl::StrFormat("set terminal pngcairo noenhanced size 1100,%d\nset output %s\n",
                                  static_cast<int>(60 + 420 * n), Quoted(png));
  // Data inline as datablocks: the script is all gnuplot reads.
  for (size_t p = 0; p < spec.panels.size(); ++p) {
    for (size_t k = 0; k < spec.panels[p].series.size(); ++k) {
      s += absl::StrFormat("$d%d_%d << EOD\n", p, k);
      for (const auto& [x, y] : spec.panels[p].series[k].points) s += absl::StrFormat("%.17g %.17g\n", x, y);
      s += "EOD\n";
    }
  }
  s += absl::StrFormat("set multiplot layout %d,1 title %s\n", n, Quoted(spec.title));
  s += absl::StrFormat("set xlabel %s\nset ylabel %s\nset grid\nset key inside left top box opaque\n",
                       Quoted(spec.xlabel), Quoted(spec.ylabel));
  if (spec.x_bytes) s += "set logscale x 2\nset format x '%.0b %BB'\n";
  s += "set yrange [0:*]\n";
  for (size_t p = 0; p < spec.panels.size(); ++p) {
    s += absl::StrFormat("set title %s\nplot ", Quoted(spec.panels[p].title));
    for (size_t k = 0; k < spec.panels[p].series.size(); ++k) {
      const Series& se = spec.panels[p].series[k];
      s += absl::StrFormat("%s$d%d_%d using 1:2 with %s title %s", k ? ", \\\n     " : "", p, k, se.style,
                           Quoted(se.label));
    }
    s += "\n";
  }
  s += "unset multiplot\nset output\n";
  return s;
}

absl::Status RunGnuplot(const std::string& gnuplot, const std::string& script, const std::string& png) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
  const char* argv[] = {gnuplot.c_str(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, gnuplot.c_str(), &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[0]);
  if (rc != 0) {
    close(fds[1]);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run ", gnuplot, ": ", strerror(rc), " (Debian: apt-get install gnuplot-nox)"));
  }
  // gnuplot may exit before reading everything (a bad script): its status says so, not a SIGPIPE here.
  struct sigaction ignore {
  }, saved{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &saved);
  size_t off = 0;
  while (off < script.size()) {
    const ssize_t w = write(fds[1], script.data() + off, script.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  // gnuplot exited early: its status says why
    off += static_cast<size_t>(w);
  }
  close(fds[1]);
  sigaction(SIGPIPE, &saved, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(gnuplot, " failed (status ", status, "); its messages are above"));
  }
  struct stat st {};
  if (stat(png.c_str(), &st) != 0 || st.st_size == 0) {
    return absl::InternalError(absl::StrCat(gnuplot, " wrote no image to ", png));
  }
  return absl::OkStatus();
}

}  // namespace ccltune::cli
