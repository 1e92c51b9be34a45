#!/usr/bin/env bash
# Checkpoint and resume across two simulated hosts (run on host a by simulated_hosts.sh): 4 ranks
# on lockstep-host-a:2,lockstep-host-b:2 train one epoch, then resume for a second, and end with
# the validation line and the weights of 4 ranks on one host; `lockstep-ckpt verify` checks the
# last step. MODE shared: one checkpoint directory every host sees (a shared file system);
# own-disks: each host writes to its own disk, and verify gets the directories of both hosts.
#   train_resume.sh shared|own-disks LOCKSTEP_MAKE_SAMPLE LOCKSTEP_TRAIN LOCKSTEP_CKPT
set -euo pipefail
mode=$1 make_sample=$2 train=$3 ckpt=$4
work=$LOCKSTEP_SIM_STATE/work  # seen by every host, unlike $LOCKSTEP_SIM_DISK
fail() { echo "FAIL: $*"; exit 1; }

"$make_sample" "$work/data" --train-per-class 16 --val-per-class 4 --height 40 --width 40 \
  >/dev/null
# The weights must match one host's bit for bit, which holds where the hosts compute alike: a cap
# on oneDNN's ISA goes to every host (hosts_train_mixed_isa trains hosts that differ).
train() {
  mpirun -H "$1" -x OMP_NUM_THREADS ${DNNL_MAX_CPU_ISA:+-x DNNL_MAX_CPU_ISA} "$train" \
    --data "$work/data" --log-every 0 "${@:2}" 2>&1
}
# The line of the last epoch, without its timing.
last_epoch() { grep "^epoch 2/2:" <<<"$1" | sed 's/, [0-9.]* images\/s.*//'; }

out=$(train lockstep-host-a:4 --epochs 2 --ckpt-dir "$work/one-host")
expected=$(last_epoch "$out")
[[ -n $expected ]] || fail "no epoch line from 4 ranks on host a: $out"

case $mode in
  shared) dir=$work/ckpt dirs=("$work/ckpt") ;;
  own-disks)
    dir=$LOCKSTEP_SIM_DISK/ckpt
    dirs=("$LOCKSTEP_SIM_STATE/disk-a/ckpt" "$LOCKSTEP_SIM_STATE/disk-b/ckpt") ;;
  *) fail "mode '$mode' is neither shared nor own-disks" ;;
esac
out=$(train lockstep-host-a:2,lockstep-host-b:2 --epochs 1 --ckpt-dir "$dir") ||
  fail "the first epoch across the hosts: $out"
out=$(train lockstep-host-a:2,lockstep-host-b:2 --epochs 2 --ckpt-dir "$dir" --resume "$dir") ||
  fail "resuming across the hosts: $out"
grep -q "resumed at step 5, 1 epoch(s) done" <<<"$out" || fail "no resume: $out"
[[ $(last_epoch "$out") == "$expected" ]] ||
  fail "across the hosts '$(last_epoch "$out")', on one host '$expected'"

"$ckpt" verify "${dirs[@]}" || fail "verify ${dirs[*]}"
one=("$work"/one-host/resnet8_0-2_*.ckpt) two=("${dirs[0]}"/resnet8_0-2_*.ckpt)
"$ckpt" diff "${one[0]}" "${two[0]}" >/dev/null || fail "weights differ: ${one[0]} ${two[0]}"
echo ok
