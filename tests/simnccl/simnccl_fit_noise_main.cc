// simnccl-fit-noise: fits the simulated NCCL's noise model (noise_model.hpp) to calls recorded on real NCCL, and
// compares recorded and simulated statistics.
//   simnccl-fit-noise [--block-calls N] -o FILE SAMPLES...   fit the pooled samples, write the parameter file
//   simnccl-fit-noise --check FILE [--seeds N] SAMPLES...    simulate each file's schedule with FILE (seeds 1..N),
//                                                            print recorded vs simulated statistics; exit 1 if any
//                                                            statistic is outside its tolerance
//   simnccl-fit-noise --simulate FILE [--seed S] -o OUT SAMPLES  the schedule of SAMPLES simulated with FILE, as
//                                                            a `.samples` file
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "noise_fit.hpp"
#include "noise_model.hpp"

namespace {

std::string Basename(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

int Usage() {
  std::fprintf(stderr,
               "usage: simnccl-fit-noise [--block-calls N] -o FILE SAMPLES...\n"
               "       simnccl-fit-noise --check FILE [--seeds N] SAMPLES...\n"
               "       simnccl-fit-noise --simulate FILE [--seed S] -o OUT SAMPLES\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string outPath, checkPath, simulatePath;
  uint64_t seed = 1;
  simnccl::FitOptions options;
  int seeds = 9;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "-o" || a == "--check" || a == "--simulate" || a == "--block-calls" || a == "--seeds" || a == "--seed") {
      const char* v = next();
      if (!v) return Usage();
      if (a == "-o") outPath = v;
      if (a == "--check") checkPath = v;
      if (a == "--block-calls") options.blockCalls = std::atoi(v);
      if (a == "--seeds") seeds = std::atoi(v);
      if (a == "--simulate") simulatePath = v;
      if (a == "--seed") seed = std::strtoull(v, nullptr, 10);
    } else if (!a.empty() && a[0] == '-') {
      return Usage();
    } else {
      inputs.push_back(a);
    }
  }
  const bool simulate = !simulatePath.empty();
  if (inputs.empty() || seeds < 1 || (simulate && (outPath.empty() || !checkPath.empty() || inputs.size() != 1)) ||
      (!simulate && outPath.empty() == checkPath.empty()))
    return Usage();
  std::vector<simnccl::RecordedSet> sets(inputs.size());
  std::string err;
  for (size_t i = 0; i < inputs.size(); i++)
    if (!simnccl::ReadRecordedSet(inputs[i], &sets[i], &err)) {
      std::fprintf(stderr, "simnccl-fit-noise: %s\n", err.c_str());
      return 1;
    }
  std::vector<std::string> lines;
  if (simulate) {
    simnccl::NoiseParams p;
    if (!simnccl::LoadNoiseParams(simulatePath, &p, &err)) {
      std::fprintf(stderr, "simnccl-fit-noise: %s\n", err.c_str());
      return 1;
    }
    std::ofstream out(outPath);
    out << simnccl::FormatRecordedSet(simnccl::SimulateSet(simnccl::FittedNoise(p), sets[0], seed, 1));
    return out.flush() ? 0 : 1;
  }
  if (!checkPath.empty()) {
    simnccl::NoiseParams p;
    if (!simnccl::LoadNoiseParams(checkPath, &p, &err)) {
      std::fprintf(stderr, "simnccl-fit-noise: %s\n", err.c_str());
      return 1;
    }
    const auto checks = simnccl::CheckAgainstRecorded(simnccl::FittedNoise(p), sets, seeds);
    std::printf("%s", simnccl::FormatChecks(checks, "the median over seeds 1-" + std::to_string(seeds)).c_str());
    return std::all_of(checks.begin(), checks.end(), [](const simnccl::StatCheck& c) { return c.pass; }) ? 0 : 1;
  }
  simnccl::NoiseParams p;
  simnccl::FitReport rep;
  if (!simnccl::FitNoise(sets, options, &p, &rep, &err)) {
    std::fprintf(stderr, "simnccl-fit-noise: %s\n", err.c_str());
    return 1;
  }
  std::string cmd = "simnccl-fit-noise";
  if (options.blockCalls != simnccl::FitOptions{}.blockCalls)
    cmd += " --block-calls " + std::to_string(options.blockCalls);
  cmd += " -o " + Basename(outPath);
  for (const std::string& in : inputs) cmd += " " + Basename(in);
  char buf[512];
  p.notes.push_back("made by: " + cmd);
  std::snprintf(buf, sizeof buf,
                "fit: %d within-block values, %d default blocks; q90/q50 of (max - min) over its block's median %.3f",
                rep.callValues, rep.slowValues, rep.lagRatio90);
  p.notes.push_back(buf);
  p.notes.push_back("calibrated, in this order (parameter = value: statistic recorded, simulated there):");
  for (const auto& c : rep.calibrations) {
    std::snprintf(buf, sizeof buf, "  %s = %.4f: %s %.4f, %.4f", c.parameter.c_str(), c.value, c.statistic.c_str(),
                  c.recorded, c.simulated);
    p.notes.push_back(buf);
  }
  p.notes.push_back("recorded vs simulated (simnccl-fit-noise --check FILE --seeds 9 SAMPLES...):");
  const auto checks = simnccl::CheckAgainstRecorded(simnccl::FittedNoise(p), sets, 9);
  const bool ok = std::all_of(checks.begin(), checks.end(), [](const simnccl::StatCheck& c) { return c.pass; });
  std::istringstream table(simnccl::FormatChecks(checks, "the median over seeds 1-9"));
  for (std::string l; std::getline(table, l);) p.notes.push_back("  " + l), lines.push_back(l);
  std::ofstream out(outPath);
  out << simnccl::FormatNoiseParams(p);
  if (!out.flush()) {
    std::fprintf(stderr, "simnccl-fit-noise: cannot write %s\n", outPath.c_str());
    return 1;
  }
  for (const std::string& l : lines) std::printf("%s\n", l.c_str());
  std::printf("simnccl-fit-noise: wrote %s%s\n", outPath.c_str(), ok ? "" : " (some statistics outside tolerance)");
  return 0;
}
