#!/usr/bin/env bash
# srun --mpi=pmix -n N under the test cluster: lockstep-allgather gathers every rank on every
# rank; each rank's local rank is its place on the node (as SLURM_LOCALID); lockstep-train trains an epoch, resumes for a second and ends with the same checkpoint
# files, bit for bit, as `mpirun -n N` of both epochs, which `lockstep-ckpt verify` accepts. With
# N=2, threads follow the CPUs Slurm binds a task to (--cpus-per-task).
#   srun_test.sh STATE N LOCKSTEP_ALLGATHER LOCKSTEP_TEST_HOST_RANKS LOCKSTEP_MAKE_SAMPLE
#                LOCKSTEP_TRAIN LOCKSTEP_CKPT
set -euo pipefail
source "$(dirname "$0")/test_lib.sh" "$1"
n=$2 allgather=$3 host_ranks=$4 make_sample=$5 train=$6 ckpt=$7
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2046  # tasks prints several options
srun_n() { srun --mpi=pmix --kill-on-bad-exit=1 $(tasks "$n") "$@" 2>&1; }

out=$(srun_n "$allgather") || fail "lockstep-allgather: $out"
line="[$(seq -s ' ' -f '[%g]' 0 $((n - 1)))]"
[[ $(grep -cxF "$line" <<<"$out") == "$n" ]] || fail "expected $n lines '$line', got:"$'\n'"$out"
out=$(srun_n "$host_ranks") || fail "lockstep-test-host-ranks: $out"
for ((rank = 0; rank < n; rank++)); do
  expect "$out" "^rank $rank on $(hostname): local rank $rank of $n, "
done

make_small_sample "$make_sample" "$work/data"
train_args=(--data "$work/data" --model lenet --batch-size 8 --log-every 0)
out=$(srun_n "$train" "${train_args[@]}" --epochs 1 --ckpt-dir "$work/srun") ||
  fail "the first epoch: $out"
expect "$out" "$n rank\(s\) x $((8 / n)) images on cpu"
out=$(srun_n "$train" "${train_args[@]}" --epochs 2 --ckpt-dir "$work/srun" --resume "$work/srun") ||
  fail "resuming: $out"
expect "$out" "resumed at step 10, 1 epoch\(s\) done"
expect "$out" "^epoch 2/2: train loss"
out=$(mpirun -n "$n" --oversubscribe "$train" "${train_args[@]}" --epochs 2 \
  --ckpt-dir "$work/mpirun" 2>&1) || fail "the same run under mpirun: $out"
for ((rank = 0; rank < n; rank++)); do
  file=lenet_$rank-2_10.ckpt
  cmp "$work/srun/$file" "$work/mpirun/$file" ||
    fail "$file differs between srun and mpirun: $("$ckpt" diff "$work/srun/$file" "$work/mpirun/$file")"
done
out=$("$ckpt" verify "$work/srun" 2>&1) || fail "lockstep-ckpt verify: $out"

if ((n == 2 && cores >= 2)); then
  for cpus in 1 2; do
    out=$(srun --mpi=pmix --ntasks=1 --cpus-per-task=$cpus "$train" "${train_args[@]}" --epochs 1 2>&1) ||
      fail "one task on $cpus CPU(s): $out"
    expect "$out" "1 rank\(s\) x 8 images on cpu, $cpus thread\(s\) each"
  done
fi
echo "ok"
