#!/usr/bin/env bash
# Runs ccltune-bench from a package made by scripts/package-gpu.sh on a GPU host, one process per
# GPU under mpirun, against the host's NCCL. Environment: PKG (default .gpu), NCCL_LIB_DIR (default:
# PyTorch's wheel), NP (default: GPU count), PRELOAD=0 to run without ccltune. Arguments go to the bench.
# Under scripts/gpu-testbed.sh run (the one-GPU testbed), each rank starts through TESTBED_LAUNCHER.
set -euo pipefail
cd "$(dirname "$0")/.."
pkg="$(cd "${PKG:-.gpu}" && pwd)"
nccl_dir="${NCCL_LIB_DIR:-$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || echo /usr/local/cuda/lib64)}"
np="${NP:-$(nvidia-smi -L | wc -l)}"
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
preload=()
launcher=()
if [ -n "${TESTBED_LAUNCHER:-}" ]; then
  # The one-GPU testbed (scripts/gpu-testbed.sh run ...): each rank starts through its launcher, which
  # gives it a host id of its own and preloads ccltune into the bench alone.
  launcher=("$TESTBED_LAUNCHER")
  [ "${PRELOAD:-1}" = 1 ] && export TESTBED_PRELOAD="$pkg/lib/libccltune.so"
  preload=(-x TESTBED_PRELOAD)
elif [ "${PRELOAD:-1}" = 1 ]; then
  preload=(-x LD_PRELOAD="$pkg/lib/libccltune.so")
fi
# NVLink multicast stays off: it can take shared GPUs out of service.
exec mpirun -np "$np" --oversubscribe "${root[@]}" --bind-to none \
  -x NCCL_NVLS_ENABLE=0 -x TORCH_SYMM_MEM_DISABLE_MULTICAST=1 -x NVSHMEM_DISABLE_NVLS=1 \
  -x LD_LIBRARY_PATH="$pkg/lib:$nccl_dir:${LD_LIBRARY_PATH:-}" "${preload[@]}" \
  $(env | grep -oE '^(CCLTUNE|NCCL|CUDA_MPS)_[A-Z_]+' | sed 's/^/-x /') \
  "${launcher[@]}" "$pkg/bin/ccltune-bench" "$@"
