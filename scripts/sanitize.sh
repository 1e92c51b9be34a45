#!/usr/bin/env bash
# Builds and runs the tests under sanitizers with the presets of CMakePresets.json (clang, CPU
# only, -O1 with line tables):
#   asan  the whole CPU suite but the interop tests (they install PyPI packages) and the learning
#         test (training the sample to an accuracy: numerics, and too slow under ASan) under
#         AddressSanitizer, LeakSanitizer and UBSan, in build-asan/, which also holds the libFuzzer
#         targets that scripts/fuzz.sh runs;
#   tsan  the threaded parts under ThreadSanitizer, in build-tsan/, building only their tests: the
#         dataset pipeline's workers, the collective queue, the executor overlapping the gradient
#         AllReduce with the backward, the watchdog of multi-rank jobs, and the device
#         collectives' stream and watch (on the MPI stand-in).
# The runtime options and suppressions are built into the programs (tests/sanitizers/); a report
# fails its test.
#
#   scripts/sanitize.sh [asan|tsan ...]   (both by default)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
sanitizers=("$@")
((${#sanitizers[@]} > 0)) || sanitizers=(asan tsan)
for sanitizer in "${sanitizers[@]}"; do
  case $sanitizer in
    asan) preset=asan-ubsan ;;
    tsan) preset=tsan ;;
    *) echo "usage: scripts/sanitize.sh [asan|tsan ...]" >&2; exit 2 ;;
  esac
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$(nproc)"
  ctest --preset "$preset" -j "$(nproc)"
done
