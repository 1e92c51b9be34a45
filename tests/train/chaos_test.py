#!/usr/bin/env python3
"""Chaos test: SIGKILL a random rank of `mpirun -n 4 lockstep-train` at random moments, some of
them during a checkpoint save, resume with --resume each time, and check that the run ends with
the same checkpoint, bit for bit, as a run that was never interrupted.

After every kill, mpirun must exit non-zero within --launch-timeout and leave no process behind,
and `lockstep-ckpt verify` must pass on the newest committed step (the newest step with a
manifest before the kill); the next launch must resume from exactly that step. Bytes lost counts
the rank files of committed steps newer than where a launch resumed; it must be 0.

--launcher picks what starts the ranks:
  mpirun                 `mpirun -n 4 lockstep-train ...`, launched again after each kill;
  lockstep-run           `lockstep-run -n 4 lockstep-train ...` (gloo, no MPI), the same way;
  lockstep-run-restarts  ONE `lockstep-run -n 4 --max-restarts KILLS lockstep-train ...`, which
                         starts the group again itself after each kill: each restart must come
                         within --launch-timeout with no process of the ended group left, resume
                         from the newest committed step, and the launch must end with exit 0.
The uninterrupted run is launched the same way (Open MPI and gloo sum 4 ranks' gradients in
different orders, so their bits differ at -n 4).

  chaos_test.py --train lockstep-train --ckpt lockstep-ckpt --make-sample lockstep-make-sample
                [--launcher mpirun] [--lockstep-run lockstep-run]
                [--kills 5] [--seed 1] [--keep-max 1] [--save-steps 2]

Prints one line per kill, then a summary line; exits 0 when everything held.
"""
import argparse
import json
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

# Under lockstep-run every line of rank 0 starts with "[rank 0] ".
STEP_LINE = re.compile(r"^(?:\[rank 0\] )?epoch: (\d+) step: (\d+), loss is")
RESTART = re.compile(r"^lockstep-run: restart (\d+) of \d+")
RESUMED = re.compile(r"resumed at step (\d+)")
STEPS_PER_EPOCH = re.compile(r"(\d+) steps per epoch")
MANIFEST = re.compile(r"^(.+)-(\d+)_(\d+)\.manifest$")
IMAGES_PER_CLASS = 16  # 10 classes: 10 steps per epoch at 16 images per step
POLL_S = 0.001
LAUNCHERS = ("mpirun", "lockstep-run", "lockstep-run-restarts")


class Failure(Exception):
    pass


def session_processes(sid):
    """(pid, state) of every process in session `sid`."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid:
            found.append((int(entry), fields[0]))
    return found


def environment(pid):
    """The environment `pid` started with, as a set of b"NAME=VALUE"; empty when it is gone."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return set(f.read().split(b"\0"))
    except OSError:
        return set()


def rank_pid(sid, train, launcher, rank, restart):
    """The pid of lockstep-train's rank `rank` in session `sid`, once the launcher has started it;
    under lockstep-run, the rank of the group started with TORCHELASTIC_RESTART_COUNT `restart`."""
    if launcher == "mpirun":
        wanted = {f"OMPI_COMM_WORLD_RANK={rank}".encode()}
    else:
        wanted = {b"LOCKSTEP_RUN=1", f"RANK={rank}".encode(),
                  f"TORCHELASTIC_RESTART_COUNT={restart}".encode()}
    for pid, state in session_processes(sid):
        try:
            if state == "Z" or os.path.realpath(f"/proc/{pid}/exe") != train:
                continue
        except OSError:
            continue
        if wanted <= environment(pid):
            return pid
    return None


def group_processes(sid, restart):
    """The live processes of session `sid` that lockstep-run's group `restart` started (ranks
    and whatever they started: they inherit TORCHELASTIC_RESTART_COUNT)."""
    entry = f"TORCHELASTIC_RESTART_COUNT={restart}".encode()
    return [pid for pid, state in session_processes(sid)
            if state != "Z" and entry in environment(pid)]


def registered_with_mpirun(pid):
    """Whether rank `pid` is past the start of MPI_Init, where it registers with mpirun's PMIx
    server: its point-to-point plugin (mca_pml_*), which MPI_Init loads only afterwards, is
    mapped. Open MPI 4.1's mpirun can hang for good when a rank dies before registering
    (RELIABILITY.md), which is mpirun's bug, not what this test is after."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "/mca_pml_" in f.read()
    except OSError:
        return False


class Attempt:
    """One start of the ranks: a launch's first, or a restart of lockstep-run's group (its
    TORCHELASTIC_RESTART_COUNT is `number`). The launch's reader thread fills it in."""

    def __init__(self, number):
        self.number = number
        self.start = time.monotonic()
        self.start_ns = time.time_ns()
        self.resumed = None  # the global step rank 0 says it resumed from
        self.last_step = None  # the newest global step rank 0 has logged
        self.first_step_s = None

    def elapsed(self):
        return time.monotonic() - self.start


class Launch:
    """One `mpirun lockstep-train` or `lockstep-run lockstep-train`, in a session of its own; a
    thread follows rank 0's lines, and lockstep-run's "restart N of K" lines, each of which
    begins a new Attempt."""

    def __init__(self, args, ckpt_dir, epochs):
        if args.launcher == "mpirun":
            cmd = [args.mpirun, "-n", str(args.ranks), "--oversubscribe"]
        else:
            cmd = [args.lockstep_run, "-n", str(args.ranks)]
            if args.launcher == "lockstep-run-restarts":
                cmd += ["--max-restarts", str(args.kills)]
        cmd += [args.train,
                "--data", args.data, "--model", "lenet", "--epochs", str(epochs),
                "--batch-size", "16", "--threads", "1", "--workers", "1",
                "--seed", str(args.seed), "--save-steps", str(args.save_steps),
                "--keep-max", str(args.keep_max), "--log-every", "1", "--progress", "lines",
                "--ckpt-dir", ckpt_dir, "--resume", ckpt_dir]
        self.name = os.path.basename(cmd[0])
        self.attempts = [Attempt(0)]
        self.lines = []
        self.steps_per_epoch = None
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    @property
    def attempt(self):
        """The newest attempt: the one running, unless the launch has ended."""
        return self.attempts[-1]

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            attempt = self.attempt
            if m := STEPS_PER_EPOCH.search(line):
                self.steps_per_epoch = int(m[1])
            elif m := RESUMED.search(line):
                attempt.resumed = int(m[1])
            elif "nothing to resume" in line:
                attempt.resumed = 0
            elif (m := STEP_LINE.match(line)) and self.steps_per_epoch:
                attempt.last_step = (int(m[1]) - 1) * self.steps_per_epoch + int(m[2])
                attempt.first_step_s = attempt.first_step_s or attempt.elapsed()
            elif m := RESTART.match(line):
                self.attempts.append(Attempt(int(m[1])))

    def wait(self, timeout):
        """The launcher's exit status; a hang or a process left behind is a Failure."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise Failure(f"{self.name} still running after {timeout} s (a hang)\n"
                          f"{self.output()}")
        self.reader.join(5)
        deadline = time.monotonic() + 5
        while left := [pid for pid, state in session_processes(self.proc.pid) if state != "Z"]:
            if time.monotonic() > deadline:
                os.killpg(self.proc.pid, signal.SIGKILL)
                raise Failure(f"processes {left} outlived {self.name} by 5 s\n{self.output()}")
            time.sleep(0.05)
        return rc

    def wait_restart(self, number, timeout):
        """Waits for lockstep-run to start group `number` after a kill: a Failure when it exits
        instead, takes more than `timeout` s, or leaves a process of the ended group running."""
        deadline = time.monotonic() + timeout
        while self.attempt.number < number:
            if self.proc.poll() is not None:
                self.reader.join(5)
                raise Failure(f"{self.name} exited {self.proc.returncode} instead of restart "
                              f"{number}\n{self.output()}")
            if time.monotonic() > deadline:
                os.killpg(self.proc.pid, signal.SIGKILL)
                raise Failure(f"no restart {number} {timeout} s after the kill (a hang)\n"
                              f"{self.output()}")
            time.sleep(POLL_S)
        # lockstep-run reaps the group's ranks before it starts the next group, and SIGKILLs
        # what they started: that may take a moment to go.
        deadline = time.monotonic() + 5
        while left := group_processes(self.proc.pid, number - 1):
            if time.monotonic() > deadline:
                os.killpg(self.proc.pid, signal.SIGKILL)
                raise Failure(f"processes {left} of group {number - 1} outlived its restart "
                              f"by 5 s\n{self.output()}")
            time.sleep(0.05)

    def output(self):
        return "".join(self.lines[-40:])


class CheckpointDir:
    """What the test sees of a checkpoint directory."""

    def __init__(self, path, steps_per_epoch):
        self.path = path
        self.steps_per_epoch = steps_per_epoch
        self.newest = 0  # the newest committed global step seen since the last resume

    def step_of(self, name):
        m = MANIFEST.match(name)
        return (int(m[2]) - 1) * self.steps_per_epoch + int(m[3]) if m else None

    def scan(self):
        """(the newest manifest's global step, its name, its mtime_ns, every name)."""
        names = os.listdir(self.path) if os.path.isdir(self.path) else []
        newest, newest_name, newest_ns = 0, None, 0
        for name in names:
            step = self.step_of(name)
            if step is None or step <= newest:
                continue
            try:
                newest_ns = os.stat(os.path.join(self.path, name)).st_mtime_ns
            except FileNotFoundError:
                continue  # pruned meanwhile
            newest, newest_name = step, name
        self.newest = max(self.newest, newest)
        return newest, newest_name, newest_ns, names

    def save_in_progress(self, since_ns):
        """Whether a file written since `since_ns` is a temporary one or not yet committed."""
        _, _, manifest_ns, names = self.scan()
        for name in names:
            if not name.endswith((".ckpt.tmp", ".manifest.tmp", ".ckpt")):
                continue
            try:
                mtime = os.stat(os.path.join(self.path, name)).st_mtime_ns
            except FileNotFoundError:
                continue
            if mtime >= since_ns and (name.endswith(".tmp") or mtime > manifest_ns):
                return True
        return False

    def bytes_newer_than(self, step):
        """Bytes of the rank files that the manifests newer than `step` list."""
        total = 0
        for name in os.listdir(self.path):
            if (self.step_of(name) or 0) > step:
                with open(os.path.join(self.path, name)) as f:
                    total += sum(int(file["bytes"]) for file in json.load(f)["files"])
        return total


def reference_run(args, work, epochs):
    """The uninterrupted run, under the same launcher: its directory, seconds to its first step,
    seconds per step."""
    ref = os.path.join(work, "reference")
    launch = Launch(args, ref, epochs)
    run = launch.attempt
    if launch.wait(args.launch_timeout) != 0 or run.first_step_s is None or \
            len(launch.attempts) > 1:
        raise Failure("the uninterrupted run failed\n" + launch.output())
    step_s = (run.elapsed() - run.first_step_s) / run.last_step
    return ref, run.first_step_s, step_s


def kill_one(args, rng, launch, watch, startup_s, step_s):
    """SIGKILLs a random rank of the launch's running attempt at a random moment: in the start-up
    (MPI once the rank has registered, rendezvous, compilation, resume), at a random point of a
    step, or once a save is under way. (kind, rank, step); None when the attempt ended first."""
    kind = rng.choices(["startup", "step", "save"], weights=[1, 2, 2])[0]
    rank = rng.randrange(args.ranks)
    delay = rng.uniform(0, startup_s)
    advance = rng.randint(1, 2 * args.save_steps)
    attempt = launch.attempt
    pid = None
    while launch.proc.poll() is None and launch.attempt is attempt:
        if attempt.elapsed() > args.launch_timeout:
            raise Failure("a launch ran past --launch-timeout\n" + launch.output())
        # Found ahead of the moment: searching /proc takes longer than a save.
        pid = pid or rank_pid(launch.proc.pid, args.train, args.launcher, rank, attempt.number)
        resumed, last_step = attempt.resumed, attempt.last_step
        reached = resumed is not None and (last_step or 0) >= resumed + advance
        # A save of LeNet can be over between two polls on a fast machine: after two save
        # intervals without catching one, kill in a step instead of letting the run finish.
        if kind == "save" and reached and last_step >= resumed + advance + 2 * args.save_steps:
            kind = "step"
        watch.scan()  # sees every commit, even those pruned before the kill
        # The reference run's start-up (the delay's bound) ran cold and may be the longer one.
        started = attempt.elapsed() >= delay or attempt.first_step_s is not None
        # Only mpirun has a moment before which a kill is not wanted.
        registered = args.launcher != "mpirun" or registered_with_mpirun(pid)
        if pid and ((kind == "startup" and started and registered) or
                    (kind == "step" and reached) or
                    (kind == "save" and reached and watch.save_in_progress(attempt.start_ns))):
            if kind == "step":
                time.sleep(rng.uniform(0, step_s))
            os.kill(pid, signal.SIGKILL)
            return kind, rank, attempt.last_step or attempt.resumed or 0
        time.sleep(POLL_S)
    return None


def verify(args, watch, step, running=False):
    """`lockstep-ckpt verify` of committed step `step`. With `running`, a restarted group trains
    in the directory meanwhile and may prune the step: a step whose manifest is gone when verify
    fails was pruned, which is no failure. Whether the step was verified."""
    if step == 0:
        return False
    result = subprocess.run([args.ckpt, "verify", watch.path, "--step", str(step)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        if running and step not in map(watch.step_of, os.listdir(watch.path)):
            return False
        raise Failure(f"verify of committed step {step}:\n{result.stdout}{result.stderr}")
    return True


def compare_final(args, ref, chaos, steps_per_epoch):
    """Every rank's final file of the chaos run equals the uninterrupted run's, byte for byte."""
    ref_step, final, _, _ = CheckpointDir(ref, steps_per_epoch).scan()
    chaos_step, _, _, _ = CheckpointDir(chaos, steps_per_epoch).scan()
    if chaos_step != ref_step:
        raise Failure(f"the chaos run ends at step {chaos_step}, the uninterrupted at {ref_step}")
    with open(os.path.join(ref, final)) as f:
        files = [file["file"] for file in json.load(f)["files"]]
    for name in files:
        a, b = os.path.join(ref, name), os.path.join(chaos, name)
        with open(a, "rb") as fa, open(b, "rb") as fb:
            if fa.read() != fb.read():
                diff = subprocess.run([args.ckpt, "diff", a, b], capture_output=True, text=True)
                raise Failure(f"{b} differs from the uninterrupted run's:\n{diff.stdout}")
    return ref_step


class Tally:
    """What the kills did so far, and where the run got to."""

    def __init__(self):
        self.kills = self.in_save = self.redone = self.lost = self.reached = 0

    def account(self, attempt, committed, watch):
        """Counts what `attempt`, which began with `committed` the newest committed step, re-did
        and lost; resuming from a step newer than any committed one is a Failure."""
        if attempt.resumed is not None:
            if attempt.resumed > committed:
                raise Failure(f"resumed at step {attempt.resumed}, but the newest committed step "
                              f"was {committed}")
            if attempt.resumed < committed:
                self.lost += watch.bytes_newer_than(attempt.resumed)
                print(f"LOST: resumed at step {attempt.resumed}, step {committed} was committed")
                watch.newest = attempt.resumed
            self.redone += max(0, self.reached - attempt.resumed)
            self.reached = attempt.resumed
        self.reached = max(self.reached, attempt.last_step or 0)

    def killed(self, watch, attempt):
        """Counts a kill of `attempt`, whose ranks are all gone now: (whether it came during a
        save, the newest committed step)."""
        self.kills += 1
        saving = watch.save_in_progress(attempt.start_ns)
        self.in_save += saving
        watch.scan()
        return saving, watch.newest


def kill_context(killed, failure):
    return Failure(f"after killing rank {killed[1]} ({killed[0]}) at step {killed[2]}: {failure}")


def relaunching(args, rng, watch, epochs, startup_s, step_s, tally):
    """A launch after every kill, each resuming; the last one must end with exit 0."""
    while True:
        committed = watch.newest  # where this launch must resume
        launch = Launch(args, watch.path, epochs)
        killed = kill_one(args, rng, launch, watch, startup_s, step_s) \
            if tally.kills < args.kills else None
        try:
            rc = launch.wait(args.launch_timeout)
        except Failure as failure:
            if killed is None:
                raise
            raise kill_context(killed, failure) from None
        tally.account(launch.attempt, committed, watch)
        if killed is None:
            break
        kind, rank, step = killed
        if rc == 0:
            raise Failure(f"{launch.name} exited 0 after rank {rank} was killed\n"
                          f"{launch.output()}")
        saving, committed = tally.killed(watch, launch.attempt)
        verify(args, watch, committed)
        print(f"kill {tally.kills}: rank {rank} ({kind}) at step {step}"
              f"{', during a save' if saving else ''}; {launch.name} exited {rc} after "
              f"{launch.attempt.elapsed():.1f} s; committed step {committed} verified", flush=True)
    if rc != 0:
        raise Failure(f"the last launch exited {rc}\n{launch.output()}")


def restarting(args, rng, watch, epochs, startup_s, step_s, tally):
    """One launch of lockstep-run --max-restarts, whose group is killed --kills times and
    restarts itself each time; it must end with exit 0."""
    launch = Launch(args, watch.path, epochs)
    committed = 0  # where the running group must resume
    while tally.kills < args.kills:
        attempt = launch.attempt
        killed = kill_one(args, rng, launch, watch, startup_s, step_s)
        if killed is None:
            break  # ended or restarted by itself: told below
        kind, rank, step = killed
        killed_at = time.monotonic()
        try:
            launch.wait_restart(attempt.number + 1, args.launch_timeout)
        except Failure as failure:
            raise kill_context(killed, failure) from None
        restart_s = time.monotonic() - killed_at
        # The ended group's account; the next one is starting, and takes a while to resume.
        tally.account(attempt, committed, watch)
        saving, committed = tally.killed(watch, attempt)
        verified = verify(args, watch, committed, running=True)
        print(f"kill {tally.kills}: rank {rank} ({kind}) at step {step}"
              f"{', during a save' if saving else ''}; restart {launch.attempt.number} "
              f"{restart_s:.1f} s later; committed step {committed} "
              f"{'verified' if verified or committed == 0 else 'pruned before verify'}",
              flush=True)
    rc = launch.wait(args.launch_timeout)
    tally.account(launch.attempt, committed, watch)
    if rc != 0:
        raise Failure(f"{launch.name} exited {rc} after {len(launch.attempts) - 1} restarts\n"
                      f"{launch.output()}")
    if len(launch.attempts) != tally.kills + 1:
        raise Failure(f"{len(launch.attempts) - 1} restarts for {tally.kills} kills\n"
                      f"{launch.output()}")


def chaos(args, rng, work):
    begin = time.monotonic()
    args.data = os.path.join(work, "data")
    subprocess.run([args.make_sample, args.data, "--train-per-class", str(IMAGES_PER_CLASS),
                    "--val-per-class", "2", "--height", "36", "--width", "36"],
                   check=True, stdout=subprocess.DEVNULL)
    steps_per_epoch = 10 * IMAGES_PER_CLASS // 16
    # No kill may find the run finished: each lands at most 4 * save_steps + 1 steps past the
    # step its launch resumed from (and rank 0's lines lag a little).
    epochs = args.kills * (4 * args.save_steps + 1) // steps_per_epoch + 2
    ref, startup_s, step_s = reference_run(args, work, epochs)
    watch = CheckpointDir(os.path.join(work, "chaos"), steps_per_epoch)
    tally = Tally()
    run = restarting if args.launcher == "lockstep-run-restarts" else relaunching
    run(args, rng, watch, epochs, startup_s, step_s, tally)
    if tally.kills < args.kills:
        raise Failure(f"the run finished after {tally.kills} of {args.kills} kills")
    final = compare_final(args, ref, watch.path, steps_per_epoch)
    verify(args, watch, final)
    summary = (f"chaos: {tally.kills} kills survived ({tally.in_save} during a save), "
               f"{tally.redone} steps re-done, {tally.lost} bytes lost; step {final} "
               f"bit-identical to the uninterrupted run and verified ({args.launcher}, "
               f"{args.ranks} ranks, --keep-max {args.keep_max}, --save-steps {args.save_steps}, "
               f"seed {args.seed}, {time.monotonic() - begin:.0f} s)")
    return summary, tally.lost == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True, help="lockstep-train")
    parser.add_argument("--ckpt", required=True, help="lockstep-ckpt")
    parser.add_argument("--make-sample", required=True, help="lockstep-make-sample")
    parser.add_argument("--launcher", choices=LAUNCHERS, default="mpirun",
                        help="what starts the ranks: mpirun or lockstep-run, launched again "
                             "after each kill, or lockstep-run-restarts: one lockstep-run "
                             "--max-restarts KILLS that restarts the ranks itself")
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--lockstep-run", default="lockstep-run")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1, help="of the kills and of the training")
    parser.add_argument("--save-steps", type=int, default=2, help="lockstep-train's")
    parser.add_argument("--keep-max", type=int, default=1, help="lockstep-train's")
    parser.add_argument("--launch-timeout", type=float, default=60,
                        help="seconds a launch (or a restart) may take, and the launcher to "
                             "end (or restart) after a kill")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory when the test passes too")
    args = parser.parse_args()
    args.train = os.path.realpath(args.train)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if os.geteuid() == 0:  # Open MPI refuses root without these
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    work = tempfile.mkdtemp(prefix="lockstep-chaos-")
    try:
        summary, ok = chaos(args, random.Random(args.seed), work)
    except Failure as failure:
        print(failure)
        print(f"chaos: FAILED: {str(failure).splitlines()[0]} (seed {args.seed}; files kept in "
              f"{work})")
        return 1
    print(summary)
    if ok and not args.keep:
        shutil.rmtree(work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
