#!/usr/bin/env bash
# A set-up error that every rank detects is printed once, by rank 0, and the job exits non-zero
# without MPI_Abort's messages. What Open MPI's mpirun itself prints about a non-zero exit code
# (`mpirun -q` silences it) is not counted.
#   one_error_once.sh EXPECTED_LINE MPIEXEC -n N [mpirun flags] PROGRAM [args...]
set -uo pipefail
expected=$1
shift
output=$("$@" 2>&1)
status=$?
fail() {
  echo "FAIL: $1"
  echo "--- output of: $*"
  echo "$output"
  exit 1
}
((status != 0)) || fail "exit status 0"
count=$(grep -c "^lockstep: " <<<"$output")
((count == 1)) || fail "$count lines from lockstep, expected 1"
grep -qxF "$expected" <<<"$output" || fail "no line '$expected'"
! grep -q "MPI_ABORT\|ORTE_ERROR_LOG" <<<"$output" || fail "MPI_Abort's messages"
echo "ok: one line, exit status $status"
