#!/usr/bin/env bash
# Configures a build directory when it needs it: no CMakeCache.txt yet, or one left by a configure that
# failed (a cache without the Makefile a successful configure writes; `make` there would only say
# "No rule to make target 'Makefile'"). A failed configure's cache is removed first so that nothing it
# recorded (a path that was missing then) outlives the problem. Usage: scripts/configure.sh BUILD [cmake args]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$1"
shift
if [[ -f "$build/CMakeCache.txt" && ! -f "$build/Makefile" && ! -f "$build/build.ninja" ]]; then
  echo "configure: $build holds a configure that failed; configuring it afresh" >&2
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$repo" -B "$build" "$@" >/dev/null
fi
