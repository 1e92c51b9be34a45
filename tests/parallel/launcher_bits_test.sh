#!/usr/bin/env bash
# The same training under mpirun (MPI) and under lockstep-run (the env:// contract, gloo):
# with 2 ranks every sum is one addition, whatever the algorithm, so every rank's checkpoint is
# the same file bit for bit (10 steps); with 4 ranks Open MPI and gloo add in different orders,
# so the parameters agree within float32 rounding, not bit for bit (2 steps: training amplifies
# the rounding, to 1e-3 after 10 steps of this small recipe).
#
#   launcher_bits_test.sh MAKE_SAMPLE TRAIN CKPT RUN MPIRUN
# Prints "ok" when both hold.
set -euo pipefail
make_sample=$1 train=$2 ckpt=$3 run=$4 mpirun=$5
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for per_class in 16 4; do  # 10 and 2 steps at a global batch of 16
  "$make_sample" "$dir/data$per_class" --train-per-class $per_class --val-per-class 1 \
    --height 32 --width 32 >/dev/null
done

train_under() {  # train_under NAME DATA LAUNCHER...: trains on DATA into $dir/NAME
  local name=$1 data=$2
  shift 2
  "$@" "$train" --data "$dir/$data" --model resnet8 --batch-size 16 --epochs 1 --lr 0.05 \
    --threads 1 --log-every 0 --val-fraction 0 --ckpt-dir "$dir/$name" >"$dir/$name.log" 2>&1 ||
    { cat "$dir/$name.log"; exit 1; }
}

train_under mpi2 data16 "$mpirun" -n 2 --oversubscribe
train_under run2 data16 "$run" -n 2
for rank in 0 1; do
  cmp "$dir/mpi2/resnet8_$rank-1_10.ckpt" "$dir/run2/resnet8_$rank-1_10.ckpt"
done
"$ckpt" verify "$dir/run2" >/dev/null

train_under mpi4 data4 "$mpirun" -n 4 --oversubscribe
train_under run4 data4 "$run" -n 4
"$ckpt" verify "$dir/run4" >/dev/null
"$ckpt" diff "$dir/mpi4/resnet8_0-1_2.ckpt" "$dir/run4/resnet8_0-1_2.ckpt" --atol 1e-5 \
  >"$dir/diff.log" || { cat "$dir/diff.log"; exit 1; }
echo ok
