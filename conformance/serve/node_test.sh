#!/usr/bin/env sh
# node_test.sh — runs one Node test script of conformance/serve/, or skips it (exit 77, a SKIP
# line) when node is missing; with PLUMB_NO_SKIP=1 a missing node fails instead. Usage: node_test.sh SCRIPT
if ! command -v node >/dev/null 2>&1; then
  if [ "${PLUMB_NO_SKIP:-}" = 1 ]; then echo "FAIL: node not found (PLUMB_NO_SKIP=1 forbids skipping)"; exit 1; fi
  echo "SKIP: node not found (Debian: nodejs)"; exit 77
fi
exec node "$@"
