#!/usr/bin/env bash
# `pip install .` in a fresh virtual environment, as a user installs the Python package, then
# the tracing tests against the installed package (no build tree on the path). The build backend
# (scikit-build-core) comes from PyPI: without a registry the check is skipped with a message.
#
#   scripts/python_install.sh   (after scripts/install_deps.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${LOCKSTEP_BUILD_DIR:-build}/pip-venv
if ! timeout 20 /usr/bin/python3 -c \
    "import urllib.request; urllib.request.urlopen('https://pypi.org/simple/scikit-build-core/', timeout=15)" \
    2>/dev/null; then
  echo "python_install: skipped: PyPI cannot be reached (pip install . needs scikit-build-core)"
  exit 0
fi
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet pytest
# The CUDA parts are the main build's to check; without them this build takes minutes less
# (scikit-build-core passes CMAKE_ARGS on to CMake).
CMAKE_ARGS=-DLOCKSTEP_CUDA=OFF "$venv/bin/pip" install --quiet .
cd "$venv"  # away from the source tree, so that the installed package is the one imported
bin/python -c "import lockstep, os; print('python_install: lockstep', lockstep.__version__, 'from', os.path.dirname(lockstep.__file__))"
bin/python -m pytest -q -p no:cacheprovider "$OLDPWD/python/tests/test_trace.py"
