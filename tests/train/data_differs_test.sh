#!/usr/bin/env bash
# Ranks that read different data sets (an incomplete copy on one host: the same --data path, other
# contents) are refused at start-up with one error naming what differs and each rank's value,
# instead of crashing or hanging once their step counts part. mpirun runs each rank in a folder
# of its own, as two hosts would mount their copies at one path.
#   data_differs_test.sh LOCKSTEP_MAKE_SAMPLE LOCKSTEP_TRAIN MPIRUN
set -euo pipefail
make_sample=$1 train=$2 mpirun=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "FAIL: $*"; exit 1; }
mkdir host0 host1
"$make_sample" host0/data --train-per-class 4 --val-per-class 1 --height 32 --width 32 >/dev/null
# run: both ranks with the same flags, each in its host's folder; the output is kept in $out.
run() {
  local flags=(--data data --model lenet --epochs 1 --batch-size 8 --threads 1 --log-every 0)
  out=$(timeout 60 "$mpirun" --oversubscribe -n 1 --wdir host0 "$train" "${flags[@]}" : \
    -n 1 --wdir host1 "$train" "${flags[@]}" 2>&1) && fail "the ranks trained: $out"
  [[ $? != 124 ]] || fail "the job hung: $out"
}
expect() { grep -qF -- "$1" <<<"$out" || fail "no '$1' in: $out"; }

rm -rf host1/data && cp -r host0/data host1/data
rm host1/data/train/dots/dots_00000.jpg host1/data/train/dots/dots_00001.jpg
run
expect "error: the ranks read different data sets: images in data/train (38 on rank 1; 40 on rank 0)"

rm -rf host1/data && cp -r host0/data host1/data
rm -r host1/data/train/zigzag host1/data/val/zigzag
run
expect "images in data/train (36 on rank 1; 40 on rank 0)"
expect "classes (10 (checkerboard .. zigzag, CRC-32 "
expect "on rank 0; 9 (checkerboard .. vertical_stripes, CRC-32 "
echo "ok"
