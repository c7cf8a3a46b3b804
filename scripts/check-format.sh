#!/usr/bin/env bash
# Fails if a C/C++ source of the project is not clang-formatted (.clang-format at the root).
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cc' '*.hpp' '*.h' '*.c' 2>/dev/null || find . -name '*.cc' -o -name '*.hpp' -o -name '*.h' -o -name '*.c')
[ -n "$files" ] || exit 0
# shellcheck disable=SC2086
clang-format --dry-run --Werror $files
echo "check-format: $(echo "$files" | wc -w) files formatted"
