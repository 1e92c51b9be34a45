#!/usr/bin/env python3
"""lockstep-train started without MPI, through the env:// contract, ends with checkpoints equal
bit for bit to `mpirun -n 2`'s of the same run (with two ranks every sum is one addition), and
`lockstep-ckpt verify` passes on them.

  env_launch_test.py CASE --train T --ckpt C --reference DIR [--venv V] -- TRAIN_FLAGS...

CASE:
  reference        (the fixture) DIR/data, the sample, made by --make-sample; DIR/mpirun, the
                   checkpoints of `mpirun -n 2 lockstep-train --data DIR/data TRAIN_FLAGS`.
  by_hand          two processes started by hand with RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1
                   and MASTER_PORT (a free port) and nothing else of a launcher, as Kubernetes'
                   PyTorchJob starts its pods: rank 1 first, so that it waits for rank 0's
                   store. Needs no torch.
  torchrun_standalone, torchrun_static, torchrun_own_store
                   real torchrun from PyPI (torch in the venv V, made or found by
                   tests/testing/pypi_venv.py as tcp_store_interop_test.py does; exit 77, skipped,
                   where it cannot be made): `torchrun ... --nproc-per-node=2 --no-python
                   lockstep-train`. Which store the workers meet at (read from torch 2.15's
                   torch/distributed/run.py, elastic/agent/server/{api,local_elastic_agent}.py,
                   elastic/rendezvous/{dynamic_rendezvous,static_tcp_rendezvous}.py):
    standalone     --standalone, which is also what a bare `torchrun --nproc-per-node=N` becomes
                   on one host (torch >= 2.4: static without --master-port and --nnodes 1 turns
                   into c10d at localhost:0), and what --rdzv-backend=c10d does on any host: the
                   c10d rendezvous runs on a TCPStore of its own, and the agent of node 0 serves
                   a second TCPStore (libuv, multi-tenant) on a free port for the workers,
                   MASTER_ADDR being --local-addr or the host's socket.getfqdn() (a name, here
                   'localhost'), TORCHELASTIC_USE_AGENT_STORE=True. Lockstep's ranks are all
                   clients of it.
    static         --master-addr 127.0.0.1 --master-port P (the static rendezvous): the agent of
                   node 0 serves one TCPStore at P that holds both its rendezvous (under the
                   prefix of the run id, 'none' unless --rdzv-id) and the workers' keys,
                   TORCHELASTIC_USE_AGENT_STORE=True; Lockstep's keys are under
                   lockstep/<run id>/<restart>/, apart from the agent's.
    own_store      --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:P with
                   TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1: the agent serves no store for the
                   workers and names a free port, TORCHELASTIC_USE_AGENT_STORE=False, so
                   Lockstep's rank 0 serves its own TcpStoreServer there.
                   A rank 0 that served in the first two would fail on the agent's port in use;
                   one that did not in the third would leave the others waiting for a store.
Prints one line on success; exits 0 when everything held.
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import pypi_venv  # noqa: E402
from pypi_venv import SKIPPED  # noqa: E402

LAUNCH_TIMEOUT_S = 60
# What a launcher sets: none of it may leak into a test from the shell that runs ctest (a test run
# inside an allocation, or under lockstep-run or torchrun itself).
LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                      "MASTER_ADDR", "MASTER_PORT", "LOCKSTEP_RUN")
LAUNCHER_PREFIXES = ("TORCHELASTIC_", "OMPI_COMM_WORLD_", "PMIX_", "PMI_", "SLURM_")


class Failure(Exception):
    pass


def clean_env(**extra):
    env = {name: value for name, value in os.environ.items()
           if name not in LAUNCHER_VARIABLES and not name.startswith(LAUNCHER_PREFIXES)}
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def free_port():
    """A port free now (another process may take it before ours binds it: rare enough)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_of(venv):
    """The venv's torchrun; None (having said why) when the venv cannot be made."""
    if not pypi_venv.ensure(venv, ["torch"], "torch.distributed"):
        return None
    return os.path.join(venv, "bin", "torchrun")


def torch_version(venv):
    done = subprocess.run([pypi_venv.python_of(venv), "-c",
                           "import importlib.metadata as m; print(m.version('torch'))"],
                          capture_output=True, text=True)
    return done.stdout.strip() or "?"


def run(cmd, env, timeout=LAUNCH_TIMEOUT_S):
    """Runs `cmd` in a session of its own; (status, output). A hang is a Failure, and nothing of
    the session outlives it."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise Failure(f"{' '.join(cmd[:3])} ... still running after {timeout} s\n{out[-6000:]}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever it left behind
        except ProcessLookupError:
            pass
    return proc.returncode, out


def compare(ckpt, reference, got):
    """Every rank file of `reference` equals `got`'s, byte for byte; verify passes on `got`."""
    names = sorted(n for n in os.listdir(reference) if n.endswith(".ckpt"))
    got_names = sorted(n for n in os.listdir(got) if n.endswith(".ckpt"))
    if not names or names != got_names:
        raise Failure(f"rank files {got_names} in {got}, {names} in {reference}")
    for name in names:
        a, b = os.path.join(reference, name), os.path.join(got, name)
        with open(a, "rb") as fa, open(b, "rb") as fb:
            if fa.read() != fb.read():
                diff = subprocess.run([ckpt, "diff", a, b], capture_output=True, text=True)
                raise Failure(f"{b} differs from {a}:\n{diff.stdout}{diff.stderr}")
    done = subprocess.run([ckpt, "verify", got], capture_output=True, text=True)
    if done.returncode != 0:
        raise Failure(f"lockstep-ckpt verify {got}:\n{done.stdout}{done.stderr}")
    return names


MANIFEST = re.compile(r"^.+-(\d+)_(\d+)\.manifest$")


def newest_committed(ckpt_dir, steps_per_epoch):
    """The global step of the newest manifest in ckpt_dir (0: none)."""
    steps = [(int(m[1]) - 1) * steps_per_epoch + int(m[2])
             for m in map(MANIFEST.match, os.listdir(ckpt_dir) if os.path.isdir(ckpt_dir) else [])
             if m]
    return max(steps, default=0)


def expect_started_by(out, launcher):
    if f"started by {launcher}: 2 ranks" not in out:
        raise Failure(f"no line 'started by {launcher}: 2 ranks' in the output:\n{out[-6000:]}")


def case_reference(args, train_cmd):
    data = os.path.join(args.reference, "data")
    subprocess.run(["rm", "-rf", args.reference], check=True)
    os.makedirs(args.reference)
    subprocess.run([args.make_sample, data, "--train-per-class", "32", "--val-per-class", "4",
                    "--height", "32", "--width", "32"], check=True, stdout=subprocess.DEVNULL)
    env = clean_env(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    status, out = run([args.mpirun, "-n", "2", "--oversubscribe"] +
                      train_cmd(os.path.join(args.reference, "mpirun")), env)
    if status != 0:
        raise Failure(f"mpirun exited {status}\n{out}")
    return "mpirun -n 2: " + ", ".join(compare(args.ckpt, os.path.join(args.reference, "mpirun"),
                                               os.path.join(args.reference, "mpirun")))


def case_by_hand(args, train_cmd, work):
    port = free_port()
    got = os.path.join(work, "ckpt")
    procs = []
    try:
        for rank in (1, 0):  # a pod that starts before the master's waits for its store
            env = clean_env(RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                            MASTER_PORT=str(port))
            procs.append(subprocess.Popen(train_cmd(got), env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True,
                                          start_new_session=True))
            time.sleep(0.5)
        outs = []
        for proc in procs:
            try:
                out, _ = proc.communicate(timeout=LAUNCH_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise Failure(f"a rank still running after {LAUNCH_TIMEOUT_S} s") from None
            outs.append(out)
            if proc.returncode != 0:
                raise Failure(f"a rank exited {proc.returncode}\n{out}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    expect_started_by(outs[1], "env")
    compare(args.ckpt, os.path.join(args.reference, "mpirun"), got)
    return f"2 processes started by hand (master 127.0.0.1:{port}) = mpirun -n 2"


def case_torchrun(args, train_cmd, work, variant):
    torchrun = torchrun_of(args.venv)
    if torchrun is None:
        return None
    got = os.path.join(work, "ckpt")
    env = clean_env()
    flags = {
        "standalone": ["--standalone"],
        "static": ["--master-addr", "127.0.0.1", "--master-port", str(free_port())],
        "own_store": ["--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{free_port()}"],
    }[variant]
    if variant == "own_store":
        env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
    cmd = [torchrun] + flags + ["--nproc-per-node=2", "--no-python"] + train_cmd(got)
    started = time.monotonic()
    status, out = run(cmd, env)
    if status != 0:
        raise Failure(f"torchrun exited {status}\n{out[-6000:]}")
    expect_started_by(out, "torchrun")
    compare(args.ckpt, os.path.join(args.reference, "mpirun"), got)
    return (f"torch {torch_version(args.venv)}: torchrun {' '.join(flags)} --nproc-per-node=2 "
            f"({time.monotonic() - started:.1f} s) = mpirun -n 2")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", choices=["reference", "by_hand", "torchrun_standalone",
                                         "torchrun_static", "torchrun_own_store"])
    parser.add_argument("--train", required=True)
    parser.add_argument("--ckpt", required=True)
    parser.add_argument("--reference", required=True, help="the reference fixture's directory")
    parser.add_argument("--make-sample", help="lockstep-make-sample (reference)")
    parser.add_argument("--mpirun", default="mpirun", help="(reference)")
    parser.add_argument("--venv", help="the torch venv (torchrun_*)")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.train_flags = argv[split + 1:]  # lockstep-train's flags, after --
    data = os.path.join(args.reference, "data")

    def train_cmd(ckpt_dir):
        return [args.train, "--data", data] + args.train_flags + ["--ckpt-dir", ckpt_dir]

    work = os.path.join(os.path.dirname(args.reference), f"{args.case}.work")
    subprocess.run(["rm", "-rf", work], check=True)
    os.makedirs(work)
    try:
        if args.case == "reference":
            said = case_reference(args, train_cmd)
        elif args.case == "by_hand":
            said = case_by_hand(args, train_cmd, work)
        else:
            said = case_torchrun(args, train_cmd, work, args.case.removeprefix("torchrun_"))
            if said is None:
                return SKIPPED
    except Failure as failure:
        print(f"FAILED: {failure}")
        return 1
    subprocess.run(["rm", "-rf", work], check=True)
    print(said)
    return 0


if __name__ == "__main__":
    sys.exit(main())
