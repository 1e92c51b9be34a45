#!/usr/bin/env bash
# Sets everything up and runs the whole test suite: installs the Debian dependencies, configures
# (CUDA parts when /usr/local/cuda is present), builds with warnings as errors, runs CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd "${LOCKSTEP_BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 900
