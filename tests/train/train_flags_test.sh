#!/usr/bin/env bash
# Bad flags end lockstep-train, lockstep-make-sample and lockstep-ckpt at start-up with exit 1 (2
# for lockstep-ckpt) and one line naming the flag, the value and what is accepted; a run that
# cannot take one optimizer step per epoch, a loss scale beyond float32 and sizes beyond the
# host's memory are refused before any work; more threads than cores are said once; a relaunch
# of a finished run exits 0 saying there is nothing left to train.
#   train_flags_test.sh LOCKSTEP_MAKE_SAMPLE LOCKSTEP_TRAIN LOCKSTEP_CKPT
set -uo pipefail
make_sample=$1
train=$2
ckpt=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$make_sample" "$dir" --train-per-class 4 --val-per-class 1 --height 32 --width 32 >/dev/null ||
  exit 1
fail() {
  echo "FAIL: $1"
  echo "$out"
  exit 1
}
# refused EXPECTED_LINE_REGEX COMMAND...: exit status 1 and exactly that one line.
refused_by() {
  local code=$1 expected=$2
  shift 2
  out=$("$@" 2>&1)
  local status=$?
  ((status == code)) || fail "exit status $status, expected $code: $*"
  grep -qE "$expected" <<<"$out" || fail "no line matching '$expected': $*"
  ((status != 1 || $(grep -c "^lockstep: error: " <<<"$out") == 1)) || fail "not one error line"
}
refused() { refused_by 1 "$@"; }
# t: lenet for one epoch of 8-image batches on one thread; b: the default model (resnet8), no
# --batch-size.
b=("$train" --data "$dir" --epochs 1 --threads 1 --log-every 0)
t=("${b[@]}" --model lenet --batch-size 8)

# Class 5: each flag against its range.
refused "^lockstep: error: --epochs: '0' is not an integer in \[1, 1000000\]" "$train" --data "$dir" --epochs 0
refused "^lockstep: error: --lr: 'nan' is not a positive finite number" "${t[@]}" --lr nan
refused "^lockstep: error: --momentum: '-0.5' is not a number in \[0, 1\)" "${t[@]}" --momentum -0.5
refused "^lockstep: error: --seed: '-1' is not an unsigned 64-bit integer" "${t[@]}" --seed -1
refused "^lockstep: error: --fusion-mb: 'inf' is not a non-negative finite number" "${t[@]}" --fusion-mb inf
refused "^lockstep: error: --workers: '100000' is not an integer in \[0, 1024\]" "${t[@]}" --workers 100000
refused "^lockstep: error: --keep-max: '-3' is not an integer in \\[0, 2147483647\\]" "${t[@]}" --keep-max -3
refused "^lockstep: error: --batch-size: '0' is not a positive integer" "${b[@]}" --batch-size 0
refused "^lockstep: error: --warmup-epochs 2 is longer than the run \(--epochs 1\)" "${t[@]}" --warmup-epochs 2
refused "^lockstep: error: --loss-scale-window applies to --loss-scale dynamic" "${t[@]}" --loss-scale-window 5
refused "^lockstep: error: --amp-level: O5 not in \{O0,O1,O2,O3\}" "${t[@]}" --amp-level O5
refused "^lockstep: error: --amp-dtype: f32 not in \{bf16,fp16\}" "${t[@]}" --amp-dtype f32
refused "^lockstep: error: --allreduce-dtype: int8 not in \{bf16,f32,fp16\}" "${t[@]}" --allreduce-dtype int8
# Class 4: a run that cannot take a step, a loss scale that is infinite in float32.
refused "^lockstep: error: --batch-size 64 makes batches of 64 images a rank, but a rank's share of .*/train is 40 image\(s\): not one training step per epoch" \
  "${b[@]}" --batch-size 64
refused "^lockstep: error: --grad-accum 6 needs 6 batches for one update, but an epoch has 5 batch\(es\) of 8 images a rank: not one optimizer step per epoch" \
  "${t[@]}" --grad-accum 6
refused "^lockstep: error: --loss-scale-init: '1e39' is not a number in \(0, 3.40282e\+38\]" \
  "${t[@]}" --loss-scale dynamic --loss-scale-init 1e39
refused "^lockstep: error: --loss-scale must be a positive number or 'dynamic', got '1e39', which is not a finite float32" \
  "${t[@]}" --loss-scale 1e39
# Sizes beyond the host's memory name the flags and the bytes (2 TB of input, then a graph).
refused "^lockstep: error: the input batch of --image-size 65536 with --batch-size 40 .* needs [0-9]+ bytes \([0-9.]+ GiB\), but the host has [0-9]+ bytes" \
  "${b[@]}" --batch-size 40 --image-size 65536
refused "^lockstep: error: .*--image-size 9000 with --batch-size 40 .* needs [0-9]+ bytes \([0-9.]+ GiB\), but the host has" \
  "${b[@]}" --batch-size 40 --image-size 9000
refused "^lockstep: error: lenet at --image-size 3: " "${t[@]}" --image-size 3

# More threads than cores: one warning, and training goes on.
if command -v taskset >/dev/null; then
  out=$(taskset -c 0 "$train" --data "$dir" --model lenet --epochs 1 --batch-size 8 --threads 2 2>&1) ||
    fail "exit status $?"
  [[ $(grep -c "warning: --threads 2 is more than the 1 core(s)" <<<"$out") == 1 ]] ||
    fail "no oversubscription warning"
fi

# Mixed precision: the start-up line names the level and the dtype, and training runs.
out=$("${t[@]}" --amp-level O2 2>&1) || fail "training at --amp-level O2 failed"
grep -q "; O2 in bf16, float32 master weights" <<<"$out" || fail "no precision in the start-up line"

# A finished run relaunched with --resume: exit 0, nothing trained.
out=$("${t[@]}" --ckpt-dir "$dir/ckpt" 2>&1) || fail "training failed"
out=$("${t[@]}" --ckpt-dir "$dir/ckpt" --resume "$dir/ckpt" 2>&1) || fail "relaunch failed"
grep -q "^lockstep: nothing left to train: 1 epoch(s) done in $dir/ckpt, --epochs 1$" <<<"$out" ||
  fail "no 'nothing left to train' line"
! grep -q "^epoch" <<<"$out" || fail "trained again"

# lockstep-make-sample: no folder is made for refused sizes.
refused "^lockstep: error: --height: '100000' is not an integer in \[1, 65500\]" \
  "$make_sample" "$dir/big" --height 100000
# 86 GB to draw one image: only where the host could not hold it (elsewhere it would draw it).
if (($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) < 60 * 1024 * 1024)); then
  refused "^lockstep: error: --height 60000 --width 60000: drawing one image needs [0-9]+ bytes" \
    "$make_sample" "$dir/big" --height 60000 --width 60000
fi
refused "^lockstep: error: --quality: '0' is not an integer in \[1, 100\]" "$make_sample" "$dir/big" --quality 0
[[ ! -e "$dir/big" ]] || { out=""; fail "a refused lockstep-make-sample made $dir/big"; }
# lockstep-ckpt: its error status 2 for a refused value, an unknown subcommand, a missing one,
# and an empty path (issue 37, classes 4 and 6); lockstep-make-sample and lockstep-train: 1.
refused_by 2 "^lockstep: error: --atol: 'nan' is not a non-negative finite number" "$ckpt" diff a b --atol nan
refused_by 2 "^lockstep: error: --step: '-2' is not a non-negative integer" "$ckpt" verify "$dir" --step -2
refused_by 2 "^lockstep: error: unknown subcommand 'frob': one of list, meta, diff, verify, export, predict" "$ckpt" frob
refused_by 2 "^lockstep: error: A subcommand is required" "$ckpt"
refused_by 2 "^lockstep: error: --out: '' is not a path: it is empty" "$ckpt" export x --out ""
refused "^lockstep: error: out: '' is not a path: it is empty" "$make_sample" ""
for flag in --data --resume --ckpt-dir --summary-dir; do
  refused "^lockstep: error: $flag: '' is not a path: it is empty" "${t[@]}" "$flag" ""
done
refused "^lockstep: error: --loss-scale must be a positive number or 'dynamic', got '0'\$" "${t[@]}" --loss-scale 0
# Flags that change nothing here say so, one note each (issue 37, class 6).
out=$("${t[@]}" --sync-bn --allreduce-dtype bf16 --ckpt-dir "$dir/nockpt" --save-epochs 0 \
  --amp-dtype fp16 2>&1) || fail "exit status $?"
for note in "--ckpt-dir $dir/nockpt with --save-steps 0 and --save-epochs 0: no checkpoint is written" \
  "--amp-dtype fp16 with --amp-level O0: float32 throughout, the dtype is unused" \
  "--allreduce-dtype bf16 with one rank: no gradient AllReduce runs" \
  "--sync-bn with lenet, which has no batch norm"; do
  grep -qxF -- "lockstep: note: $note" <<<"$out" || fail "no note '$note'"
done
echo "ok"
