#!/usr/bin/env bash
# check_install.sh CMAKE BUILD_DIR SOURCE_DIR WITH_CUDA
# Installs BUILD_DIR into a temporary prefix, checks that every header of the libraries (those of
# examples/ included: env_options) is there (a CPU-only build leaves out the CUDA backend's, whose
# names say cuda or nccl), builds examples/out_of_tree against the prefix, runs it, and has the
# installed lockstep-ckpt verify the checkpoint it wrote. The temporary directory is removed however the script ends.
set -euo pipefail
cmake=$1 build=$2 source=$3 with_cuda=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$cmake" --install "$build" --prefix "$tmp/prefix" > /dev/null

headers() { find "$@" \( -name '*.h' -o -name '*.cuh' \) ! -name '*.pb.h' | sort; }
expected=$(cd "$source" && headers core dataset graph ops parallel ckpt train inference examples)
[[ $with_cuda == ON ]] || expected=$(grep -v -e cuda -e nccl <<< "$expected")
if ! diff <(echo "$expected") <(cd "$tmp/prefix/include/lockstep" && headers *); then
  echo "error: the installed headers (>) differ from the source tree's (<): list them in the" \
       "FILE_SET HEADERS of their library's CMakeLists.txt" >&2
  exit 1
fi

"$cmake" -S "$source/examples/out_of_tree" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" > /dev/null
"$cmake" --build "$tmp/build"
"$tmp/build/my-training" "$tmp/run"
"$tmp/prefix/bin/lockstep-ckpt" verify "$tmp/run/ckpt"
