# Sourced by the GPU measurement scripts (gpu-issue3-extra.sh, gpu-issue3-repeat.sh): one bench run per step.
# Before sourcing set: out (output directory), prefix (file name prefix), failed=0, and create
# "$out/$prefix-steps.txt". Env: SKIP (step names not to run), STEP_TIMEOUT (seconds per step, none if
# unset), RUNNER (default scripts/gpu-carried-run.sh).
# step NAME [VAR=value ...] -- bench args: runs the bench with those variables, console output into
# "$out/$prefix-NAME.log", seconds and exit status into the steps file, the table lines to stdout.
step() {
  local name="$1"
  shift
  if [[ " ${SKIP:-} " == *" $name "* ]]; then
    echo "$name skipped (SKIP)" | tee -a "$out/$prefix-steps.txt"
    return 0
  fi
  local envs=()
  while [ "$1" != "--" ]; do
    envs+=("$1")
    shift
  done
  shift
  local t0=$SECONDS
  local limit=()
  [ -n "${STEP_TIMEOUT:-}" ] && limit=(timeout "$STEP_TIMEOUT")
  env "${envs[@]}" "${limit[@]}" bash "${RUNNER:-scripts/gpu-carried-run.sh}" "$@" >"$out/$prefix-$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc seconds=$((SECONDS - t0))" | tee -a "$out/$prefix-steps.txt"
  [ $rc -eq 0 ] || failed=1
  grep -v '^#' "$out/$prefix-$name.log" | grep -E '^ +[0-9]' | head -20
  grep -E '^# (background load|device memory|  )' "$out/$prefix-$name.log" | head -20
}
