#!/usr/bin/env bash
# perf_web.sh — `make perf-web`: installs the pinned npm packages (puppeteer-core, @wllama/wllama)
# into build/perf-web-npm, makes the larger model (qwen2-0.5b Q4_0, plumb mkmodel) into
# build/perf-web-models, and for the memory rows a 1B Q8_0 and a 3B-shaped Q4_K_M (1.3 and 1.9 GB;
# MEM_MODELS=a,b for others, MEM_MODELS= for none), then runs perf/perf_web.mjs (report:
# perf/reports/<date>-<sha>-web.{md,json,jsonl}).
# Usage: perf/perf_web.sh [-b BUILD]   env: ROUNDS N THREADS MODELS MEM_MODELS GROUP_TIMEOUT_MS NATIVE_KERNELS OUT WEB_B ENGINES
# SMOKE=1 (see perf_web.mjs). Exit 0 with a full report, 3 with a partial one (a group timed out or
# failed; its rows so far are in it), 2 with a FAIL line when node, npm, chromium, build-wasm/web or
# plumb is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=build
[ "${1:-}" = -b ] && BUILD=$2
fail() { echo "FAIL: $1"; exit 2; }
# A missing prerequisite: under ctest (SMOKE=1) a SKIP (77), unless PLUMB_NO_SKIP=1.
missing() {
  if [ "${SMOKE:-}" = 1 ] && [ "${PLUMB_NO_SKIP:-}" != 1 ]; then echo "SKIP: $1"; exit 77; fi
  fail "$1"
}
command -v node >/dev/null || missing "node not found (Debian: nodejs)"
command -v npm >/dev/null || missing "npm not found (Debian: npm)"
[ -x "${PLUMB_CHROMIUM:-/usr/bin/chromium}" ] || missing "chromium not found (Debian: chromium; or PLUMB_CHROMIUM=PATH)"
[ -f build-wasm/web/plumb-engine.mjs ] && [ -f build-wasm/web/plumb-simd-threads.wasm ] ||
  missing "build-wasm/web has no simd-threads engine (run \`make wasm\`)"
PLUMB=${PLUMB:-$BUILD/tools/plumb}
[ -x "$PLUMB" ] || missing "$PLUMB missing (build plumb first)"
NPM=$(cd "$BUILD" && pwd)/perf-web-npm
PLUMB_NO_SKIP=1 conformance/serve/npm_setup.sh "$NPM" 25.16.0 puppeteer-core >/dev/null || missing "npm install puppeteer-core@25.16.0"
PLUMB_NO_SKIP=1 conformance/serve/npm_setup.sh "$NPM" 3.13.0 @wllama/wllama >/dev/null || missing "npm install @wllama/wllama@3.13.0"
BIG=$BUILD/perf-web-models/qwen2-0.5b-Q4_0.gguf
if [ "${SMOKE:-}" != 1 ] && [ -z "${MODELS:-}" ] && [ ! -f "$BIG" ]; then
  mkdir -p "$(dirname "$BIG")"
  "$PLUMB" mkmodel --preset qwen2-0.5b --type Q4_0 "$BIG" || fail "plumb mkmodel $BIG"
fi
# The memory rows' files (not under SMOKE: perf_web.mjs then takes the demo model): Llama 3.2 1B's
# shape in Q8_0, and Llama 3.2 3B's dimensions on the llama-1b preset (28 blocks, 3072 wide, 24
# heads, 8 KV heads, 8192 FF) in Q4_K_M, as wasm_memory's PLUMB_WASM_MEMORY_BIG=1 makes them.
if [ "${SMOKE:-}" != 1 ] && [ -z "${MEM_MODELS+set}" ]; then
  M1=$BUILD/perf-web-models/llama-1b-Q8_0.gguf
  M3=$BUILD/perf-web-models/llama-3b-shape-Q4_K_M.gguf
  mkdir -p "$(dirname "$M1")"
  # Written under a temporary name, so an interrupted mkmodel is never taken for the file.
  [ -f "$M1" ] || { "$PLUMB" mkmodel --preset llama-1b --type Q8_0 "$M1.part" && mv "$M1.part" "$M1"; } ||
    fail "plumb mkmodel $M1"
  [ -f "$M3" ] || { "$PLUMB" mkmodel --preset llama-1b --type Q4_K_M --n-layer 28 --n-embd 3072 \
    --n-head 24 --n-head-kv 8 --n-ff 8192 "$M3.part" && mv "$M3.part" "$M3"; } || fail "plumb mkmodel $M3"
  export MEM_MODELS="$M1,$M3"
fi
MODELS=${MODELS:-$( [ "${SMOKE:-}" = 1 ] && echo models/plumb-en-8m-Q8_0.gguf || echo "models/plumb-en-8m-Q8_0.gguf,$BIG")} \
  NPM=$NPM PLUMB=$PLUMB exec node perf/perf_web.mjs
