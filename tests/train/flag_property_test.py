#!/usr/bin/env python3
"""Property test of lockstep-train's numeric flags.

Draws random values (zero, negative, NaN, infinite, huge, malformed text, or an ordinary value)
for every numeric flag and runs lockstep-train on a tiny tree. Every run must end quickly, with
exit 0 after training or exit 1 with one error line naming the flag (or, for values a run may
legitimately diverge with, such as --lr 1e30, stopping at a NaN loss after training steps):
never a signal, a hang, another exit status, or exit 0 without a trained epoch.

  flag_property_test.py --train LOCKSTEP_TRAIN --make-sample LOCKSTEP_MAKE_SAMPLE [--draws 40]
"""

import argparse
import random
import subprocess
import sys
import tempfile

# flag -> (ordinary values, extra flags the flag needs to take effect)
FLAGS = {
    "--epochs": (["1", "2"], []),
    "--batch-size": (["4", "8", "16"], []),
    "--lr": (["0.05", "0.1", "1e-3"], []),
    "--momentum": (["0", "0.5", "0.9"], []),
    "--weight-decay": (["0", "1e-4"], []),
    "--warmup-epochs": (["0", "0.5", "1"], []),
    "--lr-step-epochs": (["0", "1"], ["--lr-schedule", "step"]),
    "--image-size": (["0", "32", "40"], []),
    "--val-fraction": (["0", "0.25"], []),
    "--workers": (["0", "1", "2"], []),
    "--threads": (["0", "1", "2"], []),
    "--seed": (["0", "7", "18446744073709551615"], []),
    "--save-steps": (["0", "2"], []),
    "--save-epochs": (["0", "1"], []),
    "--keep-max": (["0", "1", "5"], []),
    "--log-every": (["0", "1"], []),
    "--grad-accum": (["1", "2"], []),
    "--fusion-mb": (["0", "25"], []),
    "--loss-scale": (["1", "1024", "dynamic"], []),
    "--loss-scale-init": (["1", "65536"], ["--loss-scale", "dynamic"]),
    "--loss-scale-factor": (["2", "1.5"], ["--loss-scale", "dynamic"]),
    "--loss-scale-window": (["1", "100"], ["--loss-scale", "dynamic"]),
}

BAD = {
    "zero": ["0", "0.0", "-0"],
    "negative": ["-1", "-0.5", "-1e9"],
    "nan": ["nan", "NaN", "-nan"],
    "infinite": ["inf", "-inf", "infinity"],
    "huge": ["1e30", "1e309", "9223372036854775808", "99999999999999999999999"],
    "malformed": ["abc", "1.5x", "", "0x10", "1e", "--", "1,5", " 3"],
}


def draw(rng):
    flag = rng.choice(sorted(FLAGS))
    ordinary, needs = FLAGS[flag]
    kind = rng.choice(sorted(BAD) + ["ordinary"])
    value = rng.choice(ordinary if kind == "ordinary" else BAD[kind])
    return flag, value, needs


def check(train, data, ckpt_dir, flag, value, needs):
    """None when the run behaved, else what went wrong."""
    args = [train, "--data", data, "--model", "lenet", "--progress", "lines",
            "--ckpt-dir", ckpt_dir] + needs
    for default, setting in (("--epochs", "1"), ("--batch-size", "8"), ("--threads", "1")):
        if flag != default:
            args += [default, setting]
    args += [flag + "=" + value]
    try:
        run = subprocess.run(args, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "no end within 60 s"
    out = run.stdout + run.stderr
    errors = [line for line in out.splitlines() if line.startswith("lockstep: error: ")]
    if run.returncode < 0:
        return f"killed by signal {-run.returncode}"
    if run.returncode == 0:
        return None if "epoch 1/" in out else "exit 0 without a trained epoch"
    if run.returncode != 1:
        return f"exit status {run.returncode}"
    if len(errors) != 1:
        return f"{len(errors)} error lines"
    diverged = "invalid loss, training stopped" in errors[0] and "step: 1," not in errors[0]
    if flag not in errors[0] and not diverged:
        return "the error does not name the flag"
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", required=True)
    parser.add_argument("--make-sample", required=True)
    parser.add_argument("--draws", type=int, default=40)
    parser.add_argument("--seed", type=int, default=25)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        # No val/: --val-fraction holds a share of train/ out.
        subprocess.run([args.make_sample, tmp + "/data", "--train-per-class", "4",
                        "--val-per-class", "0", "--height", "32", "--width", "32"],
                       check=True, capture_output=True)
        for i in range(args.draws):
            flag, value, needs = draw(rng)
            problem = check(args.train, tmp + "/data", f"{tmp}/ckpt{i}", flag, value, needs)
            shown = " ".join(needs + [f"{flag}={value!r}"])
            print(f"{'FAIL' if problem else 'ok  '} {shown}" + (f": {problem}" if problem else ""))
            failures += problem is not None
    print("ok" if failures == 0 else f"{failures} of {args.draws} draws failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
