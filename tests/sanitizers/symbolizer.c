/* The llvm-symbolizer that the sanitizer runtimes of the CCLTUNE_SANITIZE builds start
 * (external_symbolizer_path, set by scripts/sanitize.sh). The simulated-cluster tests run with
 * LD_PRELOAD=libccltune.so, a library that only loads into an instrumented program (it takes the
 * sanitizer runtime from it); the symbolizer a rank starts inherits that environment and would die at
 * load time, leaving a report without function names. This wrapper is linked statically, so the loader
 * never applies the preload to it; it drops LD_PRELOAD and runs the real llvm-symbolizer. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  (void)argc;
  unsetenv("LD_PRELOAD");
  argv[0] = (char*)CCLTUNE_LLVM_SYMBOLIZER;
  execv(CCLTUNE_LLVM_SYMBOLIZER, argv);
  perror("ccltune symbolizer wrapper: cannot run " CCLTUNE_LLVM_SYMBOLIZER);
  return 127;
}
