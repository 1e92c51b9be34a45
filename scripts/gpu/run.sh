#!/usr/bin/env bash
# On a lent GPU machine: unpacks a bundle from scripts/gpu/bundle.sh into /tmp/lockstep and runs
# the command with the bundled libraries and the machine's CUDA, cuDNN, cuBLAS and NCCL (under
# /usr/local/cuda or in the Python packages beside PyTorch) on the library path.
#
# NCCL: every libnccl.so.2 found (/usr/local/cuda*, the system's folders, /opt, the Python
# packages' nvidia/nccl/lib, the bundle's lib/nccl from scripts/gpu/build_nccl.sh, or
# LOCKSTEP_NCCL_LIB=/path/libnccl.so.2 alone) is asked its version
# (ncclGetVersion through python3's ctypes, else the "NCCL version" string in the file) and the
# newest goes first on the library path: several ranks on one GPU need 2.30 or later
# (NCCL_MULTI_RANK_GPU_ENABLE), and the build machines' /usr/local/cuda has 2.28.9. The choice
# is printed and exported as LOCKSTEP_NCCL_LIBRARY and LOCKSTEP_NCCL_VERSION. The bundle's comes
# last, so a machine's NCCL of the same version (a full one) wins a tie; when the bundle's is
# chosen, its lockstep-nccl-build.txt is printed (it lacks ncclReduce and ncclProd).
#
# Open MPI: the bundle's own (ompi/, pmix/; the machine has no mpirun) is made to run from here:
# its install folders, plugin path, help texts and parameter file point into the bundle, mpirun
# (and orted, which a process started without mpirun needs for MPI_Init) is on the PATH, it
# launches on this host alone (no ssh there), and root may run it. Set LOCKSTEP_BUNDLE_DIR to
# unpack elsewhere. Tried on a CPU machine (2026-11-28) with Debian's Open MPI, PMIx, hwloc and
# libevent hidden behind empty mounts and ssh gone: mpirun -n 2 lockstep-train ran with no
# Open MPI file but the bundle's mapped in the ranks or mpirun (/proc/PID/maps), help texts
# printed, and a process started alone got through MPI_Init.
#
# Usage: bash scripts/gpu/run.sh BUNDLE.tar.xz COMMAND...   (binaries are in /tmp/lockstep/bin)
set -euo pipefail
bundle=$1
shift
dir=${LOCKSTEP_BUNDLE_DIR:-/tmp/lockstep}
mkdir -p "$dir"
tar -C "$dir" -xJf "$bundle"

# The version of a libnccl.so.2 ("2.30.7"), or nothing.
nccl_version() {
  local version
  version=$(timeout 30 python3 - "$1" 2>/dev/null <<'EOF'
import ctypes, sys
code = ctypes.c_int()
if ctypes.CDLL(sys.argv[1]).ncclGetVersion(ctypes.byref(code)) == 0:
    c = code.value  # 2.9 on: major*10000 + minor*100 + patch; before: major*1000 + minor*100
    print(f"{c // 10000}.{c // 100 % 100}.{c % 100}" if c >= 20900 else
          f"{c // 1000}.{c // 100 % 10}.{c % 100}")
EOF
  ) || true
  if [[ -z $version ]]; then
    version=$(grep -a -o -m 1 'NCCL version [0-9]*\.[0-9]*\.[0-9]*' "$1" 2>/dev/null | head -n 1 |
      awk '{print $3}') || true
  fi
  echo "$version"
}

# The CUDA libraries the binaries load, wherever the machine has them (one walk of the folders).
found=$(find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu /opt /usr/local/lib \( -name libnccl.so.2 \
  -o -name libcudnn.so.9 -o -name libcublasLt.so.13 -o -name libcudart.so.13 \) 2>/dev/null || true)

nccl_candidates() {
  if [[ -n ${LOCKSTEP_NCCL_LIB:-} ]]; then
    echo "$LOCKSTEP_NCCL_LIB"
    return
  fi
  grep '/libnccl\.so\.2$' <<<"$found" || true
  local package
  package=$(timeout 30 python3 -c \
    'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' \
    2>/dev/null) || true
  [[ -n $package && -e $package/libnccl.so.2 ]] && echo "$package/libnccl.so.2"
  local site
  for site in $(timeout 30 python3 -c 'import site; print(*site.getsitepackages())' \
    2>/dev/null || true); do
    [[ -e $site/nvidia/nccl/lib/libnccl.so.2 ]] && echo "$site/nvidia/nccl/lib/libnccl.so.2"
  done
  # scripts/gpu/build_nccl.sh's, carried by bundle.sh.
  [[ -e $dir/lib/nccl/libnccl.so.2 ]] && echo "$dir/lib/nccl/libnccl.so.2"
  return 0
}

nccl_dir=
best=
declare -A seen=()
while read -r candidate; do
  [[ -n $candidate ]] || continue
  real=$(realpath "$candidate" 2>/dev/null) || continue
  [[ -n ${seen[$real]:-} ]] && continue
  seen[$real]=1
  version=$(nccl_version "$real")
  echo "run.sh: NCCL candidate $candidate: ${version:-version unknown}"
  [[ -n $version ]] || continue
  if [[ -z $best || $(printf '%s\n%s\n' "$best" "$version" | sort -V | tail -n 1) != "$best" ]]; then
    best=$version
    nccl_dir=$(dirname "$candidate")
  fi
done < <(nccl_candidates)
if [[ -n $nccl_dir ]]; then
  echo "run.sh: NCCL $best from $nccl_dir goes first on the library path"
  export LOCKSTEP_NCCL_LIBRARY=$nccl_dir/libnccl.so.2 LOCKSTEP_NCCL_VERSION=$best
  if [[ -f $nccl_dir/lockstep-nccl-build.txt ]]; then
    sed 's/^/run.sh:   /' "$nccl_dir/lockstep-nccl-build.txt"
  fi
else
  echo "run.sh: no libnccl.so.2 with a readable version found"
fi

paths=()
[[ -n $nccl_dir ]] && paths+=("$nccl_dir")
paths+=("$dir/lib")
for name in libcudnn.so.9 libcublasLt.so.13 libcudart.so.13; do
  first=$(grep -F "/$name" <<<"$found" | head -n 1 || true)
  [[ -n $first ]] && paths+=("$(dirname "$first")")
done
LD_LIBRARY_PATH=$(IFS=:; echo "${paths[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
export PATH=$dir/bin:$PATH

if [[ -x $dir/ompi/bin/mpirun ]]; then
  # Open MPI's installation folders (opal/mca/installdirs/env), here rather than Debian's /usr.
  export OPAL_PREFIX=$dir/ompi OPAL_EXEC_PREFIX=$dir/ompi OPAL_BINDIR=$dir/ompi/bin \
    OPAL_LIBDIR=$dir/lib OPAL_PKGLIBDIR=$dir/ompi/lib/openmpi3 OPAL_DATAROOTDIR=$dir/ompi/share \
    OPAL_DATADIR=$dir/ompi/share OPAL_PKGDATADIR=$dir/ompi/share/openmpi \
    OPAL_SYSCONFDIR=$dir/ompi/etc
  # Plugins and parameters from the bundle only (not ~/.openmpi or /etc/openmpi).
  export OMPI_MCA_mca_base_component_path=$dir/ompi/lib/openmpi3
  export OMPI_MCA_mca_base_param_files=$dir/ompi/etc/openmpi-mca-params.conf
  # PMIx's own plugins and help texts.
  export PMIX_PREFIX=$dir/pmix PMIX_PKGLIBDIR=$dir/pmix/lib/pmix PMIX_PKGDATADIR=$dir/pmix/share/pmix \
    PMIX_MCA_mca_base_component_path=$dir/pmix/lib/pmix
  # Commands run as root there; single-copy shared memory (CMA) may be refused in a VM.
  # One host and no ssh there: the launcher that starts processes on this host only.
  export OMPI_MCA_plm=${OMPI_MCA_plm:-isolated}
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
  export PATH=$dir/ompi/bin:$PATH
fi
"$@"
