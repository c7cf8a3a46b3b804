#!/usr/bin/env bash
# scripts/gpu-faults.sh on the simulated cluster (the drill's watchdog polling NCCL's asynchronous error, as
# --watchdog-abort does): the drills that end without a failure (a normal run,
# ncclCommAbort on every rank during tuning, ranks with other CCLTUNE_* values, a corrupt import on the
# leader and on a peer) must end with every rank's exit status 0 and the leader's export valid; the same
# script runs them on real NCCL (docs/results/faults.md).
# usage: fault_drills.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"
src="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/pkg/lib" "$work/pkg/bin"
ln -s "$build/src/libccltune.so" "$work/pkg/lib/"
ln -s "$build/bench/ccltune-drill" "$build/cli/ccltune" "$work/pkg/bin/"
PKG="$work/pkg" NCCL_LIB_DIR="$build/simnccl" OUT="$work/out" SIMNCCL_TIMEOUT_S=30 HANG_S=20 RUN_LIMIT_S=60 DRILL_ARGS=--watchdog-abort \
  FAULTS="baseline abort settings import" bash "$src/scripts/gpu-faults.sh" >"$work/log" 2>&1 || true
cat "$work/out/summary.txt"
fail=0
runs=$(grep -c '^== ' "$work/out/summary.txt" || true)
[ "$runs" -eq 7 ] || { echo "FAIL: $runs drills ran, 7 expected"; fail=1; }
if grep -E '^   rank [0-9]+: exit, seconds: ' "$work/out/summary.txt" | grep -vE 'seconds: 0 ' >/dev/null; then
  echo "FAIL: a rank did not exit 0"
  fail=1
fi
valid=$(grep -c 'export: validate rc 0: .*valid' "$work/out/summary.txt" || true)
[ "$valid" -eq 5 ] || { echo "FAIL: $valid valid exports, 5 expected"; fail=1; }
grep -q 'import file .*corrupt-import.json does not parse' "$work/out/summary.txt" ||
  { echo "FAIL: the leader's corrupt import was not reported"; fail=1; }
[ "$fail" = 0 ] && echo "fault drills on the simulated cluster: PASS"
exit "$fail"
