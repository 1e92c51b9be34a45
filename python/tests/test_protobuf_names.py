"""lockstep._core shares one process with OpenCV: its .proto files register in protobuf's global
pool under their repository paths ("graph/graph.proto"), so OpenCV's dnn, which registers a bare
"graph.proto", no longer aborts the import ("File already exists in database")."""

import os
import subprocess

import pytest

# Debian's interpreter, whose python3-opencv links the same libprotobuf as _core.
PYTHON = "/usr/bin/python3"


def _run(code):
    # A fresh process each time: the abort kills the interpreter, and import order matters.
    return subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def have_cv2():
    if not os.path.exists(PYTHON) or _run("import cv2").returncode != 0:
        pytest.skip("no OpenCV for /usr/bin/python3 (python3-opencv)")


@pytest.mark.parametrize("code", ["import cv2; import lockstep", "import lockstep; import cv2"])
def test_imports_with_opencv(have_cv2, code):
    result = _run(code)
    assert result.returncode == 0, f"{code!r} exited {result.returncode}:\n{result.stderr}"
