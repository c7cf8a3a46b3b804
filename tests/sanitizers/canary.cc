// One deliberate bug per mode, in a library that is preloaded into an instrumented program exactly as
// libccltune.so is in the simulated-cluster tests (it takes the sanitizer runtime from the program). Built
// only in the sanitizer builds: scripts/sanitize.sh runs each mode with the options of its test runs and
// requires the bug to be reported and to fail the process, so a stage that reports nothing is known to be
// able to report from a preloaded library (options, exit codes, log files, symbolizer).
#include <cstdio>
#include <cstring>
#include <thread>

namespace {

int HeapOverflow() {
  volatile int n = 8;
  int* a = new int[n];
  std::memset(a, 0, sizeof(int) * n);
  const int v = a[n];  // one past the end
  delete[] a;
  return v;
}

int Leak() {
  volatile int n = 64;
  int* a = new int[n];
  a[0] = 1;
  a = nullptr;  // the only pointer is gone; the leak check at exit must report the block
  return 0;
}

int SignedOverflow() {
  volatile int big = 0x7fffffff;
  return big + 1;
}

int counter = 0;
int Race() {
  std::thread t([] { ++counter; });  // unsynchronized with the calling thread's increment
  ++counter;
  t.join();
  return counter == 0;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int sanitizer_canary_run(const char* mode) {
  if (std::strcmp(mode, "heap-overflow") == 0) return HeapOverflow() == 12345;
  if (std::strcmp(mode, "leak") == 0) return Leak();
  if (std::strcmp(mode, "signed-overflow") == 0) return SignedOverflow() == 0;
  if (std::strcmp(mode, "race") == 0) return Race();
  std::fprintf(stderr, "sanitizer canary: unknown mode %s (heap-overflow, leak, signed-overflow, race)\n", mode);
  return 2;
}
