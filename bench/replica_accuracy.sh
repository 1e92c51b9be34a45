#!/usr/bin/env bash
# The batch-norm experiment behind BENCHMARKS.md's "One model on every rank": the built-in sample
# trained with scripts/run_sample.sh's recipe (resnet8, global batch 32, six epochs) by one
# process, by four ranks without --sync-bn and by four ranks with it, three seeds each. Each
# line is the last epoch's validation accuracy, which is that of the model every rank saved
# (the ranks agree their running statistics before evaluating and saving).
#
#   bash bench/replica_accuracy.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
bin=$build/examples
data=$build/sample_data
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -d $data/train && -d $data/val ]] || "$bin/lockstep-make-sample" "$data" >/dev/null
[[ $(id -u) -ne 0 ]] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
recipe=(--data "$data" --model resnet8 --epochs 6 --batch-size 32 --lr 0.1 --log-every 0
  --progress lines)
run() {  # run LABEL SEED LAUNCHER... -- FLAGS...
  local label=$1 seed=$2
  shift 2
  local launcher=()
  while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
  shift
  local last
  last=$("${launcher[@]}" "$bin/lockstep-train" "${recipe[@]}" --seed "$seed" "$@" |
    grep -o 'val accuracy [0-9.]* ([0-9]*/[0-9]*)' | tail -n 1)
  echo "$label seed=$seed $last"
}
for seed in 0 1 2; do
  run "one process" "$seed" -- --ckpt-dir "$work/one-$seed"
  run "4 ranks" "$seed" mpirun -n 4 --oversubscribe -- --ckpt-dir "$work/four-$seed"
  run "4 ranks --sync-bn" "$seed" mpirun -n 4 --oversubscribe -- --sync-bn \
    --ckpt-dir "$work/sync-$seed"
done
