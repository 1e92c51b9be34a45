# LOCKSTEP_SANITIZE: sanitizers every target of the build is compiled and linked with (clang),
# "address,undefined" or "thread" (CMakePresets.json, scripts/sanitize.sh). Included before the
# libraries so that the product code, not only the tests, is instrumented.
set(LOCKSTEP_SANITIZE "" CACHE STRING "Sanitize every target: address,undefined or thread (clang)")
set_property(CACHE LOCKSTEP_SANITIZE PROPERTY STRINGS "" "address,undefined" "thread")
if(NOT LOCKSTEP_SANITIZE)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "LOCKSTEP_SANITIZE needs clang (its runtimes match libFuzzer's): "
                      "configure with CXX=clang++ or a preset of CMakePresets.json")
endif()
# Any UB report aborts, so that a test (or libFuzzer, which records the input) fails on it.
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${LOCKSTEP_SANITIZE}>
                    $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>
                    $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
add_link_options(-fsanitize=${LOCKSTEP_SANITIZE})

# The runtime options and suppressions of tests/sanitizers/ and how LeakSanitizer treats MPI,
# built into every executable once all targets exist (deferred to the end of the top-level
# CMakeLists.txt).
add_library(lockstep_sanitizer_options OBJECT
  tests/sanitizers/default_options.cc tests/sanitizers/mpi_leaks.cc)
target_compile_definitions(lockstep_sanitizer_options
  PRIVATE LOCKSTEP_SANITIZER_DIR="${PROJECT_SOURCE_DIR}/tests/sanitizers")
function(lockstep_link_sanitizer_options)
  set(dirs ${PROJECT_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    list(APPEND dirs ${subdirs})
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      if(type STREQUAL "EXECUTABLE")
        target_link_libraries(${target} PRIVATE lockstep_sanitizer_options)
      endif()
    endforeach()
  endwhile()
endfunction()
cmake_language(DEFER CALL lockstep_link_sanitizer_options)
