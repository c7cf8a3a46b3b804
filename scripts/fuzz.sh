#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (AddressSanitizer + UBSan, own build dir) and
# runs each for a while from its committed seed corpus. test.sh runs it for 20 s per target; the long
# runs of docs/results/fuzz.md use the same script with more seconds.
# Usage: scripts/fuzz.sh [seconds per target, default 20] [target ...]
# Env: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_WORK_DIR (default $FUZZ_BUILD_DIR/runs).
# New inputs go to the work dir, never into the committed corpus; a finding is saved there as
# crash-*/leak-*/timeout-* and fails the script with the reproducer's path.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_json_import fuzz_csv_import fuzz_settings_env fuzz_payload_decode)
build=${FUZZ_BUILD_DIR:-build-fuzz}
work=${FUZZ_WORK_DIR:-$build/runs}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DCCLTUNE_FUZZ=ON -DCCLTUNE_CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null
status=0
for t in "${targets[@]}"; do
  dir="$work/$t"
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  start=$(date +%s)
  if "$build/tests/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" "$dir/corpus" "tests/fuzz/corpus/$t" >"$dir/log.txt" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log.txt")
    cov=$(grep -o 'cov: [0-9]*' "$dir/log.txt" | tail -n 1)
    echo "fuzz: $t: $(($(date +%s) - start)) s, $execs runs, $cov, no finding"
  else
    status=1
    echo "fuzz: $t: FINDING (reproducers: $(ls "$dir/artifacts" | tr '\n' ' ')in $dir/artifacts; log $dir/log.txt)"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz_)' "$dir/log.txt" | head -n 5 || true
  fi
done
exit $status
