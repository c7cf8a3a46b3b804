// simnccl-model: prints, per collective and size, the simulated NCCL's default time and the exhaustive best config.
// Usage: simnccl-model [--coll all_reduce] [--sizes 1M,4M] [--nranks 4] [--budget 24] [--model FILE] [--chunk]
//                      [--interference LEVEL]   (SIMNCCL_INTERFERENCE's landscape, model.hpp)
//                      [--all]   every valid (algorithm, protocol) and channel request instead: what it runs as
// A recorded landscape (tests/data/landscapes) gives the ranks and channels it was recorded with unless --nranks or
// --budget say otherwise.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "channels.hpp"
#include "model.hpp"

static size_t ParseSize(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  if (*end == 'M' || *end == 'm') v *= 1048576;
  if (*end == 'G' || *end == 'g') v *= 1073741824.0;
  return (size_t)v;
}

int main(int argc, char** argv) {
  std::vector<int> colls;
  std::vector<size_t> sizes;
  int nranks = 4, budget = 24;
  bool withChunk = false, all = false, nranksSet = false, budgetSet = false;
  double interference = 0;
  std::string modelFile;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "simnccl-model: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--coll") {
      std::string v = next();
      int c = simnccl::CollFromName(v);
      if (c < 0) {
        std::fprintf(stderr,
                     "simnccl-model: unknown collective '%s' (all_reduce, all_gather, reduce_scatter, "
                     "broadcast, reduce)\n",
                     v.c_str());
        return 2;
      }
      colls.push_back(c);
    } else if (a == "--sizes") {
      std::string v = next();
      size_t pos = 0;
      while (pos <= v.size()) {
        size_t comma = v.find(',', pos);
        sizes.push_back(ParseSize(v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    } else if (a == "--nranks") {
      nranks = std::atoi(next().c_str()), nranksSet = true;
    } else if (a == "--budget") {
      budget = std::atoi(next().c_str()), budgetSet = true;
    } else if (a == "--all") {
      all = true;
    } else if (a == "--model") {
      modelFile = next();
    } else if (a == "--chunk") {
      withChunk = true;
    } else if (a == "--interference") {
      std::string v = next();
      if (!simnccl::ParseInterferenceLevel(v, &interference)) {
        std::fprintf(stderr, "simnccl-model: --interference %s: a level in [0, 1)\n", v.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: simnccl-model [--coll C]... [--sizes 1M,4M] [--nranks N] [--budget NC] "
                   "[--model FILE] [--chunk] [--interference LEVEL] [--all]\n");
      return 2;
    }
  }
  if (colls.empty()) colls = {simnccl::kAllReduce, simnccl::kAllGather, simnccl::kReduceScatter};
  if (sizes.empty()) sizes = {262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20};
  std::unique_ptr<simnccl::Model> model;
  if (modelFile.empty()) {
    model = simnccl::MakeBuiltinModel();
  } else {
    std::string err;
    model = simnccl::LoadTableModel(modelFile, &err);
    if (!model) {
      std::fprintf(stderr, "simnccl-model: %s\n", err.c_str());
      return 1;
    }
  }
  model = simnccl::WithInterference(std::move(model), interference);
  const simnccl::RecordedMachine machine = model->Machine();
  if (machine.ranks > 0 && !nranksSet) nranks = machine.ranks;
  if (machine.channels > 0 && !budgetSet) budget = machine.channels;
  if (machine.ranks > 0 || machine.channels > 0)
    std::printf("# %s: recorded on %d ranks, %d channels, Ring/Simple %d threads; shown for %d ranks, %d channels\n",
                modelFile.c_str(), machine.ranks, machine.channels, machine.ringSimpleThreads, nranks, budget);
  if (all) {
    // Every request a tuner can make (valid pair x nChannels 1..budget) for float32 elements, the channels NCCL runs
    // it on and the model's time there, and NCCL's default (request 0).
    std::printf("%-15s %12s %-14s %-14s %10s\n", "collective", "bytes", "request", "runs_as", "us");
    for (int c : colls)
      for (size_t b : sizes) {
        const size_t perRank = c == simnccl::kAllGather || c == simnccl::kReduceScatter ? (size_t)nranks : 1;
        const size_t count = std::max<size_t>(1, b / 4 / perRank);
        const simnccl::Config d = model->DefaultConfig(c, b, nranks, budget);
        char def[32];
        std::snprintf(def, sizeof def, "a%d.p%d.nc%d", d.algo, d.proto, d.nc);
        std::printf("%-15s %12zu %-14s %-14s %10.2f\n", simnccl::CollName(c), b, "default", def,
                    model->DefaultDuration(c, b, nranks, budget));
        for (int a = 0; a < simnccl::kNumAlgos; a++)
          for (int p = 0; p < simnccl::kNumProtos; p++) {
            if (!model->Valid(c, a, p)) continue;
            for (int nc = 1; nc <= budget; nc++) {
              const int run =
                  simnccl::ChannelsRun(c, count, 4, nranks, a, p, nc, budget, 22809, machine.ringSimpleThreads);
              char req[32], as[32];
              std::snprintf(req, sizeof req, "a%d.p%d.nc%d", a, p, nc);
              std::snprintf(as, sizeof as, "a%d.p%d.nc%d", a, p, run);
              std::printf("%-15s %12zu %-14s %-14s %10.2f\n", simnccl::CollName(c), b, req, as,
                          model->Duration(c, b, nranks, simnccl::Config{a, p, run, 0}, budget));
            }
          }
      }
    return 0;
  }
  std::printf("%-15s %12s %10s %-12s %10s %-24s %7s\n", "collective", "bytes", "default_us", "default_cfg", "best_us",
              "best_cfg", "ratio");
  for (int c : colls)
    for (size_t b : sizes) {
      simnccl::Config d = model->DefaultConfig(c, b, nranks, budget);
      double dt = model->DefaultDuration(c, b, nranks, budget);
      auto best = model->Exhaustive(c, b, nranks, budget, withChunk);
      char dcfg[64], bcfg[64];
      std::snprintf(dcfg, sizeof dcfg, "a%d.p%d.nc%d", d.algo, d.proto, d.nc);
      if (best.cfg.algo < 0)
        std::snprintf(bcfg, sizeof bcfg, "default");
      else
        std::snprintf(bcfg, sizeof bcfg, "a%d.p%d.nc%d.c%zu", best.cfg.algo, best.cfg.proto, best.cfg.nc,
                      best.cfg.chunk);
      std::printf("%-15s %12zu %10.2f %-12s %10.2f %-24s %7.3f\n", simnccl::CollName(c), b, dt, dcfg, best.us, bcfg,
                  dt / best.us);
    }
  return 0;
}
