# testlib.sh — what every CLI test script shares, sourced after it sets case_name and tag:
# a temp dir removed at exit, fail (counts failures), run (captures out/err/status), and
# expectations on status and output. Not a test by itself.

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plumb-${tag}.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

failures=0
fail() {
    echo "FAIL [$case_name]: $*" >&2
    failures=$((failures + 1))
}

# run ARGS...: runs plumb, stdout -> $tmp/out, stderr -> $tmp/err, status -> $rc.
run() {
    "$plumb" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

expect_rc() { # expect_rc WANT DESCRIPTION
    if [ "$rc" -ne "$1" ]; then
        fail "$2: exit status $rc, want $1"
        sed 's/^/  stderr: /' "$tmp/err" >&2
    fi
}

expect_in() { # expect_in FILE FIXED-STRING
    if ! grep -qF -- "$2" "$1"; then
        fail "$(basename "$1") lacks: $2"
        sed 's/^/  | /' "$1" | head -n 60 >&2
    fi
}

finish() { # the case's verdict: exit 1 naming how many checks failed, else 0
    if [ "$failures" -ne 0 ]; then
        echo "$case_name: $failures check(s) failed" >&2
        exit 1
    fi
    echo "$case_name: ok"
    exit 0
}
