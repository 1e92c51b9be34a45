// How LeakSanitizer treats Open MPI, through MPI's profiling interface (a program's MPI_X runs
// instead of the library's, which stays callable as PMPI_X). Linked into every program of a
// sanitized build (cmake/Sanitize.cmake); those without MPI never call these.
//  - What MPI_Init_thread allocates is Open MPI's (plugins, PMIx, the hwloc topology), and it keeps
//    some of it without a pointer: ignored.
//  - The leak check runs at MPI_Finalize instead of at exit: afterwards Open MPI's state is
//    dropped and the plugins that allocated it unloaded, so it would show as leaks whose stacks
//    no suppression can name (Open MPI has no frame pointers to unwind either).

#if defined(__has_feature)
#if __has_feature(address_sanitizer)

#include <sanitizer/lsan_interface.h>

// Open MPI's; absent (and never called) in programs without MPI.
extern "C" int PMPI_Init_thread(int* argc, char*** argv, int required, int* provided)
    __attribute__((weak));
extern "C" int PMPI_Finalize() __attribute__((weak));

extern "C" int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  __lsan_disable();
  const int result = PMPI_Init_thread(argc, argv, required, provided);
  __lsan_enable();
  return result;
}

extern "C" int MPI_Finalize() {
  __lsan_do_leak_check();  // once: it also turns the check at exit off
  return PMPI_Finalize();
}

#endif
#endif
