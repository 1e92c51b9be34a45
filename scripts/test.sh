#!/usr/bin/env bash
# Sets everything up and runs the whole test suite: installs the Debian dependencies, configures
# (CUDA parts when /usr/local/cuda is present), builds with warnings as errors, runs CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build_dir=${LOCKSTEP_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_WERROR=ON
cmake --build "$build_dir" -j "$(nproc)"
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" --timeout 900
