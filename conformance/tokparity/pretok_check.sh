#!/bin/sh
# pretok_check.sh — ctest pretok_fixtures_are_hf_output: reruns pretok_fixtures.js with HF
# tokenizers (installed by the pretok_npm fixture) into a scratch folder and compares it with
# the committed oracle, so the fixtures are what HF produces, not edited by hand.
# Usage: pretok_check.sh NPM_DIR SCRATCH. Exit 77 (skip) without node unless PLUMB_NO_SKIP=1.
set -eu
NPM=$1 OUT=$2
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null; then
  [ "${PLUMB_NO_SKIP:-}" = 1 ] && { echo "FAIL: node not found"; exit 1; }
  echo "SKIP: node not found"; exit 77
fi
rm -rf "$OUT" && mkdir -p "$OUT"
PRETOK_OUT=$OUT NODE_PATH=$NPM/node_modules node "$here/pretok_fixtures.js"
cp "$here/../data/tokparity/pretok/hard.txt" "$here/../data/tokparity/pretok/README.md" "$OUT/"
diff -r "$here/../data/tokparity/pretok" "$OUT" && echo "fixtures identical to HF tokenizers' output"
