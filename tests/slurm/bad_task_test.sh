#!/usr/bin/env bash
# One task of a step fails and the whole step ends, with that rank's message, well before any
# timeout: with srun --kill-on-bad-exit=1 (as examples/slurm/ uses), rank 1 of lockstep-train
# exits 1 at start-up, before MPI is up, while rank 0 waits in MPI_Init; without it, rank 1 of
# lockstep-test-dead-rank exits 3 after MPI is up while rank 0 waits in an AllReduce, and Slurm's
# PMIx plugin cancels the step at once (Lockstep's collective timeout, 60 s here, would be next).
#   bad_task_test.sh STATE LOCKSTEP_TRAIN LOCKSTEP_TEST_DEAD_RANK
set -euo pipefail
source "$(dirname "$0")/test_lib.sh" "$1"
train=$2 dead_rank=$3
readonly kLimitS=30

# shellcheck disable=SC2016  # expanded by the task's shell
rank1_bad_env='if ((SLURM_PROCID == 1)); then export LOCKSTEP_COLLECTIVE_TIMEOUT_S=abc; fi; exec "$@"'
start=$SECONDS
if out=$(timeout "$kLimitS" srun --mpi=pmix --kill-on-bad-exit=1 --ntasks=2 --cpus-per-task=1 \
  bash -c "$rank1_bad_env" task "$train" --data /nonexistent 2>&1); then
  fail "the step succeeded: $out"
fi
((SECONDS - start < kLimitS)) || fail "the step did not end within $kLimitS s: $out"
expect "$out" "^lockstep: error: LOCKSTEP_COLLECTIVE_TIMEOUT_S='abc' is not a number of seconds"
expect "$out" "task 1: Exited with exit code 1"

start=$SECONDS
if out=$(LOCKSTEP_COLLECTIVE_TIMEOUT_S=60 timeout "$kLimitS" srun --mpi=pmix --ntasks=2 \
  --cpus-per-task=1 "$dead_rank" 2>&1); then
  fail "the step succeeded: $out"
fi
((SECONDS - start < kLimitS)) || fail "the step did not end within $kLimitS s: $out"
expect "$out" "task 1: Exited with exit code 3"
expect "$out" "STEP [0-9.]+ ON [^ ]+ CANCELLED"
echo "ok"
