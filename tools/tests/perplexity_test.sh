#!/bin/sh
# perplexity_test.sh — `plumb perplexity` as a user sees it, one behaviour per CASE (ctest runs
# each): the result lines, bit-identity across --batch and -t, --save-logits and
# --kl-divergence-base, and exit codes. The numbers are unit-tested in
# conformance/test_perplexity.c.
#
# usage: perplexity_test.sh CASE PLUMB
set -u
LC_ALL=C
export LC_ALL

case_name=$1 plumb=$2

tag=perplexity
. "$(dirname "$0")/testlib.sh"

# A tiny model and a text of ~2700 tokens (42 windows of 64).
setup() {
    run mkmodel --preset tiny "$tmp/f32.gguf"
    expect_rc 0 "mkmodel"
    awk 'BEGIN { for (i = 0; i < 60; i++)
        printf "The quick brown fox %d jumps over the lazy dog, and then it rests. ", i }' \
        >"$tmp/text.txt"
}

ppl_line() { grep '^PPL = ' "$tmp/out"; }

case $case_name in
perplexity_prints_windows_and_ppl)
    setup
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" -c 64
    expect_rc 0 "perplexity"
    expect_in "$tmp/out" "windows: "
    expect_in "$tmp/out" " of 64 tokens, positions [32, 63) of each (predicting tokens [33, 64)) scored"
    grep -qE '^PPL = [0-9]+\.[0-9]{4} ± [0-9]+\.[0-9]{5}$' "$tmp/out" ||
        fail "no 'PPL = X ± SE' line"
    expect_in "$tmp/err" "tok/s"
    ;;

perplexity_is_identical_for_any_batch_and_threads)
    setup
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" -c 64 -b 64 -t 1
    expect_rc 0 "perplexity -b 64 -t 1"
    want=$(ppl_line)
    for bt in "1 1" "7 2" "64 2" "1 2"; do
        set -- $bt
        run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" -c 64 --batch "$1" --threads "$2"
        expect_rc 0 "perplexity -b $1 -t $2"
        [ "$(ppl_line)" = "$want" ] || fail "-b $1 -t $2: '$(ppl_line)', -b 64 -t 1: '$want'"
    done
    ;;

perplexity_kld_base_of_itself_is_zero)
    setup
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" -c 64 --save-logits "$tmp/base.logits"
    expect_rc 0 "perplexity --save-logits"
    expect_in "$tmp/err" "wrote $tmp/base.logits"
    want=$(ppl_line)
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" --kl-divergence-base "$tmp/base.logits" -t 2
    expect_rc 0 "perplexity --kl-divergence-base (the window comes from the base)"
    [ "$(ppl_line)" = "$want" ] || fail "the run against the base: '$(ppl_line)', want '$want'"
    for re in '^Mean    KLD: +0\.000000 ± 0\.000000$' '^Same top-1: +100\.000000 ± 0\.000000 %$' \
        '^PPL\(B\)-PPL\(A\): +0\.000000 ± 0\.000000$'; do
        grep -qE "$re" "$tmp/out" || fail "out lacks a line matching $re"
    done
    # A quantized model against it: a KLD above 0, and plumb logits compare reads both files.
    run quantize "$tmp/f32.gguf" "$tmp/q8.gguf" Q8_0
    run perplexity -m "$tmp/q8.gguf" -f "$tmp/text.txt" --kl-divergence-base "$tmp/base.logits" \
        --save-logits "$tmp/q8.logits" --chunks 2
    expect_rc 0 "Q8_0 against the F32 base, 2 windows"
    # The PPL line and both file lines of the KLD block name the scored span in the same words.
    span="positions [32, 63) of each (predicting tokens [33, 64))"
    [ "$(grep -cF "$span" "$tmp/out")" = 3 ] ||
        fail "the windows line and the A and B lines do not all say '$span': $(head -8 "$tmp/out")"
    expect_in "$tmp/out" "compared: 62 positions (2 windows)"
    grep -q "^Mean    KLD: *0\.000000 " "$tmp/out" && fail "Q8_0's KLD is 0"
    run logits compare "$tmp/base.logits" "$tmp/base.logits"
    expect_rc 0 "logits compare of two windowed files"
    expect_in "$tmp/out" "windows of 64 tokens, positions [32, 63) of each (predicting tokens [33, 64))"
    ;;

perplexity_bad_input_exits_1_or_2)
    setup
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/missing.txt"
    expect_rc 1 "a missing text"
    expect_in "$tmp/err" "missing.txt"
    run perplexity -m "$tmp/missing.gguf" -f "$tmp/text.txt"
    expect_rc 1 "a missing model"
    printf 'Too short.' >"$tmp/short.txt"
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/short.txt" -c 64
    expect_rc 1 "a text shorter than one window"
    expect_in "$tmp/err" "a window of 64 needs 64"
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" -c 2
    expect_rc 2 "-c 2"
    expect_in "$tmp/err" "-c: 2 is out of range: it must be "
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" -c x
    expect_rc 2 "-c x"
    run perplexity -m "$tmp/f32.gguf"
    expect_rc 2 "no text"
    run perplexity -f "$tmp/text.txt"
    expect_rc 2 "no model"
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" --batch 0
    expect_rc 2 "--batch 0"
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" extra
    expect_rc 2 "a positional argument"
    # Bases that do not fit: another window, another text, not a windowed file.
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" -c 64 --save-logits "$tmp/base.logits"
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" -c 32 --kl-divergence-base "$tmp/base.logits"
    expect_rc 1 "a base of another window"
    expect_in "$tmp/err" "windows of 64 tokens; this run uses -c 32"
    sed 's/fox/cat/' "$tmp/text.txt" >"$tmp/other.txt"
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/other.txt" --kl-divergence-base "$tmp/base.logits"
    expect_rc 1 "a base of another text"
    expect_in "$tmp/err" "not the same text"
    run logits -m "$tmp/f32.gguf" -f "$tmp/text.txt" -o "$tmp/plain.logits"
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" --kl-divergence-base "$tmp/plain.logits"
    expect_rc 1 "a base that is not windowed"
    expect_in "$tmp/err" "not a perplexity base"
    run perplexity -m "$tmp/f32.gguf" -f "$tmp/text.txt" --kl-divergence-base "$tmp/missing.logits"
    expect_rc 1 "a missing base"
    ;;

*)
    echo "unknown case '$case_name'" >&2
    exit 2
    ;;
esac

[ "$failures" -eq 0 ]
