#!/usr/bin/env bash
# scancel of examples/slurm/one_node.sbatch mid-training: every rank says it was stopped by
# SIGTERM, the directory verifies and holds complete steps only, and submitting the same script
# again resumes there and ends with the same checkpoint files, bit for bit, as a run that was
# never cancelled.
#   scancel_test.sh STATE ONE_NODE_SBATCH LOCKSTEP_MAKE_SAMPLE LOCKSTEP_TRAIN LOCKSTEP_CKPT
set -euo pipefail
source "$(dirname "$0")/test_lib.sh" "$1"
script=$2 make_sample=$3 train=$4 ckpt=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make_small_sample "$make_sample" "$work/data"
readonly kEpochs=24  # long enough (seconds) to be cancelled after its second epoch
args=(--model lenet --batch-size 8 --epochs "$kEpochs" --log-every 0)
final() { echo "lenet_$1-${kEpochs}_10.ckpt"; }

out=$(srun --mpi=pmix --ntasks=2 --cpus-per-task=1 "$train" --data "$work/data" \
  --ckpt-dir "$work/uninterrupted" "${args[@]}" 2>&1) || fail "the uninterrupted run: $out"

submit() {
  LOCKSTEP_TRAIN=$train sbatch --parsable --ntasks-per-node=2 --cpus-per-task=1 \
    --output="$1" "$script" "$work/data" "$work/cancelled" "${args[@]}"
}
job=$(submit "$work/cancelled.out")
deadline=$((SECONDS + 60))
until compgen -G "$work/cancelled/lenet-2_*.manifest" >/dev/null; do
  ((SECONDS < deadline)) || fail "no manifest of epoch 2 after 60 s: $(cat "$work/cancelled.out")"
  sleep 0.05
done
scancel "$job"
wait_for_job "$job" 60
out=$(cat "$work/cancelled.out")
[[ ! -e $work/cancelled/$(final 0) ]] || fail "the job finished before scancel reached it: $out"
for rank in 0 1; do
  expect "$out" "^lockstep: \[rank $rank\] stopped by SIGTERM; --resume $work/cancelled goes on from the newest complete step there$"
done
verified=$("$ckpt" verify "$work/cancelled" 2>&1) || fail "lockstep-ckpt verify after scancel: $verified"

job=$(submit "$work/resumed.out")
wait_for_job "$job" 120
out=$(cat "$work/resumed.out")
expect "$out" "resumed at step [0-9]+, [0-9]+ epoch\(s\) done"
expect "$out" "^epoch $kEpochs/$kEpochs: train loss"
for rank in 0 1; do
  cmp "$work/uninterrupted/$(final "$rank")" "$work/cancelled/$(final "$rank")" ||
    fail "$(final "$rank") differs from the uninterrupted run's: $("$ckpt" diff \
      "$work/uninterrupted/$(final "$rank")" "$work/cancelled/$(final "$rank")" 2>&1)"
done
echo "ok"
