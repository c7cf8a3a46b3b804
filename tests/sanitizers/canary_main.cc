// The program the sanitizer canary library (canary.cc) is preloaded into: it finds the library's entry
// point only through the preload, as the simulated-cluster test programs find libccltune.so.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  using Run = int (*)(const char*);
  auto run = reinterpret_cast<Run>(dlsym(RTLD_DEFAULT, "sanitizer_canary_run"));
  if (run == nullptr || argc != 2) {
    std::fprintf(stderr, "usage: LD_PRELOAD=libsanitizer_canary.so %s MODE\n", argv[0]);
    return 2;
  }
  return run(argv[1]);
}
