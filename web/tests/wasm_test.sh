#!/usr/bin/env sh
# wasm_test.sh — runs one node test of web/tests/ against build-wasm/web/, or skips it (exit 77)
# when emscripten or node is missing (no build); PLUMB_NO_SKIP=1 turns that into a failure.
# Usage: wasm_test.sh WEB_DIR SCRIPT ARGS...
web=$1
shift
if ! command -v node >/dev/null 2>&1 || ! command -v emcc >/dev/null 2>&1 ||
  [ ! -f "$web/plumb-engine.mjs" ]; then
  if [ "${PLUMB_NO_SKIP:-}" = 1 ]; then echo "FAIL: no wasm build in $web (or no node/emcc)"; exit 1; fi
  echo "SKIP: no wasm build in $web (emscripten or node missing)"
  exit 77
fi
# Debian's node 18 fetch() cannot read file: URLs; the module reads its .wasm from disk instead.
exec node --no-experimental-fetch "$@"
