#!/usr/bin/env bash
# lockstep-run with small bash programs as its ranks (each case takes a second or two):
#   lockstep_run_test.sh CASE LOCKSTEP_RUN [ARGS...]
# env N: the env:// contract every rank of `-n N` sees; nodes: the same with --nnodes 2;
# output: the prefixes and streams; failure, killed_rank: one rank fails, the others are ended
# at once, one line names it, and its status is lockstep-run's; restarts, restarts_exhausted:
# --max-restarts; sigterm, sigkill: nothing of the job outlives lockstep-run; missing_program;
# usage: bad flags.
set -uo pipefail
case_name=$1
run=$2
shift 2
tmp=$(mktemp -d)
marker="lockstep-run-test-$$"
# Whatever a failed case left behind goes with it.
trap 'pgrep -f "$marker" | grep -vx "$$" | xargs -r kill -KILL 2>/dev/null; rm -rf "$tmp"' EXIT

fail() {
  echo "FAIL: $1"
  for file in "$tmp"/out "$tmp"/err; do
    [[ -f $file ]] && echo "--- ${file##*/}:" && cat "$file"
  done
  exit 1
}
expect_line() {  # FILE LINE: LINE is one of FILE's lines
  grep -qxF -- "$2" "$1" || fail "no line '$2' in ${1##*/}"
}
expect_status() {
  (($1 == $2)) || fail "exit status $1, expected $2"
}
now_ms() { date +%s%3N; }
# Waits (up to 5 s) until N ranks have touched $tmp/up.RANK.
wait_up() {
  for _ in $(seq 50); do
    (($(find "$tmp" -name 'up.*' | wc -l) >= $1)) && return
    sleep 0.1
  done
  fail "the ranks did not start"
}
# Waits (up to 5 s) until no process of this test but the script itself is left.
expect_none_left() {
  for _ in $(seq 50); do
    pgrep -f "$marker" | grep -qvx "$$" || return
    sleep 0.1
  done
  fail "left running: $(pgrep -af "$marker" | grep -v "^$$ ")"
}

contract='echo "RANK=$RANK WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=$LOCAL_RANK'\
' LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE GROUP_RANK=$GROUP_RANK MASTER_ADDR=$MASTER_ADDR'\
' TORCHELASTIC_RESTART_COUNT=$TORCHELASTIC_RESTART_COUNT'\
' TORCHELASTIC_MAX_RESTARTS=$TORCHELASTIC_MAX_RESTARTS LOCKSTEP_RUN=$LOCKSTEP_RUN'\
' AGENT_STORE=${TORCHELASTIC_USE_AGENT_STORE-unset}"; echo "$MASTER_PORT $TORCHELASTIC_RUN_ID"'

case_env() {
  local n=$1
  # What lockstep-run's own environment says is replaced, not passed on.
  RANK=99 TORCHELASTIC_USE_AGENT_STORE=True "$run" -n "$n" bash -c "$contract" >"$tmp"/out \
    2>"$tmp"/err
  expect_status $? 0
  for ((rank = 0; rank < n; ++rank)); do
    expect_line "$tmp"/out "[rank $rank] RANK=$rank WORLD_SIZE=$n LOCAL_RANK=$rank\
 LOCAL_WORLD_SIZE=$n GROUP_RANK=0 MASTER_ADDR=127.0.0.1 TORCHELASTIC_RESTART_COUNT=0\
 TORCHELASTIC_MAX_RESTARTS=0 LOCKSTEP_RUN=1 AGENT_STORE=unset"
  done
  # One free port and one run id for all ranks.
  local shared
  shared=$(grep -v RANK= "$tmp"/out | sed 's/^\[rank [0-9]*\] //' | sort -u)
  (($(wc -l <<<"$shared") == 1)) || fail "ranks disagree on the port or run id: $shared"
  local port=${shared%% *}
  ((port >= 1 && port <= 65535)) || fail "MASTER_PORT $port"
  [[ ${shared#* } == lockstep-* ]] || fail "run id '${shared#* }'"
}

case_nodes() {
  "$run" -n 2 --nnodes 3 --node-rank 1 --master 10.1.2.3:29500 --run-id job7 --max-restarts 4 \
    bash -c "$contract" >"$tmp"/out 2>"$tmp"/err
  expect_status $? 0
  for local_rank in 0 1; do
    local rank=$((2 + local_rank))
    expect_line "$tmp"/out "[rank $rank] RANK=$rank WORLD_SIZE=6 LOCAL_RANK=$local_rank\
 LOCAL_WORLD_SIZE=2 GROUP_RANK=1 MASTER_ADDR=10.1.2.3 TORCHELASTIC_RESTART_COUNT=0\
 TORCHELASTIC_MAX_RESTARTS=4 LOCKSTEP_RUN=1 AGENT_STORE=unset"
    expect_line "$tmp"/out "[rank $rank] 29500 job7"
  done
}

case_output() {
  "$run" -n 2 bash -c 'echo "out $RANK"; echo "err $RANK" >&2; printf "partial $RANK"' \
    >"$tmp"/out 2>"$tmp"/err
  expect_status $? 0
  for rank in 0 1; do
    expect_line "$tmp"/out "[rank $rank] out $rank"
    expect_line "$tmp"/out "[rank $rank] partial $rank"
    expect_line "$tmp"/err "[rank $rank] err $rank"
  done
  (($(wc -l <"$tmp"/out) == 4 && $(wc -l <"$tmp"/err) == 2)) || fail "lines in the wrong stream"
}

# Rank 1 ends by "$1" once every rank is up; the others would sleep 30 s.
run_one_failing() {
  local start
  start=$(now_ms)
  "$run" -n 4 bash -c "touch $tmp/up.\$RANK; [[ \$RANK == 1 ]] || exec sleep 30
    while (( \$(ls $tmp | grep -c up) < 4 )); do sleep 0.05; done; $1" >"$tmp"/out 2>"$tmp"/err
  status=$?
  elapsed_ms=$(($(now_ms) - start))
  ((elapsed_ms < 4000)) || fail "the other ranks were ended after $elapsed_ms ms"
}

case_failure() {
  run_one_failing 'echo "lockstep: [rank 1] error: --lr: bad" >&2; exit 3'
  expect_status $status 3
  expect_line "$tmp"/err "[rank 1] lockstep: [rank 1] error: --lr: bad"
  expect_line "$tmp"/err \
    "lockstep-run: rank 1 exited with status 3: lockstep: [rank 1] error: --lr: bad; ended ranks 0, 2, 3"
  (($(grep -c '^lockstep-run:' "$tmp"/err) == 1)) || fail "more than one line of lockstep-run"
}

case_killed_rank() {
  run_one_failing 'kill -KILL $$'
  expect_status $status 137
  expect_line "$tmp"/err "lockstep-run: rank 1 was killed by SIGKILL; ended ranks 0, 2, 3"
}

case_restarts() {
  # On the first attempt rank 1 fails and rank 0 waits to be ended; a --master port is kept.
  "$run" -n 2 --max-restarts 3 --master 127.0.0.1:29999 bash -c \
    'echo "attempt $TORCHELASTIC_RESTART_COUNT port $MASTER_PORT $*"
    [[ $TORCHELASTIC_RESTART_COUNT == 0 ]] || exit 0
    [[ $RANK == 1 ]] || exec sleep 30
    echo "first fails" >&2; exit 1' bash --resume dir >"$tmp"/out 2>"$tmp"/err
  expect_status $? 0
  expect_line "$tmp"/err "lockstep-run: restart 1 of 3 after rank 1 exited with status 1: first fails; ended rank 0"
  # The second attempt, with the same arguments.
  expect_line "$tmp"/out "[rank 0] attempt 1 port 29999 --resume dir"
  expect_line "$tmp"/out "[rank 1] attempt 1 port 29999 --resume dir"
  ! grep -q "attempt 2" "$tmp"/out || fail "a third attempt"
}

case_restarts_exhausted() {
  "$run" -n 1 --max-restarts 2 bash -c 'echo "fails $TORCHELASTIC_RESTART_COUNT" >&2; exit 5' \
    >"$tmp"/out 2>"$tmp"/err
  expect_status $? 5
  expect_line "$tmp"/err "lockstep-run: restart 1 of 2 after rank 0 exited with status 5: fails 0"
  expect_line "$tmp"/err "lockstep-run: restart 2 of 2 after rank 0 exited with status 5: fails 1"
  expect_line "$tmp"/err "lockstep-run: rank 0 exited with status 5: fails 2"
}

# The ranks, and a process each rank started, marked for pgrep.
start_marked_job() {
  "$run" -n 3 bash -c "(exec -a $marker-child sleep 30) & touch $tmp/up.\$RANK; exec -a $marker-rank sleep 30" \
    >"$tmp"/out 2>"$tmp"/err &
  job=$!
  wait_up 3
}

case_sigterm() {
  start_marked_job
  kill -TERM $job
  wait $job
  expect_status $? 143  # lockstep-run ends by the signal it passed on
  expect_line "$tmp"/err "lockstep-run: stopped by SIGTERM; ended ranks 0, 1, 2"
  expect_none_left
}

case_sigkill() {
  start_marked_job
  kill -KILL $job
  wait $job
  # The ranks die with lockstep-run (PR_SET_PDEATHSIG); what they started is theirs to end.
  for _ in $(seq 50); do
    pgrep -f "$marker-rank" >/dev/null || return 0
    sleep 0.1
  done
  fail "ranks outlived lockstep-run: $(pgrep -af "$marker-rank")"
}

case_missing_program() {
  for program in /nonexistent/lockstep-program lockstep-no-such-program; do
    "$run" -n 3 "$program" --flag >"$tmp"/out 2>"$tmp"/err
    expect_status $? 127
    (($(wc -l <"$tmp"/err) == 1)) || fail "not one line for $program"
    grep -q "^lockstep-run: cannot execute '$program': " "$tmp"/err || fail "no line for $program"
  done
}

case_usage() {
  local -a cases=(
    "--nproc-per-node: '0' is not an integer in [1, 4096]|-n 0 true"
    "--master: 'hostA' has no port: HOST:PORT|-n 2 --master hostA true"
    "--master: 'hostA:65536': the port '65536' is not an integer in [1, 65535]|-n 2 --master hostA:65536 true"
    "--master HOST:PORT is required with --nnodes 2|-n 2 --nnodes 2 true"
    "--node-rank 2 is not below --nnodes 2|-n 2 --nnodes 2 --node-rank 2 --master h:1 true"
    "--max-restarts: '-1' is not an integer in [0, 1000000]|-n 2 --max-restarts -1 true"
    "PROGRAM is required|-n 2"
    "The following argument was not expected: --frob|-n 2 --frob true"
  )
  for entry in "${cases[@]}"; do
    local expected=${entry%%|*}
    read -ra args <<<"${entry#*|}"
    "$run" "${args[@]}" >"$tmp"/out 2>"$tmp"/err
    expect_status $? 2
    (($(wc -l <"$tmp"/err) == 1)) || fail "not one line for ${args[*]}"
    grep -qF "lockstep-run: error: $expected" "$tmp"/err || fail "no '$expected' for ${args[*]}"
  done
  "$run" --help >"$tmp"/out 2>"$tmp"/err
  expect_status $? 0
  grep -qF "[--] PROGRAM [ARGS...]" "$tmp"/out || fail "--help has no usage"
  grep -qF "restarts this host's group only" "$tmp"/out || fail "--help says nothing of hosts"
}

"case_$case_name" "$@"
echo "ok: $case_name $*"
