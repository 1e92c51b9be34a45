#!/usr/bin/env bash
# Bad input to the binaries, on real files: each refusal ends at once with its exit status and one
# message naming the file, tensor or flag.
# - A sparse checkpoint whose tensor claims 2^40 bytes: `lockstep-ckpt list`, `verify`, `predict`
#   and `lockstep-train --resume` refuse it naming the file and the tensor, under an address-space
#   limit of 4 GB (a reservation of the claimed size would fail).
# - A FIFO given to `list` and `predict` is refused, not waited on.
# - `lockstep-ckpt export` onto its own checkpoint, directly or through a link, is refused and the
#   checkpoint is unchanged; `lockstep-train --ckpt-dir` inside --data's train/ is refused.
# - Writers replace only regular files of their own kind: export --out onto /dev/null, a
#   directory, a FIFO, a checkpoint, a manifest, a meta or an image; a FIFO where the graph meta
#   goes; a directory where the metrics go.
# - Under ulimit -v, lockstep-train's start-up memory check names the process's limit.
# - `lockstep-make-sample` with 60000x60000 images (86 GB to draw one) is refused naming the flags
#   and the bytes, leaving no folder.
# lockstep-ckpt's errors exit 2 (its usage: 1 is for files that differ or fail verification).
#   bad_input_cli_test.sh LOCKSTEP_MAKE_SAMPLE LOCKSTEP_TRAIN LOCKSTEP_CKPT
set -euo pipefail
make_sample=$1 train=$2 ckpt=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "FAIL: $*"; exit 1; }
# AddressSanitizer reserves terabytes of address space for its shadow memory, so a sanitized build
# runs without the limit (its allocator refuses a claimed 2^40 bytes on its own).
limit=4000000
grep -q __asan_init "$ckpt" && limit=unlimited
# run STATUS COMMAND...: runs under a 10 s timeout and a 4 GB address space; the exit status
# must be STATUS; the output is kept in $out.
run() {
  local want=$1 got=0
  shift
  out=$( (ulimit -v "$limit"; timeout 10 "$@") 2>&1) || got=$?
  [[ $got == "$want" ]] || fail "exit $got, not $want, from $*: $out"
}
expect() { grep -qF -- "$1" <<<"$out" || fail "no '$1' in: $out"; }

"$make_sample" data --train-per-class 2 --val-per-class 1 --height 32 --width 32 >/dev/null
"$train" --data data --model lenet --epochs 1 --batch-size 4 --threads 1 --ckpt-dir good \
  >/dev/null 2>&1
good=good/lenet_0-1_5.ckpt
[[ -f $good ]] || fail "no $good"
image=$(ls data/val/dots/*.jpg | head -n 1)

# One Value: tensor 'fc1.weight', Float32, dims [2^38], 4 bytes of content; then 2^40 bytes.
cp -r good sparse
printf '\x0a\x24\x0a\x0afc1.weight\x12\x16\x08\x80\x80\x80\x80\x80\x08\x12\x07Float32\x1a\x04\x00\x00\x80\x3f' \
  >sparse/lenet_0-1_5.ckpt
truncate -s $((1 << 40)) sparse/lenet_0-1_5.ckpt
sed -i 's/"bytes": "[0-9]*"/"bytes": "1099511627776"/' sparse/lenet-1_5.manifest
claim="sparse/lenet_0-1_5.ckpt: tensor 'fc1.weight' at byte 0: Float32[274877906944] needs 1099511627776 bytes"
run 2 "$ckpt" list sparse/lenet_0-1_5.ckpt
expect "$claim"
run 1 "$ckpt" verify sparse
expect "rank 0: $claim"
run 2 "$ckpt" predict sparse/lenet_0-1_5.ckpt "$image"
expect "$claim"
run 1 env CUDA_VISIBLE_DEVICES= "$train" --data data --model lenet --epochs 2 --batch-size 4 \
  --threads 1 --resume sparse
expect "sparse/lenet_0-1_5.ckpt"

mkfifo fifo
run 2 "$ckpt" list fifo
expect "fifo is a FIFO (named pipe), not a regular file"
run 2 "$ckpt" predict "$good" fifo
expect "fifo is a FIFO (named pipe), not a regular file"

before=$(cksum <"$good")
ln -s "$good" link.onnx
run 2 "$ckpt" export "$good" --out "$good"
expect "--out $good is the checkpoint $good: an output may not replace an input"
run 2 "$ckpt" export "$good" --out link.onnx
expect "--out link.onnx is the checkpoint $good"
[[ $(cksum <"$good") == "$before" && -L link.onnx ]] || fail "the checkpoint or the link changed"
run 0 "$ckpt" export "$good" --out model.onnx

# Writers replace only regular files of their own kind (issue 37, class 2): export --out onto a
# device (as root, a rename would replace /dev/null), a directory, a FIFO (without waiting on
# it), another checkpoint, a manifest, the graph meta or an image is refused naming the path, and
# the file is unchanged; an earlier export is replaced.
mkdir adir
mkfifo out.fifo
cp "$good" other.ckpt
cp good/lenet_0-graph.meta other-graph.meta
run 2 "$ckpt" export "$good" --out /dev/null
expect "refusing to write /dev/null: it is a character device, not a regular file this program writes"
[[ -c /dev/null ]] || fail "/dev/null is no longer a device"
run 2 "$ckpt" export "$good" --out adir
expect "refusing to write adir: it is a directory"
run 2 "$ckpt" export "$good" --out out.fifo
expect "refusing to write out.fifo: it is a FIFO (named pipe)"
for other in other.ckpt good/lenet-1_5.manifest other-graph.meta "$image"; do
  before=$(cksum <"$other")
  run 2 "$ckpt" export "$good" --out "$other"
  expect "refusing to replace $other: it is not an ONNX model (another kind of file)"
  [[ $(cksum <"$other") == "$before" ]] || fail "export changed $other"
done
run 0 "$ckpt" export "$good" --out model.onnx
# Class names from a data set of another size are refused, not made up (issue 37, class 6).
cp -r data fewer && rm -r fewer/train/zigzag fewer/val/zigzag
run 2 "$ckpt" predict "$good" --data fewer "$image"
expect "--data fewer has 9 class folder(s), the model 10 classes"
# The checkpoint and summary writers alike: a FIFO where the graph meta goes, a directory where
# the metrics go.
mkdir fifo_ckpt summary
mkfifo fifo_ckpt/lenet_0-graph.meta
mkdir summary/metrics.jsonl
run 1 "$train" --data data --model lenet --epochs 1 --batch-size 4 --threads 1 --ckpt-dir fifo_ckpt
expect "refusing to write fifo_ckpt/lenet_0-graph.meta: it is a FIFO (named pipe)"
[[ -p fifo_ckpt/lenet_0-graph.meta ]] || fail "the FIFO was replaced"
run 1 "$train" --data data --model lenet --epochs 1 --batch-size 4 --threads 1 \
  --summary-dir summary
expect "refusing to write summary/metrics.jsonl: it is a directory"

run 1 "$train" --data data --model lenet --epochs 1 --batch-size 4 --threads 1 \
  --ckpt-dir data/train/ckpt
expect "--ckpt-dir data/train/ckpt lies inside --data's train/ data/train"
[[ ! -e data/train/ckpt ]] || fail "--ckpt-dir was created inside data/train"

# The start-up memory check knows the process's own limits (issue 37, class 4): under
# ulimit -v 1.5 GB, ResNet-50 at 448 with batch 4 (1.5 GB of plan) is refused naming the
# limit, not aborted.
if [[ $limit != unlimited ]]; then
  run 1 bash -c 'ulimit -v 1500000 && exec "$@"' bash "$train" --data data --model resnet50 \
    --image-size 448 --batch-size 4 --epochs 1 --threads 1
  expect "a rank, but this process may map"
  expect "more under its limits (ulimit -v, ulimit -d)"
fi

run 1 "$make_sample" huge --height 60000 --width 60000
expect "--height 60000 --width 60000"
grep -qE "needs [0-9]+ bytes" <<<"$out" || fail "no bytes named in: $out"
[[ -z $(ls | grep huge) ]] || fail "make-sample left $(ls | grep huge)"
echo "ok"
