#!/usr/bin/env bash
# Records forced-config landscapes on real NCCL with repeated samples (ccltune-bench --mode landscape,
# bench/landscape.hpp) on the one-GPU testbed (scripts/gpu-testbed.sh), from a package made by
# scripts/package-gpu.sh: the test data of the optimizer and of the simulated NCCL's noise model
# (tests/data/landscapes/). One run per entry of SETS (default "4:0 8:0 4:8"): RANKS:MINCH, MINCH > 0
# creating the communicators with NCCL_MIN_NCHANNELS=MINCH (more channels than the testbed's own 2).
# Environment: OUT (required) receives testbed-<ranks>r[-minMINCH].{txt,samples,log}; PKG (default .gpu);
# SIZES (default "-b 64K -e 16M -f 4"); COLLS (default allreduce,allgather,reducescatter); ROUNDS (3);
# SAMPLES (16); CHANNELS (landscape channels asked, default 8); STEP_TIMEOUT_S (per run, default 240).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${OUT:-}" ] || { echo "gpu-landscapes: set OUT" >&2; exit 2; }
mkdir -p "$OUT"
out="$(cd "$OUT" && pwd)"
for set in ${SETS:-4:0 8:0 4:8}; do
  ranks="${set%%:*}"
  minch="${set##*:}"
  name="testbed-${ranks}r"
  envs=()
  if [ "$minch" != 0 ]; then
    name="${name}-min${minch}"
    envs=(NCCL_MIN_NCHANNELS="$minch")
  fi
  echo "gpu-landscapes: $name"
  # shellcheck disable=SC2086
  env "${envs[@]}" CCLTUNE_SUMMARY=0 timeout -k 10 "${STEP_TIMEOUT_S:-240}" \
    bash scripts/gpu-testbed.sh -n "$ranks" run bash scripts/gpu-carried-run.sh \
    --mode landscape --landscape-out "$out/$name" -c "${COLLS:-allreduce,allgather,reducescatter}" \
    ${SIZES:--b 64K -e 16M -f 4} -d float32 --landscape-rounds "${ROUNDS:-3}" \
    --landscape-samples "${SAMPLES:-16}" --landscape-channels "${CHANNELS:-8}" >"$out/$name.log" 2>&1 ||
    echo "gpu-landscapes: $name failed (exit $?), see $out/$name.log"
  tail -n 3 "$out/$name.log"
done
