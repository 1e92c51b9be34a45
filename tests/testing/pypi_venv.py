"""A virtual environment with packages from PyPI, made once and kept between runs, for the tests
that check Lockstep's files with the field's own tools (CTest label interop). They skip (exit 77)
when it cannot be made, e.g. where PyPI cannot be reached."""

import os
import subprocess
import sys

SKIPPED = 77


def python_of(venv):
    return os.path.join(venv, "bin", "python")


def ensure(venv, packages, probe_import):
    """True once `venv` can `import probe_import`; False, having said why, when it cannot be made."""
    python = python_of(venv)
    probe = [python, "-c", f"import {probe_import}"]
    if os.path.exists(python) and subprocess.run(probe, capture_output=True).returncode == 0:
        return True
    steps = [[sys.executable, "-m", "venv", "--clear", venv],
             [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              "--timeout", "30"] + packages]
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            print(f"skipped: {' '.join(step)} took over 600 s")
            return False
        if done.returncode != 0:
            print(f"skipped: {' '.join(step)} failed (no PyPI?):\n{done.stderr[-2000:]}")
            return False
    return True
