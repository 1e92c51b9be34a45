# Sourced by the tests of tests/slurm (bash): the cluster cluster.sh started, and what the tests
# share.
#   source test_lib.sh STATE
# Exits 77 (CTest's skip) with cluster.sh's reason where the cluster could not start.

fail() { echo "FAIL: $*"; exit 1; }
expect() { grep -qE -- "$2" <<<"$1" || fail "no line matching '$2' in:"$'\n'"$1"; }

# The state file is written by the fixture test slurm_cluster_start.
[[ -f $1 ]] || fail "no cluster state $1: run the tests with ctest, which starts the cluster"
if grep -q '^skip=' "$1"; then
  echo "skipped: $(sed -n 's/^skip=//p' "$1")"
  exit 77
fi
# A run inside a job of another Slurm (a CI runner's) must not carry that job's variables here.
for variable in $(compgen -e | grep -E '^(SLURM|SBATCH|SALLOC|SRUN)_'); do unset "$variable"; done
SLURM_CONF=$(sed -n 's/^dir=//p' "$1")/slurm.conf
export SLURM_CONF
cores=$(sed -n 's/^cores=//p' "$1")  # the node's CPUs

# srun options for N tasks on this one node. Where it has fewer cores than tasks, the tasks
# share all of its cores, Slurm's counterpart of `mpirun --oversubscribe`.
tasks() {
  local n=$1
  if ((cores >= n)); then
    echo "--ntasks=$n"
  else
    echo "--ntasks=$n --overcommit --cpus-per-task=$cores"
  fi
}

# Waits until job $1 has left the queue, at most $2 s (polling squeue: there is no accounting).
wait_for_job() {
  local job=$1 deadline=$((SECONDS + $2))
  while squeue --noheader --jobs="$job" 2>/dev/null | grep -q .; do
    ((SECONDS < deadline)) || fail "job $job is still in the queue after $2 s: $(squeue)"
    sleep 0.2
  done
}

# The built-in sample at a small size: 80 training and 20 validation images of 32x32.
make_small_sample() {
  "$1" "$2" --train-per-class 8 --val-per-class 2 --height 32 --width 32 >/dev/null
}
