# LOCKSTEP_FUZZ=ON: the libFuzzer targets of tests/fuzz/ (scripts/fuzz.sh). They need the
# address,undefined build of cmake/Sanitize.cmake, to which this adds libFuzzer's coverage on every
# target, so that the product code under test guides the fuzzer. The ordinary test binaries of
# such a build link the same way (the coverage hooks default to no-ops in the ASan runtime), so
# one build directory serves the fuzzers and the sanitized test suite (preset asan-ubsan).
option(LOCKSTEP_FUZZ "Build the libFuzzer targets (needs LOCKSTEP_SANITIZE=address,undefined)" OFF)
if(LOCKSTEP_FUZZ)
  if(NOT LOCKSTEP_SANITIZE STREQUAL "address,undefined")
    message(FATAL_ERROR "LOCKSTEP_FUZZ needs -DLOCKSTEP_SANITIZE=address,undefined (clang), "
                        "as the asan-ubsan preset sets it")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
  add_subdirectory(tests/fuzz)
endif()
