"""ResNet training steps driven from Python against lockstep-bench-resnet, the same recipe
(SGD momentum 0.9, lr 0.01, 10 classes, one random batch drawn once, 2 warm-up steps, the median
of the timed steps), all in one run on one machine:

  python    the network written as Cells (lockstep.models), traced, compiled and stepped through
            lockstep._core from Python
  cxx       the C++ model (train/models.h) compiled and stepped through the same binding
  binary    lockstep-bench-resnet, the C++ benchmark

and the time from Model(...) to the end of the first step (tracing, compiling, initializing),
Python against C++.

  OMP_NUM_THREADS=2 PYTHONPATH=build/python /usr/bin/python3 bench/python_vs_cxx.py \\
      --bench build/bench/lockstep-bench-resnet --model resnet50 --size 224 --batch 8 --steps 10
"""

import argparse
import re
import statistics
import subprocess
import time

import numpy as np

from lockstep import _core, communication, models
from lockstep.nn import _trace

PYTHON_MODELS = {"resnet50": models.resnet50, "resnet18": models.resnet18}


def steps(net, args):
    """(seconds from Model(...) to the end of the first step, median step seconds)."""
    rng = np.random.default_rng(0)
    images = rng.standard_normal((args.batch, 3, args.size, args.size), dtype=np.float32)
    labels = rng.integers(0, 10, args.batch, dtype=np.int32)
    started = time.perf_counter()
    model = _core.Model(
        net=net, batch_size=args.batch, image_shape=[3, args.size, args.size], seed=0,
        learning_rates=[0.01], momentum=0.9, weight_decay=0.0, nesterov=False,
        gradient_divisor=1.0, loss_scale=1.0, dynamic_loss_scale=None, amp_level="O0",
        device="cpu", context=communication.context(), data_parallel=False,
        gradients_mean=True, sync_batch_norm=False, all_reduce_fusion_config=[])
    model.compile()
    model.train_step(images, labels)
    first = time.perf_counter() - started
    model.train_step(images, labels)  # the second warm-up step
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        model.train_step(images, labels)
        times.append(time.perf_counter() - start)
    return first, statistics.median(times)


def binary_step(args):
    out = subprocess.run([args.bench, "--model", args.model, "--size", str(args.size), "--batch",
                          str(args.batch), "--steps", str(args.steps), "--threads",
                          str(args.threads)], capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median_step_s=(\S+)", out).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True, help="lockstep-bench-resnet")
    parser.add_argument("--model", default="resnet50", choices=sorted(PYTHON_MODELS))
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="each side this many times, in turn")
    args = parser.parse_args()
    communication.init()
    network = PYTHON_MODELS[args.model](10)
    rows = {"python": [], "cxx": [], "binary": []}
    firsts = {"python": [], "cxx": []}
    for _ in range(args.rounds):  # in turn, so that all meet the same machine
        for kind, net in (("python", _trace.python_net(network)),
                          ("cxx", _core.model_by_name(args.model, 10))):
            first, step = steps(net, args)
            firsts[kind].append(first)
            rows[kind].append(step)
        rows["binary"].append(binary_step(args))
    median = {kind: statistics.median(values) for kind, values in rows.items()}
    print(f"{args.model} {args.size}x{args.size} batch {args.batch}, {args.threads} threads, "
          f"median of {args.rounds} rounds of {args.steps} steps")
    for kind, value in median.items():
        print(f"  {kind:7s} step {value * 1000:8.1f} ms  ({median['binary'] / value:.3f}x "
              "lockstep-bench-resnet's speed)")
    for kind, values in firsts.items():
        print(f"  {kind:7s} Model(...) to the first step's end {statistics.median(values):.2f} s")


if __name__ == "__main__":
    main()
