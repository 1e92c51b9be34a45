#!/usr/bin/env bash
# Packs CUDA-build binaries for a lent GPU machine that has CUDA, cuDNN and NCCL but none of
# Lockstep's Debian libraries: the binaries, every shared library they load from this machine's
# Debian packages (oneDNN, Open MPI, protobuf, abseil, libjpeg-turbo, ...) and the peer script,
# in one compressed tarball (the device tool carries 64 MiB at most). scripts/gpu/run.sh unpacks
# it there.
#
# Usage: bash scripts/gpu/bundle.sh OUT.tar.xz [BINARY...]
# Without binaries, the ones scripts/gpu/checks.sh runs, from the CUDA build in build/.
set -euo pipefail
out=$(realpath -m "$1")
shift
root=$(dirname "$0")/../..
if (($# == 0)); then
  set -- "$root"/build/tests/ops/ops_cuda_test "$root"/build/tests/train/train_cuda_test \
    "$root"/build/tests/parallel/{data_parallel_test,parallel_cuda_test} \
    "$root"/build/examples/{lockstep-train,lockstep-make-sample,lockstep-ckpt} \
    "$root"/build/bench/lockstep-bench-resnet
fi
peers=$root/../shared/peers
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for binary in "$@"; do
  cp "$binary" "$stage/bin/"
  strip --strip-unneeded "$stage/bin/$(basename "$binary")"
  # Libraries from Debian's multiarch folder, except the C and C++ runtimes the GPU machine has;
  # CUDA, cuDNN, cuBLAS and NCCL come from the GPU machine itself.
  for lib in $(ldd "$binary" | awk '$3 ~ /^(\/usr)?\/lib\/x86_64-linux-gnu\// {print $3}'); do
    [[ $lib =~ /lib(c|m|dl|rt|pthread|gcc_s|stdc\+\+)\.so ]] && continue
    [[ -e $stage/lib/$(basename "$lib") ]] || cp -L "$lib" "$stage/lib/"
  done
done
# The PyTorch peer of the GPU benchmark (BENCHMARKS.md), for the same call.
cp "$peers/torch_resnet_gpu.py" "$stage/"
tar -C "$stage" -cJf "$out" .
ls -la "$out"
