#!/usr/bin/env bash
# Builds Debian's own Abseil (the source package of the installed libabsl-dev, Debian's patches applied)
# as position-independent static archives into .deps/absl-pic, for libccltune.so to link statically
# with its symbols hidden (cmake/Abseil.cmake). Debian ships static archives too, but built for
# executables: their thread-locals use the local-exec TLS model, which a shared object cannot contain.
# Same version, options and inline namespace as Debian's build, plus -fPIC. About a minute on 2 cores;
# skipped when .deps/absl-pic already holds this version. Needs network access to Debian's archive.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$repo/.deps/absl-pic"
version="$(dpkg-query -W -f='${Version}' libabsl-dev)"
if [[ -f "$dest/VERSION" && "$(cat "$dest/VERSION")" == "$version" ]]; then
  exit 0
fi
echo "build-absl: building Debian's Abseil $version as PIC static archives into $dest"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# A private apt configuration with deb-src entries: the system's sources are left as they are.
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/src"
sed -e 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$work/src.sources" 2>/dev/null ||
  printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb-src\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >"$work/src.sources"
apt_opts=(-o "Dir::Etc::SourceList=$work/src.sources" -o Dir::Etc::SourceParts=/nonexistent
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root -qq)
apt-get "${apt_opts[@]}" update >/dev/null
(cd "$work/src" && apt-get "${apt_opts[@]}" source --download-only "abseil=$version" >/dev/null)
dpkg-source -x "$work"/src/abseil_*.dsc "$work/absl" >"$work/extract.log" 2>&1 || { cat "$work/extract.log"; exit 1; }
cmake -S "$work/absl" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=OFF \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_TESTING=OFF -DABSL_PROPAGATE_CXX_STD=ON \
  -DCMAKE_INSTALL_PREFIX="$dest" -DCMAKE_INSTALL_LIBDIR=lib >"$work/configure.log" 2>&1 ||
  { tail -20 "$work/configure.log"; exit 1; }
cmake --build "$work/build" -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
rm -rf "$dest"
cmake --install "$work/build" >/dev/null
echo "$version" >"$dest/VERSION"
echo "build-absl: done ($(du -sh "$dest" | cut -f1))"
