#!/usr/bin/env bash
# Several "hosts" on this machine for tests across machines: each is a network and a UTS
# namespace (its own hostname and TCP/IP stack) on a bridge, so Open MPI sees separate nodes
# that talk TCP. mpirun starts the remote daemons through this script as its rsh agent.
#
#   simulated_hosts.sh run [--hosts N] COMMAND...   up, COMMAND on the first host, down (always)
#   simulated_hosts.sh up [--hosts N]               prints the state directory, STATE
#   simulated_hosts.sh down STATE
#   simulated_hosts.sh enter STATE HOST COMMAND...  COMMAND on HOST (its name or address)
#   simulated_hosts.sh rsh STATE HOST WORDS...      the rsh agent: sh runs WORDS on HOST
#
# Hosts are lockstep-host-a, -b, ... at 10.77.0.1, .2, ... on 10.77.0.0/24, names resolved by a
# private /etc/hosts. Each host sees its own STATE/disk-<letter> at STATE/disk
# ($LOCKSTEP_SIM_DISK), so what one host writes there the others do not see, as without a
# shared file system. COMMAND gets OMPI_MCA_* so that `mpirun -H lockstep-host-a:2,...` uses
# the agent, and TCP between hosts. Exits 77 (CTest's skip) where namespaces cannot be made.
set -euo pipefail

readonly kRoot=/run/lockstep-hosts
readonly kNet=10.77.0
kSelf=$(readlink -f "$0")
readonly kSelf

die() { echo "simulated_hosts: $*" >&2; exit 1; }
skip() { echo "simulated_hosts: skipped: $*" >&2; exit 77; }
letter() { local letters=abcdefghi; echo "${letters:$1-1:1}"; }  # 1 -> a

# Namespaces are named after the state directory, so parallel runs do not collide.
netns() { echo "lsh-${1##*/}-$2"; }

down() {
  local state=$1 ns uts pids
  [[ -d $state ]] || return 0
  for ns in $(ip netns list | awk -v p="$(netns "$state" "")" 'index($1, p) == 1 {print $1}'); do
    # Strays of a failed test (daemons, ranks) must not outlive their network.
    mapfile -t pids < <(ip netns pids "$ns")
    ((${#pids[@]} == 0)) || kill -KILL "${pids[@]}" 2>/dev/null || true
    ip netns del "$ns" || true
  done
  for uts in "$state"/uts-*; do [[ ! -e $uts ]] || umount "$uts" 2>/dev/null || true; done
  rm -rf "$state"
}

# A process by its pid and start time (a pid alone may be reused), or nothing once it is gone
# or a zombie (an orphan may wait long for init to reap it).
identity() { [[ $(ps -o stat= -p "$1") != Z* ]] && echo "$1 $(ps -o lstart= -p "$1")"; }

# A run killed outright (CTest's timeout sends SIGKILL) leaves its state behind: remove the
# states whose owner is gone.
sweep() {
  local state owner
  for state in "$kRoot"/*; do
    [[ -f $state/owner ]] || continue
    read -r owner _ <"$state/owner"
    [[ $(identity "$owner" || true) == "$(<"$state/owner")" ]] || down "$state"
  done
}

up() {
  local hosts=2 owner=$1 i l ns switch
  shift
  [[ ${1:-} == --hosts ]] && { hosts=$2; shift 2; }
  [[ $hosts =~ ^[1-9]$ ]] || die "--hosts takes 1 to 9, not '$hosts'"
  [[ $(id -u) == 0 ]] || skip "needs root to make network namespaces"
  for tool in ip unshare nsenter mount mpirun; do
    command -v $tool >/dev/null || skip "no $tool"
  done
  mkdir -p "$kRoot"
  sweep
  state=$(mktemp -d "$kRoot/XXXXXX")  # global: the trap below reads it
  identity "$owner" >"$state/owner.new"
  mv "$state/owner.new" "$state/owner"  # whole, for a sweep running beside
  trap '[[ $? == 0 ]] || down "$state"' EXIT  # a half-made state goes at once
  switch=$(netns "$state" switch)
  if ! { ip netns add "$switch" && ip -n "$switch" link add br0 type bridge &&
    unshare --uts true; } 2>"$state/err"; then
    local why; why=$(<"$state/err")
    down "$state"
    skip "cannot make namespaces or a bridge here: $why"
  fi
  ip -n "$switch" link set br0 up
  printf '127.0.0.1 localhost\n' >"$state/hosts"
  for ((i = 1; i <= hosts; i++)); do
    l=$(letter $i)
    ns=$(netns "$state" "$l")
    ip netns add "$ns"
    ip link add eth0 netns "$ns" type veth peer name "port-$l" netns "$switch"
    ip -n "$switch" link set "port-$l" master br0 up
    ip -n "$ns" addr add "$kNet.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    touch "$state/uts-$l"
    unshare --uts="$state/uts-$l" hostname "lockstep-host-$l"
    mkdir "$state/disk-$l"
    echo "$kNet.$i lockstep-host-$l" >>"$state/hosts"
  done
  mkdir "$state/disk"
  echo "$state"
}

enter() {
  local state=$1 host=$2 name l hosts
  shift 2
  name=$(awk -v h="$host" '($1 == h || $2 == h) && $2 ~ /^lockstep-host-/ {print $2}' \
    "$state/hosts")
  [[ -n $name ]] || { echo "simulated_hosts: no host '$host' in $state/hosts" >&2; exit 255; }
  l=${name##*-}
  # The hosts share this machine's cores, and Open MPI on each counts them as its own: it would
  # bind every host's first rank to the same core, and not see that the ranks together
  # oversubscribe the cores. So no binding, and idle ranks yield, as when mpirun knows it
  # oversubscribes (busy-polling ranks sharing a core otherwise take turns of a 4 ms tick).
  # Like ssh, the agent passes no environment (env -i): ranks elsewhere see only what mpirun
  # forwards (OMPI_*, -x NAME), so a test that forgets -x fails here as on real hosts.
  hosts=$(awk '$2 ~ /^lockstep-host-/ {print $2}' "$state/hosts" | paste -sd' ')
  export LOCKSTEP_SIM_STATE=$state LOCKSTEP_SIM_DISK=$state/disk LOCKSTEP_SIM_HOSTS=$hosts \
    OMPI_MCA_plm_rsh_agent="$kSelf rsh $state" \
    OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp \
    OMPI_MCA_btl_tcp_if_include=$kNet.0/24 OMPI_MCA_oob_tcp_if_include=$kNet.0/24 \
    OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_mpi_yield_when_idle=1
  # A private mount namespace per entry: this host's /etc/hosts and disk, gone with its processes.
  # shellcheck disable=SC2016  # $0 and $1 are the inner shell's
  exec nsenter --net="/run/netns/$(netns "$state" "$l")" --uts="$state/uts-$l" -- \
    unshare --mount --propagation private -- /bin/sh -c \
    'mount --bind "$0/hosts" /etc/hosts && mount --bind "$0/disk-$1" "$0/disk" && shift &&
     exec "$@"' "$state" "$l" "$@"
}

case ${1:-} in
  run)
    shift
    hosts=(); [[ ${1:-} == --hosts ]] && { hosts=("$1" "$2"); shift 2; }
    [[ ${1:-} == -- ]] && shift
    (($#)) || die "run needs a command"
    state=$(up $$ "${hosts[@]}")
    trap 'down "$state"' EXIT
    trap 'exit 143' TERM INT
    # In the background, so that a signal ends the wait at once and the trap removes the hosts
    # (and with them the command); stdin stays the caller's.
    (enter "$state" lockstep-host-a "$@") <&0 &
    status=0
    wait $! || status=$?
    exit $status
    ;;
  up) shift; up "$PPID" "$@" ;;
  down) down "$2" ;;
  enter) shift; enter "$@" ;;
  rsh) state=$2 host=$3; shift 3; enter "$state" "$host" env -i PATH="$PATH" HOME="$HOME" \
    /bin/sh -c "$*" ;;
  *) die "usage: $0 run|up|down|enter|rsh ... (see the head of the script)" ;;
esac
