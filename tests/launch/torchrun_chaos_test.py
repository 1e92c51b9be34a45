#!/usr/bin/env python3
"""Chaos under real torchrun: `torchrun --standalone --nproc-per-node=4 --max-restarts K
--no-python lockstep-train ... --ckpt-dir D --resume D`, and a random rank of each worker group
SIGKILLed at a random moment (in its start-up, or in a step), K times; torchrun's agent ends the
group's other ranks and starts a new group, which resumes from the newest committed step. The job
must exit 0 after exactly K restarts, each new group must resume from at least the newest step
committed before its kill, `lockstep-ckpt verify` must pass, and every rank's final checkpoint
must equal, bit for bit, that of a run under torchrun that was never interrupted (gloo's sums at
-n 4 are not MPI's, so the reference runs under torchrun too).

The workers of group k are found by their environment (/proc/PID/environ):
TORCHELASTIC_RESTART_COUNT=k and RANK=r, and a variable of this test's that torchrun passes on
(it starts every worker in a session of its own). Torch comes from PyPI in the venv
of tcp_store_interop_test.py (tests/testing/pypi_venv.py); exit 77 (skipped) where it cannot be
made.

  torchrun_chaos_test.py --venv V --train T --ckpt C --make-sample S [--kills 3] [--seed 1]

Prints one line per kill and a summary; exits 0 when everything held.
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from env_launch_test import (SKIPPED, Failure, clean_env, compare, torch_version,  # noqa: E402
                             newest_committed, torchrun_of)

STARTED = re.compile(r"started by torchrun: (\d+) ranks, .*, restart (\d+);")
RESUMED = re.compile(r"resumed at step (\d+)")
STEP_LINE = re.compile(r"^epoch: (\d+) step: (\d+), loss is")
STEPS_PER_EPOCH = 10  # 16 images per class, 10 classes, a global batch of 16
SAVE_STEPS = 2
LAUNCH_TIMEOUT_S = 90
POLL_S = 0.005
MARKER = "LOCKSTEP_TORCHRUN_CHAOS_TEST"
RUNS = []  # every Torchrun started, ended before the test exits


class Torchrun:
    """One torchrun in a session of its own; a thread follows its output (rank 0's lines)."""

    def __init__(self, args, torchrun, ckpt_dir, max_restarts):
        cmd = [torchrun, "--standalone", f"--nproc-per-node={args.ranks}",
               f"--max-restarts={max_restarts}", "--no-python", args.train,
               "--data", args.data, "--model", "lenet", "--epochs", str(args.epochs),
               "--batch-size", "16", "--threads", "1", "--workers", "1", "--seed", str(args.seed),
               "--save-steps", str(SAVE_STEPS), "--keep-max", "1", "--log-every", "1",
               "--progress", "lines", "--ckpt-dir", ckpt_dir, "--resume", ckpt_dir]
        self.start = time.monotonic()
        self.lines = []
        self.group = -1  # the restart count of the newest group whose rank 0 has started
        self.resumed = {}  # group: the global step its rank 0 resumed from
        self.last_step = {}  # group: the newest global step its rank 0 has logged
        self.first_step_s = None
        self.marker = f"{MARKER}={ckpt_dir}".encode()
        self.proc = subprocess.Popen(cmd, env=clean_env(**{MARKER: ckpt_dir}),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     errors="replace", start_new_session=True)
        RUNS.append(self)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            if m := STARTED.search(line):
                self.group = int(m[2])
            elif m := RESUMED.search(line):
                self.resumed[self.group] = int(m[1])
            elif "nothing to resume" in line:
                self.resumed[self.group] = 0
            elif m := STEP_LINE.match(line):
                self.last_step[self.group] = (int(m[1]) - 1) * STEPS_PER_EPOCH + int(m[2])
                self.first_step_s = self.first_step_s or self.elapsed()

    def elapsed(self):
        return time.monotonic() - self.start

    def processes(self):
        """{pid: environment} of the live processes of this torchrun, found by the variable
        MARKER it passes on (torchrun starts each worker in a session of its own)."""
        found = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        continue
                with open(f"/proc/{entry}/environ", "rb") as f:
                    env = set(f.read().split(b"\0"))
            except (OSError, IndexError):
                continue
            if self.marker in env:
                found[int(entry)] = env
        return found

    def worker(self, group, rank):
        """The pid of rank `rank` of group `group`, once torchrun has started it; else None."""
        wanted = {f"TORCHELASTIC_RESTART_COUNT={group}".encode(), f"RANK={rank}".encode()}
        for pid, env in self.processes().items():
            if wanted <= env and pid != self.proc.pid:
                return pid
        return None

    def wait(self):
        """torchrun's status; a hang or a process left behind in its session is a Failure."""
        try:
            rc = self.proc.wait(max(1, LAUNCH_TIMEOUT_S - self.elapsed()))
        except subprocess.TimeoutExpired:
            raise Failure(f"torchrun still running after {LAUNCH_TIMEOUT_S} s\n{self.output()}")
        self.reader.join(5)
        deadline = time.monotonic() + 5
        while left := self.processes():
            if time.monotonic() > deadline:
                raise Failure(f"processes {sorted(left)} outlived torchrun by 5 s\n"
                              f"{self.output()}")
            time.sleep(0.05)
        return rc

    def kill_all(self):
        """What is left of this torchrun and its workers, which are in sessions of their own."""
        for pid in [self.proc.pid] + list(self.processes()):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()

    def output(self):
        return "".join(self.lines[-60:])



def kill_one(args, rng, run, group, startup_s, step_s):
    """SIGKILLs a random rank of group `group`, in its start-up (rendezvous, gloo, compilation,
    resume) or some steps past where it resumed: (kind, rank, global step, newest committed
    step at the kill)."""
    kind = rng.choice(["startup", "step", "step"])
    rank = rng.randrange(args.ranks)
    delay = rng.uniform(0, startup_s)
    advance = rng.randint(1, 2 * SAVE_STEPS)
    pid = None
    found_s = None
    while run.proc.poll() is None:
        if run.elapsed() > LAUNCH_TIMEOUT_S:
            raise Failure(f"torchrun still running after {LAUNCH_TIMEOUT_S} s\n{run.output()}")
        if pid is None:
            pid = run.worker(group, rank)
            found_s = run.elapsed() if pid else None
        resumed = run.resumed.get(group) if run.group == group else None
        if pid and ((kind == "startup" and run.elapsed() - found_s >= delay) or
                    (kind == "step" and resumed is not None and
                     run.last_step.get(group, 0) >= resumed + advance)):
            if kind == "step":
                time.sleep(rng.uniform(0, step_s))
            committed = newest_committed(args.chaos_dir, STEPS_PER_EPOCH)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                raise Failure(f"rank {rank} of group {group} ended before its kill\n"
                              f"{run.output()}") from None
            kind = "step" if group in run.last_step else "startup"  # where it landed
            return kind, rank, run.last_step.get(group, resumed or 0), committed
        time.sleep(POLL_S)
    raise Failure(f"torchrun exited {run.proc.returncode} before kill {group + 1}\n{run.output()}")


def chaos(args, rng, torchrun, work):
    begin = time.monotonic()
    args.data = os.path.join(work, "data")
    subprocess.run([args.make_sample, args.data, "--train-per-class", "16", "--val-per-class", "2",
                    "--height", "36", "--width", "36"], check=True, stdout=subprocess.DEVNULL)
    # No kill may find the run finished: each group ends at most 2 * SAVE_STEPS + 1 steps past
    # where it resumed, and where it resumed is at most SAVE_STEPS before where the last ended.
    args.epochs = args.kills * (3 * SAVE_STEPS + 1) // STEPS_PER_EPOCH + 2
    ref = os.path.join(work, "reference")
    run = Torchrun(args, torchrun, ref, 0)
    if run.wait() != 0 or run.first_step_s is None:
        raise Failure("the uninterrupted run failed\n" + run.output())
    ref_s = run.elapsed()
    step_s = (ref_s - run.first_step_s) / (args.epochs * STEPS_PER_EPOCH)
    args.chaos_dir = os.path.join(work, "chaos")
    run = Torchrun(args, torchrun, args.chaos_dir, args.kills)
    kills = []
    for group in range(args.kills):
        kind, rank, step, committed = kill_one(args, rng, run, group, args.startup_s, step_s)
        kills.append((kind, rank, step, committed))
        where = f"at step {step}" if kind == "step" else "before its first step"
        print(f"kill {group + 1}: rank {rank} of group {group} {where}, step {committed} "
              f"committed, {run.elapsed():.1f} s in", flush=True)
    rc = run.wait()
    if rc != 0:
        raise Failure(f"torchrun exited {rc} after {args.kills} kills\n{run.output()}")
    if run.group != args.kills:
        raise Failure(f"the last group was restart {run.group}, not {args.kills}\n{run.output()}")
    # A group killed before it resumed says nothing; every group that resumed did so from at
    # least the newest step committed before the kills that came before it.
    committed_before = 0
    for group, (_, _, _, committed) in enumerate(kills, start=1):
        committed_before = max(committed_before, committed)
        resumed = run.resumed.get(group)
        if (resumed is None and group == args.kills) or \
                (resumed is not None and resumed < committed_before):
            raise Failure(f"group {group} resumed at step {resumed}, but step {committed_before} "
                          f"was committed before the kill of group {group - 1}\n{run.output()}")
    compare(args.ckpt, ref, args.chaos_dir)
    final = newest_committed(args.chaos_dir, STEPS_PER_EPOCH)
    if final != args.epochs * STEPS_PER_EPOCH:
        raise Failure(f"the chaos run ends at step {final}")
    return (f"torchrun chaos (torch {torch_version(args.venv)}): {args.kills} kills survived, "
            f"{args.kills} restarts; step {final} bit-identical to the uninterrupted torchrun run "
            f"({args.ranks} ranks, seed {args.seed}; uninterrupted {ref_s:.0f} s, chaos "
            f"{run.elapsed():.0f} s, {time.monotonic() - begin:.0f} s in all)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", required=True)
    parser.add_argument("--train", required=True, help="lockstep-train")
    parser.add_argument("--ckpt", required=True, help="lockstep-ckpt")
    parser.add_argument("--make-sample", required=True, help="lockstep-make-sample")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1, help="of the kills and of the training")
    parser.add_argument("--startup-s", type=float, default=1.0,
                        help="a start-up kill lands up to this long after the rank appears")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    torchrun = torchrun_of(args.venv)
    if torchrun is None:
        return SKIPPED
    work = tempfile.mkdtemp(prefix="lockstep-torchrun-chaos-")
    try:
        summary = chaos(args, random.Random(args.seed), torchrun, work)
    except Failure as failure:
        for run in RUNS:
            run.kill_all()
        print(failure)
        print(f"torchrun chaos: FAILED: {str(failure).splitlines()[0]} (seed {args.seed}; files "
              f"kept in {work})")
        return 1
    print(summary)
    if not args.keep:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
