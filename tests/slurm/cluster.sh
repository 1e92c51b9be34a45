#!/usr/bin/env bash
# A real one-node Slurm cluster for the tests of `ctest -L slurm`: munged, slurmctld and slurmd
# from Debian's packages, in the foreground, as children of this script, in a temporary directory
# with a munge socket, a key and two ports of their own (so two runs, or a system Slurm, do not
# collide). Nothing is installed here: scripts/install_deps.sh installs slurm-wlm and munge.
#
#   cluster.sh start STATE   starts the daemons, waits for the node to be idle, writes STATE
#   cluster.sh stop STATE    stops them by their PIDs and removes the directory
#
# STATE holds `dir=<the cluster's directory>` and `cores=<its node's CPUs>` or, where Slurm is
# missing or a daemon cannot start (a kernel or container restriction), `skip=<why, in the
# daemon's own words>`; the tests read it through test_lib.sh and skip (77) with that line. start
# exits 77 then too, so the skip shows in the CTest summary.
set -euo pipefail

readonly kStartTimeoutS=30

skip() {
  echo "skip=$*" >"$state"
  echo "slurm cluster: skipped: $*" >&2
  exit 77
}

free_ports() {
  python3 - <<'EOF'
import socket
sockets = [socket.socket() for _ in range(2)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))
EOF
}

write_conf() {
  local host=$1 user=$2 ctld_port=$3 slurmd_port=$4
  # One node with the machine's cores. task/affinity binds each task to the CPUs it was given,
  # as clusters do, so --cpus-per-task reaches Lockstep's thread count; linuxproc tracks tasks
  # without cgroups; no accounting, no database.
  cat >"$dir/slurm.conf" <<EOF
ClusterName=lockstep-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
KillWait=10
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cores State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

# Starts one daemon in the foreground of a background job, its output in $dir/<name>.log, and
# records its PID for stop ($dir/pids) and its name beside it ($dir/names).
start_daemon() {
  local name=$1
  shift
  "$@" </dev/null >"$dir/$name.log" 2>&1 &
  echo "$!" >>"$dir/pids"
  echo "$name $!" >>"$dir/names"
}

# Stops the daemons, removes their directory and skips with why the cluster did not come up.
give_up() {
  local why=$1
  stop_daemons
  rm -rf "$dir"
  skip "$why"
}

# Whether process $1 runs. A daemon that exited stays a zombie until its new parent (PID 1 or a
# subreaper) reaps it, which some containers' PID 1 never does, and kill -0 reaches zombies.
running() {
  [[ -r /proc/$1/stat && $(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) != Z ]]
}

# Why the cluster is not up yet: empty while it may still come up.
not_up_because() {
  local name pid
  while read -r name pid; do
    if ! running "$pid"; then
      echo "$name exited: $(tail -n 3 "$dir/$name.log" | tr '\n' ' ')"
      return
    fi
  done <"$dir/names"
}

start() {
  local name
  for name in munged slurmctld slurmd srun sbatch squeue scancel sinfo python3; do
    command -v "$name" >/dev/null || skip "$name is not installed (scripts/install_deps.sh installs slurm-wlm and munge)"
  done
  # The cores this process may use; nproc alone would count OMP_NUM_THREADS, which tests set.
  cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
  dir=$(mktemp -d /tmp/lockstep-slurm.XXXXXX)
  chmod 755 "$dir"  # munged wants the socket's directory searchable by all
  mkdir -m 700 "$dir/key"
  mkdir -m 755 "$dir/munge" "$dir/state" "$dir/spool"
  head -c 1024 /dev/urandom >"$dir/key/munge.key"
  chmod 400 "$dir/key/munge.key"
  # shellcheck disable=SC2046  # two port numbers
  write_conf "$(hostname -s)" "$(id -un)" $(free_ports)
  export SLURM_CONF=$dir/slurm.conf

  start_daemon munged munged --foreground --force --socket="$dir/munge/socket" \
    --key-file="$dir/key/munge.key" --pid-file="$dir/munge/munged.pid" \
    --seed-file="$dir/munge/seed" --log-file="$dir/munge/munged.file.log"
  local deadline=$((SECONDS + kStartTimeoutS))
  local why
  until [[ -S $dir/munge/socket ]]; do
    why=$(not_up_because)
    [[ -z $why ]] || give_up "$why"
    ((SECONDS < deadline)) || give_up "munged made no socket in ${kStartTimeoutS} s"
    sleep 0.1
  done
  start_daemon slurmctld slurmctld -D
  start_daemon slurmd slurmd -D
  # A guard for a run that ends without the cleanup test (ctest killed): the daemons go when
  # the process that started this script does.
  local owner=$PPID
  (
    while running "$owner" && [[ -d $dir ]]; do sleep 2; done
    stop_daemons
  ) </dev/null >/dev/null 2>&1 &

  until [[ $(sinfo --noheader --format=%T 2>/dev/null) == idle ]]; do
    why=$(not_up_because)
    [[ -z $why ]] || give_up "$why"
    ((SECONDS < deadline)) ||
      give_up "the node was not idle after ${kStartTimeoutS} s: $(sinfo 2>&1 | tr '\n' ' ')"
    sleep 0.2
  done
  printf 'dir=%s\ncores=%s\n' "$dir" "$cores" >"$state"
  echo "slurm cluster: up in $dir (SLURM_CONF=$dir/slurm.conf)"
}

# Whether any of the PIDs is still running.
any_alive() {
  local pid
  for pid in "$@"; do running "$pid" && return 0; done
  return 1
}

# TERM, up to 5 s to exit, then KILL.
stop_daemons() {
  [[ -f $dir/pids ]] || return 0
  local pids
  mapfile -t pids <"$dir/pids"
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for _ in {1..50}; do
    any_alive "${pids[@]}" || return 0
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

stop() {
  [[ -f $state ]] || return 0
  dir=$(sed -n 's/^dir=//p' "$state")
  if [[ -n $dir && -d $dir ]]; then
    stop_daemons
    rm -rf "$dir"
  fi
  rm -f "$state"
}

[[ $# -eq 2 ]] || { echo "usage: cluster.sh start|stop STATE" >&2; exit 2; }
state=$2
case $1 in
  start) start ;;
  stop) stop ;;
  *) echo "usage: cluster.sh start|stop STATE" >&2; exit 2 ;;
esac
