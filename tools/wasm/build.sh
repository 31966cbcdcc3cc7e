#!/usr/bin/env bash
# tools/wasm/build.sh — what `make wasm` runs: the dependencies (tools/wasm/deps.sh), then one
# emcmake build tree per variant (build-wasm/<variant>), collected with the engine module
# (web/plumb-engine.mjs), the webgpu backend's GPU Worker and kernel set (web/gpu-*.js,
# kernels/webgpu/) into build-wasm/web/. No network beyond deps.sh's apt-get source.
#
#   tools/wasm/build.sh [VARIANT...]   simd-threads simd scalar (default), scalar-threads
# A SIMD tree also links its relaxed-SIMD module (simd-relaxed-threads, simd-relaxed: the same
# objects plus two files compiled by clang-19; PLUMB_WASM_RELAXED=OFF in the environment: not).
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
# The libraries, from the machine's cache (deps.sh: make deps builds them; built here if not).
DEPS_DIR=${PLUMB_WASM_DEPS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/plumb/wasm-deps}
DEPS_FLAVOURS=$(tr ' ' '\n' <<<"$flavours" | sort -u | xargs) JOBS=$JOBS \
  "$ROOT/tools/wasm/deps.sh" "$DEPS_DIR"

mkdir -p "$OUT/web"
for v in "${variants[@]}"; do
  case $v in
    simd-threads) flags=(-DPLUMB_WASM_SIMD=ON -DPLUMB_WASM_THREADS=ON) deps=threads ;;
    simd) flags=(-DPLUMB_WASM_SIMD=ON -DPLUMB_WASM_THREADS=OFF) deps=single ;;
    scalar-threads) flags=(-DPLUMB_WASM_SIMD=OFF -DPLUMB_WASM_THREADS=ON -DPLUMB_WASM128=OFF) deps=threads ;;
    scalar) flags=(-DPLUMB_WASM_SIMD=OFF -DPLUMB_WASM_THREADS=OFF -DPLUMB_WASM128=OFF) deps=single ;;
  esac
  echo "== wasm: $v"
  relaxed=OFF
  case $v in simd*) relaxed=${PLUMB_WASM_RELAXED:-ON} ;; esac
  # Configured once per set of options (emcmake's compiler checks cost seconds a tree); after
  # that, cmake --build re-runs the configuration itself when a CMakeLists.txt changes.
  options="$BUILD_TYPE ${flags[*]} relaxed=$relaxed deps=$DEPS_DIR/prefix-$deps"
  if [ ! -f "$OUT/$v/CMakeCache.txt" ] || [ "$(cat "$OUT/$v/.configured" 2>/dev/null)" != "$options" ]; then
    emcmake cmake -S "$ROOT" -B "$OUT/$v" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" "${flags[@]}" \
      -DPLUMB_WASM_RELAXED="$relaxed" -DPLUMB_WASM_DEPS="$DEPS_DIR/prefix-$deps" \
      >"$OUT/$v.configure.log" 2>&1 || { tail -30 "$OUT/$v.configure.log" >&2; exit 1; }
    echo "$options" >"$OUT/$v/.configured"
  fi
  targets=(plumb_web)
  modules=("$v")
  if [ "$relaxed" = ON ]; then
    targets+=(plumb_web_relaxed)
    modules+=("${v/simd/simd-relaxed}")
  fi
  cmake --build "$OUT/$v" -j "$JOBS" --target "${targets[@]}"
  for m in "${modules[@]}"; do
    cp "$OUT/$v/web/plumb-$m.mjs" "$OUT/$v/web/plumb-$m.wasm" "$OUT/web/"
    [ ! -f "$OUT/$v/web/plumb-$m.worker.js" ] || cp "$OUT/$v/web/plumb-$m.worker.js" "$OUT/web/"
  done
done
cp "$ROOT/web/plumb-engine.mjs" "$ROOT/web/gpu-channel.mjs" "$ROOT/web/gpu-worker.js" "$OUT/web/"
# The webgpu backend's forward pass and kernels (kernels/webgpu/: llama.mjs fetches nothing;
# plumb-webgpu.mjs fetches its .wgsl files next to itself), beside the GPU Worker that loads them.
cp "$ROOT/kernels/webgpu/llama.mjs" "$ROOT/kernels/webgpu/plumb-webgpu.mjs" \
  "$ROOT"/kernels/webgpu/*.wgsl "$OUT/web/"
echo "wasm: $(cd "$OUT/web" && ls plumb-*.wasm | sed 's/^plumb-//; s/\.wasm$//' | xargs) in $OUT/web ($(($(date +%s) - start)) s)"
