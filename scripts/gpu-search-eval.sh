#!/usr/bin/env bash
# The search's evaluation on the one-GPU testbed (real NCCL, scripts/gpu-testbed.sh): ccltune-bench
# --mode compare,oracle over all-reduce, all-gather and reduce-scatter, 64 KiB-16 MiB, fp32, then the
# same sweep in compare mode again (how much a second run of the search differs), with CCLTUNE_TIMING=max
# (the per-call maximum over ranks instead of the minimum), and, when OLD_PKG names a package of an
# earlier ccltune (scripts/package-gpu.sh DIR), that one in compare mode: before and after in one session.
# RUNS picks and orders the runs (default: oracle-min repeat-min max, then old with OLD_PKG):
# oracle-min, oracle-max (compare,oracle with CCLTUNE_TIMING=min|max), repeat-min, max (compare only), old.
# Results (text and JSON per run) go to OUT (default out/search-eval). Needs the package in .gpu.
# bench/search_report.py turns the JSON files into the report's tables.
# usage: [NP=4] [ITERS=200] [OUT=dir] [OLD_PKG=dir] [RUNS="..."] scripts/gpu-search-eval.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-out/search-eval}"
np="${NP:-4}"
iters="${ITERS:-200}"
mkdir -p "$out"
sweep=(-c allreduce,allgather,reducescatter -b 64K -e 16M -f 4 -d float32 -n "$iters")
run() {  # NAME [env ...] -- bench args
  local name="$1"
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  echo "== $name: $(date -u +%FT%TZ)"
  env "${envs[@]}" bash scripts/gpu-testbed.sh -n "$np" run scripts/gpu-carried-run.sh \
    "${sweep[@]}" --json "$out/$name.json" "$@" >"$out/$name.txt" 2>&1 || echo "== $name failed: $?"
  grep -vE '^\s*$' "$out/$name.txt" | grep -vE 'ccltune summary|^  [a-z]' | tail -25
}
for r in ${RUNS:-oracle-min repeat-min max ${OLD_PKG:+old}}; do
  case "$r" in
    oracle-min) run oracle-min CCLTUNE_TIMING=min -- --mode compare,oracle ;;
    oracle-max) run oracle-max CCLTUNE_TIMING=max -- --mode compare,oracle ;;
    repeat-min) run repeat-min CCLTUNE_TIMING=min -- --mode compare ;;
    max) run max CCLTUNE_TIMING=max -- --mode compare ;;
    old) run old PKG="${OLD_PKG:?OLD_PKG names the earlier package}" -- --mode compare ;;
    *) echo "gpu-search-eval: unknown run $r" >&2; exit 2 ;;
  esac
done
echo "== done $(date -u +%FT%TZ)"
