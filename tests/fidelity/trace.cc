// Fidelity traces: parser, segmentation and the real-vs-simulated comparison (an LCS alignment per program
// segment, so a missing or extra call shows as one line rather than shifting every later call).
#include "trace.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace ccltune::fidelity {
namespace {

const char* kPrologue = "(before the first program)";

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

bool ParseInt(const std::string& s, int* out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoi(s);
  return true;
}

std::string ProgramName(const std::string& program) {  // "3 group-mixed" -> "group-mixed"
  size_t sp = program.find(' ');
  return sp == std::string::npos ? program : program.substr(sp + 1);
}

// Calls fn(lineNo, line, words) for each line that is not blank or a '#' comment; stops at the first false.
template <typename Fn>
bool ForEachLine(const std::string& text, Fn fn) {
  std::istringstream in(text);
  int lineNo = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    std::vector<std::string> w = Words(line);
    if (w.empty() || w[0][0] == '#') continue;
    if (!fn(lineNo, line, w)) return false;
  }
  return true;
}

}  // namespace

std::string Event::Field(const std::string& key) const {
  for (const auto& [k, v] : fields)
    if (k == key) return v;
  return "";
}

std::string Event::Text() const {
  std::string s = thread + " " + kind;
  for (const auto& [k, v] : fields) s += " " + k + "=" + v;
  return s;
}

bool ParseTrace(const std::string& text, Trace* out, std::string* error) {
  return ForEachLine(text, [&](int lineNo, const std::string& line, const std::vector<std::string>& w) {
    auto fail = [&](const std::string& why) {
      *error = "line " + std::to_string(lineNo) + ": " + why + ": '" + line + "'";
      return false;
    };
    int rank = 0;
    if (w.size() < 3 || !ParseInt(w[0], &rank)) return fail("expected '<rank> <thread> <kind> [key=value...]'");
    Event e;
    e.line = lineNo;
    e.thread = w[1];
    e.kind = w[2];
    for (size_t i = 3; i < w.size(); i++) {
      size_t eq = w[i].find('=');
      if (eq == std::string::npos || eq == 0) return fail("field '" + w[i] + "' is not key=value");
      e.fields.emplace_back(w[i].substr(0, eq), w[i].substr(eq + 1));
    }
    RankTrace& rt = out->ranks[rank];
    if (e.kind == "meta") {
      for (const auto& [k, v] : e.fields) rt.meta[k] = v;
    } else if (e.kind == "mark") {
      if (e.Field("program").empty() || e.Field("name").empty()) return fail("a mark needs program= and name=");
      rt.segments.push_back(Segment{e.Field("program") + " " + e.Field("name"), {}});
    } else {
      if (rt.segments.empty()) rt.segments.push_back(Segment{kPrologue, {}});
      rt.segments.back().events.push_back(std::move(e));
    }
    return true;
  });
}

bool ParseAllowances(const std::string& text, std::vector<Allowance>* out, std::string* error) {
  return ForEachLine(text, [&](int lineNo, const std::string&, const std::vector<std::string>& w) {
    if (w.size() < 4) {
      *error = "line " + std::to_string(lineNo) + ": expected '<program|*> <kind|*> <field> <reason...>'";
      return false;
    }
    Allowance a{w[0], w[1], w[2], ""};
    for (size_t i = 3; i < w.size(); i++) a.reason += (i > 3 ? " " : "") + w[i];
    out->push_back(a);
    return true;
  });
}

namespace {

// The allowance covering `field` of a call of `kind` in `program`, or null.
const Allowance* Allowed(const std::string& program, const std::string& kind, const std::string& field,
                         const std::vector<Allowance>& allowances) {
  for (const Allowance& a : allowances)
    if ((a.program == "*" || a.program == ProgramName(program)) && (a.kind == "*" || a.kind == kind) &&
        a.field == field)
      return &a;
  return nullptr;
}

// The fields of `e` that must match, with the allowed ones left out; the key the alignment matches on.
std::string Key(const Event& e, const std::string& program, const std::vector<Allowance>& allowances) {
  std::string k = (Allowed(program, e.kind, "thread", allowances) ? "*" : e.thread) + " " + e.kind;
  for (const auto& [f, v] : e.fields) k += " " + f + "=" + (Allowed(program, e.kind, f, allowances) ? "*" : v);
  return k;
}

// "\n  allowed <field>: <reason>" for each field where two aligned calls differ.
std::string AllowedBecause(const Event& real, const Event& sim, const std::string& program,
                           const std::vector<Allowance>& allowances) {
  std::string s;
  auto note = [&](const std::string& field, const std::string& r, const std::string& v) {
    if (r == v) return;
    const Allowance* a = Allowed(program, real.kind, field, allowances);
    s += "\n  allowed " + field + " (" + r + " vs " + v + "): " + (a ? a->reason : "?");
  };
  note("thread", real.thread, sim.thread);
  for (const auto& [f, v] : real.fields) note(f, v, sim.Field(f));
  return s;
}

// Aligns the calls `real` and `sim` of `program` (`where`: which of its calls, e.g. one communicator's, or "").
void CompareEvents(int rank, const std::string& program, const std::string& where, const std::vector<Event>& realEv,
                   const std::vector<Event>& simEv, const std::vector<Allowance>& allowances, Comparison* out) {
  const Segment real{program, realEv}, sim{program, simEv};
  const size_t n = real.events.size(), m = sim.events.size();
  std::vector<std::string> a(n), b(m);
  for (size_t i = 0; i < n; i++) a[i] = Key(real.events[i], real.program, allowances);
  for (size_t j = 0; j < m; j++) b[j] = Key(sim.events[j], real.program, allowances);
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::string block;
  int missing = 0, extra = 0;
  for (size_t i = 0, j = 0; i < n || j < m;) {
    if (i < n && j < m && a[i] == b[j]) {
      if (real.events[i].Text() != sim.events[j].Text()) {
        out->allowed.push_back("rank " + std::to_string(rank) + ", program " + real.program +
                               ":\n  real: " + real.events[i].Text() + "\n  sim : " + sim.events[j].Text() +
                               AllowedBecause(real.events[i], sim.events[j], real.program, allowances));
      }
      block += "  = " + real.events[i].Text() + "\n";
      i++, j++;
      out->callsCompared++;
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      block += "  - real only (line " + std::to_string(real.events[i].line) + "): " + real.events[i].Text() + "\n";
      i++, missing++;
    } else {
      block += "  + sim only  (line " + std::to_string(sim.events[j].line) + "): " + sim.events[j].Text() + "\n";
      j++, extra++;
    }
  }
  if (missing || extra)
    out->failures.push_back("rank " + std::to_string(rank) + ", program " + real.program + where + ": " +
                            std::to_string(missing) + " real call(s) the simulation does not make, " +
                            std::to_string(extra) + " simulated call(s) real NCCL does not make:\n" + block);
}

// The communicators of the calls, in call order ("1,0,0").
std::string CommOrder(const std::vector<Event>& events) {
  std::string s;
  for (const Event& e : events) s += (s.empty() ? "" : ",") + e.Field("comm");
  return s;
}

void CompareSegment(int rank, const Segment& real, const Segment& sim, const std::vector<Allowance>& allowances,
                    Comparison* out) {
  // A comm-order allowance: each communicator's calls are compared in their order, the interleaving of the
  // communicators is only reported (NCCL >= 2.26 takes a group's communicators by their hashes).
  const Allowance* order = Allowed(real.program, "getCollInfo", "comm-order", allowances);
  if (order == nullptr) {
    CompareEvents(rank, real.program, "", real.events, sim.events, allowances, out);
    return;
  }
  std::map<std::string, std::pair<std::vector<Event>, std::vector<Event>>> byComm;
  for (const Event& e : real.events) byComm[e.Field("comm")].first.push_back(e);
  for (const Event& e : sim.events) byComm[e.Field("comm")].second.push_back(e);
  for (const auto& [comm, events] : byComm)
    CompareEvents(rank, real.program, " (communicator " + comm + ")", events.first, events.second, allowances, out);
  const std::string realOrder = CommOrder(real.events), simOrder = CommOrder(sim.events);
  if (realOrder != simOrder)
    out->allowed.push_back("rank " + std::to_string(rank) + ", program " + real.program +
                           ":\n  real: calls on communicators " + realOrder + "\n  sim : calls on communicators " +
                           simOrder + "\n  allowed comm-order: " + order->reason);
}

}  // namespace

Comparison CompareTraces(const Trace& real, const Trace& sim, const std::vector<Allowance>& allowances) {
  Comparison out;
  std::set<int> ranks;
  for (const auto& [r, _] : real.ranks) ranks.insert(r);
  for (const auto& [r, _] : sim.ranks) ranks.insert(r);
  for (int r : ranks) {
    auto ri = real.ranks.find(r), si = sim.ranks.find(r);
    if (ri == real.ranks.end() || si == sim.ranks.end()) {
      out.failures.push_back("rank " + std::to_string(r) + " is only in the " +
                             (ri == real.ranks.end() ? "simulated" : "real") + " trace");
      continue;
    }
    const RankTrace &rt = ri->second, &st = si->second;
    auto nr = rt.meta.find("nranks"), ns = st.meta.find("nranks");
    if (nr != rt.meta.end() && ns != st.meta.end() && nr->second != ns->second)
      out.failures.push_back("rank " + std::to_string(r) + ": real run had " + nr->second + " ranks, simulated " +
                             ns->second);
    std::vector<std::string> rp, sp;
    for (const Segment& s : rt.segments) rp.push_back(s.program);
    for (const Segment& s : st.segments) sp.push_back(s.program);
    if (rp != sp) {
      std::string msg = "rank " + std::to_string(r) + ": the traces ran different programs\n  real:";
      for (const auto& p : rp) msg += " [" + p + "]";
      msg += "\n  sim :";
      for (const auto& p : sp) msg += " [" + p + "]";
      out.failures.push_back(msg);
      continue;
    }
    for (size_t i = 0; i < rt.segments.size(); i++) {
      CompareSegment(r, rt.segments[i], st.segments[i], allowances, &out);
      out.programsCompared++;
    }
  }
  return out;
}

}  // namespace ccltune::fidelity
