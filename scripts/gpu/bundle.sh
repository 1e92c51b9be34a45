#!/usr/bin/env bash
# Packs CUDA-build binaries for a lent GPU machine that has CUDA, cuDNN and NCCL but none of
# Lockstep's Debian libraries: the binaries, every shared library they load from this machine's
# Debian packages (oneDNN, Open MPI, protobuf, abseil, libjpeg-turbo, ...) and the peer script,
# in one compressed tarball (the device tool carries 64 MiB at most). scripts/gpu/run.sh unpacks
# it there.
#
# The GPU machine has no Open MPI of Debian's (no mpirun), so the bundle also carries one that
# runs from wherever it is unpacked (LOCKSTEP_BUNDLE_MPI=0 leaves it out): Debian 12's launcher
# (orterun as ompi/bin/mpirun, orted), its MCA plugins (ompi/lib/openmpi3, less those that need
# InfiniBand, UCX, libfabric, PSM or OpenSHMEM), its help texts and parameter file
# (ompi/share/openmpi, ompi/etc), PMIx's plugins and help texts (pmix/), and the libraries all of
# these load (PMIx, hwloc, libevent) in lib/. run.sh points Open MPI and PMIx at these folders.
# It adds about 1.5 MiB to the tarball: 16.1 MiB in all with the default binaries (2026-11-28).
#
# NCCL: the GPU machine's own (PyTorch's, older than 2.30) cannot run several ranks on one GPU
# (issue 38, NCCL_MULTI_RANK_GPU_ENABLE). When an NCCL built by scripts/gpu/build_nccl.sh (2.30,
# sm_90 only) is found, in LOCKSTEP_NCCL_BUILD (a folder holding lib/libnccl.so.2) or else in
# /work/nccl-build, the bundle carries it, stripped, as lib/nccl/libnccl.so.2 with its
# lockstep-nccl-build.txt; run.sh counts it among its candidates and puts the newest first.
# Without one the bundle goes without (a warning), and the machine's NCCL is used;
# LOCKSTEP_BUNDLE_NCCL=0 leaves it out even when there is one. It adds about 22 MiB to the
# tarball: 37.8 MiB in all with the default binaries and Open MPI (2026-11-29).
#
# Usage: bash scripts/gpu/bundle.sh OUT.tar.xz [BINARY...]
# Without binaries, the ones scripts/gpu/checks.sh runs, from the CUDA build in build/; one of
# those not built yet is left out with a warning.
set -euo pipefail
out=$(realpath -m "$1")
shift
root=$(dirname "$0")/../..
if (($# == 0)); then
  set --
  for binary in "$root"/build/tests/ops/ops_cuda_test "$root"/build/tests/train/train_cuda_test \
    "$root"/build/tests/parallel/{data_parallel_test,parallel_cuda_test,device_collectives_test} \
    "$root"/build/examples/{lockstep-train,lockstep-make-sample,lockstep-ckpt,lockstep-allgather} \
    "$root"/build/bench/lockstep-bench-resnet; do
    if [[ -x $binary ]]; then
      set -- "$@" "$binary"
    else
      echo "bundle.sh: warning: $binary is not built; the bundle goes without it" >&2
    fi
  done
  (($# > 0)) || { echo "bundle.sh: none of the default binaries is built" >&2; exit 1; }
fi
peers=$root/../shared/peers
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"

# Copies into lib/ every library FILE loads from Debian's multiarch folder, except the C and C++
# runtimes the GPU machine has; CUDA, cuDNN, cuBLAS and NCCL come from the GPU machine itself
# (NCCL from a build of ours when one is bundled, below).
copy_libraries() {
  local lib
  for lib in $(ldd "$1" | awk '$3 ~ /^(\/usr)?\/lib\/x86_64-linux-gnu\// {print $3}'); do
    [[ $lib =~ /lib(c|m|dl|rt|pthread|gcc_s|stdc\+\+)\.so ]] && continue
    [[ -e $stage/lib/$(basename "$lib") ]] || cp -L "$lib" "$stage/lib/"
  done
}

for binary in "$@"; do
  cp "$binary" "$stage/bin/"
  strip --strip-unneeded "$stage/bin/$(basename "$binary")"
  copy_libraries "$binary"
done

if [[ ${LOCKSTEP_BUNDLE_MPI:-1} != 0 ]]; then
  ompi_lib=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
  pmix_lib=/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
  [[ -x /usr/bin/orterun && -d $ompi_lib ]] || {
    echo "bundle.sh: no Debian Open MPI here (apt-get install openmpi-bin libopenmpi3)" >&2
    exit 1
  }
  mkdir -p "$stage/ompi/bin" "$stage/ompi/lib/openmpi3" "$stage/ompi/share" "$stage/ompi/etc" \
    "$stage/pmix/lib/pmix" "$stage/pmix/share"
  cp /usr/bin/orterun "$stage/ompi/bin/mpirun"
  cp /usr/bin/orted "$stage/ompi/bin/orted"
  copy_libraries /usr/bin/orterun
  copy_libraries /usr/bin/orted
  for plugin in "$ompi_lib"/*.so; do
    # No InfiniBand, UCX, libfabric or PSM there, and OpenSHMEM is not used: their plugins
    # would each print a load error.
    case $(basename "$plugin") in
      mca_atomic_* | mca_memheap_* | mca_scoll_* | mca_spml_* | mca_sshmem_* | libompi_dbg*) continue ;;
    esac
    ldd "$plugin" | grep -q -E 'lib(fabric|ucp|ucs|uct|ibverbs|rdmacm|psm)' && continue
    cp "$plugin" "$stage/ompi/lib/openmpi3/"
    copy_libraries "$plugin"
  done
  cp -r /usr/share/openmpi "$stage/ompi/share/"
  rm -f "$stage"/ompi/share/openmpi/*wrapper-data.txt
  # Debian's defaults (no openib, ofi or ucx): the same settings as on this machine.
  cp /etc/openmpi/openmpi-mca-params.conf "$stage/ompi/etc/"
  if [[ -d $pmix_lib ]]; then
    for plugin in "$pmix_lib"/*.so; do
      cp "$plugin" "$stage/pmix/lib/pmix/"
      copy_libraries "$plugin"
    done
    cp -r /usr/lib/x86_64-linux-gnu/pmix2/share/pmix "$stage/pmix/share/"
    cp /usr/lib/x86_64-linux-gnu/pmix2/share/pmix-mca-params.conf "$stage/pmix/share/" \
      2>/dev/null || true
  fi
  strip --strip-unneeded "$stage"/ompi/bin/* "$stage"/ompi/lib/openmpi3/*.so \
    "$stage"/pmix/lib/pmix/*.so 2>/dev/null || true
fi

if [[ ${LOCKSTEP_BUNDLE_NCCL:-1} != 0 ]]; then
  nccl_build=${LOCKSTEP_NCCL_BUILD:-/work/nccl-build}
  if [[ -e $nccl_build/lib/libnccl.so.2 ]]; then
    mkdir -p "$stage/lib/nccl"
    cp -L "$nccl_build/lib/libnccl.so.2" "$stage/lib/nccl/libnccl.so.2"
    strip --strip-unneeded "$stage/lib/nccl/libnccl.so.2"
    [[ -f $nccl_build/lockstep-nccl-build.txt ]] &&
      cp "$nccl_build/lockstep-nccl-build.txt" "$stage/lib/nccl/"
    echo "bundle.sh: NCCL from $nccl_build: $(stat -c %s "$stage/lib/nccl/libnccl.so.2") bytes stripped"
  elif [[ -n ${LOCKSTEP_NCCL_BUILD:-} ]]; then
    echo "bundle.sh: LOCKSTEP_NCCL_BUILD=$LOCKSTEP_NCCL_BUILD holds no lib/libnccl.so.2" >&2
    exit 1
  else
    echo "bundle.sh: warning: no NCCL build in $nccl_build (scripts/gpu/build_nccl.sh); the" \
      "bundle goes without, and checks.sh multi needs the GPU machine's NCCL to be 2.30 or later" >&2
  fi
fi

# The PyTorch peer of the GPU benchmark (BENCHMARKS.md), for the same call.
if [[ -f $peers/torch_resnet_gpu.py ]]; then
  cp "$peers/torch_resnet_gpu.py" "$stage/"
else
  echo "bundle.sh: warning: $peers/torch_resnet_gpu.py is missing; bench and amp need it" >&2
fi
tar -C "$stage" -cJf "$out" .
ls -la "$out"
size=$(stat -c %s "$out")
if ((size > 60 * 1024 * 1024)); then
  echo "bundle.sh: warning: $((size / 1024 / 1024)) MiB is near or over the 64 MiB the device" \
    "tool carries; name fewer binaries" >&2
fi
