#!/usr/bin/env bash
# lockstep-train's command line on a tree with train/ and no val/: it trains without evaluation,
# saying so once, or validates on a held-out share of train/ with --val-fraction; the start-up
# line names the image size the model was made for; --resume refuses another model's checkpoints
# and another image size's, naming them, before training.
#   train_cli_test.sh LOCKSTEP_MAKE_SAMPLE LOCKSTEP_TRAIN
set -euo pipefail
make_sample=$1
train=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$make_sample" "$dir" --train-per-class 20 --val-per-class 1 --height 40 --width 40 >/dev/null
rm -r "$dir/val"
run() { "$train" --data "$dir" --epochs 1 --batch-size 8 --threads 1 "$@" 2>&1; }
fails() { ! run "$@"; }
expect() {
  grep -qE "$2" <<<"$1" || { echo "FAIL: no line matching '$2' in:"; echo "$1"; exit 1; }
}

out=$(run --model lenet --ckpt-dir "$dir/ckpt")
expect "$out" "lenet, .*, 32x32 images \(the model's size\),"
expect "$out" "no $dir/val: training without evaluation"
expect "$out" "^epoch 1/1: train loss [0-9.]+, [0-9.]+ images/s"

out=$(run --model lenet --val-fraction 0.25 --image-size 36)
expect "$out" "36x36 images \(--image-size\)"
expect "$out" "validating on 25% of each class of $dir/train, held out"
# 5 of each class's 20 images, all 50 held-out images scored once.
expect "$out" "^epoch 1/1: train loss [0-9.]+, val accuracy [0-9.]+ \([0-9]+/50\)"

out=$(fails --model resnet8 --resume "$dir/ckpt")
expect "$out" "^lockstep: error: $dir/ckpt holds checkpoints of lenet, none of resnet8"
out=$(fails --model lenet --image-size 40 --resume "$dir/ckpt")
expect "$out" "^lockstep: error: .*lenet_0-1_[0-9]+.ckpt: tensor 'fc1.weight' is Float32\[120, 400\] in the checkpoint but Float32\[120, 784\] in the model"
! grep -q "^epoch" <<<"$out" || { echo "FAIL: trained before the resume failed"; exit 1; }
echo "ok"
