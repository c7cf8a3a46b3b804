#!/usr/bin/env bash
# The PyTorch evaluation of issue 4 on a GPU host (docs/pytorch.md), from the repository root with the package of
# scripts/package-gpu.sh carried as .gpu/: bench/torch/driver.py runs the DDP, FSDP2, tensor-parallel and
# CUDA-graph workloads as torchrun jobs with and without ccltune (a tuning job, loss-spread jobs with NCCL forced,
# a non-blocking-communicator job, up to 10 interleaved A/B pairs as BUDGET_S allows: 7 on 2×H200), about 7 minutes. Writes into OUT
# (default out/torch), at most 6 files, no folders:
#   pytorch_<gpu>x<N>.json, .md   results (the JSON of issue 4) and the report generated from them
#   ccltune-export.json           the tuning job's export, which every ccltune job of the pairs imported
#   runs.tar.gz                   every job's per-workload JSON (step times, losses, ccltune summaries), command, log
#   driver.log                    the driver's console output
# Environment: PYTHON (default /opt/torch/.venv/bin/python3 if present, else python3), PKG (default .gpu), NP (default: every GPU), BUDGET_S (planned seconds,
# default 420), HARD_STOP_S (no job runs past it, default 540); arguments go to the driver (e.g. --dry-plan).
# Exit status: 0 when every workload completed with ccltune preloaded.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-out/torch}"
mkdir -p "$out"
pkg="${PKG:-.gpu}"
lib="$pkg/lib/libccltune.so"
if [ ! -f "$lib" ]; then
  echo "gpu-torch: $lib not found: make it with scripts/package-gpu.sh and carry $pkg to this host" >&2
  exit 2
fi
# NVLink multicast stays off on the shared GPU hosts (the driver sets these in every job too).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if command -v nm >/dev/null && ! grep -q ' T ccltuneGetSummary$' <<<"$(nm -D "$lib" 2>/dev/null)"; then
  echo "gpu-torch: warning: $lib has no ccltuneGetSummary: steps to converge will be reported as null" >&2
fi
# The GPU hosts' PyTorch lives in /opt/torch/.venv; python3 on PATH elsewhere.
py="${PYTHON:-python3}"
[ -z "${PYTHON:-}" ] && [ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
np=()
[ -n "${NP:-}" ] && np=(--nproc "$NP")
nvidia-smi -L 2>/dev/null | sed 's/ (UUID.*//' | tee "$out/driver.log"
"$py" bench/torch/driver.py --lib "$lib" --out "$out" "${np[@]}" --budget-s "${BUDGET_S:-420}" \
  --hard-stop-s "${HARD_STOP_S:-540}" "$@" 2>&1 | tee -a "$out/driver.log"
rc=${PIPESTATUS[0]}
echo "gpu-torch: driver exit status $rc; files in $out:" | tee -a "$out/driver.log"
ls -la "$out" | tee -a "$out/driver.log"
exit "$rc"
