#!/usr/bin/env bash
# Ranks started without MPI that cannot meet end with one line naming why, never a hang
# (parallel/rendezvous.h): a rank that never arrives, a master nobody serves, ranks started with
# different world sizes, a master port already in use (two jobs on one port).
#
#   rendezvous_errors_test.sh PROGRAM    (lockstep-allgather: starts, gathers, ends)
# Prints "ok" when every case ends as expected.
set -uo pipefail
program=$1
export MASTER_ADDR=127.0.0.1 LOCKSTEP_COLLECTIVE_TIMEOUT_S=2

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }

expect() {  # expect CASE PATTERN OUTPUT: the output holds the pattern
  grep -qE -- "$2" <<<"$3" || { echo "$1: expected /$2/ in:"; echo "$3"; exit 1; }
}

port=$(free_port)
out=$(RANK=0 WORLD_SIZE=2 MASTER_PORT=$port timeout 30 "$program" 2>&1)
expect "never arrives" "rank\(s\) 1 of 2 did not arrive at the rendezvous store at 127.0.0.1:$port within 2 s" "$out"

port=$(free_port)
out=$(RANK=1 WORLD_SIZE=2 MASTER_PORT=$port timeout 30 "$program" 2>&1)
expect "unreachable" "could not reach the rendezvous store at 127.0.0.1:$port within 2000 ms" "$out"

port=$(free_port)
RANK=0 WORLD_SIZE=2 MASTER_PORT=$port timeout 30 "$program" >"/tmp/rendezvous_errors.$$" 2>&1 &
out=$(RANK=1 WORLD_SIZE=3 MASTER_PORT=$port timeout 30 "$program" 2>&1)
wait
first=$(cat "/tmp/rendezvous_errors.$$")
rm -f "/tmp/rendezvous_errors.$$"
expect "sizes differ, rank 1" "different world sizes \(WORLD_SIZE\): rank 1 has 3, rank 0 has 2" "$out"
expect "sizes differ, rank 0" "different world sizes \(WORLD_SIZE\): rank 0 has 2, rank 1 has 3" "$first"

port=$(free_port)
python3 -c "import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('', $port)); s.listen(); time.sleep(20)" &
holder=$!
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.1; done  # listening
out=$(RANK=0 WORLD_SIZE=2 MASTER_PORT=$port timeout 30 "$program" 2>&1)
kill "$holder"
expect "port in use" "cannot serve the rendezvous store on port $port: the port is in use" "$out"
echo ok
