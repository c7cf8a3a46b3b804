// Fuzz target: the JSON import (config_table::ParseJson), fed whatever CCLTUNE_IMPORT names.
// Properties: no crash, leak or undefined behaviour (ASan/UBSan); an error is one line that names
// the file, with the documented code (DataLoss: does not parse; FailedPrecondition: schema or
// fingerprint); what is accepted is in range and survives export and re-import unchanged.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "config_table/config_table.hpp"

namespace ct = ccltune::config_table;

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::cerr << "fuzz_json_import: " << what << "\n";
  std::abort();
}

// The fingerprint the seeds carry, so mutations reach the workload parsing.
ct::Fingerprint Fp() {
  ct::Fingerprint fp;
  fp.gpu = "simulated";
  fp.nranks = 4;
  fp.nnodes = 1;
  fp.nccl_version = 22809;
  fp.plugin_version = 6;
  fp.channel_budget = 32;
  fp.ccltune_version = "0.1.0";
  return fp;
}

const char kSource[] = "fuzz-input.json";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto r = ct::ParseJson(text, Fp(), kSource);
  if (!r.ok()) {
    const std::string msg(r.status().message());
    if (msg.rfind(std::string("ccltune: import file ") + kSource + " ", 0) != 0)
      Fail("error not naming the file: " + msg);
    if (msg.find_first_of("\r\n") != std::string::npos) Fail("error of several lines: " + msg);
    if (!absl::IsDataLoss(r.status()) && !absl::IsFailedPrecondition(r.status())) {
      Fail("unexpected code: " + r.status().ToString());
    }
    return 0;
  }
  // Accepted: every value in range, and export(import(x)) imports to the same workloads.
  ct::ExportSet set;
  set.comms.emplace_back(Fp(), std::vector<ct::Entry>{});
  for (const ct::ImportedWorkload& w : *r) {
    const ccltune::Config& c = w.config;
    if (w.key.calls.empty()) Fail("workload without calls");
    if ((c.algo < 0) != (c.proto < 0) || c.algo >= ccltune::kNumAlgos || c.proto >= ccltune::kNumProtos) {
      Fail("config out of range: " + c.ToString());
    }
    if (c.channels < 0 || c.channels > 64 || c.chunk_bytes < 0) Fail("config out of range: " + c.ToString());
    if (!(w.tuned_us >= 0) || !(w.default_us >= 0)) Fail("negative or NaN time");
    ct::Entry e;
    e.key = w.key;
    e.config = w.config;
    e.state = ct::WorkloadState::kImported;
    e.tuned_us = w.tuned_us;
    e.default_us = w.default_us;
    set.comms[0].second.push_back(e);
  }
  auto again = ct::ParseJson(ct::ToJson(set), Fp(), "round-trip");
  if (!again.ok()) Fail("re-import of the export failed: " + again.status().ToString());
  if (again->size() != r->size()) Fail("round trip changed the number of workloads");
  for (size_t i = 0; i < r->size(); ++i) {
    const ct::ImportedWorkload &a = (*r)[i], &b = (*again)[i];
    if (a.key.Hash() != b.key.Hash() || !(a.config == b.config) || a.tuned_us != b.tuned_us ||
        a.default_us != b.default_us) {
      Fail("round trip changed workload " + a.key.ToString());
    }
  }
  return 0;
}
