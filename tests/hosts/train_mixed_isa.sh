#!/usr/bin/env bash
# Hosts with different CPUs train together (run on host a by simulated_hosts.sh). oneDNN is capped
# at AVX2 on host a only (mpirun does not forward DNNL_MAX_CPU_ISA), so on an AVX-512 machine host a
# blocks activations by 8 channels and host b by 16, while both store the weights, their gradients
# and moments in the 8x8 blocks they agreed on (parallel/shared_layouts.h). The start-up check
# passes, a run resumed from its checkpoint ends exactly as an uninterrupted one on the same hosts,
# and `lockstep-ckpt verify` accepts the last step.
#   train_mixed_isa.sh LOCKSTEP_MAKE_SAMPLE LOCKSTEP_TRAIN LOCKSTEP_CKPT
set -euo pipefail
make_sample=$1 train=$2 ckpt=$3
work=$LOCKSTEP_SIM_STATE/work  # seen by every host
fail() { echo "FAIL: $*"; exit 1; }

"$make_sample" "$work/data" --train-per-class 16 --val-per-class 4 --height 40 --width 40 \
  >/dev/null
train() {
  DNNL_MAX_CPU_ISA=AVX2 mpirun -H lockstep-host-a:1,lockstep-host-b:1 -x OMP_NUM_THREADS \
    "$train" --data "$work/data" --log-every 0 "$@" 2>&1
}
# The line of the last epoch, without its timing.
last_epoch() { grep "^epoch 2/2:" <<<"$1" | sed 's/, [0-9.]* images\/s.*//'; }

out=$(train --epochs 2 --ckpt-dir "$work/uninterrupted") || fail "two epochs: $out"
expected=$(last_epoch "$out")
[[ -n $expected ]] || fail "no epoch line: $out"
out=$(train --epochs 1 --ckpt-dir "$work/resumed") || fail "the first epoch: $out"
out=$(train --epochs 2 --ckpt-dir "$work/resumed" --resume "$work/resumed") ||
  fail "resuming: $out"
[[ $(last_epoch "$out") == "$expected" ]] ||
  fail "resumed '$(last_epoch "$out")', uninterrupted '$expected'"
"$ckpt" verify "$work/resumed" || fail "verify $work/resumed"
echo ok
