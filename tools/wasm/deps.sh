#!/usr/bin/env bash
# tools/wasm/deps.sh — builds the C libraries plumb links (PCRE2, utf8proc, jansson) for wasm32
# with emscripten, from their Debian source packages (apt-get source), with their own build
# systems and no hand edits; installs static libraries + pkg-config files into a prefix.
# Not a downloader of anything but Debian sources: the deb-src entry it adds names the same
# mirrors as the system's deb entries.
#
#   tools/wasm/deps.sh [BUILD_DIR]      (default: the machine's cache, below)
#   tools/wasm/deps.sh --apt            only the deb-src entry
#
# The default BUILD_DIR is a per-user cache, ${XDG_CACHE_HOME:-~/.cache}/plumb/wasm-deps
# (PLUMB_WASM_DEPS_DIR overrides; tools/wasm/build.sh reads the same): libraries built from
# Debian's sources are dependencies, like the packages, so `make deps` builds them once per
# machine, and every clone and worktree then links them instead of building them again.
#
# Two flavours, each in its own prefix: BUILD_DIR/prefix-single (plain wasm32) and
# BUILD_DIR/prefix-threads (-pthread: atomics + bulk memory; wasm-ld refuses to link objects
# without them into a module with shared memory). DEPS_FLAVOURS="single threads" picks.
# Cache: PREFIX/.stamp-<pkg> holds the source version built and the recipe (this script's hash
# and emcc's version); a library whose stamp has a version apt offers (with its sources still
# here) and this recipe is skipped. One build at a time per BUILD_DIR (flock). Needs root (or sudo) only to add the deb-src entry.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
APT_ONLY=0
if [ "${1:-}" = --apt ]; then
  APT_ONLY=1
  shift
fi
DEPS=${1:-${PLUMB_WASM_DEPS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/plumb/wasm-deps}}
mkdir -p "$DEPS"
DEPS=$(cd "$DEPS" && pwd)
SRC=$DEPS/src
JOBS=${JOBS:-2}
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

# emscripten 3.1.6 (Debian): its optimizer needs Debian's node-acorn. Its system libraries are
# prebuilt in a frozen cache (/usr/share/emscripten/cache): nothing is built or written there.
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}


# ---- deb-src: one entry per deb entry of the system's sources, added once ----------------------
have_debsrc() {
  grep -Eqs '^[[:space:]]*Types:.*deb-src|^[[:space:]]*deb-src[[:space:]]' \
    /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources
}
if ! have_debsrc; then
  echo "deps.sh: adding deb-src entries (/etc/apt/sources.list.d/plumb-deb-src.*)"
  tmp=$(mktemp)
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822: copy each stanza whose Types has deb, as deb-src.
    sed -E 's/^Types:.*$/Types: deb-src/' "$f" >>"$tmp"; echo >>"$tmp"
  done
  if [ -s "$tmp" ]; then
    $SUDO install -m 644 "$tmp" /etc/apt/sources.list.d/plumb-deb-src.sources
  fi
  : >"$tmp"
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -nE 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >>"$tmp"
  done
  if [ -s "$tmp" ]; then
    $SUDO install -m 644 "$tmp" /etc/apt/sources.list.d/plumb-deb-src.list
  fi
  rm -f "$tmp"
  $SUDO apt-get update -qq
fi
[ "$APT_ONLY" = 0 ] || { echo "deps.sh: deb-src entries present"; exit 0; }
command -v emcc >/dev/null || { echo "deps.sh: emcc not found (apt-get install emscripten)" >&2; exit 1; }
exec 9>"$DEPS/.lock"
flock 9
# The recipe a stamp records (sed, not head: head closing the pipe early fails it under pipefail).
RECIPE="$(sha256sum "$0" | cut -c1-16) $(emcc --version 2>/dev/null | sed -n '1{s/  */ /g;p}')"
# apt-get source needs dpkg-source (dpkg-dev).
command -v dpkg-source >/dev/null ||
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends dpkg-dev; }

# The source versions apt offers, newest first. The newest that downloads is built (a mirror
# may lack a security update's sources; the release's version is then taken, and reported).
srcvers() { apt-cache showsrc "$1" 2>/dev/null | sed -n 's/^Version: //p' | sort -Vru; }

# fetch PKG VER: apt-get source into SRC/PKG-VER (unpacked, Debian patches applied); prints the
# source directory, or nothing when that version cannot be fetched.
fetch() {
  local pkg=$1 ver=$2 dir
  dir=$(find "$SRC/$pkg-$ver" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | head -1)
  if [ -z "$dir" ]; then
    rm -rf "$SRC/$pkg-$ver"
    mkdir -p "$SRC/$pkg-$ver"
    (cd "$SRC/$pkg-$ver" && apt-get source -qq "$pkg=$ver" >apt-get-source.log 2>&1) ||
      { echo "deps.sh: apt-get source $pkg=$ver failed ($(grep -m1 '^E:' "$SRC/$pkg-$ver/apt-get-source.log"))" >&2
        rm -rf "$SRC/$pkg-$ver"; return 0; }
    dir=$(find "$SRC/$pkg-$ver" -mindepth 1 -maxdepth 1 -type d | head -1)
  fi
  echo "$dir"
}

# build PKG: a CMake project configured with emcmake, static, installed into PREFIX.
build_cmake() {
  local pkg=$1; shift
  local ver stamp dir vers
  vers=$(srcvers "$pkg")
  [ -n "$vers" ] || { echo "deps.sh: no source package $pkg (deb-src missing?)" >&2; exit 1; }
  stamp=$PREFIX/.stamp-$pkg
  # Cached: the stamp names a version apt still offers whose sources are here, built by this
  # recipe.
  local built=""
  [ -f "$stamp" ] && built=$(head -1 "$stamp")
  if [ -n "$built" ] && grep -qxF "$built" <<<"$vers" && [ -d "$SRC/$pkg-$built" ] &&
    [ "$(sed -n 2p "$stamp")" = "$RECIPE" ]; then
    echo "deps.sh: $pkg $built ($FLAVOUR) already built"
    return
  fi
  dir=""
  for ver in $vers; do
    dir=$(fetch "$pkg" "$ver")
    [ -n "$dir" ] && break
  done
  [ -n "$dir" ] || { echo "deps.sh: could not fetch any source of $pkg ($vers)" >&2; exit 1; }
  echo "deps.sh: building $pkg $ver for wasm, $FLAVOUR ($dir)"
  local bdir=$DEPS/build-$FLAVOUR/$pkg log=$DEPS/build-$FLAVOUR/$pkg.log
  rm -rf "$bdir"
  mkdir -p "$bdir"
  CFLAGS="$FLAVOUR_CFLAGS" emcmake cmake -S "$dir" -B "$bdir" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF \
    -DCMAKE_POSITION_INDEPENDENT_CODE=OFF "$@" >"$log" 2>&1 ||
    { tail -30 "$log" >&2; exit 1; }
  { emmake cmake --build "$bdir" -j "$JOBS" && cmake --install "$bdir"; } >>"$log" 2>&1 ||
    { tail -30 "$log" >&2; exit 1; }
  printf '%s\n%s\n' "$ver" "$RECIPE" >"$stamp"
}

for FLAVOUR in ${DEPS_FLAVOURS:-single threads}; do
  case $FLAVOUR in
    single) FLAVOUR_CFLAGS="-O2" ;;
    threads) FLAVOUR_CFLAGS="-O2 -pthread" ;;
    *) echo "deps.sh: unknown flavour $FLAVOUR (single, threads)" >&2; exit 1 ;;
  esac
  PREFIX=$DEPS/prefix-$FLAVOUR
  mkdir -p "$PREFIX"
  # PCRE2: UTF + UCP as the native build; no JIT (it emits machine code: none for wasm).
  build_cmake pcre2 -DPCRE2_SUPPORT_JIT=OFF -DPCRE2_SUPPORT_UNICODE=ON -DPCRE2_BUILD_PCRE2_8=ON \
    -DPCRE2_BUILD_PCRE2_16=OFF -DPCRE2_BUILD_PCRE2_32=OFF -DPCRE2_BUILD_PCRE2GREP=OFF \
    -DPCRE2_BUILD_TESTS=OFF -DPCRE2_STATIC_PIC=OFF
  build_cmake utf8proc -DUTF8PROC_ENABLE_TESTING=OFF
  build_cmake jansson -DJANSSON_BUILD_DOCS=OFF -DJANSSON_WITHOUT_TESTS=ON -DJANSSON_EXAMPLES=OFF \
    -DJANSSON_BUILD_SHARED_LIBS=OFF
done
echo "deps.sh: $DEPS/prefix-{single,threads}/lib/pkgconfig ready"
