#!/usr/bin/env bash
# Fault drills on real NCCL (issue 13, docs/results/faults.md): ccltune-drill's ranks (a training-like
# loop that reports NCCL's errors and hangs as a framework's watchdog would), each fault once with
# ccltune preloaded and, where it applies, once without (PRELOAD off on every rank: NCCL alone).
# Faults: a peer or the leader SIGKILLed while ccltune is searching, ncclCommAbort on every rank during
# tuning, one rank without the preload, one rank with CCLTUNE_DISABLE=1, ranks with other CCLTUNE_*
# values, a corrupt import file on the leader or on a peer. After each: every rank's exit status, time
# and last words, and whether the leader's periodic export (CCLTUNE_EXPORT, every second) is whole and
# valid (`ccltune validate`).
#
# Ranks are plain processes (no mpirun, which would end the survivors of a killed rank), started
# through TESTBED_LAUNCHER on the one-GPU testbed: run it as
#   scripts/gpu-testbed.sh -n 4 run scripts/gpu-faults.sh
# or, for an MPS daemon of its own per drill (a process killed in the middle of a kernel can leave the
# daemon unable to create contexts for the next run), once per drill with FAULTS=<drill>; the summary
# file is appended to.
# Environment: PKG (default .gpu; needs bin/ccltune-drill, bin/ccltune, lib/libccltune.so), NCCL_LIB_DIR
# (default: PyTorch's wheel), OUT (default out/faults), FAULTS (which drills, in order; default all),
# KILL_AFTER_S (seconds after every rank has its communicator; default 0.5), HANG_S (the drill's watchdog, default
# 15), RUN_LIMIT_S (default 60), DRILL_ARGS (more ccltune-drill options for every rank, e.g. --watchdog-abort).
set -uo pipefail
cd "$(dirname "$0")/.."
pkg="$(cd "${PKG:-.gpu}" && pwd)"
nccl_dir="${NCCL_LIB_DIR:-$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || echo /usr/local/cuda/lib64)}"
np="${NP:-4}"
out="$(mkdir -p "${OUT:-out/faults}" && cd "${OUT:-out/faults}" && pwd)"
# Each rank starts through the testbed's launcher (its own NCCL_HOSTID; TESTBED_PRELOAD becomes LD_PRELOAD).
launcher="${TESTBED_LAUNCHER:-$PWD/scripts/testbed-rank.sh}"
kill_after="${KILL_AFTER_S:-0.5}"
hang_s="${HANG_S:-15}"
limit="${RUN_LIMIT_S:-60}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
# Appended to: several runs of this script (one per drill, each with an MPS daemon of its own) share it.
summary="$out/summary.txt"
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)) | sed -E 's/([0-9]{3})$/.\1/; s/^\./0./'; }

# drill NAME MODE FAULT [RANK_ENV...] -- [drill args]
#   MODE: ccltune (preloaded on every rank but those FAULT names) or plain (no rank preloaded).
#   FAULT: none | kill:R (SIGKILL rank R KILL_AFTER_S seconds after every rank has its communicator) |
#          nopreload:R | env:R:K=V[,K=V] (extra environment for rank R; several env: allowed)
drill() {
  local name="$1" mode="$2"
  shift 2
  local faults=()
  while [ "$1" != -- ]; do faults+=("$1"); shift; done
  shift
  # A drill run again (the same OUT) keeps the earlier runs' logs: -2, -3, ...
  local dir="$out/$name-$mode" k=2
  while [ -e "$dir" ]; do dir="$out/$name-$mode-$k"; k=$((k + 1)); done
  mkdir -p "$dir"
  local pids=() r
  local t0
  t0=$(date +%s%N)
  for ((r = 0; r < np; r++)); do
    local envs=(RANK="$r" WORLD_SIZE="$np" LOCAL_RANK="$r" LD_LIBRARY_PATH="$pkg/lib:$nccl_dir:${LD_LIBRARY_PATH:-}")
    local preload="$pkg/lib/libccltune.so"
    [ "$mode" = plain ] && preload=""
    if [ "$mode" = ccltune ]; then
      envs+=(CCLTUNE_EXPORT="$dir/export.json" CCLTUNE_EXPORT_INTERVAL=1)
    fi
    local f
    for f in "${faults[@]}"; do
      case "$f" in
        nopreload:"$r") preload="" ;;
        env:"$r":*) IFS=, read -r -a kv <<<"${f#env:"$r":}"; envs+=("${kv[@]}") ;;
      esac
    done
    envs+=(TESTBED_PRELOAD="$preload")
    (
      start=$(date +%s%N)
      env "${envs[@]}" $launcher "$pkg/bin/ccltune-drill" --id-file "$dir/id" --pid-dir "$dir" --hang-s "$hang_s" \
        ${DRILL_ARGS:-} "$@" >"$dir/rank$r.log" 2>&1
      rc=$?
      echo "$rc $(ms_since "$start")" >"$dir/rc.$r"
    ) &
    pids+=($!)
  done
  for f in "${faults[@]}"; do
    case "$f" in
      kill:*)
        local victim="${f#kill:}"
        # Every rank has its communicator and runs the loop; then let it run KILL_AFTER_S seconds.
        for _ in $(seq 1 600); do
          [ "$(cat "$dir"/rank*.log 2>/dev/null | grep -c 'communicator ready')" -ge "$np" ] && break
          sleep 0.05
        done
        sleep "$kill_after"
        grep -h "step" "$dir/rank0.log" | tail -1 >"$dir/before-kill.txt"
        kill -9 "$(cat "$dir/pid.$victim")" && echo "killed rank $victim (pid $(cat "$dir/pid.$victim")) with SIGKILL at" \
          "$(ms_since "$t0") s" >"$dir/fault.txt"
        ;;
    esac
  done
  # Wait for every rank, RUN_LIMIT_S at most; what still runs then is killed and reported as such.
  local deadline=$(($(date +%s) + limit))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.5
  done
  for ((r = 0; r < np; r++)); do
    if [ ! -f "$dir/rc.$r" ] && [ -f "$dir/pid.$r" ]; then
      kill -9 "$(cat "$dir/pid.$r")" 2>/dev/null
      echo "still running after ${limit} s: killed" >"$dir/rc.$r.note"
    fi
  done
  wait
  {
    echo "== $name ($mode) faults: ${faults[*]:-none} args: $*"
    [ -f "$dir/fault.txt" ] && echo "   $(cat "$dir/fault.txt"); rank 0 before: $(cat "$dir/before-kill.txt" 2>/dev/null)"
    for ((r = 0; r < np; r++)); do
      local rc
      rc="$(cat "$dir/rc.$r" 2>/dev/null || echo '?')"
      [ -f "$dir/rc.$r.note" ] && rc="$rc ($(cat "$dir/rc.$r.note"))"
      echo "   rank $r: exit, seconds: $rc | $(grep -E '^drill rank' "$dir/rank$r.log" | tail -1)"
      grep -E 'NCCL WARN|ccltune.*(WARN|stopped|waiting|invalid|import)' "$dir/rank$r.log" | head -3 | sed 's/^/      /'
    done
    if [ "$mode" = ccltune ]; then
      if [ -f "$dir/export.json" ]; then
        local v vrc
        v="$("$pkg/bin/ccltune" validate "$dir/export.json" 2>&1)"
        vrc=$?
        echo "   export: validate rc $vrc: $(echo "$v" | head -3 | tr '\n' ' ')| $(ls -A "$dir" | grep -c '^\.export') temporary files left"
      else
        echo "   export: none written"
      fi
    fi
  } | tee -a "$summary"
}

steps_long=200000
for f in ${FAULTS:-baseline kill-peer kill-leader abort nopreload disable settings import}; do
  case "$f" in
    baseline)
      drill baseline plain -- --steps 3000
      drill baseline ccltune -- --steps 3000
      ;;
    kill-peer)
      drill kill-peer plain kill:2 -- --steps "$steps_long"
      drill kill-peer ccltune kill:2 -- --steps "$steps_long"
      ;;
    kill-leader)
      drill kill-leader plain kill:0 -- --steps "$steps_long"
      drill kill-leader ccltune kill:0 -- --steps "$steps_long"
      ;;
    abort)
      drill abort plain -- --steps 3000 --abort-at-step 150
      drill abort ccltune -- --steps 3000 --abort-at-step 150
      ;;
    nopreload) drill nopreload ccltune nopreload:3 -- --steps 3000 ;;
    disable) drill disable ccltune env:1:CCLTUNE_DISABLE=1 -- --steps 3000 ;;
    settings)
      drill settings ccltune env:0:CCLTUNE_MIN_INTERVAL=16,CCLTUNE_MAX_BATCH=4,CCLTUNE_TIMING=min \
        env:2:CCLTUNE_MIN_GAIN_PCT=10,CCLTUNE_DEBUG=INFO -- --steps 3000
      ;;
    import)
      # A valid import (the baseline's export) everywhere, then a corrupt copy on one rank.
      good="$(ls -d "$out"/baseline-ccltune* 2>/dev/null | tail -1)/export.json"
      if [ ! -f "$good" ]; then
        echo "== import: no baseline export to import (run baseline first)" | tee -a "$summary"
        continue
      fi
      bad="$out/corrupt-import.json"
      head -c "$(($(stat -c %s "$good") / 2))" "$good" >"$bad"
      printf '\n\x00\xff garbage' >>"$bad"
      drill import-corrupt-leader ccltune env:0:CCLTUNE_IMPORT="$bad" env:1:CCLTUNE_IMPORT="$good" \
        env:2:CCLTUNE_IMPORT="$good" env:3:CCLTUNE_IMPORT="$good" -- --steps 3000
      drill import-corrupt-peer ccltune env:0:CCLTUNE_IMPORT="$good" env:1:CCLTUNE_IMPORT="$good" \
        env:2:CCLTUNE_IMPORT="$bad" env:3:CCLTUNE_IMPORT="$good" -- --steps 3000
      ;;
    *) echo "gpu-faults: unknown drill $f" >&2; exit 2 ;;
  esac
done
echo "== done $(date -u +%FT%TZ); summary in $summary"
