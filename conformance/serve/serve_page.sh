#!/usr/bin/env bash
# serve_page.sh — how `plumb serve` answers the chat page (web/README.md): / and the embedded
# files with COOP/COEP/CORP and their Content-Types, --web-dir's engine files (application/wasm,
# text/javascript), 404 for unknown files and path traversal (plain and percent-encoded), GET and
# HEAD only, no key needed for the page while the API still needs one. Not the page's behaviour
# (conformance/web/). Usage: serve_page.sh PLUMB MODEL
set -uo pipefail
PLUMB=${1:?usage: serve_page.sh PLUMB MODEL}
MODEL=${2:?usage: serve_page.sh PLUMB MODEL}
if ! command -v curl >/dev/null; then
  if [ "${PLUMB_NO_SKIP:-}" = 1 ]; then echo "FAIL: curl not found (PLUMB_NO_SKIP=1)"; exit 1; fi
  echo "SKIP: curl not found"; exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/serve_page.XXXXXX")
SERVER_PID=""
cleanup() { [ -n "$SERVER_PID" ] && kill -KILL "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
FAILS=0
pass() { echo "ok   $1"; }
fail() { echo "FAIL $1${2:+: $2}"; FAILS=$((FAILS + 1)); }

# A --web-dir with an engine's files (contents do not matter here), a subfolder, a dotfile, and a
# file outside it that traversal would reach.
mkdir -p "$WORK/web/sub"
printf 'export const x = 1;\n' >"$WORK/web/plumb-engine.mjs"
printf '\0asm\1\0\0\0' >"$WORK/web/plumb-engine.wasm"
printf '@compute @workgroup_size(1) fn main() {}\n' >"$WORK/web/add.wgsl" # the webgpu backend's
printf 'secret' >"$WORK/web/.hidden.js"
printf 'nested' >"$WORK/web/sub/a.js"
printf 'outside' >"$WORK/outside.js"
printf 'no type' >"$WORK/web/notes.exe"

KEY="sk-page-$$"
"$PLUMB" serve -m "$MODEL" --port 0 --slots 1 -t 1 --api-key "$KEY" --web-dir "$WORK/web" \
  >"$WORK/out" 2>"$WORK/err" &
SERVER_PID=$!
for _ in $(seq 100); do grep -q 'listening on' "$WORK/out" && break; sleep 0.1; done
BASE=$(sed -n 's/^plumb serve: listening on \(http:[^ ]*\)$/\1/p' "$WORK/out")
[ -n "$BASE" ] || { echo "FAIL server did not start: $(cat "$WORK/err")"; exit 1; }

# get METHOD PATH: status in $WORK/status, headers in $WORK/h, body in $WORK/b (curl keeps the
# path as given: no dot-segment removal).
get() {
  local m=(-X "$1"); [ "$1" = HEAD ] && m=(-I)
  curl -s --path-as-is "${m[@]}" -o "$WORK/b" -D "$WORK/h" -w '%{http_code}' "$BASE$2" >"$WORK/status"
}
header() { tr -d '\r' <"$WORK/h" | sed -n "s/^$1: //Ip" | head -1; }
expect_page() { # PATH TYPE
  get GET "$1"
  local st; st=$(cat "$WORK/status")
  [ "$st" = 200 ] || { fail "GET $1 is 200" "$st"; return; }
  [ "$(header Content-Type)" = "$2" ] && pass "GET $1: Content-Type $2" || fail "GET $1: Content-Type $2" "$(header Content-Type)"
  if [ "$(header Cross-Origin-Opener-Policy)" = same-origin ] &&
     [ "$(header Cross-Origin-Embedder-Policy)" = require-corp ] &&
     [ "$(header Cross-Origin-Resource-Policy)" = same-origin ]; then
    pass "GET $1: COOP same-origin, COEP require-corp, CORP same-origin"
  else fail "GET $1: isolation headers" "$(tr -d '\r' <"$WORK/h" | tr '\n' '|')"; fi
}
expect_status() { # METHOD PATH STATUS
  get "$1" "$2"
  [ "$(cat "$WORK/status")" = "$3" ] && pass "$1 $2 is $3" || fail "$1 $2 is $3" "$(cat "$WORK/status") $(head -c 200 "$WORK/b")"
}

expect_page / "text/html; charset=utf-8"
grep -q '<title>plumb chat</title>' "$WORK/b" && pass "/ is the chat page" || fail "/ is the chat page"
expect_page /index.html "text/html; charset=utf-8"
expect_page /app.js "text/javascript; charset=utf-8"
expect_page /worker.js "text/javascript; charset=utf-8"
expect_page /ring.js "text/javascript; charset=utf-8"
expect_page /style.css "text/css; charset=utf-8"
expect_page /plumb-engine.mjs "text/javascript; charset=utf-8"
expect_page /plumb-engine.wasm "application/wasm"
cmp -s "$WORK/b" "$WORK/web/plumb-engine.wasm" && pass "the .wasm's bytes are the file's" || fail "the .wasm's bytes are the file's"
expect_page /add.wgsl "text/wgsl; charset=utf-8"
get GET "/?x=1"
[ "$(cat "$WORK/status")" = 200 ] && pass "a query string still gets the page" || fail "a query string still gets the page"

# HEAD: the GET's headers (curl -I reads no body).
get GET /app.js
size=$(stat -c %s "$WORK/b")
get HEAD /app.js
[ "$(cat "$WORK/status")" = 200 ] && [ "$(header Content-Length)" = "$size" ] && pass "HEAD /app.js: 200, the GET's Content-Length" || fail "HEAD /app.js: 200, the GET's Content-Length" "$(header Content-Length) vs $size"
[ "$(header Content-Type)" = "text/javascript; charset=utf-8" ] && pass "HEAD /app.js: Content-Type" || fail "HEAD /app.js: Content-Type"
expect_status POST / 405
[ "$(header Allow)" = "GET, HEAD, OPTIONS" ] && pass "405 names Allow: GET, HEAD, OPTIONS" || fail "405 Allow" "$(header Allow)"
expect_status PUT /app.js 405
expect_status DELETE /plumb-engine.wasm 405
expect_status OPTIONS / 204

# Unknown files, traversal, what --web-dir must not give away.
for p in /nope.js /nope.html /plumb-engine.data /.hidden.js /sub/a.js /notes.exe /../outside.js \
         /%2e%2e/outside.js /%2E%2E%2Foutside.js /..%2foutside.js /sub%2fa.js /web/../outside.js \
         /app.js/ "//app.js"; do
  expect_status GET "$p" 404
done

# The page needs no key (it holds no secret); the API still does, and /health stays open.
expect_status GET /v1/models 401
expect_status GET /health 200
expect_status GET "/v1/app.js" 404

kill -TERM "$SERVER_PID"; wait "$SERVER_PID"; rc=$?; SERVER_PID=""
[ "$rc" = 0 ] && pass "server exits 0 on SIGTERM" || fail "server exits 0 on SIGTERM" "$rc"

# Without any engine files (an empty --web-dir): the page is still there.
mkdir -p "$WORK/empty"
"$PLUMB" serve -m "$MODEL" --port 0 --slots 1 -t 1 --web-dir "$WORK/empty" >"$WORK/out" 2>"$WORK/err" &
SERVER_PID=$!
for _ in $(seq 100); do grep -q 'listening on' "$WORK/out" && break; sleep 0.1; done
BASE=$(sed -n 's/^plumb serve: listening on \(http:[^ ]*\)$/\1/p' "$WORK/out")
expect_page / "text/html; charset=utf-8"
expect_status GET /plumb-engine.mjs 404
kill -TERM "$SERVER_PID"; wait "$SERVER_PID"; SERVER_PID=""
"$PLUMB" serve -m "$MODEL" --port 0 --web-dir "$WORK/nowhere" >/dev/null 2>"$WORK/err"
[ $? = 2 ] && grep -q -- "--web-dir" "$WORK/err" && pass "--web-dir that is not a folder: a usage error" || fail "--web-dir not a folder" "$(cat "$WORK/err")"

[ "$FAILS" = 0 ] && echo "serve_page: all checks passed" || echo "serve_page: $FAILS check(s) failed"
[ "$FAILS" = 0 ]
