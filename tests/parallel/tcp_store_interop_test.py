"""Lockstep's rendezvous store speaks PyTorch's c10d TCPStore protocol, both ways (torch from PyPI,
in a venv cached between runs):
  (a) torch.distributed.TCPStore(is_master=True) serves, with its libuv and its classic server, as
      torchrun's agent does; lockstep-test-store-client (parallel/tcp_store.h's TcpStore) sets,
      gets, adds, waits, checks, deletes and times out on it, and torch's own client sees its
      keys under the same names;
  (b) Lockstep's TcpStoreServer serves; torch's client uses every request it knows but the
      queues, Lockstep's client sees the same keys, and a timed-out torch wait leaves it usable.
Exits 77 (skipped) when the venv cannot be made, e.g. without PyPI.

usage: tcp_store_interop_test.py --client lockstep-test-store-client --venv DIR
"""

import argparse
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
import pypi_venv  # noqa: E402
from pypi_venv import SKIPPED  # noqa: E402

PACKAGE = "torch"
HOST = "127.0.0.1"


def run_client(client, port, ops, timeout_ms=10000):
    """Runs lockstep-test-store-client; returns its output lines, failing on an error."""
    done = subprocess.run([client, HOST, str(port), str(timeout_ms)] + ops,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (ops, done.returncode, done.stdout, done.stderr)
    return done.stdout.splitlines()


def check_lockstep_client_on_torch_server(client, use_libuv):
    import torch.distributed as dist
    from datetime import timedelta

    master = dist.TCPStore(HOST, 0, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=30), use_libuv=use_libuv)
    port = master.port
    master.set("from_torch", "torch value")
    master.add("counter", 10)
    lines = run_client(client, port, [
        "set", "from_lockstep", "lockstep value",
        "get", "from_torch",
        "add", "counter", "5",
        "add", "counter", "-2",
        "wait", "from_torch,from_lockstep",
        "check", "from_torch,never",
        "cas", "run_id", "", "job1",
        "cas", "run_id", "", "job2",
        "set", "doomed", "x",
        "delete", "doomed",
        "delete", "doomed",
        "get-times-out", "never",
        "wait-times-out", "from_torch,never",
        "get", "from_torch",  # the cancelled waits left the connection in step
    ], timeout_ms=300)
    expected = [
        "set from_lockstep",
        "get from_torch = torch value",
        "add counter = 15",
        "add counter = 13",
        "wait ok",
        "check = false",
        "cas run_id = job1",
        "cas run_id = job1",
        "set doomed",
        "delete doomed = true",
        "delete doomed = false",
    ]
    assert lines[:len(expected)] == expected, lines
    assert "'never'" in lines[11] and f"{HOST}:{port}" in lines[11], lines[11]
    assert "still missing: 'never'" in lines[12], lines[12]
    assert lines[13] == "get from_torch = torch value", lines
    # torch's client reads what Lockstep's wrote, under the same names.
    assert master.get("from_lockstep") == b"lockstep value"
    assert master.add("counter", 0) == 13
    assert master.get("run_id") == b"job1"
    assert not master.check(["doomed"])

    # A WAIT answered when the key appears, not at once: torch sets it while the client waits.
    waiter = subprocess.Popen([client, HOST, str(port), "10000", "get", "late"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    assert waiter.poll() is None, waiter.communicate()
    master.set("late", "after a while")
    out, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 0 and out == "get late = after a while\n", (out, err)
    backend = "libuv" if use_libuv else "classic"
    print(f"lockstep client on torch's {backend} server (port {port}): {len(lines)} requests as "
          "expected")


def start_lockstep_server(client):
    server = subprocess.Popen([client, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    line = server.stdout.readline()
    assert line.startswith("port "), line
    return server, int(line.split()[1])


def check_torch_client_on_lockstep_server(client, use_libuv):
    import torch.distributed as dist
    from datetime import timedelta

    server, port = start_lockstep_server(client)
    try:
        store = dist.TCPStore(HOST, port, is_master=False, wait_for_workers=False,
                              timeout=timedelta(seconds=10), use_libuv=use_libuv)
        store.set("a", "1")
        store.set("bytes", b"\x00\xff\x01")
        assert store.get("a") == b"1"
        assert store.get("bytes") == b"\x00\xff\x01"
        assert store.add("n", 3) == 3 and store.add("n", -1) == 2
        assert store.check(["a", "n"]) and not store.check(["a", "nope"])
        assert store.compare_set("cas", "", "first") == b"first"
        assert store.compare_set("cas", "wrong", "second") == b"first"
        assert store.compare_set("cas", "first", "second") == b"second"
        store.append("log", "x")
        store.append("log", "y")
        assert store.get("log") == b"xy"
        store.multi_set(["m1", "m2"], ["v1", "v2"])
        assert store.multi_get(["m1", "m2", "a"]) == [b"v1", b"v2", b"1"]
        assert store.delete_key("a") and not store.delete_key("a")
        assert store.num_keys() == 6, store.num_keys()  # bytes n cas log m1 m2

        # A wait that times out (CANCEL_WAIT), then the connection still serves.
        started = time.monotonic()
        try:
            store.wait(["never"], timedelta(milliseconds=300))
            raise AssertionError("wait for a key never set returned")
        except (RuntimeError, dist.DistStoreError) as error:
            assert time.monotonic() - started < 5, error
        assert store.get("n") == b"2"

        # A wait answered when another client sets the key.
        other = dist.TCPStore(HOST, port, is_master=False, wait_for_workers=False,
                              timeout=timedelta(seconds=10))
        setter = threading.Timer(0.3, lambda: other.set("late", "done"))
        setter.start()
        store.wait(["late", "n"])
        setter.join()
        assert store.get("late") == b"done"

        # Lockstep's client sees torch's keys under the same names, and the other way round.
        lines = run_client(client, port, ["get", "log", "add", "n", "10", "set", "ours", "z"])
        assert lines == ["get log = xy", "add n = 12", "set ours"], lines
        assert store.get("ours") == b"z" and store.add("n", 0) == 12
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    assert server.returncode == 0, server.returncode
    print(f"torch client (use_libuv={use_libuv}) on lockstep's server (port {port}): as expected")


def check(client):
    import torch
    print(f"torch {torch.__version__}")
    for use_libuv in (True, False):
        check_lockstep_client_on_torch_server(client, use_libuv)
    for use_libuv in (True, False):
        check_torch_client_on_lockstep_server(client, use_libuv)
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", required=True)
    parser.add_argument("--venv", required=True)
    parser.add_argument("--check", action="store_true", help="(internal) run under the venv")
    args = parser.parse_args()
    if args.check:
        return check(args.client)
    if not pypi_venv.ensure(args.venv, [PACKAGE], "torch.distributed"):
        return SKIPPED
    checker = [pypi_venv.python_of(args.venv), __file__, "--check", "--client", args.client,
               "--venv", args.venv]
    return subprocess.run(checker).returncode


if __name__ == "__main__":
    sys.exit(main())
