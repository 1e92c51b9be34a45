#!/usr/bin/env bash
# srun -n N under the test cluster, with MPI (--mpi=pmix: parallel::Init starts MPI) or without
# (--mpi=none: srun sets no PMIX_RANK or PMI_RANK, and launch_env reads the step's SLURM_PROCID,
# SLURM_STEP_NUM_TASKS, SLURM_STEP_TASKS_PER_NODE, SLURM_NODEID and SLURM_STEP_NODELIST; the ranks
# meet at rank 0's rendezvous store on the step's first host and reduce over gloo):
# lockstep-allgather gathers every rank on every rank; each rank's local rank is its place on the
# node (as SLURM_LOCALID); lockstep-train trains an epoch, resumes for a second and ends with the
# same checkpoint files, bit for bit, as `mpirun -n N` of both epochs (without MPI too: with two
# ranks every sum is one addition, whichever communicator adds), which `lockstep-ckpt verify`
# accepts. With MPI and N=2, threads follow the CPUs Slurm binds a task to (--cpus-per-task).
# Without MPI, rank 0 says "started by srun": the first step finds the master's port by Slurm's
# default (29500 + job id % 1000), the others by MASTER_PORT, a free port, so that another test
# cluster on this machine, whose job ids count from 1 as well, cannot take theirs.
#   srun_test.sh STATE pmix|none N LOCKSTEP_ALLGATHER LOCKSTEP_TEST_HOST_RANKS LOCKSTEP_MAKE_SAMPLE
#                LOCKSTEP_TRAIN LOCKSTEP_CKPT
set -euo pipefail
source "$(dirname "$0")/test_lib.sh" "$1"
mpi=$2 n=$3 allgather=$4 host_ranks=$5 make_sample=$6 train=$7 ckpt=$8
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Only srun's variables say who a task is: none of another launcher's (a CI runner inside
# torchrun) come along.
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK MASTER_ADDR MASTER_PORT \
  TORCHELASTIC_RUN_ID TORCHELASTIC_RESTART_COUNT TORCHELASTIC_MAX_RESTARTS LOCKSTEP_RUN
# shellcheck disable=SC2046  # tasks prints several options
srun_n() { srun --mpi="$mpi" --kill-on-bad-exit=1 $(tasks "$n") "$@" 2>&1; }

# Without MPI, rank 0's one "started by srun" line, its port into `port` and job id into `job`;
# under MPI, which prints none, that there is none.
started_by() {
  local out=$1 pattern line
  if [[ $mpi == pmix ]]; then
    ! grep -q "started by" <<<"$out" || fail "a 'started by' line under srun --mpi=pmix:"$'\n'"$out"
    return 0
  fi
  pattern="^lockstep: \[rank 0\] started by srun: $n ranks, master $(hostname -s):([0-9]+), run '([0-9]+)\.[0-9]+', restart 0; host collectives over gloo$"
  [[ $(grep -cE "$pattern" <<<"$out") == 1 ]] || fail "not one line matching '$pattern' in:"$'\n'"$out"
  line=$(grep -E "$pattern" <<<"$out")
  [[ $line =~ $pattern ]]
  port=${BASH_REMATCH[1]} job=${BASH_REMATCH[2]}
}

out=$(srun_n "$allgather") || fail "lockstep-allgather: $out"
line="[$(seq -s ' ' -f '[%g]' 0 $((n - 1)))]"
[[ $(grep -cxF "$line" <<<"$out") == "$n" ]] || fail "expected $n lines '$line', got:"$'\n'"$out"
started_by "$out"
if [[ $mpi == none ]] && ((port != 29500 + job % 1000)); then
  fail "master port $port for job $job, expected 29500 + job id % 1000 = $((29500 + job % 1000))"
fi
if [[ $mpi == none ]]; then
  MASTER_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
  export MASTER_PORT
fi
out=$(srun_n "$host_ranks") || fail "lockstep-test-host-ranks: $out"
for ((rank = 0; rank < n; rank++)); do
  expect "$out" "^rank $rank on $(hostname): local rank $rank of $n, "
done
started_by "$out"
[[ $mpi == pmix || $port == "$MASTER_PORT" ]] || fail "master port $port, not MASTER_PORT=$MASTER_PORT"

make_small_sample "$make_sample" "$work/data"
train_args=(--data "$work/data" --model lenet --batch-size 8 --log-every 0)
out=$(srun_n "$train" "${train_args[@]}" --epochs 1 --ckpt-dir "$work/srun") ||
  fail "the first epoch: $out"
expect "$out" "$n rank\(s\) x $((8 / n)) images on cpu"
started_by "$out"
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

if [[ $mpi == pmix ]] && ((n == 2 && cores >= 2)); then
  for cpus in 1 2; do
    out=$(srun --mpi=pmix --ntasks=1 --cpus-per-task=$cpus "$train" "${train_args[@]}" --epochs 1 2>&1) ||
      fail "one task on $cpus CPU(s): $out"
    expect "$out" "1 rank\(s\) x 8 images on cpu, $cpus thread\(s\) each"
  done
fi
echo "ok"
