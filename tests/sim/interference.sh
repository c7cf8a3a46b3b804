#!/usr/bin/env bash
# ccltune tunes on the landscape the job really has: the same all-gather on the simulated 4-rank cluster, quiet
# and under the simulated NCCL's interference knob (SIMNCCL_INTERFERENCE=0.5, a compute load that makes every
# channel cost more; docs/simulated-cluster.md). Under load the run must meet the acceptance criteria against
# the loaded landscape's own oracle and converge to fewer channels than the quiet run, while NCCL's default
# (which does not see the load) stays the same config and slows by the knob's factor for its 24 channels.
# Usage: interference.sh LIBCCLTUNE SIMNCCL_DIR BENCH OUTDIR
set -euo pipefail
lib="$1" simdir="$2" bench="$3" out="$4"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
args=(-c allgather -b 64M -e 64M)
SIMNCCL_INTERFERENCE=0 bash "$here/bench_acceptance.sh" "$lib" "$simdir" "$bench" "$out/quiet.json" \
  "${args[@]}" --mode compare >"$out/quiet.log"
SIMNCCL_INTERFERENCE=0.5 bash "$here/bench_acceptance.sh" "$lib" "$simdir" "$bench" "$out/loaded-interference.json" \
  "${args[@]}" --mode compare,oracle | tee "$out/loaded.log"
python3 - "$out/quiet.json" "$out/loaded-interference.json" <<'PY'
import json, sys
(quiet,) = json.load(open(sys.argv[1]))["results"]
(loaded,) = json.load(open(sys.argv[2]))["results"]
qc, lc = quiet["config"], loaded["config"]
print(f"quiet: tuned {quiet['tuned_us']:.2f} us, {qc}; default {quiet['default_us']:.2f} us")
print(f"loaded: tuned {loaded['tuned_us']:.2f} us, {lc}; default {loaded['default_us']:.2f} us, "
      f"oracle {loaded['oracle_us']:.2f} us")
assert qc and qc.get("channels") and lc and lc.get("channels"), (qc, lc)
assert lc["channels"] < qc["channels"], f"under load ccltune kept {lc['channels']} channels (quiet: {qc['channels']})"
# The default runs 24 channels either way: 1 + 0.5 * 24 / 32 = 1.375 slower under load, within the noise.
ratio = loaded["default_us"] / quiet["default_us"]
assert abs(ratio / 1.375 - 1) < 0.08, ratio
print("interference: ok")
PY
