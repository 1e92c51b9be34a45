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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import pypi_venv  # noqa: E402
from pypi_venv import SKIPPED  # noqa: E402

PACKAGE = "tensorboard>=2.10,<3"


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
    if not pypi_venv.ensure(args.venv, [PACKAGE],
                            "tensorboard.backend.event_processing.event_accumulator"):
        return SKIPPED
    with tempfile.TemporaryDirectory() as directory:
        subprocess.run([args.writer, directory], check=True)
        checker = [pypi_venv.python_of(args.venv), __file__, "--check", directory]
        return subprocess.run(checker).returncode


if __name__ == "__main__":
    sys.exit(main())
