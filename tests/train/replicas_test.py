#!/usr/bin/env python3
"""Every rank saves the same model, and the accuracy lockstep-train prints is that model's.

`mpirun -n N lockstep-train` on a small copy of the built-in sample, with a model that has batch
norm and no --sync-bn (so each rank's running statistics come from its own shard), saving every
epoch; extra flags (--grad-accum, --amp-level, --sync-bn) pass through. Then:
- `lockstep-ckpt verify` of the last step: every rank's file equals rank 0's, none excused;
- `lockstep-ckpt predict` of each rank's last checkpoint over every validation image counts as
  many images right (top class == folder) as the run's last "val accuracy A (C/N)" line says.

With --verify-only, predict is left out: at O2 the run evaluates in bf16 while predict runs the
float32 inference graph, so their counts may differ by an image near a tie.

  replicas_test.py --train T --ckpt C --make-sample M --mpirun MPIRUN --ranks N [--verify-only]
                   [-- FLAGS...]
Prints "ok" and exits 0 when the checks held.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

TIMEOUT_S = 300
EPOCHS = 4
VAL_ACCURACY = re.compile(r"epoch (\d+)/\d+: .*val accuracy [0-9.]+ \((\d+)/(\d+)\)")


def run(command):
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=TIMEOUT_S)
    if done.returncode != 0:
        sys.exit(f"FAILED ({done.returncode}): {' '.join(command)}\n{done.stdout}")
    return done.stdout


def predicted_correct(ckpt_tool, ckpt, data, images):
    """Images whose top class, as `lockstep-ckpt predict` names it, is their folder's."""
    output = run([ckpt_tool, "predict", ckpt, *images, "--data", data])
    top = {}
    lines = output.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.endswith(":") and line[:-1] in images:
            top[line[:-1]] = lines[i + 1].split()[1]  # "  97.12%  circle (logit 4.1)"
    if len(top) != len(images):
        sys.exit(f"FAILED: predict named the top class of {len(top)} of {len(images)} images\n"
                 f"{output}")
    return sum(top[image] == os.path.basename(os.path.dirname(image)) for image in images)


def main():
    parser = argparse.ArgumentParser()
    for flag in ("--train", "--ckpt", "--make-sample", "--mpirun"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--verify-only", action="store_true")
    parser.add_argument("flags", nargs="*")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        data, ckpt_dir = os.path.join(work, "data"), os.path.join(work, "ckpt")
        run([args.make_sample, data, "--train-per-class", "32", "--val-per-class", "10",
             "--height", "32", "--width", "32"])
        output = run([args.mpirun, "-n", str(args.ranks), "--oversubscribe", args.train,
                      "--data", data, "--model", "resnet8", "--epochs", str(EPOCHS),
                      "--batch-size", "16", "--lr", "0.1", "--threads", "1", "--workers", "1",
                      "--log-every", "0", "--progress", "lines", "--ckpt-dir", ckpt_dir,
                      "--save-steps", "0", "--save-epochs", "1", *args.flags])
        reports = VAL_ACCURACY.findall(output)
        if not reports or int(reports[-1][0]) != EPOCHS:
            sys.exit(f"FAILED: no validation accuracy of epoch {EPOCHS}\n{output}")
        printed = int(reports[-1][1])
        verified = run([args.ckpt, "verify", ckpt_dir])
        if "verified" not in verified:
            sys.exit(f"FAILED: verify\n{verified}")
        images = sorted(glob.glob(os.path.join(data, "val", "*", "*.jpg")))
        if len(images) != int(reports[-1][2]):
            sys.exit(f"FAILED: the run evaluated {reports[-1][2]} images, the folder holds "
                     f"{len(images)}\n{output}")
        for rank in range(0 if args.verify_only else args.ranks):
            (last,) = glob.glob(os.path.join(ckpt_dir, f"resnet8_{rank}-{EPOCHS}_*.ckpt"))
            correct = predicted_correct(args.ckpt, last, data, images)
            if correct != printed:
                sys.exit(f"FAILED: rank {rank}'s checkpoint gets {correct}/{len(images)} right, "
                         f"the run printed {printed}\n{output}")
    print("ok")


if __name__ == "__main__":
    main()
