#!/usr/bin/env bash
# lockstep-train on a tree with train/ and no val/: trains without evaluation, saying so once, or
# validates on a held-out share of train/ with --val-fraction; the start-up line names the image
# size the model was made for.
#   train_without_val.sh LOCKSTEP_MAKE_SAMPLE LOCKSTEP_TRAIN
set -euo pipefail
make_sample=$1
train=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$make_sample" "$dir" --train-per-class 20 --val-per-class 1 --height 40 --width 40 >/dev/null
rm -r "$dir/val"
run() { "$train" --data "$dir" --model lenet --epochs 1 --batch-size 8 --threads 1 "$@" 2>&1; }
expect() {
  grep -qE "$2" <<<"$1" || { echo "FAIL: no line matching '$2' in:"; echo "$1"; exit 1; }
}

out=$(run)
expect "$out" "lenet, .*, 32x32 images \(the model's size\),"
expect "$out" "no $dir/val: training without evaluation"
expect "$out" "^epoch 1/1: train loss [0-9.]+, [0-9.]+ images/s"

out=$(run --val-fraction 0.25 --image-size 36)
expect "$out" "36x36 images \(--image-size\)"
expect "$out" "validating on 25% of each class of $dir/train, held out"
# 5 of each class's 20 images, all 50 held-out images scored once.
expect "$out" "^epoch 1/1: train loss [0-9.]+, val accuracy [0-9.]+ \([0-9]+/50\)"
echo "ok"
