#!/bin/sh
# files_test.sh — the paths a user types: checked before the long work, named in the
# messages as typed (never an internal OUT.tmp); quantize's refusals. One behaviour per CASE.
#
# usage: files_test.sh CASE PLUMB
set -u
LC_ALL=C
export LC_ALL

case_name=$1 plumb=$2

tag=files
. "$(dirname "$0")/testlib.sh"

expect_not_in() { # expect_not_in FILE FIXED-STRING
    if grep -qF -- "$2" "$1"; then
        fail "$(basename "$1") should not contain: $2"
        sed 's/^/  | /' "$1" | head -n 40 >&2
    fi
}

"$plumb" mkmodel --preset tiny "$tmp/f32.gguf" >/dev/null 2>&1 || { echo "mkmodel failed" >&2; exit 1; }

case $case_name in
quantize_refuses_quantized_input_and_same_output)
    run quantize "$tmp/f32.gguf" "$tmp/q8.gguf" Q8_0
    expect_rc 0 "quantize F32 -> Q8_0"
    run quantize "$tmp/q8.gguf" "$tmp/q4.gguf" Q4_0
    expect_rc 1 "quantize Q8_0 -> Q4_0 without --allow-requantize"
    expect_in "$tmp/err" "plumb quantize: error: $tmp/q8.gguf is already quantized"
    expect_in "$tmp/err" "--allow-requantize"
    [ -e "$tmp/q4.gguf" ] && fail "the refused quantize wrote $tmp/q4.gguf"
    run quantize --allow-requantize "$tmp/q8.gguf" "$tmp/q4.gguf" Q4_0
    expect_rc 0 "quantize --allow-requantize Q8_0 -> Q4_0"
    cp "$tmp/f32.gguf" "$tmp/keep.gguf"
    for out in "$tmp/f32.gguf" "$tmp/./f32.gguf"; do
        run quantize "$tmp/f32.gguf" "$out" Q8_0
        expect_rc 2 "quantize IN onto itself ($out)"
        expect_in "$tmp/err" "plumb quantize: error: OUT '$out' is IN"
    done
    cmp -s "$tmp/f32.gguf" "$tmp/keep.gguf" || fail "quantize onto itself changed IN"
    ;;

paths_are_checked_first_and_named_as_typed)
    run quantize "$tmp/f32.gguf" "$tmp/no/such/q.gguf" Q8_0
    expect_rc 1 "quantize into a missing folder"
    expect_in "$tmp/err" "cannot write '$tmp/no/such/q.gguf'"
    expect_not_in "$tmp/err" ".tmp'"
    seq 1 300 >"$tmp/text.txt"
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" -c 64 --save-logits "$tmp/no/such/x.logits"
    expect_rc 1 "perplexity --save-logits into a missing folder"
    expect_in "$tmp/err" "plumb perplexity: error: cannot write '$tmp/no/such/x.logits'"
    expect_not_in "$tmp/out" "PPL"
    expect_not_in "$tmp/err" ".tmp'"
    run logits -m "$tmp/f32.gguf" -p hi -o "$tmp/no/such/x.logits"
    expect_rc 1 "logits -o into a missing folder"
    expect_in "$tmp/err" "plumb logits: error: cannot write '$tmp/no/such/x.logits'"
    # bench: the missing second model fails before the first is measured.
    run bench -m "$tmp/f32.gguf,$tmp/missing.gguf" -p 8 -n 0 -r 1 --no-probe
    expect_rc 1 "bench -m good,missing"
    expect_in "$tmp/err" "plumb bench: error: cannot read '$tmp/missing.gguf'"
    expect_not_in "$tmp/out" "pp8"
    expect_not_in "$tmp/err" "loading"
    ;;

*)
    echo "files_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

finish
