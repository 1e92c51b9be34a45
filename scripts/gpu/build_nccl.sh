#!/usr/bin/env bash
# Builds NCCL >= 2.30 from its source for Hopper (sm_90: H100/H200) alone, so that the GPU bundle
# (scripts/gpu/bundle.sh, 64 MiB at most) can carry it to the lent H200 machine.
#
# Why (issue 38): `scripts/gpu/checks.sh multi` runs several ranks of one communicator on one GPU,
# which needs NCCL_MULTI_RANK_GPU_ENABLE=1, new in NCCL 2.30. The GPU machine's PyTorch (2.11)
# brings an older NCCL, and the build machines' /usr/local/cuda has 2.28, which refuses two ranks
# on one device ("Duplicate GPU detected"). PyPI's nvidia-nccl-cu13 2.30 holds a 252 MB
# libnccl.so.2 (machine code for every architecture), far over what the bundle may hold; this one,
# sm_90 only, is small enough. The project itself still builds against the system NCCL: this
# library is only put first on the library path by scripts/gpu/run.sh on the GPU machine.
#
# What is built (src/device/generate.py's ONLY_FUNCS filter): every collective Lockstep issues
# (AllReduce, ReduceScatter, AllGather, Broadcast) with every data type (bf16 and fp8 included),
# every algorithm and protocol, and the device operations behind ncclSum, ncclMin/ncclMax
# (MinMax) and ncclAvg (PreMulSum for floating types, SumPostDiv for integers); send/receive and
# the symmetric-memory kernels too. LEFT OUT: ncclReduce and ncclProd, which Lockstep never
# calls. NCCL maps a filtered-out function to a no-op kernel, so with this library ncclReduce,
# or any collective with ncclProd, silently does nothing: do not use this build outside Lockstep's
# GPU checks. NCCL_ONLY_FUNCS= (set and empty) builds the full set (1346 device functions in
# 131 generated files instead of 880 in 73). The symmetric fp8 kernels that NCCL compiles for sm_100f only (multimem
# loads, chosen only when compute capability >= 10.0) are compiled for sm_90 instead, where
# their bodies are empty: an H200 never selects them.
#
# Usage: bash scripts/gpu/build_nccl.sh SOURCE [PREFIX]
#   SOURCE: an NCCL source tree (holding makefiles/version.mk), or a git directory (for example
#           the one the fetch tool gives: /work/.mirror/NVIDIA+nccl/repo), whose HEAD is exported
#           into PREFIX/source first.
#   PREFIX: the build folder, default /work/nccl-build; the library ends in PREFIX/lib
#           (libnccl.so.2 -> libnccl.so.2.30.N), headers in PREFIX/include, and
#           PREFIX/lockstep-nccl-build.txt says what was built. bundle.sh looks there by default
#           (or where LOCKSTEP_NCCL_BUILD points).
# Environment: NCCL_BUILD_JOBS (default 2), NCCL_ONLY_FUNCS (see above), NVCC_GENCODE (default
# sm_90 only), CUDA_HOME (default /usr/local/cuda).
#
# A second run with the same source resumes the build where the first stopped.
#
# Measured 2026-11-29, NCCL 2.30.7 (commit 5067397c, 2026-06-11), CUDA 13.0, gcc 12: about 2 h 05 min
# on a 2-core build machine at nice 19 while other compiles and tests held a load of 5 to 14
# (about 240 compiles, most of the time in ptxas on the ~100 generated device files).
# libnccl.so.2.30.7 is 51.0 MB as built (NCCL compiles with -g), 25.9 MB stripped (12.5 MB of it
# __nv_relfatbin, the relocatable device code, and 9.7 MB .nv_fatbin), 22.7 MB in xz; bundle.sh's
# tarball with the default binaries and Open MPI grew to 37.8 MiB with it.
set -euo pipefail
(($# >= 1)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2; }
source=$(realpath "$1")
prefix=$(realpath -m "${2:-/work/nccl-build}")
jobs=${NCCL_BUILD_JOBS:-2}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
gencode=${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}
only_funcs=${NCCL_ONLY_FUNCS-SendRecv|AllGather * *|AllGatherV * *|Broadcast * *|AllReduce (Sum|MinMax|PreMulSum|SumPostDiv) * * *|ReduceScatter (Sum|MinMax|PreMulSum|SumPostDiv) * * *}

commit=
if [[ -f $source/makefiles/version.mk ]]; then
  tree=$source
  commit=$(git -C "$source" rev-parse HEAD 2>/dev/null || true)
elif git --git-dir="$source" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  commit=$(git --git-dir="$source" rev-parse HEAD)
  tree=$prefix/source
  # Exported once per commit, so that a second run resumes the build instead of starting over.
  if [[ $(cat "$tree/.lockstep-commit" 2>/dev/null) != "$commit" ]]; then
    rm -rf "$tree"
    mkdir -p "$tree"
    git --git-dir="$source" archive HEAD | tar -x -C "$tree"
    echo "$commit" >"$tree/.lockstep-commit"
  fi
else
  echo "build_nccl.sh: $source is neither an NCCL source tree nor a git directory" >&2
  exit 1
fi

version_field() { awk -v k="$1" '$1 == k {print $3}' "$tree/makefiles/version.mk"; }
major=$(version_field NCCL_MAJOR)
minor=$(version_field NCCL_MINOR)
patch=$(version_field NCCL_PATCH)
version=$major.$minor.$patch
if ((major * 100 + minor < 230)); then
  echo "build_nccl.sh: the source is NCCL $version; NCCL_MULTI_RANK_GPU_ENABLE needs 2.30 or later" >&2
  exit 1
fi
echo "build_nccl.sh: NCCL $version${commit:+ (commit $commit)} from $tree into $prefix," \
  "$jobs jobs, $gencode, ONLY_FUNCS='$only_funcs'"

# CUDA's include folder without the NCCL headers a CUDA install may hold (the build machines'
# /usr/local/cuda/include has NCCL 2.28's nccl.h and nccl_device/): NCCL's makefiles put
# -I $(CUDA_INC) before their own include folders for some host files (src/device's host_table.cc
# and sym_kernels_host.cc), which then compile against the older headers or fail
# ("NCCL_GIN_MAX_CONNECTIONS was not declared").
mkdir -p "$prefix"
cuda_inc=$prefix/cuda-include
rm -rf "$cuda_inc"
mkdir -p "$cuda_inc"
for entry in "$cuda_home"/include/*; do
  case $(basename "$entry") in nccl*) continue ;; esac
  ln -s "$(realpath "$entry")" "$cuda_inc/"
done

start=$(date +%s)
# src.lib: the shared library and its headers (not the static archive, ncclras or ncclparam).
# NVCC_GENCODE_LDMC_FP8: see the header (sm_100f otherwise).
nice -n 19 make -C "$tree" -j"$jobs" src.lib \
  NVCC_GENCODE="$gencode" NVCC_GENCODE_LDMC_FP8="$gencode" ONLY_FUNCS="$only_funcs" \
  CUDA_HOME="$cuda_home" CUDA_INC="$cuda_inc" BUILDDIR="$prefix"
seconds=$(($(date +%s) - start))

lib=$prefix/lib/libnccl.so.2
[[ -e $lib ]] || { echo "build_nccl.sh: $lib was not made" >&2; exit 1; }
code=$(python3 -c 'import ctypes, sys
c = ctypes.c_int()
assert ctypes.CDLL(sys.argv[1]).ncclGetVersion(ctypes.byref(c)) == 0
print(c.value)' "$lib")
exported=$(nm -D --defined-only "$lib")
for symbol in ncclGetVersion ncclCommInitRankConfig ncclCommSplit ncclCommFinalize ncclCommAbort \
  ncclAllReduce ncclReduceScatter ncclAllGather ncclBroadcast; do
  grep -q -E " [TW] $symbol\$" <<<"$exported" ||
    { echo "build_nccl.sh: $lib does not export $symbol" >&2; exit 1; }
done
cat >"$prefix/lockstep-nccl-build.txt" <<EOF
NCCL $version (ncclGetVersion $code)${commit:+, commit $commit}, built by scripts/gpu/build_nccl.sh
on $(date -u +%Y-%m-%dT%H:%MZ) (its last make: ${seconds}s) with $("$cuda_home"/bin/nvcc --version | grep -o 'release [0-9.]*')
NVCC_GENCODE=$gencode
ONLY_FUNCS=$only_funcs
EOF
if [[ -n $only_funcs ]]; then
  echo "Filtered: a collective or operation ONLY_FUNCS leaves out (with the default: ncclReduce," \
    "ncclProd) silently does nothing" >>"$prefix/lockstep-nccl-build.txt"
fi
cat "$prefix/lockstep-nccl-build.txt"
ls -la "$prefix"/lib/libnccl.so*
