"""Two builds of lockstep-bench-resnet, one step each in turn: does a change slow the step?

Runs both binaries with --paced (a step per line on stdin) and alternates their steps, so each
pair meets the same machine within a second (this VM's speed drifts by 10-20% within seconds;
see BENCHMARKS.md), and prints the median of the per-pair time ratios, after / before.

  python3 bench/paced_builds.py BEFORE AFTER --model resnet18 --size 224 --pairs 20
"""
import argparse
import statistics
import subprocess

WARMUP = 2  # lockstep-bench-resnet's untimed steps, paced too


def start(binary, args):
    return subprocess.Popen([binary, *args, "--paced"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, bufsize=1)


def step(process):
    process.stdin.write("go\n")
    process.stdin.flush()
    for line in process.stdout:
        if line.startswith("step_s="):
            return float(line.split("=", 1)[1])
    raise SystemExit(f"{process.args[0]} ended before its step")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--size", default="224")
    parser.add_argument("--batch", default="8")
    parser.add_argument("--threads", default="2")
    parser.add_argument("--pairs", type=int, default=20)
    options = parser.parse_args()
    args = ["--model", options.model, "--size", options.size, "--batch", options.batch,
            "--threads", options.threads, "--steps", str(options.pairs)]
    processes = [start(options.before, args), start(options.after, args)]
    times = [[], []]
    for _ in range(WARMUP + options.pairs):
        for process, seconds in zip(processes, times):
            seconds.append(step(process))
    for process in processes:
        process.stdin.close()
        process.wait()
    before, after = times[0][WARMUP:], times[1][WARMUP:]
    ratios = [b / a for a, b in zip(before, after)]
    print(f"{options.model} {options.size}x{options.size}: before {statistics.median(before):.3f} s,"
          f" after {statistics.median(after):.3f} s, after/before {statistics.median(ratios):.3f}"
          f" [{min(ratios):.3f}-{max(ratios):.3f}] over {len(ratios)} pairs")


if __name__ == "__main__":
    main()
