#!/bin/sh
# ctest_root_test.sh — `ctest` run from the repository root (CTestTestfile.cmake at the top
# level delegates to a build tree). The file is copied into a temp "root" whose build/ links
# to this build tree, so the test reads it the way ctest does without writing into the sources.
#
# usage: ctest_root_test.sh CASE CTEST SOURCE_DIR BUILD_DIR
set -u
LC_ALL=C
export LC_ALL

case_name=$1 ctest=$2 src=$3 build=$4

tag=ctest-root
. "$(dirname "$0")/testlib.sh"

root=$tmp/root
mkdir "$root" && cp "$src/CTestTestfile.cmake" "$root/" || exit 1
unset PLUMB_BUILD_DIR

# count DIR [ARGS...]: the "Total Tests: N" of `ctest -N` in DIR, or "failed".
count() {
    d=$1
    shift
    (cd "$d" && "$ctest" -N "$@" >"$tmp/n.out" 2>"$tmp/n.err") || { echo failed; return; }
    sed -n 's/^Total Tests: \([0-9]*\)$/\1/p' "$tmp/n.out"
}

case $case_name in
ctest_from_root_lists_the_build_tree)
    want=$(count "$build")
    [ -n "$want" ] && [ "$want" != failed ] && [ "$want" -gt 0 ] ||
        { fail "ctest -N in the build tree: '$want'"; exit 1; }
    ln -s "$build" "$root/build"
    got=$(count "$root")
    [ "$got" = "$want" ] || { fail "ctest -N from the root: '$got' tests, want $want"; cat "$tmp/n.err" >&2; }
    want_unit=$(count "$build" -L '^unit$')
    got_unit=$(count "$root" -L '^unit$')
    [ "$got_unit" = "$want_unit" ] || fail "ctest -N -L unit from the root: '$got_unit', want $want_unit"
    # --test-dir from elsewhere reads the file the same way.
    (cd / && "$ctest" --test-dir "$root" -N >"$tmp/td.out" 2>&1) || fail "ctest --test-dir ROOT -N failed"
    expect_in "$tmp/td.out" "Total Tests: $want"
    ;;

ctest_from_root_honours_plumb_build_dir)
    want=$(count "$build")
    got=$(PLUMB_BUILD_DIR=$build count "$root")
    [ "$got" = "$want" ] || fail "PLUMB_BUILD_DIR=absolute: '$got' tests, want $want"
    ln -s "$build" "$root/other"
    got=$(PLUMB_BUILD_DIR=other count "$root")
    [ "$got" = "$want" ] || fail "PLUMB_BUILD_DIR=relative: '$got' tests, want $want"
    ;;

ctest_from_root_runs_a_test)
    ln -s "$build" "$root/build"
    (cd "$root" && "$ctest" -R '^json_check_rejects_invalid_json$' >"$tmp/out" 2>"$tmp/err")
    rc=$?
    expect_rc 0 "ctest -R json_check_rejects_invalid_json from the root"
    expect_in "$tmp/out" "100% tests passed, 0 tests failed out of 1"
    ;;

ctest_from_root_without_build_says_make)
    # CMake wraps its messages: the words are compared with the lines joined.
    (cd "$root" && "$ctest" -N >"$tmp/out" 2>"$tmp/err2")
    rc=$?
    [ "$rc" -ne 0 ] || fail "ctest -N without a build tree exited 0"
    tr -s ' \n' '  ' <"$tmp/err2" >"$tmp/err"
    expect_in "$tmp/err" "no build tree at $root/build: run \`make\` first"
    (cd "$root" && PLUMB_BUILD_DIR=nowhere "$ctest" -N >"$tmp/out" 2>"$tmp/err2")
    tr -s ' \n' '  ' <"$tmp/err2" >"$tmp/err"
    expect_in "$tmp/err" "no build tree at $root/nowhere"
    ;;

*)
    echo "ctest_root_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

finish
