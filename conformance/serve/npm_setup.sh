#!/usr/bin/env bash
# npm_setup.sh — a ctest fixture: installs one npm package (pinned; `openai` for the SDK test,
# `puppeteer-core` for the browser tests) into a test-local folder, once. Not run by anything but
# ctest. Usage: npm_setup.sh DIR VERSION [PACKAGE (default openai)]
# Exits 77 (ctest: skipped) with a SKIP line when node/npm are missing or the install fails,
# unless PLUMB_NO_SKIP=1, which makes that a failure.
set -uo pipefail
DIR=${1:?usage: npm_setup.sh DIR VERSION}
VERSION=${2:?usage: npm_setup.sh DIR VERSION}
PKG=${3:-openai}
skip() {
  if [ "${PLUMB_NO_SKIP:-}" = 1 ]; then echo "FAIL: $1 (PLUMB_NO_SKIP=1 forbids skipping)"; exit 1; fi
  echo "SKIP: $1"; exit 77
}
command -v node >/dev/null || skip "node not found (Debian: nodejs)"
command -v npm >/dev/null || skip "npm not found (Debian: npm)"
if [ -f "$DIR/node_modules/$PKG/package.json" ] &&
   [ "$(node -p "require('$DIR/node_modules/$PKG/package.json').version")" = "$VERSION" ]; then
  echo "$PKG@$VERSION already in $DIR"; exit 0
fi
mkdir -p "$DIR"
# A package.json of its own, so npm never walks up into the repository.
[ -f "$DIR/package.json" ] || echo '{"name":"plumb-serve-tests","private":true}' >"$DIR/package.json"
if ! npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "$PKG@$VERSION"; then
  skip "npm install $PKG@$VERSION into $DIR failed (no registry access?)"
fi
echo "installed $PKG@$VERSION into $DIR"
