#!/usr/bin/env bash
# Sets everything up and builds: installs the Debian dependencies, configures a Release build with
# warnings as errors (CUDA parts when /usr/local/cuda is present) in $LOCKSTEP_BUILD_DIR (default
# build/), and builds the targets given as arguments (everything without arguments).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build_dir=${LOCKSTEP_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_WERROR=ON
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
