// Sanitizer options built into every program of a sanitized build (cmake/Sanitize.cmake), so that
// they hold however the program starts: from CTest, by hand, or as a rank that mpirun starts on
// another host with only the environment it forwards (tests/hosts/). $ASAN_OPTIONS, $LSAN_OPTIONS,
// $UBSAN_OPTIONS and $TSAN_OPTIONS still override them.

// The runtimes call these while they start, before they are ready: no instrumentation.
#define LOCKSTEP_SANITIZER_HOOK                                                   \
  extern "C" __attribute__((no_sanitize("address", "thread", "undefined"), used)) \
  __attribute__((visibility("default")))
#define LOCKSTEP_SUPPRESSIONS(file) "suppressions=" LOCKSTEP_SANITIZER_DIR "/" file

// strict_init_order: no static initializer may read another file's dynamically initialized
// global (the op and kernel registrars run at start-up). allocator_may_return_null: allocations
// fail as they do without ASan, so that the tests of failed allocations see their Status.
LOCKSTEP_SANITIZER_HOOK const char* __asan_default_options() {
  return "detect_leaks=1:check_initialization_order=1:strict_init_order=1:"
         "allocator_may_return_null=1";
}

LOCKSTEP_SANITIZER_HOOK const char* __lsan_default_options() {
  return LOCKSTEP_SUPPRESSIONS("lsan.supp") ":print_suppressions=0";
}

LOCKSTEP_SANITIZER_HOOK const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}

LOCKSTEP_SANITIZER_HOOK const char* __tsan_default_options() {
  return LOCKSTEP_SUPPRESSIONS("tsan.supp") ":halt_on_error=1:second_deadlock_stack=1";
}
