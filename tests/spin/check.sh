#!/usr/bin/env bash
# Checks tests/spin/protocol.pml with SPIN: generates the verifier (spin -a), compiles it, runs the
# exhaustive search for assertion violations and invalid end states (deadlocks), and compares the
# outcome with the expectation.
# Usage: check.sh NAME EXPECT [-DMACRO[=VALUE] ...]
#   EXPECT: pass      0 errors and a complete search (the state counts are printed)
#           assert    an assertion violation (the counterexample's trail is replayed and printed)
#           deadlock  an invalid end state (likewise)
# Env: CC (default cc), SPIN_MEMLIM_MB (default 2048), SPIN_KEEP=1 keeps the work directory.
set -euo pipefail
name="$1"
expect="$2"
shift 2
defs=("$@")
here="$(cd "$(dirname "$0")" && pwd)"
case "$expect" in pass | assert | deadlock) ;; *)
  echo "check.sh: EXPECT must be pass, assert or deadlock, not '$expect'" >&2
  exit 2
  ;;
esac
if ! command -v spin >/dev/null; then
  echo "spin $name: the SPIN model checker is not installed (Debian package spin; scripts/install-deps.sh)" >&2
  exit 1
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/ccltune-spin-$name.XXXXXX")"
if [ "${SPIN_KEEP:-0}" = 1 ]; then echo "spin $name: work directory $work"; else trap 'rm -rf "$work"' EXIT; fi
cp "$here/protocol.pml" "$work/"
cd "$work"

start=$(date +%s.%N)
spin -a "${defs[@]}" protocol.pml >spin-a.out 2>&1 || {
  cat spin-a.out
  echo "spin $name: spin -a failed" >&2
  exit 1
}
# SAFETY: no cycle detection (the model has no infinite runs); COLLAPSE: exact state compression.
"${CC:-cc}" -O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM="${SPIN_MEMLIM_MB:-2048}" -o pan pan.c
set +e
./pan -m200000 >pan.out 2>&1
set -e
end=$(date +%s.%N)
secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.out | head -1)
stored=$(sed -n 's/^ *\([0-9e.+]*\) states, stored.*/\1/p' pan.out | head -1)
trans=$(sed -n 's/^ *\([0-9e.+]*\) transitions.*/\1/p' pan.out | head -1)
depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' pan.out | head -1)
mem=$(sed -n 's/^ *\([0-9.]*\)\s*total actual memory usage.*/\1/p' pan.out | head -1)
pans=$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\).*/\1/p' pan.out | head -1)
summary="${stored:-?} states stored, ${trans:-?} transitions, depth ${depth:-?}, ${mem:-?} MB; pan ${pans:-?} s, \
${secs} s with spin -a and cc"
if [ -z "$errors" ]; then
  cat pan.out
  echo "spin $name: pan printed no result" >&2
  exit 1
fi

if [ "$expect" = pass ]; then
  if [ "$errors" != 0 ] || grep -q -e "Search not completed" -e "max search depth too small" pan.out; then
    cat pan.out
    [ -f protocol.pml.trail ] && spin -t "${defs[@]}" protocol.pml | grep -e "MSC:" -e "spin:" | tail -40
    echo "spin $name: FAILED: $errors errors (expected 0 and a complete search); $summary" >&2
    exit 1
  fi
  echo "spin $name: 0 errors, complete search: $summary"
  exit 0
fi

want="assertion violated"
[ "$expect" = deadlock ] && want="invalid end state"
if [ "$errors" = 0 ] || ! grep -q "$want" pan.out || [ ! -f protocol.pml.trail ]; then
  cat pan.out
  echo "spin $name: FAILED: expected a counterexample ($want), got $errors errors; $summary" >&2
  exit 1
fi
grep -m1 -e "$want" pan.out
echo "spin $name: counterexample trail (spin -t, the model's messages, the last 30):"
spin -t "${defs[@]}" protocol.pml >trail.out 2>&1 || true
# The model's messages up to the violation (the rest of the atomic step that failed is cut off).
grep -e "MSC:" -e "spin: .*rror" -e "text of failed" trail.out | sed 's/^ *MSC: /  /' |
  awk '{ print } /text of failed/ { exit }' | tail -30
if [ "$expect" = deadlock ]; then
  echo "  where each process is blocked:"
  grep -E "proc +[0-9]+ \(" trail.out | grep -v "valid end state" | sed 's/^[0-9]*:\s*/    /' | sort -u
fi
echo "spin $name: counterexample found as expected ($want); $summary"
