#!/usr/bin/env bash
# npm_setup.sh — the ctest fixture of the OpenAI SDK test: installs the npm package `openai`
# (pinned) into a test-local folder, once. Not run by anything but ctest. Usage: npm_setup.sh DIR VERSION
# Exits 77 (ctest: skipped) with a SKIP line when node/npm are missing or the install fails,
# unless PLUMB_NO_SKIP=1, which makes that a failure.
set -uo pipefail
DIR=${1:?usage: npm_setup.sh DIR VERSION}
VERSION=${2:?usage: npm_setup.sh DIR VERSION}
skip() {
  if [ "${PLUMB_NO_SKIP:-}" = 1 ]; then echo "FAIL: $1 (PLUMB_NO_SKIP=1 forbids skipping)"; exit 1; fi
  echo "SKIP: $1"; exit 77
}
command -v node >/dev/null || skip "node not found (Debian: nodejs)"
command -v npm >/dev/null || skip "npm not found (Debian: npm)"
if [ -f "$DIR/node_modules/openai/package.json" ] &&
   [ "$(node -p "require('$DIR/node_modules/openai/package.json').version")" = "$VERSION" ]; then
  echo "openai@$VERSION already in $DIR"; exit 0
fi
mkdir -p "$DIR"
# A package.json of its own, so npm never walks up into the repository.
[ -f "$DIR/package.json" ] || echo '{"name":"plumb-serve-tests","private":true}' >"$DIR/package.json"
if ! npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "openai@$VERSION"; then
  skip "npm install openai@$VERSION into $DIR failed (no registry access?)"
fi
echo "installed openai@$VERSION into $DIR"
