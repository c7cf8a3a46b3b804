// fidelity-compare: compares a real NCCL's tuner-call trace with the simulated NCCL's for the same programs.
// Usage: fidelity-compare --real FILE --sim FILE [--sim FILE...] [--allow FILE] [--skip-without-real] [--verbose]
// Exit: 0 same calls (up to the allowances), 1 differences (printed), 2 bad input, 77 (--skip-without-real) no
// real trace yet.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "trace.hpp"

namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

int Usage() {
  std::fprintf(stderr,
               "usage: fidelity-compare --real FILE --sim FILE [--sim FILE...] [--allow FILE] "
               "[--skip-without-real] [--verbose]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ccltune::fidelity;
  std::string realPath, allowPath;
  std::vector<std::string> simPaths;
  bool skipWithoutReal = false, verbose = false;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if ((a == "--real" || a == "--sim" || a == "--allow") && i + 1 < argc) {
      std::string v = argv[++i];
      if (a == "--real") realPath = v;
      if (a == "--sim") simPaths.push_back(v);
      if (a == "--allow") allowPath = v;
    } else if (a == "--skip-without-real") {
      skipWithoutReal = true;
    } else if (a == "--verbose") {
      verbose = true;
    } else {
      return Usage();
    }
  }
  if (realPath.empty() || simPaths.empty()) return Usage();

  std::string realText;
  if (!ReadFile(realPath, &realText)) {
    if (skipWithoutReal) {
      std::printf(
          "SKIP: no real-NCCL trace at %s yet: record it on a GPU host with scripts/gpu-fidelity.sh "
          "(docs/fidelity.md)\n",
          realPath.c_str());
      return 77;
    }
    std::fprintf(stderr, "fidelity-compare: cannot read %s\n", realPath.c_str());
    return 2;
  }
  Trace real, sim;
  std::string err;
  if (!ParseTrace(realText, &real, &err)) {
    std::fprintf(stderr, "fidelity-compare: %s: %s\n", realPath.c_str(), err.c_str());
    return 2;
  }
  for (const std::string& p : simPaths) {
    std::string text;
    if (!ReadFile(p, &text)) {
      std::fprintf(stderr, "fidelity-compare: cannot read %s\n", p.c_str());
      return 2;
    }
    if (!ParseTrace(text, &sim, &err)) {
      std::fprintf(stderr, "fidelity-compare: %s: %s\n", p.c_str(), err.c_str());
      return 2;
    }
  }
  std::vector<Allowance> allowances;
  if (!allowPath.empty()) {
    std::string text;
    if (!ReadFile(allowPath, &text) || !ParseAllowances(text, &allowances, &err)) {
      std::fprintf(stderr, "fidelity-compare: %s: %s\n", allowPath.c_str(), err.empty() ? "unreadable" : err.c_str());
      return 2;
    }
  }

  Comparison c = CompareTraces(real, sim, allowances);
  for (const std::string& f : c.failures) std::printf("DIFFERENCE %s\n", f.c_str());
  if (verbose)
    for (const std::string& a : c.allowed) std::printf("allowed: %s\n", a.c_str());
  std::printf(
      "fidelity: %zu rank(s), %d program segment(s), %d call(s) matched, %zu difference(s), %zu allowed "
      "difference(s)%s\n",
      real.ranks.size(), c.programsCompared, c.callsCompared, c.failures.size(), c.allowed.size(),
      !verbose && !c.allowed.empty() ? " (--verbose lists them)" : "");
  if (c.callsCompared == 0 && c.ok()) {
    std::printf("fidelity: no tuner call in either trace: was the recording plugin loaded (NCCL_TUNER_PLUGIN)?\n");
    return 1;
  }
  return c.ok() ? 0 : 1;
}
