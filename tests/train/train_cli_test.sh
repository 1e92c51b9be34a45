#!/usr/bin/env bash
# lockstep-train's command line on a tree with train/ and no val/: it trains without evaluation,
# saying so once, or validates on a held-out share of train/ with --val-fraction; the start-up
# line names the image size the model was made for; --resume refuses another model's checkpoints
# and another image size's, naming them, before training. A learning rate of 1e30 blows the
# weights up after step 1: with a fixed loss scale the NaN loss of step 2 stops training, naming
# it; with --loss-scale dynamic every later step is skipped and said, the scale halved each time,
# and the run ends normally.
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
expect "$out" "validating on 50 of the 200 images of $dir/train \(25.0%\), held out per class for --val-fraction 0.25"
# 5 of each class's 20 images, all 50 held-out images scored once.
expect "$out" "^epoch 1/1: train loss [0-9.]+, val accuracy [0-9.]+ \([0-9]+/50\)"

# A share each class rounds: the line says what is held out, not the flag (issue 37, class 6).
out=$(run --model lenet --val-fraction 0.33)
expect "$out" "validating on [0-9]+ of the 200 images of $dir/train \([0-9.]+%\), held out per class for --val-fraction 0.33"

out=$(fails --model resnet8 --resume "$dir/ckpt")
expect "$out" "^lockstep: error: $dir/ckpt holds checkpoints of lenet, none of resnet8"
out=$(fails --model lenet --image-size 40 --resume "$dir/ckpt")
expect "$out" "^lockstep: error: .*lenet_0-1_[0-9]+.ckpt: tensor 'fc1.weight' is Float32\[120, 400\] in the checkpoint but Float32\[120, 784\] in the model"
! grep -q "^epoch" <<<"$out" || { echo "FAIL: trained before the resume failed"; exit 1; }
blow_up=(--model lenet --lr 1e30 --warmup-epochs 0 --log-every 5 --progress lines)
out=$(fails "${blow_up[@]}")
expect "$out" "^lockstep: error: epoch: 1 step: 2, loss is -?nan: invalid loss, training stopped"
out=$(run "${blow_up[@]}" --loss-scale dynamic --loss-scale-init 65536)
expect "$out" "^epoch: 1 step: 2, gradients overflowed: update skipped, loss scale now 32768$"
expect "$out" "^epoch: 1 step: 5, loss is -?nan, [0-9.]+ images/s, loss scale 4096$"
expect "$out" "^epoch: 1 step: 25, gradients overflowed: update skipped, loss scale now 1$"
expect "$out" "^epoch 1/1: train loss"
out=$(fails --model lenet --loss-scale often)
expect "$out" "^lockstep: error: --loss-scale must be a positive number or 'dynamic', got 'often'"
echo "ok"
