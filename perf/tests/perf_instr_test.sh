#!/usr/bin/env bash
# perf_instr_test.sh — the perf-smoke cases of the instruction counts: perf_instr.sh --quick
# writes JSON that instr_compare --check accepts, and instr_compare's verdicts and exit codes.
# Not a check of the counts themselves. Usage: perf_instr_test.sh CASE SRC_DIR BUILD_DIR
set -u
case_=$1 src=$2 build=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/perf-instr-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL $case_: $*" >&2
    exit 1
}
cmp_tool=$build/perf/instr_compare
[ -x "$cmp_tool" ] || fail "$cmp_tool not built"

# A minimal well-formed report with one row of COUNT instructions.
report() {
    cat <<J
{"schema": "plumb-perf-instr/1", "date": "2026-01-01T00:00:00Z", "commit": "abc", "dirty": false,
 "machine": {"cpu": "x"}, "compiler": "cc", "tool": "callgrind", "valgrind": "valgrind-3.19.0",
 "sets": ["ref"], "tokens": [], "seconds": 1,
 "rows": [{"name": "matmul_q8_0_t1", "set": "ref", "unit": "per call", "instructions": $1},
          {"name": "tiny/decode", "set": "ref", "unit": "per token", "instructions": 1000}]}
J
}

case "$case_" in
perf_instr_quick_writes_well_formed_json)
    command -v valgrind >/dev/null || fail "valgrind is not installed (make deps installs it)"
    cd "$src" || fail "no $src"
    out=$tmp/perf-instr.json
    bash perf/perf_instr.sh --quick -b "$build" -o "$out" >"$tmp/md" 2>"$tmp/log" ||
        { cat "$tmp/log" >&2; fail "perf_instr.sh --quick exited $?"; }
    "$cmp_tool" --check "$out" || fail "JSON does not check: $out"
    for row in matmul_q4_k_t1 matmul_f16_t8 attention_f16kv_n128 rmsnorm_n1024 geglu_n1024 \
        softcap_n1024 rope_normal_yarn_8x128_rot64 quantize_q8_0_n1024 tiny/prefill tiny/decode; do
        for set in ref avx2; do
            grep -q "\"name\": \"$row\", \"set\": \"$set\"" "$out" || fail "no row $row ($set) in $out"
        done
    done
    grep -q '^| tiny/decode ' "$tmp/md" || fail "no markdown table on stdout"
    ;;
instr_compare_flags_a_row_over_threshold)
    report 100000 >"$tmp/a.json"
    report 100500 >"$tmp/b.json" # +0.5%: within 1%
    report 102000 >"$tmp/c.json" # +2%
    "$cmp_tool" "$tmp/a.json" "$tmp/a.json" >"$tmp/o" || fail "A vs A exited $?"
    "$cmp_tool" "$tmp/a.json" "$tmp/b.json" >"$tmp/o" || fail "+0.5% exited $? at threshold 1%"
    "$cmp_tool" "$tmp/a.json" "$tmp/c.json" >"$tmp/o"
    [ $? = 1 ] || fail "+2% did not exit 1"
    grep -q "REGRESSION" "$tmp/o" || fail "+2% not flagged REGRESSION"
    "$cmp_tool" "$tmp/a.json" "$tmp/c.json" --threshold 3 >"$tmp/o" || fail "+2% at 3% exited $?"
    "$cmp_tool" "$tmp/c.json" "$tmp/a.json" >"$tmp/o" || fail "-2% exited $?"
    grep -q "fewer" "$tmp/o" || fail "-2% not reported as fewer"
    ;;
instr_compare_rejects_malformed_json)
    report 100 | sed 's/"unit": "per call", //' >"$tmp/nounit.json"
    printf '{"schema": ' >"$tmp/trunc.json"
    "$cmp_tool" --check "$tmp/nounit.json" 2>/dev/null && fail "a row without unit passed --check"
    "$cmp_tool" --check "$tmp/trunc.json" 2>/dev/null && fail "truncated JSON passed --check"
    report 100 >"$tmp/a.json"
    "$cmp_tool" "$tmp/a.json" "$tmp/trunc.json" >/dev/null 2>&1
    [ $? = 2 ] || fail "compare with a malformed file did not exit 2"
    ;;
*) fail "unknown case" ;;
esac
echo "ok $case_"
