#!/usr/bin/env bash
# Two follow-ups of the 2-GPU results (docs/results/h200x2.md), on a GPU host from a scripts/package-gpu.sh
# package run with scripts/gpu-carried-run.sh (same environment: PKG, NCCL_LIB_DIR, NP). Writes into OUT
# (default: out/):
#   repeat-pass-<k>-{disabled,nopreload}.json  --mode overhead, allreduce 64 KiB, CCLTUNE_DISABLE=1 and no
#                                              preload alternating, ROUNDS times (default 3): separates the
#                                              pass-through path's cost from run-to-run variation
#   repeat-search-<k>.{json,log}               reducescatter SIZES (default 4M) fp32, --mode compare,oracle,
#                                              SEARCHES times (default 3), with the leader's search trace
#                                              (CCLTUNE_DEBUG=TRACE, OPT): every config the search
#                                              measured, its estimate, the confirmation and the decision
#   repeat-steps.txt                           seconds and exit status of each step
# Exit status: non-zero if any step failed (the others still run). RUNNER as in gpu-issue3-extra.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-out}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
failed=0
: >"$out/repeat-steps.txt"

prefix=repeat
STEP_TIMEOUT="${STEP_TIMEOUT:-240}"
# shellcheck source=scripts/gpu-steps.sh
source scripts/gpu-steps.sh

for k in $(seq "${ROUNDS:-3}"); do
  step "pass-$k-disabled" CCLTUNE_DISABLE=1 -- -c allreduce -b 64K -e 64K --mode overhead \
    --json "$out/repeat-pass-$k-disabled.json"
  step "pass-$k-nopreload" PRELOAD=0 -- -c allreduce -b 64K -e 64K --mode overhead \
    --json "$out/repeat-pass-$k-nopreload.json"
done
for k in $(seq "${SEARCHES:-3}"); do
  step "search-$k" CCLTUNE_DEBUG=TRACE CCLTUNE_DEBUG_SUBSYS=OPT -- -c reducescatter -b "${SIZES:-4M}" \
    -e "${SIZES_END:-${SIZES:-4M}}" -f 4 -d float32 -n 100 --mode compare,oracle --json "$out/repeat-search-$k.json"
done
echo "total seconds=$SECONDS" | tee -a "$out/repeat-steps.txt"
exit $failed
