#!/usr/bin/env bash
# Sets everything up and runs the whole test suite: installs the Debian dependencies, configures
# (CUDA parts when /usr/local/cuda is present), builds with warnings as errors, runs CTest. On an
# AVX-512 machine the suite runs again with oneDNN capped at AVX2 on this host only: the 8-channel
# blocked layouts and oneDNN's AVX2 kernels are tested there too, and the tests across simulated
# hosts (mpirun does not forward the variable) run jobs whose hosts have different CPUs. That run
# leaves out the `learning` test (three models trained to an accuracy, three minutes): the op and
# step tests check the AVX2 kernels' numerics, and AVX2 machines run it in full. Then the Python
# package is installed with pip into a fresh venv and tested there (scripts/python_install.sh),
# the suite runs under AddressSanitizer + UBSan and its threaded parts under ThreadSanitizer
# (scripts/sanitize.sh), and the libFuzzer targets, built in the same ASan build, run for 30 s
# each (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd "${LOCKSTEP_BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 900
if grep -q avx512f /proc/cpuinfo; then
  DNNL_MAX_CPU_ISA=AVX2 ctest --output-on-failure -j "$(nproc)" --timeout 900 \
    -LE "interop|slurm|learning"
else
  echo "skipped the DNNL_MAX_CPU_ISA=AVX2 run of the suite: no AVX-512"
fi
cd - >/dev/null  # back to the repository root
bash scripts/python_install.sh  # pip install . in a fresh venv, as a user installs the package
bash scripts/sanitize.sh  # build-asan/ and build-tsan/
bash scripts/fuzz.sh  # the libFuzzer targets, 30 s each, from build-asan/
