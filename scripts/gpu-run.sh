#!/usr/bin/env bash
# ccltune-bench on a GPU host: one process per GPU under mpirun, the job's NCCL, ccltune preloaded.
# Builds first unless CCLTUNE_BUILD_DIR points at a finished build. Environment:
#   NCCL_LIB_DIR  directory of the libnccl.so.2 to use (default: the CUDA toolkit's lib64)
#   NP            ranks (default: number of GPUs)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${CCLTUNE_BUILD_DIR:-build}"
if [ ! -f "$build/src/libccltune.so" ] || [ ! -x "$build/bench/ccltune-bench" ]; then
  bash scripts/install-deps.sh
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCCLTUNE_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" --target ccltune ccltune-bench
fi
np="${NP:-$(nvidia-smi -L | wc -l)}"
nccl_dir="${NCCL_LIB_DIR:-${CUDA_HOME:-/usr/local/cuda}/lib64}"
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
if [ $# -eq 0 ]; then
  set -- --json gpu-results.json -c allreduce,allgather,reducescatter -b 1M -e 64M -f 4 --mode compare,oracle
fi
# NVLink multicast stays off: it can take shared GPUs out of service.
exec mpirun -np "$np" --oversubscribe "${root[@]}" --bind-to none \
  -x NCCL_NVLS_ENABLE=0 -x TORCH_SYMM_MEM_DISABLE_MULTICAST=1 -x NVSHMEM_DISABLE_NVLS=1 \
  -x LD_PRELOAD="$PWD/$build/src/libccltune.so" -x LD_LIBRARY_PATH="$nccl_dir:${LD_LIBRARY_PATH:-}" \
  -x CCLTUNE_DEBUG -x CCLTUNE_EXPORT -x CCLTUNE_IMPORT \
  "$build/bench/ccltune-bench" "$@"
