#!/usr/bin/env bash
# Sanitizer builds and their test runs (docs/results/sanitizers.md). Builds everything with clang and
# CCLTUNE_SANITIZE=address (ASan + UBSan, build-asan) and =thread (TSan, build-tsan), then runs under ctest
# the unit tests, the simulated-cluster tests and the first 200 chaos seeds with the chaos suite's
# planted-bug controls. Any sanitizer report fails the script: reports go to files (log_path), which must
# stay empty, so one from a process whose failure a test expects (a negative control, the rank killed
# mid-export) counts as well. A canary first proves each kind of report is produced and fatal.
# Excluded: label spin (the SPIN model checker; no ccltune code runs), the Python-only unit test
# torch_ab_stats (nothing instrumented runs), label gpu (no GPU), chaos seeds 201-1000 (time: the normal
# build runs them; 200 take 40 s under ASan, 2-2.5 minutes under TSan on 2 cores).
# The fuzz targets have their own ASan + UBSan build (scripts/fuzz.sh).
# Usage: scripts/sanitize.sh [address|thread ...]   (default: both). Env: CUDA_HOME. ctest's own output
# is in <build>/Testing/Temporary/LastTest.log, the reports in <build>/sanitizer-reports/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(address thread)
# clang 14's TSan (and ASan) can fail to map their shadow memory where vm.mmap_rnd_bits is 32 (the default
# of some newer kernels' distributions; it is 28 here); without address randomization they always can. Not
# every container allows turning it off: then run as is.
norand=()
if setarch "$(uname -m)" -R true 2>/dev/null; then norand=(setarch "$(uname -m)" -R); fi
status=0

# run_step NAME COMMAND...: runs one step, prints its wall time, records a failure without stopping.
run_step() {
  local name=$1 start=$SECONDS
  shift
  if "${norand[@]}" "$@"; then
    echo "sanitize: $name: ok, $((SECONDS - start)) s"
  else
    echo "sanitize: $name: FAILED, $((SECONDS - start)) s"
    status=1
  fi
}

# check_reports DIR WHAT: fails the stage if the runtimes wrote any report into DIR.
check_reports() {
  local dir=$1 what=$2 files
  files=$(find "$dir" -type f | sort)
  [ -z "$files" ] && return 0
  echo "sanitize: $what: $(echo "$files" | wc -l) sanitizer report(s):"
  for f in $files; do
    echo "---- $f"
    head -n 60 "$f"
  done
  status=1
}

# set_options BUILD REPORT_DIR: every report aborts its process with a failing exit code and lands in a file
# REPORT_DIR/report.PID, symbolized through the build's wrapper (tests/sanitizers/symbolizer.c). The common
# flags are the same in every variable: the runtimes of one process share them (UBSan's are parsed last).
set_options() {
  local common="external_symbolizer_path=$root/$1/sanitizers/llvm-symbolizer:log_path=$2/report"
  export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:$common"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:$common"
  export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0"
  export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:$common"
}

for kind in "${kinds[@]}"; do
  case $kind in
    address) build="build-asan" ;;
    thread) build="build-tsan" ;;
    *)
      echo "sanitize: unknown kind '$kind' (address or thread)" >&2
      exit 2
      ;;
  esac
  start=$SECONDS
  # No GPU kernels for the bench: the simulated backend runs none, and host sanitizers cannot see them.
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
    -DCCLTUNE_SANITIZE="$kind" -DCCLTUNE_BENCH_KERNELS=OFF -DCCLTUNE_CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" \
    >/dev/null
  nice -n 5 cmake --build "$build" -j"$(nproc)" >"$build/build.log" 2>&1 || {
    tail -n 30 "$build/build.log"
    echo "sanitize: $kind: build failed (log: $build/build.log)"
    exit 1
  }
  echo "sanitize: $kind: built in $((SECONDS - start)) s"

  reports=$root/$build/sanitizer-reports
  rm -rf "$reports" "$build/canary-reports"
  mkdir -p "$reports" "$build/canary-reports"
  # The canary: each planted bug, in a preloaded library, must fail its process with a symbolized report, both
  # in a program started directly (unit tests, chaos workers) and in the 2 ranks of an mpirun that passes the
  # preload with -x (simulated-cluster tests): so options, exit codes, report files and symbolizer reach there.
  if [ "$kind" = address ]; then modes=(heap-overflow leak signed-overflow); else modes=(race); fi
  mpirun_flags=(-np 2 --oversubscribe)
  [ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root)
  canary_lib=$root/$build/sanitizers/libsanitizer_canary.so
  canary_main=$root/$build/sanitizers/sanitizer_canary_main
  for mode in "${modes[@]}"; do
    for launch in direct mpirun; do
      dir=$root/$build/canary-reports/$mode-$launch
      mkdir -p "$dir"
      set_options "$build" "$dir"
      # env sets the preload for the canary program only (setarch is not instrumented and could not load it).
      if [ $launch = direct ]; then
        cmd=(env LD_PRELOAD="$canary_lib" "$canary_main" "$mode") procs=1
      else
        # CANARY_BARRIER: the ranks meet before and after the bug (canary_main.cc), so that mpirun, which kills
        # the others when one rank fails, cannot stop a late rank before it reports.
        rm -rf "$dir.barrier"
        cmd=(mpirun "${mpirun_flags[@]}" -x LD_PRELOAD="$canary_lib" -x CANARY_BARRIER="$dir.barrier" "$canary_main" "$mode")
        procs=2
      fi
      if "${norand[@]}" "${cmd[@]}" >"$dir.log" 2>&1; then
        echo "sanitize: $kind: canary $mode ($launch): the process succeeded; a report would not fail a test"
        status=1
      elif [ "$(grep -ls "canary.cc" "$dir"/* | wc -l)" != $procs ]; then
        echo "sanitize: $kind: canary $mode ($launch): not $procs symbolized report(s) in $dir (log: $dir.log)"
        status=1
      else
        echo "sanitize: $kind: canary $mode ($launch): reported, process failed"
      fi
    done
  done

  set_options "$build" "$reports"
  cd "$build"
  run_step "$kind: unit" ctest -L '^unit$' -E '^torch_' -j"$(nproc)" --timeout 600 --output-on-failure
  # Open MPI's own leaks: the MPI programs of the ASan build carry tests/sanitizers/mpi_lsan.cc (leak checking
  # off inside MPI_Init/MPI_Finalize, Open MPI's modules kept loaded), so lsan.supp names the rest by module
  # with the fast unwinder.
  run_step "$kind: sim" ctest -L '^sim$' -j1 --timeout 600 --output-on-failure
  run_step "$kind: chaos (seeds 1-200, planted controls)" ctest -R '^chaos_seeds_1-200$|^chaos_planted_' -j1 --timeout 600 --output-on-failure
  cd "$root"
  check_reports "$reports" "$kind"
  echo "sanitize: $kind: $((SECONDS - start)) s in all"
done
exit $status
