#!/usr/bin/env bash
# The Debian package: cpack builds it, dpkg installs it (the files land under /usr, the tool runs, the
# library has no dependency beyond glibc), and dpkg removes it leaving none of its files. Needs root (dpkg)
# and a machine where no ccltune package is installed already; exits 77 (skipped) otherwise.
# Usage: deb_test.sh BUILD_DIR
set -euo pipefail
build=$1
if [[ "$(id -u)" != 0 ]]; then echo "deb: not root, skipped"; exit 77; fi
if dpkg-query -W -f='${Status}' ccltune 2>/dev/null | grep -q "install ok"; then
  echo "deb: a ccltune package is installed already, skipped"; exit 77
fi
work=$(mktemp -d)
trap 'dpkg -r ccltune >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
(cd "$work" && cpack --config "$build/CPackConfig.cmake" -B "$work" >/dev/null)
deb=$(ls "$work"/ccltune_*.deb)
dpkg-deb --info "$deb" | grep -E 'Package|Version|Depends'
files=$(dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$')
dpkg -i "$deb" >/dev/null
for f in /usr/lib/libccltune.so /usr/include/ccltune/ccltune.h /usr/bin/ccltune /usr/lib/pkgconfig/ccltune.pc \
         /usr/lib/cmake/ccltune/ccltuneConfig.cmake; do
  [[ -e "$f" ]] || { echo "deb: $f not installed"; exit 1; }
done
/usr/bin/ccltune --version
[[ "$(pkg-config --libs ccltune)" == *-lccltune* ]]
dpkg -r ccltune >/dev/null
for f in $files; do
  [[ ! -e "$f" ]] || { echo "deb: $f left behind after dpkg -r"; exit 1; }
done
echo "deb: $(basename "$deb") installs and removes cleanly ($(echo "$files" | wc -l) files)"
