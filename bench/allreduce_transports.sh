#!/usr/bin/env bash
# lockstep-bench-allreduce on every transport BENCHMARKS.md reports ("Fused gradient AllReduce"):
# shared memory and forced TCP on this host, and TCP between simulated hosts
# (tests/hosts/simulated_hosts.sh, needs root), each at 2 and 4 ranks. Extra arguments go to the
# benchmark, e.g. --thresholds 25 --reps 20.
#
#   bash bench/allreduce_transports.sh BUILD_DIR [benchmark args...]
set -euo pipefail
build=$(readlink -f "${1:?usage: allreduce_transports.sh BUILD_DIR [benchmark args...]}")
shift
bench=$build/bench/lockstep-bench-allreduce
hosts=$(dirname "$(readlink -f "$0")")/../tests/hosts/simulated_hosts.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

run() {
  echo "== $1"
  shift
  "$@"
}
for ranks in 2 4; do
  run "shared memory, $ranks ranks" mpirun -n "$ranks" --oversubscribe "$bench" "$@"
  run "TCP on one host, $ranks ranks" mpirun -n "$ranks" --oversubscribe --mca btl tcp,self \
    "$bench" "$@"
  per_host=$((ranks / 2))
  run "TCP between 2 simulated hosts, $per_host+$per_host ranks" bash "$hosts" run -- \
    mpirun -H "lockstep-host-a:$per_host,lockstep-host-b:$per_host" "$bench" "$@"
done
