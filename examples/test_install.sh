#!/bin/sh
# test_install.sh — installs the built plumb into a temp prefix and builds the examples against
# it the two ways users do (CMake find_package, pkg-config), then runs them. No network.
#
# usage: test_install.sh cmake|pkg-config BUILD_DIR SOURCE_DIR CC CMAKE GENERATOR [SANITIZE]
#   SANITIZE: the build's PLUMB_SANITIZE value ("" if none); the consumer must link the
#   same sanitizer runtime as the static library it links.
set -u
LC_ALL=C
export LC_ALL

mode=$1 build=$2 src=$3 cc=$4 cmake=$5 generator=$6 sanitize=${7:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plumb-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
prefix=$tmp/prefix

die() {
    echo "FAIL [install $mode]: $*" >&2
    exit 1
}

san_flags=""
[ -n "$sanitize" ] && san_flags="-fsanitize=$sanitize -fno-omit-frame-pointer"

"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; die "cmake --install failed"; }
[ -f "$prefix/include/plumb.h" ] || die "not installed: include/plumb.h"
lib=$(find "$prefix" -name libplumb.a | head -n 1)
[ -n "$lib" ] || die "libplumb.a not installed"
[ -x "$prefix/bin/plumb" ] || die "bin/plumb not installed"

# check_hello BINARY: writes a GGUF with the writer API, reads it back.
check_hello() {
    "$1" --write "$tmp/hello.gguf" >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; die "$1 failed"; }
    grep -q "hello.gguf: 2 tensors (plumb " "$tmp/out" || { cat "$tmp/out" >&2; die "wrong output"; }
    "$1" "$tmp/missing.gguf" >"$tmp/out" 2>&1 && die "$1 succeeded on a missing file"
    grep -q "PL_ERR_IO" "$tmp/out" || { cat "$tmp/out" >&2; die "no PL_ERR_IO for a missing file"; }
    # The installed command reads what the installed library wrote.
    "$prefix/bin/plumb" inspect "$tmp/hello.gguf" >"$tmp/out" 2>&1 ||
        { cat "$tmp/out" >&2; die "installed plumb inspect failed"; }
    grep -q "^n_tensors: *2$" "$tmp/out" || { cat "$tmp/out" >&2; die "plumb inspect output"; }
}

# A tiny model for generate and chat, written by the installed command.
"$prefix/bin/plumb" mkmodel "$tmp/tiny.gguf" --preset tiny --type Q8_0 >"$tmp/out" 2>&1 ||
    { cat "$tmp/out" >&2; die "installed plumb mkmodel failed"; }

# check_generate BINARY: streams a few tokens, then reports why it stopped.
check_generate() {
    "$1" "$tmp/tiny.gguf" "Once upon a time" 8 >"$tmp/out" 2>&1 ||
        { cat "$tmp/out" >&2; die "$1 failed"; }
    grep -q "^stop: [a-z_]*$" "$tmp/out" || { cat "$tmp/out" >&2; die "$1: no stop reason line"; }
    "$1" "$tmp/missing.gguf" "x" >"$tmp/out" 2>&1 && die "$1 succeeded on a missing file"
    grep -q "PL_ERR_IO" "$tmp/out" || { cat "$tmp/out" >&2; die "$1: no PL_ERR_IO (missing file)"; }
}

# check_chat BINARY: two user lines; the second turn reuses the first's history (fast path).
check_chat() {
    printf 'hi\nmore\n' | "$1" "$tmp/tiny.gguf" 16 >"$tmp/out" 2>&1 ||
        { cat "$tmp/out" >&2; die "$1 failed"; }
    grep -q "\[turn 1: [a-z]*," "$tmp/out" || { cat "$tmp/out" >&2; die "$1: no first turn"; }
    grep -q "\[turn 2: fast," "$tmp/out" || { cat "$tmp/out" >&2; die "$1: turn 2 not fast"; }
}

check_all() { # DIR: the three examples built there
    check_hello "$1/hello_gguf"
    check_generate "$1/generate"
    check_chat "$1/chat"
}

# The chat page is installed in share/plumb/web (the engine too when `make wasm` built it), and
# the installed `plumb serve` reads the engine from there without --web-dir: an engine file put
# there is what it serves, and its start line names the folder.
web=$prefix/share/plumb/web
for f in index.html app.js worker.js ring.js style.css; do
    [ -f "$web/$f" ] || die "not installed: share/plumb/web/$f"
done
if [ -f "$src/build-wasm/web/plumb-engine.mjs" ]; then
    for f in "$src"/build-wasm/web/plumb-*; do
        cmp -s "$f" "$web/${f##*/}" || die "not installed: share/plumb/web/${f##*/} (make wasm built it)"
    done
else
    printf 'export const installed = "%s";\n' "$tmp" >"$web/plumb-engine.mjs"
fi
"$prefix/bin/plumb" serve -m "$tmp/tiny.gguf" --port 0 -t 1 >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
for _ in $(seq 1 300); do
    grep -q '^plumb serve: listening on http://' "$tmp/serve.out" && break
    kill -0 $serve_pid 2>/dev/null || break
    sleep 0.1
done
base=$(sed -n 's|^plumb serve: listening on \(http://[^ ]*\)$|\1|p' "$tmp/serve.out")
served=""
[ -n "$base" ] && command -v curl >/dev/null 2>&1 &&
    served=$(curl -s -o "$tmp/engine.mjs" -w '%{http_code}' "$base/plumb-engine.mjs")
kill -TERM $serve_pid 2>/dev/null
wait $serve_pid
grep -qF "its wasm engine files from $(cd "$web" && pwd -P)" "$tmp/serve.err" ||
    { cat "$tmp/serve.out" "$tmp/serve.err" >&2; die "installed plumb serve: --web-dir is not $web"; }
if [ -n "$served" ]; then
    [ "$served" = 200 ] && cmp -s "$tmp/engine.mjs" "$web/plumb-engine.mjs" ||
        die "installed plumb serve: GET /plumb-engine.mjs is $served, not the installed file"
fi

case $mode in
cmake)
    # CMAKE_PREFIX_PATH only: find_package must find the package in the prefix by itself.
    "$cmake" -S "$src/examples/consumer" -B "$tmp/consumer" -G "$generator" \
        -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_C_FLAGS="$san_flags" -DCMAKE_EXE_LINKER_FLAGS="$san_flags" \
        >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log" >&2; die "configure failed"; }
    grep -q "plumb [0-9.]* from $prefix/" "$tmp/configure.log" ||
        { cat "$tmp/configure.log" >&2; die "find_package(plumb) did not use $prefix"; }
    "$cmake" --build "$tmp/consumer" >"$tmp/build.log" 2>&1 ||
        { cat "$tmp/build.log" >&2; die "build failed"; }
    check_all "$tmp/consumer"
    ;;
pkg-config)
    command -v pkg-config >/dev/null 2>&1 || { echo "no pkg-config: skipped"; exit 77; }
    PKG_CONFIG_PATH=$(dirname "$lib")/pkgconfig
    export PKG_CONFIG_PATH
    [ -f "$PKG_CONFIG_PATH/plumb.pc" ] || die "plumb.pc not installed in $PKG_CONFIG_PATH"
    # The .pc file is relocatable: it must point into the prefix it was installed to.
    libdir=$(pkg-config --variable=libdir plumb) || die "pkg-config cannot read plumb.pc"
    [ "$(cd "$libdir" 2>/dev/null && pwd -P)" = "$(cd "$(dirname "$lib")" && pwd -P)" ] ||
        die "plumb.pc libdir is '$libdir', not the install prefix's"
    flags=$(pkg-config --cflags --static --libs plumb) || die "pkg-config --static failed"
    mkdir "$tmp/static" "$tmp/plain" || die "mkdir failed"
    for ex in hello_gguf generate chat; do
        # shellcheck disable=SC2086 # the flags are words
        "$cc" -std=c11 -Wall -Wextra -Werror $san_flags -o "$tmp/static/$ex" \
            "$src/examples/$ex.c" $flags >"$tmp/build.log" 2>&1 ||
            { echo "cc ... $flags" >&2; cat "$tmp/build.log" >&2; die "compile $ex failed"; }
    done
    check_all "$tmp/static"
    # Without --static too: libplumb.a is static-only, so its dependencies are public.
    flags=$(pkg-config --cflags --libs plumb) || die "pkg-config failed"
    for ex in hello_gguf generate chat; do
        # shellcheck disable=SC2086
        "$cc" -std=c11 $san_flags -o "$tmp/plain/$ex" "$src/examples/$ex.c" $flags \
            >"$tmp/build.log" 2>&1 ||
            { cat "$tmp/build.log" >&2; die "compile $ex (no --static) failed"; }
    done
    check_all "$tmp/plain"
    ;;
*)
    die "unknown mode '$mode'"
    ;;
esac
echo "install $mode: ok"
