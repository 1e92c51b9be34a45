#!/usr/bin/env bash
# A set-up error that every rank detects is printed once, by rank 0, and the job exits non-zero
# without MPI_Abort's messages. What Open MPI's mpirun itself prints about a non-zero exit code
# (`mpirun -q` silences it) is not counted.
#   one_error_once.sh [--without-mpi] EXPECTED_LINE LAUNCHER [launcher flags] PROGRAM [args...]
# --without-mpi: the ranks started from the env:// contract (lockstep-run, or processes started
# by hand as Kubernetes does) and met over gloo. Rank 0's "started by" line must be there and is
# not counted. Under lockstep-run, every line of a rank carries "[rank R] ", which is removed
# (the expected line must come from rank 0), and lockstep-run's own lines, "lockstep-run: ...",
# are not counted, but its summary of the failure must be there. Nothing else may be printed:
# no other line from any rank, nor a line cut short or garbled.
set -uo pipefail
without_mpi=0
if [[ ${1-} == --without-mpi ]]; then
  without_mpi=1
  shift
fi
expected=$1
shift
command=("$@")
output=$("$@" 2>&1)
status=$?
fail() {
  echo "FAIL: $1"
  echo "--- output of: ${command[*]}"
  echo "$output"
  exit 1
}
((status != 0)) || fail "exit status 0"
lines=$output
if ((without_mpi)); then
  if grep -qE '^\[rank [0-9]+\] ' <<<"$output"; then
    grep -qE '^lockstep-run: rank [0-9]+ (exited with status [1-9][0-9]*|was killed by )' \
      <<<"$output" || fail "no summary from lockstep-run"
    ! grep -vqE '^(\[rank [0-9]+\] |lockstep-run: )' <<<"$output" ||
      fail "a line from neither a rank nor lockstep-run"
    grep -qxF "[rank 0] $expected" <<<"$output" || fail "no line '$expected' from rank 0"
    lines=$(grep -v '^lockstep-run: ' <<<"$output" | sed -E 's/^\[rank [0-9]+\] //')
  fi
  started='^lockstep: \[rank 0\] started by [a-z-]+: [0-9]+ ranks, .*; host collectives over gloo$'
  [[ $(grep -cE "$started" <<<"$lines") == 1 ]] || fail "not one 'started by' line from rank 0"
  lines=$(grep -vE "$started" <<<"$lines")
  [[ $lines == "$expected" ]] || fail "lines besides '$expected'"
fi
count=$(grep -c "^lockstep: " <<<"$lines")
((count == 1)) || fail "$count lines from lockstep, expected 1"
grep -qxF "$expected" <<<"$lines" || fail "no line '$expected'"
! grep -q "MPI_ABORT\|ORTE_ERROR_LOG" <<<"$output" || fail "MPI_Abort's messages"
echo "ok: one line, exit status $status"
