#!/usr/bin/env bash
# Interference, channel-budget and overhead measurements on a GPU host (about 6 minutes on 4 GPUs), from a package
# made by scripts/package-gpu.sh and run with scripts/gpu-carried-run.sh (same environment: PKG,
# NCCL_LIB_DIR, NP). Writes into OUT (default: out/):
#   issue3-compare.json               allgather,reducescatter 1M-64M x4, compare, no background load
#   issue3-compare-interference.json  the same with --interference gemm,mem (step mode: each call a
#                                     training step whose compute overlaps it; same iterations)
#   issue3-compare-min32.json         the no-load sweep with communicators created with 32 channels
#                                     (NCCL_MIN_NCHANNELS=32: default and tuned both get the budget)
#   issue3-overhead-preload.json      --mode overhead, ccltune preloaded: host and GPU time per call
#                                     of default / converged / forced, device memory of exploration
#   issue3-overhead-disabled.json     --mode overhead, allreduce 64K, CCLTUNE_DISABLE=1
#   issue3-overhead-nopreload.json    --mode overhead, allreduce 64K, no preload
#   issue3-overhead-ncclenv.json      no preload, NCCL_ALGO/PROTO/MIN+MAX_NCHANNELS set to ccltune's
#                                     converged 64K allreduce config (a cross-check: NCCL's channel
#                                     variables also change the communicator's channel set)
#   issue3-*.log, issue3-steps.txt    console output; seconds and exit status of each step
# SKIP: space-separated step names not to run (e.g. SKIP=compare-min32).
# Exit status: non-zero if any step failed (the others still run). RUNNER replaces
# scripts/gpu-carried-run.sh (RUNNER=bench/sim.sh: a dry run on the simulated cluster, where the
# background load has no effect and there is no device-memory information).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-out}"
mkdir -p "$out"
# NVLink multicast stays off (gpu-carried-run.sh sets these too).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
iters="${ITERS:-100}"
failed=0
: >"$out/issue3-steps.txt"

prefix=issue3
# shellcheck source=scripts/gpu-steps.sh
source scripts/gpu-steps.sh

sweep=(-c allgather,reducescatter -b 1M -e 64M -f 4 --mode compare -n "$iters")
step compare -- "${sweep[@]}" --json "$out/issue3-compare.json"
step compare-interference -- "${sweep[@]}" --interference gemm,mem --json "$out/issue3-compare-interference.json"
step compare-min32 NCCL_MIN_NCHANNELS=32 -- "${sweep[@]}" --json "$out/issue3-compare-min32.json"

step overhead-preload -- -c allreduce,allgather,reducescatter -b 64K -e 16M -f 16 --mode overhead \
  --json "$out/issue3-overhead-preload.json"
step overhead-disabled CCLTUNE_DISABLE=1 -- -c allreduce -b 64K -e 64K --mode overhead \
  --json "$out/issue3-overhead-disabled.json"
step overhead-nopreload PRELOAD=0 -- -c allreduce -b 64K -e 64K --mode overhead \
  --json "$out/issue3-overhead-nopreload.json"

# NCCL's own variables set to the config ccltune converged to for 64 KiB allreduce.
forced_env=$(python3 - "$out/issue3-overhead-preload.json" <<'PY'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(0)
ALGOS = {"tree": "Tree", "ring": "Ring", "collnetdirect": "CollnetDirect", "collnetchain": "CollnetChain",
         "nvls": "NVLS", "nvlstree": "NVLSTree", "pat": "PAT"}
PROTOS = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}
for r in doc.get("results", []):
    c = r.get("config")
    if r["collective"] == "allreduce" and r["bytes"] == 65536 and c and c["algorithm"] in ALGOS:
        env = [f"NCCL_ALGO={ALGOS[c['algorithm']]}", f"NCCL_PROTO={PROTOS[c['protocol']]}"]
        if c["channels"] > 0:
            env += [f"NCCL_MIN_NCHANNELS={c['channels']}", f"NCCL_MAX_NCHANNELS={c['channels']}"]
        print(" ".join(env))
        break
PY
)
if [ -n "$forced_env" ]; then
  echo "$forced_env" >"$out/issue3-overhead-ncclenv.env"
  # shellcheck disable=SC2086
  step overhead-ncclenv PRELOAD=0 $forced_env -- -c allreduce -b 64K -e 64K --mode overhead \
    --json "$out/issue3-overhead-ncclenv.json"
else
  echo "overhead-ncclenv skipped: no non-default converged 64K allreduce config" | tee -a "$out/issue3-steps.txt"
fi
echo "total seconds=$SECONDS" | tee -a "$out/issue3-steps.txt"
exit $failed
