// The program the sanitizer canary library (canary.cc) is preloaded into: it finds the library's entry
// point only through the preload, as the simulated-cluster test programs find libccltune.so.
//
// Under mpirun (CANARY_BARRIER names a directory, OMPI_COMM_WORLD_RANK/SIZE the rank), the ranks meet at a
// file barrier before the planted bug, and again once each has reported (in the sanitizer's death callback,
// which runs after the report and before the exit): mpirun kills the other ranks as soon as one exits non-zero,
// and a rank that started late was killed before it reached the bug or wrote its report (CI under load: 1
// report of 2 for the race canary). Each rank must report on its own.
#include <dlfcn.h>
#include <sanitizer/common_interface_defs.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

namespace {

// Rank `rank` of `size` marks `step` in `dir` and waits (at most two minutes) until every rank has.
void Meet(const std::string& dir, const char* step, int rank, int size) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string mine = dir + "/" + step + "." + std::to_string(rank);
  if (FILE* f = std::fopen(mine.c_str(), "w")) std::fclose(f);
  const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  for (;;) {
    int there = 0;
    for (int r = 0; r < size; ++r) there += fs::exists(dir + "/" + step + "." + std::to_string(r), ec) ? 1 : 0;
    if (there >= size) return;
    if (std::chrono::steady_clock::now() > until) {
      std::fprintf(stderr, "sanitizer canary: rank %d: %d of %d ranks at %s after 2 min; going on\n", rank, there, size,
                   step);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

struct Rank {
  std::string dir;
  int rank = 0, size = 0;
};
Rank g_rank;

void MeetAfterReport() { Meet(g_rank.dir, "reported", g_rank.rank, g_rank.size); }

}  // namespace

int main(int argc, char** argv) {
  using Run = int (*)(const char*);
  auto run = reinterpret_cast<Run>(dlsym(RTLD_DEFAULT, "sanitizer_canary_run"));
  if (run == nullptr || argc != 2) {
    std::fprintf(stderr, "usage: LD_PRELOAD=libsanitizer_canary.so %s MODE\n", argv[0]);
    return 2;
  }
  const char* dir = std::getenv("CANARY_BARRIER");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const bool meet = dir != nullptr && *dir != '\0' && rank != nullptr && size != nullptr;
  if (meet) {
    g_rank = Rank{dir, std::atoi(rank), std::atoi(size)};
    __sanitizer_set_death_callback(MeetAfterReport);
    Meet(g_rank.dir, "before", g_rank.rank, g_rank.size);
  }
  // A leak is reported at exit, the other bugs where they happen: the death callback covers both.
  return run(argv[1]);
}
