#!/usr/bin/env bash
# gloo against MPI for the host collectives (BENCHMARKS.md, "gloo against MPI"): the
# same binaries started by mpirun (Open MPI's communicator) and by lockstep-run (gloo's), side by
# side in one run. Each round runs every configuration under both launchers, back to back, the
# launcher that goes first alternating from round to round, so that a change in the machine's
# load hits both alike:
#   allreduce, 2 ranks / 4 ranks: lockstep-bench-allreduce, ResNet-50's gradient buckets at the
#     default fusion threshold (25 MB, f32; under MPI at its default segment size, 2 MiB), on
#     this host: the fused buckets' median and the per-tensor median of the run;
#   allreduce, 1+1 hosts: the same, one rank on each of two simulated hosts (network namespaces,
#     tests/hosts/simulated_hosts.sh; needs root): `mpirun -H a:1,b:1`, and one
#     `lockstep-run --nnodes 2 --node-rank R --master HOST_A:PORT` inside each host;
#   resnet step, 2 ranks: lockstep-bench-resnet --data-parallel, ResNet-50, 64x64, 8 images and
#     1 thread per rank, 20 timed steps: the median step and the exposed communication's share.
# Each launcher is run as a user runs it: mpirun binds each rank to a core when the ranks fit the
# cores (-n 2 here) and not when they oversubscribe; lockstep-run binds nothing. MPI_ARGS adds
# arguments to every mpirun on one host (e.g. MPI_ARGS="--bind-to none").
#
#   bash bench/gloo_vs_mpi.sh BUILD_DIR [--rounds 5] [--reps 10] [--warmup 2] [--steps 20]
#                                       [--no-hosts] [--out DIR]
#
# Prints every run's figures as they come, then a table: per configuration the median over the
# rounds under each launcher [min-max], gloo/MPI of the medians, and the range of the per-round
# ratios. The runs' whole output stays in DIR (default: a new directory under /tmp).
set -euo pipefail
usage() {
  echo "usage: gloo_vs_mpi.sh BUILD_DIR [--rounds N] [--reps N] [--warmup N] [--steps N]" \
    "[--no-hosts] [--out DIR]" >&2
  exit 2
}
(($#)) || usage
build=$(readlink -f "$1")
shift
rounds=5 reps=10 warmup=2 steps=20 hosts=1 out=
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --no-hosts) hosts=0; shift ;;
    --out) out=$2; shift 2 ;;
    *) usage ;;
  esac
done
[[ -n $out ]] || out=$(mktemp -d /tmp/gloo_vs_mpi.XXXXXX)
mkdir -p "$out"
out=$(readlink -f "$out")
simulated_hosts=$(dirname "$(readlink -f "$0")")/../tests/hosts/simulated_hosts.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
read -ra mpi_args <<<"${MPI_ARGS:-}"

# Private copies of the binaries (they link Lockstep statically), so that a rebuild of BUILD_DIR
# during the run does not change or remove them halfway.
bin=$out/bin
mkdir -p "$bin"
for binary in bench/lockstep-bench-allreduce bench/lockstep-bench-resnet examples/lockstep-run; do
  cp "$build/$binary" "$bin/"
done
allreduce=("$bin/lockstep-bench-allreduce" --thresholds 25 --reps "$reps" --warmup "$warmup")
resnet=("$bin/lockstep-bench-resnet" --model resnet50 --batch 8 --threads 1 --data-parallel
  --size 64 --steps "$steps")

state=
cleanup() { [[ -z $state ]] || bash "$simulated_hosts" down "$state"; }
trap cleanup EXIT
if ((hosts)); then
  status=0
  state=$(bash "$simulated_hosts" up) || status=$?
  if ((status == 77)); then
    echo "gloo_vs_mpi: no simulated hosts here (see above): skipping the 1+1 hosts" >&2
    hosts=0 state=
  elif ((status)); then
    exit "$status"
  fi
fi
on_host() { bash "$simulated_hosts" enter "$state" "$@"; }

# One run of CONFIG under LAUNCHER (mpi or gloo), its output in $out/CONFIG.LAUNCHER.ROUND.log.
run_one() {
  local config=$1 launcher=$2 round=$3
  local log=$out/$config.$launcher.$round.log
  case $config.$launcher in
    allreduce2.mpi) mpirun -n 2 --oversubscribe "${mpi_args[@]}" "${allreduce[@]}" --segments 2 ;;
    allreduce2.gloo) "$bin/lockstep-run" -n 2 "${allreduce[@]}" ;;
    allreduce4.mpi) mpirun -n 4 --oversubscribe "${mpi_args[@]}" "${allreduce[@]}" --segments 2 ;;
    allreduce4.gloo) "$bin/lockstep-run" -n 4 "${allreduce[@]}" ;;
    hosts.mpi)
      on_host lockstep-host-a mpirun -H lockstep-host-a:1,lockstep-host-b:1 -x OMP_NUM_THREADS \
        "${allreduce[@]}" --segments 2
      ;;
    hosts.gloo)
      # A port of its own per round: the last round's may still linger in TIME_WAIT.
      local master=10.77.0.1:$((29500 + round)) pid
      on_host lockstep-host-b "$bin/lockstep-run" -n 1 --nnodes 2 --node-rank 1 \
        --master "$master" "${allreduce[@]}" &
      pid=$!
      on_host lockstep-host-a "$bin/lockstep-run" -n 1 --nnodes 2 --node-rank 0 \
        --master "$master" "${allreduce[@]}"
      wait "$pid"
      ;;
    resnet.mpi) mpirun -n 2 "${mpi_args[@]}" "${resnet[@]}" ;;
    resnet.gloo) "$bin/lockstep-run" -n 2 "${resnet[@]}" ;;
  esac >"$log" 2>&1 || {
    echo "gloo_vs_mpi: $config under $launcher failed:" >&2
    tail "$log" >&2
    exit 1
  }
  # The figures: name=value pairs of the result line, whatever the launcher prefixed to it.
  local figures
  case $config in
    resnet)
      figures=$(grep -o 'median_step_s=[0-9.]*\|exposed_share=[0-9.]*' "$log" | tr '\n' ' ')
      ;;
    *)  # the threshold's line, not MPI's "best:" line after it
      figures=$(grep 'per_tensor_ms=' "$log" | grep -o ' fused_ms=[0-9.]*\| per_tensor_ms=[0-9.]*' |
        tr -d ' ' | tr '\n' ' ')
      ;;
  esac
  [[ -n $figures ]] || { echo "gloo_vs_mpi: no figures in $log" >&2; exit 1; }
  echo "round=$round config=$config launcher=$launcher $figures" | tee -a "$out/figures"
}

configs=(allreduce2 allreduce4 resnet)
((hosts)) && configs=(allreduce2 allreduce4 hosts resnet)
: >"$out/figures"
echo "gloo_vs_mpi: $rounds rounds of ${configs[*]}, started $(date -Is), output in $out"
uptime
for ((round = 1; round <= rounds; round++)); do
  order=(mpi gloo)
  ((round % 2)) || order=(gloo mpi)
  for config in "${configs[@]}"; do
    for launcher in "${order[@]}"; do run_one "$config" "$launcher" "$round"; done
  done
done
echo "gloo_vs_mpi: ended $(date -Is)"
uptime

python3 - "$out/figures" <<'EOF'
import collections, statistics, sys

values = collections.defaultdict(dict)  # (config, metric) -> {(launcher, round): value}
for line in open(sys.argv[1]):
    fields = dict(field.split("=", 1) for field in line.split())
    for metric in ("fused_ms", "per_tensor_ms", "median_step_s", "exposed_share"):
        if metric in fields:
            values[(fields["config"], metric)][(fields["launcher"], int(fields["round"]))] = float(
                fields[metric])

rows = [
    ("allreduce2", "fused_ms", "AllReduce, fused (5 buckets), 2 ranks, one host", "ms"),
    ("allreduce4", "fused_ms", "AllReduce, fused (5 buckets), 4 ranks, one host", "ms"),
    ("hosts", "fused_ms", "AllReduce, fused (5 buckets), 1+1 ranks, 2 simulated hosts", "ms"),
    ("allreduce2", "per_tensor_ms", "AllReduce, per tensor (161 calls), 2 ranks, one host", "ms"),
    ("allreduce4", "per_tensor_ms", "AllReduce, per tensor (161 calls), 4 ranks, one host", "ms"),
    ("hosts", "per_tensor_ms", "AllReduce, per tensor (161 calls), 1+1 ranks, 2 simulated hosts",
     "ms"),
    ("resnet", "median_step_s", "ResNet-50 64x64 step, 2 ranks", "s"),
    ("resnet", "exposed_share", "exposed communication, share of the step, 2 ranks", "%"),
]
print("\n| measurement | MPI (mpirun) | gloo (lockstep-run) | gloo / MPI | per-round gloo / MPI |")
print("| --- | --- | --- | --- | --- |")
for config, metric, label, unit in rows:
    by = values.get((config, metric))
    if not by:
        continue
    rounds = sorted({r for _, r in by})
    mpi = [by[("mpi", r)] for r in rounds]
    gloo = [by[("gloo", r)] for r in rounds]
    digits = 3 if unit == "s" else 1
    cell = lambda v: f"{statistics.median(v):.{digits}f} [{min(v):.{digits}f}-{max(v):.{digits}f}]"
    ratios = [g / m for g, m in zip(gloo, mpi) if m > 0]
    ratio = statistics.median(gloo) / statistics.median(mpi) if statistics.median(mpi) else 0
    per_round = f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-"
    print(f"| {label}, {unit} | {cell(mpi)} | {cell(gloo)} | **{ratio:.2f}** | {per_round} |")
print(f"\n(medians over {len(rounds)} rounds [min-max])")
EOF
