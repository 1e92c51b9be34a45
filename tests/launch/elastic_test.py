#!/usr/bin/env python3
"""Elastic training under real torchrun across two simulated hosts: the job loses a host and goes
on at the smaller world size.

On hosts lockstep-host-a (10.77.0.1) and lockstep-host-b (10.77.0.2), the network namespaces of
tests/hosts/simulated_hosts.sh (which share this machine's file system, so one checkpoint
directory serves both), each runs

  torchrun --nnodes 1:2 --nproc-per-node 2 --max-restarts 3 --rdzv-backend c10d
           --rdzv-endpoint 10.77.0.1:PORT --rdzv-id ID --rdzv-conf <short timeouts>
           --no-python lockstep-train --data S --model lenet --batch-size 16 ... --ckpt-dir D
           --resume D

(torchrun's entry point, torch.distributed.run.main, called once torch is imported and the test
says go: host a first, host b as soon as a serves the rendezvous store, so that both join the first
round within its last call however long the import took), so the job starts at world size 4:
host a's agent serves the c10d rendezvous and, as node 0 of
the rendezvous (nodes are ranked by name), the workers' store (MASTER_ADDR lockstep-host-a,
TORCHELASTIC_USE_AGENT_STORE=True), and every rank's gloo listens on its own host's address.
Some steps in (past a committed step), host b dies: its agent and both of its ranks are
SIGKILLed at once. Host a's ranks lose their peers and fail; host a's agent restarts its worker
group (restart 1), and the c10d rendezvous re-forms without host b once b's heartbeat has
expired (keep_alive_interval x keep_alive_max_attempt) and the last call has passed, at world
size 2 (min 1 node). The new group must resume from at least the newest step committed before the
kill, say that the world size changed (the checkpoint manager's line "resuming step N saved by 4
ranks with 2"), keep the global batch (2 ranks x 8 images, not 4 x 4), and finish; torchrun exits
0, the final step is the last step of the last epoch, written by 2 ranks, and `lockstep-ckpt
verify` passes on it.

Torch comes from PyPI in the venv of tcp_store_interop_test.py (tests/testing/pypi_venv.py; made
here, outside the namespaces, which reach no network); exit 77 (skipped) where it cannot be made or
where the namespaces cannot be made (not root, no ip).

  elastic_test.py --venv V --train T --ckpt C --make-sample S --hosts simulated_hosts.sh [--keep]

Prints what torchrun did and a summary line; exits 0 when everything held.
"""
import argparse
import os
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
from env_launch_test import (SKIPPED, Failure, clean_env, torch_version,  # noqa: E402
                             newest_committed, torchrun_of)

HOST_A, HOST_B = "lockstep-host-a", "lockstep-host-b"
HOST_A_ADDR = "10.77.0.1"  # simulated_hosts.sh: host a is 10.77.0.1
RDZV_PORT = 29400  # free: nothing else listens in a fresh namespace
RUN_ID = "lockstep-elastic"
# Short timeouts, so that the rendezvous re-forms in seconds rather than torchrun's 15 s of
# heartbeats and 30 s of last call: a node is dead after 5 missed heartbeats of 1 s (fewer would
# risk a busy machine's agent being taken for dead), and a round completes 5 s after it has its
# minimum of 1 node (time for the second host to join at the start).
RDZV_CONF = ("join_timeout=60,last_call_timeout=5,close_timeout=10,"
             "keep_alive_interval=1,keep_alive_max_attempt=5")
GLOBAL_BATCH = 16
STEPS_PER_EPOCH = 10  # 16 images per class, 10 classes, a global batch of 16
EPOCHS = 2
SAVE_STEPS = 2
KILL_AFTER_STEP = 7  # host b dies once rank 0 has logged this step (step 6 committed by then)
TIMEOUT_S = 150

STARTED = re.compile(r"started by torchrun: (\d+) ranks, master ([^,]+), run '([^']*)', "
                     r"restart (\d+);")
RESUMED = re.compile(r"resumed at step (\d+), (\d+) epoch\(s\) done")
CHANGED = re.compile(r"resuming step (\d+) saved by (\d+) ranks with (\d+)")
START_LINE = re.compile(r"(\d+) rank\(s\) x (\d+) images on cpu")
STEP_LINE = re.compile(r"^(?:\[[^]]*\] )?epoch: (\d+) step: (\d+), loss is")
# torchrun's own lines (LOGLEVEL=INFO) worth reporting about the re-rendezvous.
AGENT_LINE = re.compile(r"Worker group FAILED|Rendezvous'ing|Detected dead node|"
                        r"marking the rendezvous complete|has joined round|master_addr|"
                        r"master_port|restart_count|group_world_size|\berror\b")
# The rendezvous's debug lines of every heartbeat and sync, left out.
NOISE = re.compile(r"keep-alive|Pending sync|synced its local changes|can't complete rendezvous")
MARKER = "LOCKSTEP_ELASTIC_TEST"
READY = "elastic_test: torch imported"
WAIT_THEN_TORCHRUN = f"""
import logging, os, sys, time
from torch.distributed.run import main
# LOGLEVEL reaches the agent's loggers, not the rendezvous's: its dead nodes and rounds, shown.
logging.getLogger("torch.distributed.elastic.rendezvous").setLevel(logging.DEBUG)
print("{READY}", flush=True)
go = sys.argv.pop(1)
while not os.path.exists(go):
    time.sleep(0.02)
sys.exit(main())
"""
AGENTS = []  # every Agent started, whose output a failure shows


class Agent:
    """One host's torchrun, entered into the host's namespaces; a thread follows its output."""

    def __init__(self, args, state, host, torchrun):
        self.host = host
        self.marker = f"{MARKER}={args.work}/{host}".encode()
        self.go = os.path.join(args.work, f"go-{host}")
        # torchrun's own entry point (torch.distributed.run.main, all that the torchrun script
        # calls), once torch is imported and the test says go: importing torch takes 5 to 40 s on
        # a busy 2-core machine, and the first round must see both hosts within its last call.
        python = os.path.join(os.path.dirname(torchrun), "python")
        cmd = ["bash", args.hosts, "enter", state, host, python, "-c", WAIT_THEN_TORCHRUN,
               self.go,
               "--nnodes", "1:2", "--nproc-per-node", "2", "--max-restarts", "3",
               "--rdzv-backend", "c10d", "--rdzv-endpoint", f"{HOST_A_ADDR}:{RDZV_PORT}",
               "--rdzv-id", RUN_ID, "--rdzv-conf", RDZV_CONF, "--monitor-interval", "0.2",
               "--log-dir", os.path.join(args.work, f"torchelastic-{host}"),
               "--no-python", args.train, "--data", args.data, "--model", "lenet",
               "--batch-size", str(GLOBAL_BATCH), "--epochs", str(EPOCHS), "--threads", "1",
               "--workers", "1", "--save-steps", str(SAVE_STEPS), "--keep-max", "2",
               "--log-every", "1", "--progress", "lines", "--ckpt-dir", args.ckpt_dir,
               "--resume", args.ckpt_dir]
        self.lines = []  # (seconds since the test began, line)
        self.groups = {}  # restart count: (world size, master) of the groups rank 0 started here
        self.group = None  # the newest of them
        self.resumed = {}  # restart count: (global step, epochs done)
        self.changed = {}  # restart count: (step, saved by, resumed with)
        self.per_rank = {}  # restart count: (ranks, images a rank a step)
        self.last_step = 0  # the newest global step rank 0 has logged
        env = clean_env(**{MARKER: f"{args.work}/{host}", "LOGLEVEL": "INFO"})
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace",
                                     start_new_session=True)
        self.began = args.began
        AGENTS.append(self)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            if NOISE.search(line):
                continue
            self.lines.append((time.monotonic() - self.began, line))
            if m := STARTED.search(line):
                self.group = int(m[4])
                self.groups[self.group] = (int(m[1]), m[2])
            elif m := RESUMED.search(line):
                self.resumed[self.group] = (int(m[1]), int(m[2]))
            elif "nothing to resume" in line:
                self.resumed[self.group] = (0, 0)
            elif m := CHANGED.search(line):
                self.changed[self.group] = (int(m[1]), int(m[2]), int(m[3]))
            elif m := START_LINE.search(line):
                self.per_rank[self.group] = (int(m[1]), int(m[2]))
            elif m := STEP_LINE.match(line):
                self.last_step = (int(m[1]) - 1) * STEPS_PER_EPOCH + int(m[2])

    def processes(self):
        """The live processes of this host's job (the agent and its workers, each worker in a
        session of its own), found by the variable MARKER that torchrun passes on."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        continue
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if self.marker in f.read().split(b"\0"):
                        found.append(int(entry))
            except (OSError, IndexError):
                continue
        return found

    def kill(self):
        """The host dies: its agent and every worker, SIGKILLed together."""
        pids = set(self.processes()) | {self.proc.pid}
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        return sorted(pids)

    def output(self, last=80):
        return "".join(f"[{self.host[-1]} {t:6.1f}] {line}" for t, line in self.lines[-last:])



def wait_for(what, condition, agents, deadline):
    while not condition():
        for agent in agents:
            if agent.proc.poll() is not None:
                raise Failure(f"torchrun on {agent.host} exited {agent.proc.returncode} while "
                              f"waiting for {what}")
        if time.monotonic() > deadline:
            raise Failure(f"no {what} within {TIMEOUT_S} s")
        time.sleep(0.02)


def elastic(args, state, torchrun):
    deadline = args.began + TIMEOUT_S
    # Both agents import torch, then host a's starts and serves the c10d store, then host b's
    # joins it at once: both within the first round's last call, so the job starts at world size
    # 4. (Were b's agent to start first, its TCPStore client would back off up to 20 s between
    # tries to connect; were it to join late, the job would start at 2 without it, and torch
    # 2.15's scale-up would leave b's agent waiting 60 s for the master's address of a round that
    # node 0, holding its agent store from round 0, never publishes.)
    a = Agent(args, state, HOST_A, torchrun)
    b = Agent(args, state, HOST_B, torchrun)
    agents = [a, b]
    for agent in agents:
        wait_for(f"torch imported on {agent.host}",
                 lambda: any(READY in line for _, line in agent.lines), agents, deadline)
    open(a.go, "w").close()
    wait_for("the c10d store on host a", lambda: any(
        "hosts the TCP store for the C10d rendezvous backend" in line for _, line in a.lines),
        agents, deadline)
    open(b.go, "w").close()
    wait_for(f"step {KILL_AFTER_STEP} at world size 4",
             lambda: a.group == 0 and a.last_step >= KILL_AFTER_STEP, agents, deadline)
    if a.groups[0][0] != 4:
        raise Failure(f"the job started at world size {a.groups[0][0]}, not 4")
    committed = newest_committed(args.ckpt_dir, STEPS_PER_EPOCH)
    killed_step = a.last_step
    killed_s = time.monotonic() - args.began
    pids = b.kill()
    print(f"{killed_s:.1f} s: host b killed (its agent and ranks, pids {pids}) after step "
          f"{killed_step}, step {committed} committed", flush=True)
    wait_for("a new group on host a", lambda: a.group is not None and a.group > 0, [a], deadline)
    regrouped_s = time.monotonic() - args.began
    try:
        rc = a.proc.wait(max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise Failure(f"torchrun on host a still running after {TIMEOUT_S} s") from None
    a.reader.join(5)
    finished_s = time.monotonic() - args.began
    if rc != 0:
        raise Failure(f"torchrun on host a exited {rc} after host b died")
    return check(args, a, committed, killed_step, killed_s, regrouped_s, finished_s)


def check(args, a, committed, killed_step, killed_s, regrouped_s, finished_s):
    """What the surviving host's output and the checkpoint directory must show."""
    if sorted(a.groups) != [0, 1] or a.groups[1][0] != 2:
        raise Failure(f"the groups were {a.groups} (restart: world size, master), not restart 0 "
                      "at world size 4 and restart 1 at 2")
    resumed = a.resumed.get(1)
    if resumed is None or resumed[0] < committed:
        raise Failure(f"restart 1 resumed at {resumed}, but step {committed} was committed "
                      "before host b died")
    changed = a.changed.get(1)
    if changed is None or changed[1:] != (4, 2) or changed[0] != resumed[0]:
        raise Failure(f"no line 'resuming step {resumed[0]} saved by 4 ranks with 2' from "
                      "restart 1")
    kept = {0: (4, GLOBAL_BATCH // 4), 1: (2, GLOBAL_BATCH // 2)}
    if a.per_rank != kept:
        raise Failure(f"ranks x images a rank: {a.per_rank} (by restart), not {kept}: the global "
                      f"batch of {GLOBAL_BATCH} kept")
    final = newest_committed(args.ckpt_dir, STEPS_PER_EPOCH)
    if final != EPOCHS * STEPS_PER_EPOCH:
        raise Failure(f"the run ends at step {final}, not {EPOCHS * STEPS_PER_EPOCH}")
    # The final step is the 2 ranks' of the last world size: verify reads the world size from its
    # manifest and checks those ranks' files (the departed ranks' older files are no part of it).
    verify = subprocess.run([args.ckpt, "verify", args.ckpt_dir], capture_output=True, text=True)
    if verify.returncode != 0 or "world size 2" not in verify.stdout:
        raise Failure(f"lockstep-ckpt verify {args.ckpt_dir} exited {verify.returncode}:\n"
                      f"{verify.stdout}{verify.stderr}")
    final_files = sorted(n for n in os.listdir(args.ckpt_dir)
                         if n.endswith(f"-{EPOCHS}_{STEPS_PER_EPOCH}.ckpt"))
    if final_files != [f"lenet_{rank}-{EPOCHS}_{STEPS_PER_EPOCH}.ckpt" for rank in (0, 1)]:
        raise Failure(f"the final step's rank files are {final_files}, not ranks 0 and 1's")
    shown = [f"[{t:6.1f}] {line.rstrip()[:240]}" for t, line in a.lines
             if killed_s <= t and (t <= regrouped_s + 2 and (AGENT_LINE.search(line) or
                                                             line.startswith("lockstep:")))]
    print("host a after the kill:\n  " + "\n  ".join(shown[:40]))
    print(verify.stdout.rstrip())
    return (f"elastic (torch {torch_version(args.venv)}): 2 hosts x 2 ranks from step 0; host b "
            f"killed at {killed_s:.0f} s after step {killed_step} (step {committed} committed); "
            f"restart 1 at world size 2 {regrouped_s - killed_s:.1f} s later, resumed at step "
            f"{resumed[0]} with 2 ranks x {GLOBAL_BATCH // 2} images; step {final} at "
            f"{finished_s:.0f} s; verify passed (workers' store {a.groups[0][1]}, then "
            f"{a.groups[1][1]})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", required=True)
    parser.add_argument("--train", required=True, help="lockstep-train")
    parser.add_argument("--ckpt", required=True, help="lockstep-ckpt")
    parser.add_argument("--make-sample", required=True, help="lockstep-make-sample")
    parser.add_argument("--hosts", required=True, help="tests/hosts/simulated_hosts.sh")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    args.began = time.monotonic()
    torchrun = torchrun_of(args.venv)  # outside the namespaces: they reach no PyPI
    if torchrun is None:
        return SKIPPED
    up = subprocess.run(["bash", args.hosts, "up"], stdout=subprocess.PIPE, text=True)
    if up.returncode == SKIPPED:
        return SKIPPED
    if up.returncode != 0:
        print(f"elastic: FAILED: simulated_hosts.sh up exited {up.returncode}")
        return 1
    state = up.stdout.strip()
    args.work = tempfile.mkdtemp(prefix="lockstep-elastic-")  # seen by both hosts
    args.data = os.path.join(args.work, "data")
    args.ckpt_dir = os.path.join(args.work, "ckpt")
    try:
        subprocess.run([args.make_sample, args.data, "--train-per-class", "16",
                        "--val-per-class", "2", "--height", "36", "--width", "36"],
                       check=True, stdout=subprocess.DEVNULL)
        summary = elastic(args, state, torchrun)
    except Failure as failure:
        print(failure)
        for agent in AGENTS:
            print(f"--- torchrun on {agent.host}, its last lines:\n{agent.output()}")
        print(f"elastic: FAILED: {str(failure).splitlines()[0]} (files kept in {args.work})")
        return 1
    finally:
        # Whatever is left on either host goes with its namespaces.
        subprocess.run(["bash", args.hosts, "down", state])
    print(summary)
    if not args.keep:
        shutil.rmtree(args.work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
