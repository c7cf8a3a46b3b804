// What the tests read from a recorded landscape (tests/data/landscapes, bench/landscape.hpp's format), read
// independently of the simulated NCCL's own loader: the table's rows, its `# alias` lines, and `ran` columns.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "model.hpp"
#include "noise_model.hpp"

namespace simnccl {

struct Ran {
  int algo = -1, proto = -1, nc = 0;
};
inline Ran ParseRan(const std::string& ran) {  // "ring/simple/nc2"
  Ran r;
  ParseRan(ran, &r.algo, &r.proto, &r.nc);
  return r;
}

struct Alias {
  std::string coll, config, target;
  uint64_t bytes = 0;
  Ran ran;
};

// The table's rows (collective, bytes, config) -> us and its alias lines, read independently of the model.
struct Table {
  std::map<std::tuple<std::string, uint64_t, std::string>, double> us;
  std::vector<Alias> aliases;
};
inline Table ReadTable(const std::string& path) {
  Table t;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    if (line.rfind("# alias ", 0) == 0) {
      // # alias all_reduce a0.p0.nc3 65536 runs as a0.p0.nc2 (NCCL ran tree/ll/nc2)
      Alias a;
      std::string hash, word, runs, as, nccl, ran;
      ls >> hash >> word >> a.coll >> a.config >> a.bytes >> runs >> as >> a.target >> nccl >> ran >> ran;
      a.ran = ParseRan(ran.substr(0, ran.size() - 1));
      t.aliases.push_back(a);
    } else if (!line.empty() && line[0] != '#') {
      std::string coll, config;
      uint64_t bytes = 0;
      double us = 0;
      ls >> coll >> config >> bytes >> us;
      t.us[{coll, bytes, config}] = us;
    }
  }
  return t;
}

inline size_t Count(int coll, uint64_t bytes, int nranks) {  // float32 elements, as recorded
  return bytes / 4 / (coll == kAllGather || coll == kReduceScatter ? nranks : 1);
}

}  // namespace simnccl
