// Sanitizer options built into every program of a sanitized build (cmake/Sanitize.cmake), so that
// they hold however the program starts: from CTest, by hand, or as a rank that mpirun starts on
// another host with only the environment it forwards (tests/hosts/). $ASAN_OPTIONS, $LSAN_OPTIONS,
// $UBSAN_OPTIONS and $TSAN_OPTIONS still override them.

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

// The runtimes call these while they start, before they or libc are ready: no instrumentation,
// and no libc calls that the runtimes intercept.
#define LOCKSTEP_SANITIZER_HOOK                                                   \
  extern "C" __attribute__((no_sanitize("address", "thread", "undefined"), used)) \
  __attribute__((visibility("default")))
#define LOCKSTEP_SUPPRESSIONS(file) "suppressions=" LOCKSTEP_SANITIZER_DIR "/" file

namespace {

// Whether mpirun started this process (it sets OMPI_COMM_WORLD_SIZE, as parallel/context.cc
// checks). getenv finds nothing yet when the runtimes start, so this reads /proc/self/environ.
__attribute__((no_sanitize("address", "thread", "undefined"))) bool StartedByMpirun() {
  constexpr long kCapacity = 1 << 16;
  static char text[kCapacity + 1];  // NUL-separated NAME=value, and a NUL after what fits
  const long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/environ", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  long size = 0, got = 0;
  while (size < kCapacity && (got = syscall(SYS_read, fd, text + size, kCapacity - size)) > 0) {
    size += got;
  }
  syscall(SYS_close, fd);
  constexpr char kName[] = "OMPI_COMM_WORLD_SIZE=";
  for (long at = 0; at < size; at += __builtin_strlen(text + at) + 1) {
    if (__builtin_strncmp(text + at, kName, sizeof(kName) - 1) == 0) return true;
  }
  return false;
}

}  // namespace

// strict_init_order: no static initializer may read another file's dynamically initialized
// global (the op and kernel registrars run at start-up).
LOCKSTEP_SANITIZER_HOOK const char* __asan_default_options() {
  return "detect_leaks=1:check_initialization_order=1:strict_init_order=1";
}

// Open MPI's libraries have no frame pointers, so only full unwinding reaches the MPI call that
// lsan.supp names; only mpirun's ranks pay for it.
LOCKSTEP_SANITIZER_HOOK const char* __lsan_default_options() {
  return StartedByMpirun()
             ? LOCKSTEP_SUPPRESSIONS("lsan.supp") ":print_suppressions=0:fast_unwind_on_malloc=0"
             : LOCKSTEP_SUPPRESSIONS("lsan.supp") ":print_suppressions=0";
}

LOCKSTEP_SANITIZER_HOOK const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}

LOCKSTEP_SANITIZER_HOOK const char* __tsan_default_options() {
  return LOCKSTEP_SUPPRESSIONS("tsan.supp") ":halt_on_error=1:second_deadlock_stack=1";
}
