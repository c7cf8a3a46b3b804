// Linked into every MPI program of the AddressSanitizer build (CMakeLists.txt: INTERFACE_SOURCES of the MPI
// targets), through MPI's profiling interface: MPI_Init, MPI_Init_thread and MPI_Finalize run Open MPI's own
// PMPI_ entry points with LeakSanitizer off on the calling thread, so what Open MPI allocates there and never
// frees is not a leak report. Before finalizing, every Open MPI object in the process is made RTLD_NODELETE:
// Open MPI unloads its components in MPI_Finalize, and a leak of one of its own threads (the PMIx progress
// thread) then keeps a stack frame in a known module, which lsan.supp can name. Both let the simulated-cluster
// tests run with ASan's fast unwinder (scripts/sanitize.sh): the slow one, needed before for complete Open MPI
// stacks, made every allocation of the simulated NCCL unwind through DWARF, about 9x the time (the guard drift
// test alone took 601 s).
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>
#include <sanitizer/lsan_interface.h>

#include <cstring>

namespace {

int PinOpenMpi(struct dl_phdr_info* info, size_t, void*) {
  if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, "/openmpi") != nullptr)
    dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);  // already loaded: only marks it
  return 0;
}

}  // namespace

extern "C" {

int MPI_Init(int* argc, char*** argv) {
  __lsan_disable();
  const int rc = PMPI_Init(argc, argv);
  __lsan_enable();
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  __lsan_disable();
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  __lsan_enable();
  return rc;
}

int MPI_Finalize() {
  dl_iterate_phdr(PinOpenMpi, nullptr);
  __lsan_disable();
  const int rc = PMPI_Finalize();
  __lsan_enable();
  return rc;
}

}  // extern "C"
