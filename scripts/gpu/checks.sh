#!/usr/bin/env bash
# On a lent GPU machine, inside scripts/gpu/run.sh: the CUDA tests, the built-in sample trained
# on the GPU (and resumed there from a checkpoint written on the CPU), the ResNet-50 benchmark
# beside the PyTorch peer, and mixed precision (amp: the sample trained at O2 in bf16 and in fp16
# with dynamic loss scaling, ResNet-50 at O2 beside PyTorch's autocast in channels-last), the NCCL
# watch (scale) and ResNet-50 fed from JPEGs (feed). The logs come back as $OUT/logs.tar.gz (the
# device tool brings back a few files only).
#
#   bash scripts/gpu/run.sh BUNDLE bash scripts/gpu/checks.sh [tests|train|bench|amp|scale|feed]...
#
# Measured on an H200 (2026-11-27): tests, scale, feed and bench took 94 s together, amp and
# train 89 s, so the default runs every group in one call of about 3 minutes (timeout_s 420
# leaves room for a slower H100); a session's device time (15 min, the machine's start
# included) leaves room for a second call. What earlier calls measured is not measured again
# (BENCHMARKS.md has it): batch 64, O2 at batch 128, the sample trained on the CPU alone.
set -uo pipefail
out=/tmp/lockstep-logs
mkdir -p "$out"
save_logs() { tar -C "$out" -czf "${OUT:-/tmp}/logs.tar.gz" .; }
trap save_logs EXIT
status=0
# A step that hangs must not eat the lease: each gets LOCKSTEP_STEP_TIMEOUT_S seconds (default
# 150), and the logs are saved after every step, so a call cut off at its limit still brings
# back what ran.
step() {  # step NAME COMMAND...: runs it, logs it, remembers a failure
  local name=$1
  shift
  echo "== $name: $*"
  timeout -k 5 "${LOCKSTEP_STEP_TIMEOUT_S:-150}" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  tail -n 4 "$out/$name.log"
  echo "== $name: exit $rc"
  ((rc == 0)) || status=1
  save_logs
}

tests() {
  step ops_cuda ops_cuda_test  # the kernels against the CPU's, and the caching allocator
  step train_cuda train_cuda_test
  step sync_bn_cuda data_parallel_test --gtest_filter='*Cuda*'
}

train() {
  local data=/tmp/sample ckpt=/tmp/ckpt
  rm -rf "$ckpt" "$ckpt-cpu"
  [[ -d $data/train ]] || lockstep-make-sample "$data" >/dev/null
  local recipe=(--data "$data" --model resnet8 --batch-size 32 --lr 0.1 --log-every 60)
  step train_gpu lockstep-train "${recipe[@]}" --epochs 6 --device cuda --ckpt-dir "$ckpt" \
    --keep-max 2
  # Three epochs on the CPU, the other three on the GPU from the CPU's checkpoint.
  step half_on_cpu lockstep-train "${recipe[@]}" --device cpu --threads 16 --epochs 3 \
    --ckpt-dir "$ckpt-cpu" --keep-max 2
  step resume_cpu_on_gpu lockstep-train "${recipe[@]}" --epochs 6 --device cuda \
    --ckpt-dir "$ckpt-cpu" \
    --resume "$ckpt-cpu" --keep-max 2
  step verify lockstep-ckpt verify "$ckpt"
}

bench() {
  step lockstep_b128 lockstep-bench-resnet --device cuda --model resnet50 --size 224 \
    --batch 128 --classes 1000 --steps 30 --warmup 10
  step torch_b128 python3 /tmp/lockstep/torch_resnet_gpu.py 128 30 tf32 nchw
  # The steps above are CUDA graph launches from the third on; this one goes kernel by kernel.
  step lockstep_b128_no_graph lockstep-bench-resnet --device cuda --model resnet50 --size 224 \
    --batch 128 --classes 1000 --steps 30 --warmup 10 --cuda-graph off
  step lockstep_profile lockstep-bench-resnet --device cuda --model resnet50 --size 224 \
    --batch 128 --classes 1000 --steps 10 --warmup 3 --profile
}

# GPUs at scale: the NCCL communicator's watch (collectives retired; one stalled behind a kernel
# that never ends times out, aborts the communicator and reports; the same for one inside a CUDA
# graph, watched at each launch), then training through the watched communicator (a step that
# cannot be launched as a CUDA graph says why in the log).
scale() {
  step nccl_watch parallel_cuda_test
  local data=/tmp/sample
  [[ -d $data/train ]] || lockstep-make-sample "$data" >/dev/null
  step scale_train lockstep-train --data "$data" --model resnet8 --batch-size 32 --lr 0.1 \
    --log-every 60 --epochs 2 --device cuda
}

# Mixed precision: the bf16 and f16 kernels train the sample (the log's last line has the
# validation accuracy, to compare with train_gpu's), and ResNet-50 at O2 runs beside PyTorch's
# autocast in channels-last, as Lockstep keeps 16-bit activations NHWC.
amp() {
  local data=/tmp/sample
  [[ -d $data/train ]] || lockstep-make-sample "$data" >/dev/null
  local recipe=(--data "$data" --model resnet8 --batch-size 32 --lr 0.1 --log-every 60
    --epochs 6 --device cuda --amp-level O2)
  step amp_train_bf16 lockstep-train "${recipe[@]}" --amp-dtype bf16
  step amp_train_fp16 lockstep-train "${recipe[@]}" --amp-dtype fp16 --loss-scale dynamic
  local dtype
  for dtype in bf16 fp16; do
    step "amp_lockstep_${dtype}_b256" lockstep-bench-resnet --device cuda --model resnet50 \
      --size 224 --batch 256 --classes 1000 --steps 30 --warmup 10 --amp-level O2 \
      --amp-dtype "$dtype"
    step "amp_torch_${dtype}_b256" python3 /tmp/lockstep/torch_resnet_gpu.py 256 30 "$dtype" nhwc
  done
  # What the convolutions' determinism costs: cuDNN's fastest algorithms, atomics allowed.
  step amp_lockstep_bf16_b256_any_algorithm env LOCKSTEP_DETERMINISTIC=0 lockstep-bench-resnet \
    --device cuda --model resnet50 --size 224 --batch 256 --classes 1000 --steps 30 --warmup 10 \
    --amp-level O2 --amp-dtype bf16
  step amp_lockstep_profile lockstep-bench-resnet --device cuda --model resnet50 --size 224 \
    --batch 256 --classes 1000 --steps 10 --warmup 3 --amp-level O2 --amp-dtype fp16 --profile \
    --profile-nodes 12
}

# Fed input: ResNet-50 at batch 128 trained from 256x256 JPEGs through the real pipeline (uint8
# batches in page-locked memory, copied while the step before computes, normalized on the GPU),
# with the synthetic benchmark of the same step beside it: the loss lines' images/s (each over
# the 10 steps before it) from step 20 on, past the warm-up, should be within 10% of the
# benchmark's img_per_s.
feed() {
  local data=/tmp/jpeg256
  [[ -d $data/train ]] || step feed_data lockstep-make-sample "$data" --train-per-class 800 \
    --val-per-class 0 --height 256 --width 256
  step feed_b128 lockstep-train --data "$data" --model resnet50 --image-size 224 \
    --batch-size 128 --epochs 1 --val-fraction 0 --lr 0.1 --log-every 10 --device cuda
  step feed_b128_synthetic lockstep-bench-resnet --device cuda --model resnet50 --size 224 \
    --batch 128 --classes 10 --steps 30 --warmup 10
}

for what in "${@:-tests scale feed bench amp train}"; do
  for w in $what; do "$w"; done
done
exit $status
