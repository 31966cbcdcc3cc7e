#!/usr/bin/env bash
# tools/wasm/build.sh — what `make wasm` runs: the dependencies (tools/wasm/deps.sh), then one
# emcmake build tree per variant (build-wasm/<variant>), collected with the engine module
# (web/plumb-engine.mjs) into build-wasm/web/. No network beyond deps.sh's apt-get source.
#
#   tools/wasm/build.sh [VARIANT...]   simd-threads simd scalar (default), scalar-threads
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${WASM_DIR:-$ROOT/build-wasm}
JOBS=${JOBS:-2}
BUILD_TYPE=${BUILD_TYPE:-Release}
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs} # emscripten's optimizer needs node-acorn
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(simd-threads simd scalar)

flavours=""
for v in "${variants[@]}"; do
  case $v in
    *-threads) flavours="$flavours threads" ;;
    simd | scalar) flavours="$flavours single" ;;
    *) echo "build.sh: unknown variant '$v' (simd-threads simd scalar scalar-threads)" >&2; exit 2 ;;
  esac
done
start=$(date +%s)
DEPS_FLAVOURS=$(tr ' ' '\n' <<<"$flavours" | sort -u | xargs) JOBS=$JOBS \
  "$ROOT/tools/wasm/deps.sh" "$OUT/deps"

mkdir -p "$OUT/web"
for v in "${variants[@]}"; do
  case $v in
    simd-threads) flags=(-DPLUMB_WASM_SIMD=ON -DPLUMB_WASM_THREADS=ON) deps=threads ;;
    simd) flags=(-DPLUMB_WASM_SIMD=ON -DPLUMB_WASM_THREADS=OFF) deps=single ;;
    scalar-threads) flags=(-DPLUMB_WASM_SIMD=OFF -DPLUMB_WASM_THREADS=ON -DPLUMB_WASM128=OFF) deps=threads ;;
    scalar) flags=(-DPLUMB_WASM_SIMD=OFF -DPLUMB_WASM_THREADS=OFF -DPLUMB_WASM128=OFF) deps=single ;;
  esac
  echo "== wasm: $v"
  emcmake cmake -S "$ROOT" -B "$OUT/$v" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" "${flags[@]}" \
    -DPLUMB_WASM_DEPS="$OUT/deps/prefix-$deps" >"$OUT/$v.configure.log" 2>&1 ||
    { tail -30 "$OUT/$v.configure.log" >&2; exit 1; }
  cmake --build "$OUT/$v" -j "$JOBS" --target plumb_web
  cp "$OUT/$v/web/plumb-$v.mjs" "$OUT/$v/web/plumb-$v.wasm" "$OUT/web/"
  [ ! -f "$OUT/$v/web/plumb-$v.worker.js" ] || cp "$OUT/$v/web/plumb-$v.worker.js" "$OUT/web/"
done
cp "$ROOT/web/plumb-engine.mjs" "$OUT/web/"
echo "wasm: ${variants[*]} in $OUT/web ($(($(date +%s) - start)) s)"
