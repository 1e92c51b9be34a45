# LOCKSTEP_FUZZ=ON: the libFuzzer targets of tests/fuzz/ (clang only). Every target of such a build
# is compiled with AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer's coverage, so that
# the product code under test is instrumented; build only the fuzz targets (scripts/fuzz.sh).
option(LOCKSTEP_FUZZ "Build the libFuzzer targets (clang; sanitizes every target of the build)" OFF)
if(LOCKSTEP_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "LOCKSTEP_FUZZ needs clang for libFuzzer: configure with CXX=clang++")
  endif()
  # Any UB aborts, so that libFuzzer records it as a crash with its input.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link,address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
  add_subdirectory(tests/fuzz)
endif()
