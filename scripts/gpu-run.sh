#!/usr/bin/env bash
# ccltune-bench on a GPU host: one process per GPU under mpirun, the job's NCCL, ccltune preloaded.
# On a host with one GPU (and NP unset): 4 ranks on that GPU through the one-GPU testbed
# (scripts/gpu-testbed.sh: MPS, one NCCL_HOSTID per rank, NCCL over sockets), not a 1-rank communicator.
# Builds first unless CCLTUNE_BUILD_DIR points at a finished build. Environment:
#   NCCL_LIB_DIR  directory of the libnccl.so.2 to use (default: the CUDA toolkit's lib64)
#   NP            ranks (default: number of GPUs; 4 on the one-GPU testbed)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${CCLTUNE_BUILD_DIR:-build}"
if [ ! -f "$build/src/libccltune.so" ] || [ ! -x "$build/bench/ccltune-bench" ]; then
  bash scripts/install-deps.sh
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCCLTUNE_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" --target ccltune ccltune-bench
fi
gpus="$(nvidia-smi -L | wc -l)"
if [ -z "${NP:-}" ] && [ "$gpus" = 1 ] && [ -z "${TESTBED_LAUNCHER:-}" ]; then
  echo "gpu-run: one GPU: running 4 ranks on it through the one-GPU testbed (scripts/gpu-testbed.sh)"
  exec bash scripts/gpu-testbed.sh -n 4 run bash scripts/gpu-run.sh "$@"
fi
np="${NP:-$gpus}"
nccl_dir="${NCCL_LIB_DIR:-${CUDA_HOME:-/usr/local/cuda}/lib64}"
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
if [ $# -eq 0 ]; then
  set -- --json gpu-results.json -c allreduce,allgather,reducescatter -b 1M -e 64M -f 4 --mode compare,oracle
fi
preload=(-x LD_PRELOAD="$PWD/$build/src/libccltune.so")
launcher=()
if [ -n "${TESTBED_LAUNCHER:-}" ]; then
  # Under the one-GPU testbed each rank starts through its launcher (its own NCCL_HOSTID), which
  # preloads ccltune into the bench alone.
  export TESTBED_PRELOAD="$PWD/$build/src/libccltune.so"
  preload=(-x TESTBED_PRELOAD $(env | grep -oE '^(NCCL|CUDA_MPS)_[A-Z_]+' | sed 's/^/-x /'))
  launcher=("$TESTBED_LAUNCHER")
fi
# NVLink multicast stays off: it can take shared GPUs out of service.
exec mpirun -np "$np" --oversubscribe "${root[@]}" --bind-to none \
  -x NCCL_NVLS_ENABLE=0 -x TORCH_SYMM_MEM_DISABLE_MULTICAST=1 -x NVSHMEM_DISABLE_NVLS=1 \
  "${preload[@]}" -x LD_LIBRARY_PATH="$nccl_dir:${LD_LIBRARY_PATH:-}" \
  $(env | grep -oE '^CCLTUNE_[A-Z_]+' | sed 's/^/-x /') \
  "${launcher[@]}" "$build/bench/ccltune-bench" "$@"
