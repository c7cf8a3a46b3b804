#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds (warnings are errors), checks formatting, runs every
# test under ctest (unit tests, simulated-cluster tests under mpirun, the install/package checks; GPU tests
# skip themselves without a GPU), then a short fuzz run of every parser of outside input (scripts/fuzz.sh;
# FUZZ_SECONDS per target, 0 skips), then the ASan + UBSan and TSan builds of the unit, simulated-cluster and
# chaos tests (scripts/sanitize.sh; SANITIZE=0 skips, SANITIZE=address or thread runs one). The last line is
# the verdict: what passed, or the step that failed.
set -euo pipefail
cd "$(dirname "$0")"
step="installing dependencies (scripts/install-deps.sh)"
done_steps=()
trap 'rc=$?; if [ $rc = 0 ]; then echo "test.sh: PASS: ${done_steps[*]}"; else echo "test.sh: FAIL while ${step} (exit ${rc}); passed before it: ${done_steps[*]:-nothing}"; fi' EXIT
bash scripts/install-deps.sh
done_steps+=("dependencies;")
build="${BUILD_DIR:-build}"
step="configuring $build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCCLTUNE_CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" \
  -DCMAKE_COMPILE_WARNING_AS_ERROR=ON >/dev/null
step="building $build (warnings are errors)"
cmake --build "$build" -j"$(nproc)"
done_steps+=("build without warnings;")
step="checking the format (scripts/check-format.sh)"
bash scripts/check-format.sh
done_steps+=("format;")
step="running ctest in $build"
# The unit tests side by side (the sanitizer stages run them so too); the multi-rank and timing tests one at a time.
(cd "$build" && ctest --output-on-failure -L '^unit$' -j"$(nproc)" --timeout 600 "$@")
(cd "$build" && ctest --output-on-failure -LE '^unit$' -j1 --timeout 600 "$@")
done_steps+=("$(cd "$build" && ctest -N "$@" | tail -1 | sed 's/Total Tests: //') ctest tests (unit, sim, chaos, spin, install);")
if [ "${FUZZ_SECONDS:-20}" != 0 ]; then
  step="fuzzing (scripts/fuzz.sh)"
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
  done_steps+=("fuzz ${FUZZ_SECONDS:-20} s per parser;")
fi
step="the sanitizer builds (scripts/sanitize.sh)"
case "${SANITIZE:-1}" in
  0) ;;
  1) bash scripts/sanitize.sh && done_steps+=("ASan+UBSan and TSan.") ;;
  *) bash scripts/sanitize.sh "$SANITIZE" && done_steps+=("$SANITIZE sanitizer.") ;;
esac
