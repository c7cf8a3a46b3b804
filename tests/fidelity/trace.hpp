// Fidelity traces: parsing the lines the recording plugin and the scripted programs write (recorder_tuner.cc
// documents the format), segmenting them per rank by program marker, and comparing a real NCCL's trace with the
// simulated NCCL's. Compared per call: thread, function, every recorded field (communicator index, collective,
// bytes, numPipeOps, cost-table validity, regBuff, nChannels as passed in) and the order of calls. Cost-table
// values are never recorded: they are each NCCL's own model. Differences the simulation does not emulate on
// purpose are listed in an allowances file (ParseAllowances) and reported, not failed.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ccltune::fidelity {

struct Event {
  int line = 0;                                             // 1-based line in its file
  std::string thread;                                       // "main", "t0", ...
  std::string kind;                                         // init, getCollInfo, finalize
  std::vector<std::pair<std::string, std::string>> fields;  // in line order
  std::string Field(const std::string& key) const;          // "" when absent
  std::string Text() const;                                 // "<thread> <kind> k=v ..."
};

struct Segment {
  std::string program;  // "<n> <name>" from the marker; "(before the first program)" for calls before it
  std::vector<Event> events;
};

struct RankTrace {
  std::map<std::string, std::string> meta;  // from the program's "meta" line
  std::vector<Segment> segments;
};

struct Trace {
  std::map<int, RankTrace> ranks;
};

// Parses trace text (lines of all ranks, any interleaving; '#' comments and blank lines skipped). Returns false
// and sets *error ("line N: ...") on a malformed line.
bool ParseTrace(const std::string& text, Trace* out, std::string* error);

// A difference the simulation is allowed to have: `field` ("thread", or a recorded key) of calls of `kind` in
// `program` (its name, without the number); "*" matches any program or kind. The field `comm-order` (kind
// getCollInfo or "*") allows the program's calls a different interleaving of communicators: each communicator's
// calls are still compared in their own order.
struct Allowance {
  std::string program, kind, field, reason;
};
// Lines "<program|*> <kind|*> <field> <reason...>"; '#' comments and blank lines skipped.
bool ParseAllowances(const std::string& text, std::vector<Allowance>* out, std::string* error);

struct Comparison {
  std::vector<std::string> failures;  // one readable block per difference
  std::vector<std::string> allowed;   // differences covered by an allowance, with its reason
  int callsCompared = 0;
  int programsCompared = 0;
  bool ok() const { return failures.empty(); }
};

Comparison CompareTraces(const Trace& real, const Trace& sim, const std::vector<Allowance>& allowances);

}  // namespace ccltune::fidelity
