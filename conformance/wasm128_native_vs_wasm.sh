#!/bin/sh
# wasm128_native_vs_wasm.sh NATIVE_HASH SRC_DIR OUT_DIR — builds conformance/wasm128_hash.c with
# emcc -msimd128, runs it in node and wants its output identical to the native (SIMDe) build's.
set -eu
native=$1 src=$2 out=$3
mkdir -p "$out"
export NODE_PATH="${NODE_PATH:-/usr/share/nodejs}"
# wasm128's files, not wasm128r's (*_relaxed.c: relaxed SIMD, which node 20 computes wrongly;
# web_relaxed runs them in chromium).
set --
for f in "$src"/kernels/wasm128/*.c; do
    case $f in *_relaxed.c) ;; *) set -- "$@" "$f" ;; esac
done
emcc -msimd128 -O2 -ffp-contract=off -sENVIRONMENT=node -sSINGLE_FILE=1 -DPLUMB_WASM128=1 -DPLUMB_X86_SETS=0 \
    -I "$src/engine/include" -I "$src/kernels" "$src/conformance/wasm128_hash.c" \
    "$src/kernels/types.c" "$@" -o "$out/wasm128_hash.js"
"$native" >"$out/native.txt"
# SINGLE_FILE: the module inline, so emscripten 3.1.6's loader never tries node's fetch on a path
node "$out/wasm128_hash.js" >"$out/wasm.txt"
if ! diff "$out/native.txt" "$out/wasm.txt"; then
    echo "wasm128: the wasm build (left: native SIMDe, right: node) computes other bits" >&2
    exit 1
fi
echo "wasm128: native (SIMDe) and wasm (node $(node --version)) outputs identical:"
cat "$out/native.txt"
