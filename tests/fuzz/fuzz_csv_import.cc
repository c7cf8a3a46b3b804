// Fuzz target: the CSV import (config_table::ParseCsv and MatchCsv), fed whatever CCLTUNE_IMPORT
// names when it ends in .csv. Properties: no crash or undefined behaviour; an error is one DataLoss
// line naming the file and a line number within the file; every accepted line is in range, and a
// call inside an accepted line's range on a matching communicator gets a config (never a line that
// parses but can never apply by mistake of the matcher).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "config_table/config_table.hpp"

namespace ct = ccltune::config_table;

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::cerr << "fuzz_csv_import: " << what << "\n";
  std::abort();
}

const char kSource[] = "fuzz-input.csv";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto r = ct::ParseCsv(text, kSource);
  if (!r.ok()) {
    const std::string msg(r.status().message());
    const std::string prefix = std::string("ccltune: import file ") + kSource + " does not parse: line ";
    if (msg.rfind(prefix, 0) != 0) Fail("error not naming the file and line: " + msg);
    if (msg.find_first_of("\r\n") != std::string::npos) Fail("error of several lines: " + msg);
    if (!absl::IsDataLoss(r.status())) Fail("unexpected code: " + r.status().ToString());
    const long line = std::strtol(msg.c_str() + prefix.size(), nullptr, 10);
    const long lines = 1 + static_cast<long>(std::count(text.begin(), text.end(), '\n'));
    if (line < 1 || line > lines) Fail("line number outside the file: " + msg);
    return 0;
  }
  int last_line = 0;
  for (const ct::CsvRule& rule : *r) {
    const ccltune::Config& c = rule.config;
    if (rule.line <= last_line) Fail("rules out of file order");
    last_line = rule.line;
    if (c.algo < 0 || c.algo >= ccltune::kNumAlgos || c.proto < 0 || c.proto >= ccltune::kNumProtos || c.channels < 0 ||
        c.channels > 64 || c.chunk_bytes != 0) {
      Fail("config out of range: " + c.ToString());
    }
    if (rule.min_bytes > rule.max_bytes) Fail("empty byte range accepted");
    // An all-reduce of min_bytes on a communicator of the rule's shape: nBytes == bytes for all-reduce.
    if (rule.coll == ccltune::Coll::kAllReduce && rule.num_pipe_ops <= 1 && rule.reg_buff == -1) {
      const int nranks = rule.nranks == -1 ? 4 : rule.nranks, nnodes = rule.nnodes == -1 ? 1 : rule.nnodes;
      ccltune::CallDesc call{ccltune::Coll::kAllReduce, 7, 0, rule.min_bytes};
      if (!ct::MatchCsv(*r, call, nranks, nnodes).has_value()) Fail("an accepted line matches nothing in its range");
    }
  }
  return 0;
}
