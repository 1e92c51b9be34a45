"""TensorBoard reads Lockstep's event files: summary_event_writer writes a known series, and
TensorBoard's own EventAccumulator (from PyPI, in a venv cached between runs; it checks both CRCs
of every record) must see every scalar of metrics.jsonl, with its step, wall time and value.
Exits 77 (skipped) when the venv cannot be made, e.g. without PyPI.

usage: tensorboard_interop_test.py --writer summary_event_writer --venv DIR
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

SKIPPED = 77
PACKAGE = "tensorboard>=2.10,<3"


def venv_python(venv):
    return os.path.join(venv, "bin", "python")


def ensure_venv(venv):
    """True once `venv` has TensorBoard; False, having said why, when it cannot be made."""
    python = venv_python(venv)
    probe = [python, "-c", "import tensorboard.backend.event_processing.event_accumulator"]
    if os.path.exists(python) and subprocess.run(probe, capture_output=True).returncode == 0:
        return True
    steps = [[sys.executable, "-m", "venv", "--clear", venv],
             [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              "--timeout", "30", PACKAGE]]
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            print(f"skipped: {' '.join(step)} took over 600 s")
            return False
        if done.returncode != 0:
            print(f"skipped: {' '.join(step)} failed (no PyPI?):\n{done.stderr[-2000:]}")
            return False
    return True


def check(directory):
    """Runs under the venv's Python: compares TensorBoard's view with metrics.jsonl."""
    from tensorboard.backend.event_processing import event_accumulator

    with open(os.path.join(directory, "metrics.jsonl")) as f:
        metrics = [json.loads(line) for line in f if line.strip()]
    accumulator = event_accumulator.EventAccumulator(
        directory, size_guidance={event_accumulator.SCALARS: 0})
    accumulator.Reload()
    tags = sorted({m["tag"] for m in metrics})
    assert sorted(accumulator.Tags()["scalars"]) == tags, accumulator.Tags()
    for tag in tags:
        expected = [m for m in metrics if m["tag"] == tag]
        seen = accumulator.Scalars(tag)
        assert len(seen) == len(expected), (tag, len(seen), len(expected))
        for event, record in zip(seen, expected):
            assert event.step == record["step"], (tag, event, record)
            assert event.wall_time == record["wall_time"], (tag, event, record)
            assert math.isclose(event.value, record["value"], rel_tol=1e-6), (tag, event, record)
    print(f"TensorBoard read {len(metrics)} scalars of {len(tags)} tags, all as written")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--writer")
    parser.add_argument("--venv")
    parser.add_argument("--check", help="(internal) the directory to read, under the venv")
    args = parser.parse_args()
    if args.check:
        check(args.check)
        return 0
    if not ensure_venv(args.venv):
        return SKIPPED
    with tempfile.TemporaryDirectory() as directory:
        subprocess.run([args.writer, directory], check=True)
        return subprocess.run([venv_python(args.venv), __file__, "--check", directory]).returncode


if __name__ == "__main__":
    sys.exit(main())
