"""Running Python scripts and Lockstep's binaries as a user does: alone, under mpirun or
lockstep-run, with the package from the build tree."""

import os
import subprocess
import sys

import pytest

BUILD = os.environ.get("LOCKSTEP_BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
EXAMPLES = os.path.join(BUILD, "examples")
SCRIPTS = os.path.join(os.path.dirname(__file__), "..", "examples")


def binary(name):
    path = os.path.join(EXAMPLES, name)
    if not os.path.exists(path):
        pytest.skip(f"{name} is not built")
    return path


def ranks(n, launcher="mpirun"):
    """The command prefix that starts n ranks (nothing for a world of one without a launcher)."""
    if n == 1 and launcher == "mpirun":
        return []
    if launcher == "mpirun":
        return ["mpirun", "-n", str(n), "--oversubscribe", "--quiet"]
    return [binary("lockstep-run"), "-n", str(n)]


def environment():
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.path.join(BUILD, "python")
    return env


def run(command, timeout=300, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env=environment(), **kwargs)


def python(script, *args):
    """The interpreter the package was built for, running `script`."""
    return [sys.executable, script, *args]


def make_sample(root, train_per_class=60, val_per_class=20):
    """The built-in sample data set, smaller: ten classes of 100x100 JPEGs."""
    result = run([binary("lockstep-make-sample"), "--train-per-class", str(train_per_class),
                  "--val-per-class", str(val_per_class), str(root)])
    assert result.returncode == 0, result.stderr
    return str(root)
