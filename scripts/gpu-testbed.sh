#!/usr/bin/env bash
# The one-GPU testbed: N ranks of one NCCL communicator on a single GPU, real NCCL, real kernels.
# NCCL refuses two ranks of one communicator on one GPU of one host, but accepts them when each rank
# reports a host of its own (NCCL_HOSTID, set per rank by scripts/testbed-rank.sh): the communicator
# then has one rank per "node", and NCCL connects them through its socket transport over loopback.
# The CUDA MPS control daemon, started here for the run and stopped after, lets the ranks' kernels
# share the GPU instead of taking turns in time slices (about 4.5 ms per call without it). This is a
# small, slow, noisy Ethernet-like cluster (NCCL's multi-node paths: PAT, trees across nodes), not
# NVLink; say which testbed a figure comes from.
#
# usage: scripts/gpu-testbed.sh [-n N] [--no-mps] [--preload LIB] mpi PROGRAM [ARGS...]
#        scripts/gpu-testbed.sh [-n N] [--no-mps] [--preload LIB] torchrun SCRIPT.py [ARGS...]
#        scripts/gpu-testbed.sh [-n N] [--no-mps] run COMMAND [ARGS...]
#   mpi: mpirun -np N PROGRAM; torchrun: torchrun --nproc-per-node N SCRIPT.py; run: COMMAND is one of
#   the project's GPU scripts (gpu-carried-run.sh, gpu-fidelity.sh, gpu-torch.sh), which launch the ranks
#   themselves: it gets NP=N and TESTBED_LAUNCHER (scripts/testbed-rank.sh) to put before each rank.
#   -n N           ranks (default 4)
#   --no-mps       do not start MPS (every call then takes a time slice; for comparison only)
#   --preload LIB  LD_PRELOAD for the ranks' programs (e.g. libccltune.so), not for the wrappers
# Environment: NCCL_*, CCLTUNE_*, SIMNCCL_* variables pass through to the ranks; PYTHON (default
# python3) for torchrun jobs. NVLink multicast stays off in every process.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
np=4
mps=1
preload=""
while [ $# -gt 0 ]; do
  case "$1" in
    -n) np="$2"; shift 2 ;;
    --no-mps) mps=0; shift ;;
    --preload) preload="$2"; shift 2 ;;
    --) shift; break ;;
    -*) echo "gpu-testbed.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ] || { [ "$1" != mpi ] && [ "$1" != torchrun ] && [ "$1" != run ]; }; then
  sed -n '12,22p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
kind="$1"
shift

# Every process of the run: multicast off (it can take shared GPUs out of service), sockets over loopback.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}" NCCL_IB_DISABLE="${NCCL_IB_DISABLE:-1}"
export CCLTUNE_TESTBED="one-gpu-${np}-ranks-$([ "$mps" = 1 ] && echo mps || echo no-mps)"
export TESTBED_PRELOAD="$preload"

started_mps=0
stop_mps() {
  if [ "$started_mps" = 1 ]; then
    echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 || true
    echo "gpu-testbed: MPS control daemon stopped"
  fi
}
trap stop_mps EXIT
if [ "$mps" = 1 ]; then
  if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    echo "gpu-testbed: WARNING: nvidia-cuda-mps-control not found: MPS unavailable, the ranks' kernels take turns" \
      "in time slices (about 4.5 ms per call); timings from this run do not describe the testbed" >&2
    export CCLTUNE_TESTBED="one-gpu-${np}-ranks-no-mps"
  elif pgrep -x nvidia-cuda-mps-control >/dev/null 2>&1; then
    echo "gpu-testbed: an MPS control daemon is already running: using it (not stopped after)"
  else
    tmp="$(mktemp -d /tmp/ccltune-mps.XXXXXX)"
    export CUDA_MPS_PIPE_DIRECTORY="$tmp/pipe" CUDA_MPS_LOG_DIRECTORY="$tmp/log"
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
      started_mps=1
      echo "gpu-testbed: MPS control daemon started (pipes in $CUDA_MPS_PIPE_DIRECTORY)"
    else
      echo "gpu-testbed: WARNING: nvidia-cuda-mps-control -d failed: MPS unavailable, the ranks' kernels take" \
        "turns in time slices (about 4.5 ms per call); timings from this run do not describe the testbed" >&2
      export CCLTUNE_TESTBED="one-gpu-${np}-ranks-no-mps"
    fi
  fi
fi
echo "gpu-testbed: $np ranks on one GPU, one NCCL_HOSTID each, NCCL over sockets on ${NCCL_SOCKET_IFNAME} ($CCLTUNE_TESTBED)"

# The launcher runs in the background so that a TERM (a timeout) reaches it: mpirun and torchrun then
# end their ranks, and the EXIT trap stops MPS.
child=0
launch() {
  "$@" &
  child=$!
  trap 'kill -TERM "$child" 2>/dev/null; wait "$child"; exit 143' TERM INT
  set +e
  wait "$child"
  status=$?
  set -e
}
case "$kind" in
  mpi)
    root=()
    [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    pass=()
    for v in $(compgen -e | grep -E '^(NCCL|CCLTUNE|SIMNCCL|CUDA_MPS|TORCH_SYMM|NVSHMEM)_' || true); do pass+=(-x "$v"); done
    pass+=(-x TESTBED_PRELOAD -x LD_LIBRARY_PATH -x PATH)
    launch mpirun -np "$np" --oversubscribe --bind-to none "${root[@]}" "${pass[@]}" "$repo/scripts/testbed-rank.sh" "$@"
    ;;
  torchrun)
    launch torchrun --standalone --nproc-per-node "$np" --no-python "$repo/scripts/testbed-rank.sh" "${PYTHON:-python3}" "$@"
    ;;
  run)
    export NP="$np" TESTBED_LAUNCHER="$repo/scripts/testbed-rank.sh"
    launch "$@"
    ;;
esac
exit "$status"
