#!/usr/bin/env python3
"""lockstep-train --resume and --ckpt-dir on bad directories, real runs on a tiny sample:

  missing   a --resume directory that does not exist is an error naming it; an empty one, or one
            without checkpoints of the model (other files, an uncommitted rank file), starts fresh
            with one line
  damaged   the newest step's file damaged (rank 1's under mpirun): the older step is resumed and
            a line names the rejected file and why; every step damaged: exit 1, naming each
  tampered  a manifest edited by hand (CRC, graph fingerprint, world size, step) that
            `lockstep-ckpt verify` rejects is rejected by resume too, for the same reason
  two_jobs  a second job writing the directory of a running one exits 1 naming the first's host
            and pid; the first finishes normally and its newest step verifies
  killed    a relaunch after a SIGKILL of the lock's holder resumes: the lock died with it
  recipe    resuming with another --batch-size, --grad-accum or loss-scale mode exits 1 naming
            the flag, the value and the step's; another --lr resumes
  stopped   one rank stopped (SIGSTOP) while the others agree before training: every rank ends
            after LOCKSTEP_COLLECTIVE_TIMEOUT_S with the report naming it; no hang
  one_run   a fresh run into a directory with another run's complete steps exits 1 naming them,
            the directory unchanged; resuming that run with --keep-max 1 prunes its older steps
            by their manifests and leaves a stray file whose name says a later step

  resume_checks_test.py --train T --ckpt C --make-sample M [--mpirun MPIRUN --ranks N] CASE
Prints "ok" and exits 0 when the case held.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 60
RESUMED = re.compile(r"resumed at step (\d+)")
REJECTED = re.compile(r"warning: resuming step (\d+) in (\S+); rejected: (.*)")


class Failure(Exception):
    pass


def expect(condition, what, output=""):
    if not condition:
        raise Failure(f"{what}\n{output}")


class Runner:
    def __init__(self, args, work):
        self.args = args
        self.data = os.path.join(work, "data")
        subprocess.run([args.make_sample, self.data, "--train-per-class", "4", "--val-per-class",
                        "1", "--height", "36", "--width", "36"], check=True,
                       stdout=subprocess.DEVNULL)

    def command(self, *flags, epochs=2):
        launcher = []
        if self.args.ranks > 1:
            launcher = [self.args.mpirun, "-n", str(self.args.ranks), "--oversubscribe"]
        # 40 images in batches of 8: 5 steps an epoch (per rank: 2 ranks x 4 images).
        return launcher + [self.args.train, "--data", self.data, "--model", "lenet", "--epochs",
                           str(epochs), "--batch-size", "8", "--threads", "1", "--workers", "1",
                           "--progress", "lines", "--log-every", "0", *flags]

    def run(self, *flags, epochs=2):
        """(exit status, stdout and stderr together)."""
        done = subprocess.run(self.command(*flags, epochs=epochs), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
        return done.returncode, done.stdout

    def start(self, *flags, epochs):
        return subprocess.Popen(self.command(*flags, epochs=epochs), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def checkpoints(self, directory):
        """Trains one epoch saving steps 2, 4 and 5 into `directory`."""
        rc, out = self.run("--ckpt-dir", directory, "--save-steps", "2", epochs=1)
        expect(rc == 0, "the run that saves the checkpoints failed", out)

    def verify(self, directory):
        done = subprocess.run([self.args.ckpt, "verify", directory], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
        return done.returncode, done.stdout


def trainers(session):
    """The pids of lockstep-train in process session `session` (the ranks of one launch)."""
    train = os.path.realpath(ARGS.train)
    pids = []
    for entry in os.listdir("/proc"):
        try:
            if os.getsid(int(entry)) == session and os.path.realpath(f"/proc/{entry}/exe") == train:
                pids.append(int(entry))
        except (ValueError, OSError):
            continue
    return pids


def wait_for(condition, what):
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        expect(time.monotonic() < deadline, f"no {what} within {TIMEOUT_S} s")
        time.sleep(0.001)


def lock_record(directory):
    try:
        with open(os.path.join(directory, ".lockstep.lock")) as f:
            return dict(line.split(" ", 1) for line in f.read().splitlines() if " " in line)
    except OSError:
        return {}


def stop_when(launch, condition, what):
    """SIGSTOPs every rank of `launch` once `condition` holds and every rank has started."""
    def reached():
        if launch.poll() is not None:
            raise Failure(f"the launch exited {launch.returncode} before the {what}\n"
                          f"{launch.communicate()[0]}")
        return condition() and len(trainers(launch.pid)) == ARGS.ranks

    wait_for(reached, what)
    for pid in trainers(launch.pid):
        os.kill(pid, signal.SIGSTOP)


def case_missing(runner, work):
    typo = os.path.join(work, "chekpoints")
    rc, out = runner.run("--resume", typo)
    expect(rc == 1, f"--resume of a missing directory exited {rc}", out)
    expect(f"error: the checkpoint directory to resume from, {typo}, does not exist" in out,
           "the error does not name the missing directory", out)
    expect("starting fresh" not in out and "epoch 1/" not in out, "it trained anyway", out)
    empty = os.path.join(work, "empty")
    os.mkdir(empty)
    others = os.path.join(work, "others")
    os.mkdir(others)
    for name in ("notes.txt", "lenet_0-1_2.ckpt.tmp", "lenet_0-1_2.ckpt"):  # none committed
        with open(os.path.join(others, name), "w") as f:
            f.write("x")
    for directory in (empty, others):
        rc, out = runner.run("--resume", directory)
        expect(rc == 0, f"--resume of {directory} exited {rc}", out)
        lines = [line for line in out.splitlines() if "resume" in line]
        expect(lines == [f"lockstep: nothing to resume in {directory}; starting fresh"],
               f"not one line saying {directory} starts fresh", out)


def damage(path):
    with open(path, "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 1]))


def case_damaged(runner, work):
    ckpt = os.path.join(work, "ckpt")
    runner.checkpoints(ckpt)
    last = ARGS.ranks - 1
    damage(os.path.join(ckpt, f"lenet_{last}-1_5.ckpt"))
    rc, out = runner.run("--resume", ckpt)
    expect(rc == 0, f"resuming with the newest step damaged exited {rc}", out)
    expect(RESUMED.search(out) and RESUMED.search(out)[1] == "4", "step 4 was not resumed", out)
    m = REJECTED.search(out)
    expect(m and m[1] == "4" and
           f"step 5: rank {last}: {ckpt}/lenet_{last}-1_5.ckpt: CRC mismatch" in m[3],
           "no line naming the rejected file and why", out)

    files = [(rank, step) for rank in range(ARGS.ranks) for step in (2, 4, 5)]
    for rank, step in files:
        if (rank, step) != (last, 5):
            damage(os.path.join(ckpt, f"lenet_{rank}-1_{step}.ckpt"))
    rc, out = runner.run("--resume", ckpt)
    expect(rc == 1, f"resuming with every step damaged exited {rc}", out)
    expect(re.search(r"error: no checkpoint step is complete on every rank: .*no valid step in ",
                     out), "the error does not say that no step is valid", out)
    for rank, step in files:
        expect(f"step {step}: rank {rank}: {ckpt}/lenet_{rank}-1_{step}.ckpt: CRC mismatch" in out,
               f"the error does not name rank {rank}'s file of step {step} and why", out)
    expect("epoch 2/" not in out, "it trained anyway", out)


TAMPERS = {
    # name: (edit of the newest manifest, what verify and resume both say)
    "crc": (lambda m: m["files"][0].update(crc32=m["files"][0]["crc32"] ^ 1),
            r"lenet_0-1_5\.ckpt: CRC [0-9a-f]{8}, the manifest says [0-9a-f]{8}"),
    "fingerprint": (lambda m: m.update(graph_fingerprint="0123456789abcdef"),
                    r"lenet_0-graph\.meta: graph fingerprint [0-9a-f]+, the manifest says "
                    r"0123456789abcdef"),
    "world_size": (lambda m: m.update(world_size=m["world_size"] + 1),
                   r"the manifest lists no file for rank \d"),
    "step": (lambda m: m.update(global_step=str(int(m["global_step"]) + 1)),
             r"lenet_0-1_5\.ckpt: epoch_num/step_num are not the manifest's 1/6"),
}


def case_tampered(runner, work):
    good = os.path.join(work, "good")
    runner.checkpoints(good)
    for name, (edit, reason) in TAMPERS.items():
        ckpt = os.path.join(work, name)
        shutil.copytree(good, ckpt)
        path = os.path.join(ckpt, "lenet-1_5.manifest")
        with open(path) as f:
            manifest = json.load(f)
        edit(manifest)
        with open(path, "w") as f:
            json.dump(manifest, f)
        rc, out = runner.verify(ckpt)
        expect(rc != 0 and re.search(reason, out), f"verify does not reject the {name} edit", out)
        rc, out = runner.run("--resume", ckpt)
        m = REJECTED.search(out)
        expect(rc == 0 and m and m[1] == "4" and re.search(reason, m[3]),
               f"resume does not reject the {name} edit as verify does", out)


def case_two_jobs(runner, work):
    ckpt = os.path.join(work, "ckpt")
    first = runner.start("--ckpt-dir", ckpt, "--save-steps", "2", epochs=4)
    stop_when(first, lambda: "pid" in lock_record(ckpt), "lock taken by the first job")
    holder = int(lock_record(ckpt)["pid"])
    expect(holder in trainers(first.pid), f"the lock names pid {holder}, not the first job's rank")
    rc, out = runner.run("--ckpt-dir", ckpt, "--resume", ckpt, epochs=1)
    for pid in trainers(first.pid):
        os.kill(pid, signal.SIGCONT)
    expect(rc == 1, f"the second job exited {rc}", out)
    expect(f"error: {ckpt} is being written by another job (host {socket.gethostname()}, pid "
           f"{holder})" in out, "the error does not name the first job's host and pid", out)
    first_out = first.communicate(timeout=TIMEOUT_S)[0]
    expect(first.returncode == 0, f"the first job exited {first.returncode}", first_out)
    expect("epoch 4/4" in first_out, "the first job did not finish", first_out)
    rc, out = runner.verify(ckpt)
    expect(rc == 0, "the first job's newest step does not verify", out)


def case_killed(runner, work):
    ckpt = os.path.join(work, "ckpt")
    flags = ("--ckpt-dir", ckpt, "--resume", ckpt, "--save-steps", "2")
    first = runner.start(*flags, epochs=4)
    stop_when(first, lambda: os.path.exists(os.path.join(ckpt, "lenet-1_2.manifest")),
              "first checkpoint")
    for pid in trainers(first.pid):
        os.kill(pid, signal.SIGKILL)
    first.communicate(timeout=TIMEOUT_S)
    rc, out = runner.run(*flags, epochs=4)
    expect(rc == 0, f"the relaunch after SIGKILL exited {rc}", out)
    expect(RESUMED.search(out), "the relaunch did not resume", out)


def directory_state(directory):
    """Each file's name and bytes, but the lock's (the job that last wrote there)."""
    state = {}
    for name in sorted(os.listdir(directory)):
        if name == ".lockstep.lock":
            continue
        with open(os.path.join(directory, name), "rb") as f:
            state[name] = f.read()
    return state


def case_one_run(runner, work):
    ckpt = os.path.join(work, "ckpt")
    runner.checkpoints(ckpt)
    before = directory_state(ckpt)
    rc, out = runner.run("--ckpt-dir", ckpt, "--save-steps", "1", "--keep-max", "1", epochs=1)
    expect(rc == 1, f"a fresh run into another run's directory exited {rc}", out)
    expect(f"error: {ckpt} holds complete steps of another run of lenet (steps 2, 4, 5): resume "
           f"that run from it (lockstep-train --resume {ckpt}), or write this one elsewhere" in out,
           "the error does not name the directory, the steps and the choices", out)
    expect(directory_state(ckpt) == before, "the refused run changed the directory")

    stray = os.path.join(ckpt, "lenet_0-9_999.ckpt")  # its name says a later step
    with open(stray, "w") as f:
        f.write("not ours")
    rc, out = runner.run("--ckpt-dir", ckpt, "--resume", ckpt, "--save-steps", "2", "--keep-max",
                         "1", epochs=2)
    expect(rc == 0 and RESUMED.search(out), f"resuming the run exited {rc}", out)
    expect(os.path.exists(stray), "pruning deleted a file no manifest of the run names")
    manifests = sorted(name for name in os.listdir(ckpt) if name.endswith(".manifest"))
    expect(manifests == ["lenet-2_5.manifest"], f"the run kept {manifests}, not its newest step")
    rc, out = runner.verify(ckpt)
    expect(rc == 0, "the run's newest step does not verify", out)


def rank_pid(session, rank):
    """The pid of lockstep-train's rank `rank` in process session `session`."""
    for pid in trainers(session):
        with open(f"/proc/{pid}/environ", "rb") as f:
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in f.read().split(b"\0"):
                return pid
    raise Failure(f"no rank {rank} among {trainers(session)}")


def case_stopped(runner, work):
    ckpt = os.path.join(work, "ckpt")
    env = dict(os.environ, LOCKSTEP_COLLECTIVE_TIMEOUT_S="3")
    launch = subprocess.Popen(runner.command("--ckpt-dir", ckpt, "--save-steps", "1", epochs=50),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True, env=env)
    # The lock taken, the ranks go on with the agreements before training: collectives outside
    # the graph, where the stopped rank leaves the others waiting.
    wait_for(lambda: "pid" in lock_record(ckpt) and len(trainers(launch.pid)) == ARGS.ranks,
             "lock taken by the job")
    last = ARGS.ranks - 1
    os.kill(rank_pid(launch.pid, last), signal.SIGSTOP)
    try:
        launch.wait(timeout=TIMEOUT_S / 2)  # mpirun's exit: a stopped rank may outlive it
        hung = False
    except subprocess.TimeoutExpired:
        hung = True
    try:
        os.killpg(launch.pid, signal.SIGKILL)  # what is left of the job, stopped or not
    except ProcessLookupError:
        pass  # nothing
    out = launch.communicate()[0]
    expect(not hung, f"the job hung with rank {last} stopped", out)
    expect(launch.returncode != 0, f"the job exited {launch.returncode} with a rank stopped", out)
    expect(re.search(r"error: .*collective #\d+ .* did not finish within 3 s: a rank died or "
                     r"took another path; where each rank is:", out),
           "no report of the collective that timed out", out)
    expect(f"rank {last}: unresponsive" in out or f"rank(s) {last}" in out,
           f"the report does not name the stopped rank {last}", out)


def case_recipe(runner, work):
    ckpt = os.path.join(work, "ckpt")
    runner.checkpoints(ckpt)  # --batch-size 8, --grad-accum 1, a fixed loss scale
    for flag, value, then in (("--batch-size", "16", "8"), ("--grad-accum", "2", "1"),
                              ("--loss-scale", "dynamic", "fixed")):
        command = runner.command("--resume", ckpt)
        if flag in command:
            command[command.index(flag) + 1] = value
        else:
            command += [flag, value]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=TIMEOUT_S)
        expect(done.returncode == 1, f"resuming with {flag} {value} exited {done.returncode}",
               done.stdout)
        expect(f"error: resuming step 5 with {flag} {value} (it was trained with {flag} {then}): "
               "the data position" in done.stdout,
               f"the error does not name {flag}, its value and the step's", done.stdout)
    rc, out = runner.run("--resume", ckpt, "--lr", "0.05")  # a setting that may change
    expect(rc == 0 and RESUMED.search(out), f"resuming with another --lr exited {rc}", out)


CASES = {"missing": case_missing, "damaged": case_damaged, "tampered": case_tampered,
         "two_jobs": case_two_jobs, "killed": case_killed, "one_run": case_one_run,
         "stopped": case_stopped, "recipe": case_recipe}


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--ckpt", required=True)
    parser.add_argument("--make-sample", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("case", choices=sorted(CASES))
    ARGS = parser.parse_args()
    work = tempfile.mkdtemp(prefix="resume_checks_")
    try:
        CASES[ARGS.case](Runner(ARGS, work), work)
    except Failure as failure:
        print(f"FAIL ({ARGS.case}, {ARGS.ranks} rank(s)): {failure}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
