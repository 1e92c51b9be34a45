#!/usr/bin/env bash
# sbatch under the test cluster: examples/slurm/one_node.sbatch trains two ranks and checkpoints
# (lockstep-ckpt verify accepts them), and the same submission again finds nothing left to train;
# inside an allocation, mpirun launches the ranks too (Open MPI reads the allocation), from an
# sbatch script and from salloc.
#   sbatch_test.sh STATE ONE_NODE_SBATCH LOCKSTEP_MAKE_SAMPLE LOCKSTEP_TRAIN LOCKSTEP_CKPT LOCKSTEP_ALLGATHER
set -euo pipefail
source "$(dirname "$0")/test_lib.sh" "$1"
script=$2 make_sample=$3 train=$4 ckpt=$5 allgather=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make_small_sample "$make_sample" "$work/data"

# The script's own layout (4 tasks of 8 CPUs) scaled to this node: 2 tasks of 1 CPU.
submit() {
  local output=$1
  shift
  LOCKSTEP_TRAIN=$train sbatch --parsable --ntasks-per-node=2 --cpus-per-task=1 \
    --output="$output" "$script" "$work/data" "$work/ckpt" --model lenet --batch-size 8 \
    --epochs 2 --log-every 0
}
job=$(submit "$work/first.out")
wait_for_job "$job" 120
out=$(cat "$work/first.out")
expect "$out" "2 rank\(s\) x 4 images on cpu, 1 thread\(s\) each"
expect "$out" "^epoch 2/2: train loss"
verified=$("$ckpt" verify "$work/ckpt" 2>&1) || fail "lockstep-ckpt verify: $verified"
job=$(submit "$work/again.out")
wait_for_job "$job" 120
expect "$(cat "$work/again.out")" "nothing left to train: 2 epoch\(s\) done in $work/ckpt"

line="[[0] [1]]"
job=$(sbatch --parsable --ntasks=2 --cpus-per-task=1 --output="$work/mpirun.out" \
  --wrap="mpirun $allgather")
wait_for_job "$job" 120
out=$(cat "$work/mpirun.out")
[[ $(grep -cxF "$line" <<<"$out") == 2 ]] || fail "mpirun in an sbatch job:"$'\n'"$out"
out=$(salloc --ntasks=2 --cpus-per-task=1 mpirun "$allgather" 2>&1) || fail "salloc: $out"
[[ $(grep -cxF "$line" <<<"$out") == 2 ]] || fail "mpirun under salloc:"$'\n'"$out"
echo "ok"
