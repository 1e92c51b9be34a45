#!/usr/bin/env bash
# On a lent GPU machine: unpacks a bundle from scripts/gpu/bundle.sh into /tmp/lockstep and runs
# the command with the bundled libraries and the machine's CUDA, cuDNN, cuBLAS and NCCL (under
# /usr/local/cuda or in the Python packages beside PyTorch) on the library path.
#
# Usage: bash scripts/gpu/run.sh BUNDLE.tar.xz COMMAND...   (binaries are in /tmp/lockstep/bin)
set -euo pipefail
bundle=$1
shift
mkdir -p /tmp/lockstep
tar -C /tmp/lockstep -xJf "$bundle"
paths=(/tmp/lockstep/lib)
for name in libcudnn.so.9 libnccl.so.2 libcublasLt.so.13 libcudart.so.13; do
  found=$(find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu /opt /usr/local/lib -name "$name" \
    2>/dev/null | head -n 1 || true)
  [[ -n $found ]] && paths+=("$(dirname "$found")")
done
export LD_LIBRARY_PATH=$(IFS=:; echo "${paths[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=/tmp/lockstep/bin:$PATH
"$@"
