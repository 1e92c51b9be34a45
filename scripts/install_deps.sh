#!/usr/bin/env bash
# Installs every system dependency of Lockstep from Debian. Idempotent: packages already
# present are skipped, so a second run does no network work.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libopenmpi-dev openmpi-bin
  libgloo-dev  # host collectives of jobs started without MPI (torchrun, lockstep-run)
  libprotobuf-dev protobuf-compiler
  libdnnl-dev ocl-icd-opencl-dev libabsl-dev  # oneDNN's CMake config requires OpenCL
  libturbojpeg0-dev libjpeg-dev libpng-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  libisal-dev  # ISA-L: CRC-32C of the TensorBoard event files
  gnuplot-nox  # curves.png of lockstep-train --summary-dir
  python3-protobuf
  python3-dev pybind11-dev python3-numpy  # the Python package lockstep (python/)
  python3-pytest python3-venv  # its tests, and pip install . in a fresh venv
  libonnx-dev  # ONNX schema and checker of lockstep-ckpt export
  python3-onnx python3-opencv  # independent checks of the exported ONNX files (tests)
  clang libclang-rt-dev libomp-dev  # the libFuzzer targets (scripts/fuzz.sh)
  llvm  # llvm-symbolizer: function names in sanitizer reports (scripts/sanitize.sh)
  iproute2  # ip netns and bridges: the simulated hosts of ctest -L hosts
  slurm-wlm munge  # the one-node Slurm cluster of ctest -L slurm
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
