#!/usr/bin/env sh
# wasm_build.sh — the wasm tests' fixture: `make wasm` (incremental: the dependencies are cached by
# source version, each variant's tree rebuilds only what changed). Skips (exit 77) where emscripten
# is missing, unless PLUMB_NO_SKIP=1 (CI), which makes that a failure. Usage: wasm_build.sh SRC_DIR
src=$1
if ! command -v emcc >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  if [ "${PLUMB_NO_SKIP:-}" = 1 ]; then
    echo "FAIL: emcc or node not found (PLUMB_NO_SKIP=1 forbids skipping; make deps installs them)"
    exit 1
  fi
  echo "SKIP: emcc or node not found (Debian: emscripten, nodejs; make deps installs them)"
  exit 77
fi
exec make -C "$src" --no-print-directory wasm JOBS="${JOBS:-2}"
