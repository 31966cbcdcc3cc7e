#!/bin/sh
# mkmodel_test.sh — smoke tests of `plumb mkmodel` and `plumb quantize`, one behaviour per CASE
# (ctest runs each). What a user sees: files, summaries, exit codes. The rules are unit-tested
# in conformance/test_quantize_model.c.
#
# usage: mkmodel_test.sh CASE PLUMB
set -u
LC_ALL=C
export LC_ALL

case_name=$1 plumb=$2

tag=mkmodel
. "$(dirname "$0")/testlib.sh"

expect_not_in() { # expect_not_in FILE FIXED-STRING
    if grep -qF -- "$2" "$1"; then
        fail "$(basename "$1") should not contain: $2"
    fi
}

expect_same() { # expect_same A B
    cmp -s "$1" "$2" || fail "$(basename "$1") and $(basename "$2") differ"
}

expect_absent() { # expect_absent PATH: neither PATH nor PATH.tmp exists
    [ -e "$1" ] && fail "$1 exists"
    [ -e "$1.tmp" ] && fail "$1.tmp exists"
    return 0
}

size_of() { wc -c <"$1" | tr -d ' '; }

case $case_name in
mkmodel_tiny_is_small_and_complete)
    run mkmodel --preset tiny "$tmp/tiny.gguf"
    expect_rc 0 "mkmodel --preset tiny"
    expect_in "$tmp/out" "wrote $tmp/tiny.gguf"
    size=$(size_of "$tmp/tiny.gguf")
    [ "$size" -lt 2000000 ] || fail "tiny is $size bytes, want < 2 MB"
    run inspect "$tmp/tiny.gguf"
    expect_rc 0 "inspect the tiny model"
    for k in general.architecture general.file_type llama.context_length \
        llama.embedding_length llama.block_count llama.feed_forward_length \
        llama.attention.head_count llama.attention.head_count_kv \
        llama.attention.layer_norm_rms_epsilon llama.rope.freq_base \
        llama.rope.dimension_count llama.attention.key_length llama.attention.value_length \
        llama.vocab_size tokenizer.ggml.model tokenizer.ggml.tokens; do
        expect_in "$tmp/out" "$k"
    done
    for t in token_embd.weight output_norm.weight " output.weight" blk.1.attn_norm.weight \
        blk.1.attn_q.weight blk.1.attn_k.weight blk.1.attn_v.weight blk.1.attn_output.weight \
        blk.1.ffn_norm.weight blk.1.ffn_gate.weight blk.1.ffn_up.weight blk.1.ffn_down.weight; do
        expect_in "$tmp/out" "$t"
    done
    ;;

mkmodel_progress_is_a_line_when_not_a_terminal)
    # stderr is a file here: plain lines (every 5 s by default; every millisecond here), no bar
    PLUMB_PROGRESS_LINE_S=0.001 run mkmodel --preset tiny --type Q4_K_M -t 1 "$tmp/p.gguf"
    expect_rc 0 "mkmodel with progress lines"
    grep -Eq '^mkmodel: [0-9]+\.[0-9]% after [0-9]+ s' "$tmp/err" ||
        fail "no 'mkmodel: N% after S s' line on stderr"
    grep -q "$(printf '\r')" "$tmp/err" && fail "a carriage return (the terminal's bar) on stderr"
    run mkmodel --preset tiny "$tmp/q.gguf"
    expect_rc 0 "mkmodel --preset tiny"
    expect_not_in "$tmp/err" "% after" # done within the first 5 s: no line
    ;;

mkmodel_arch_tensors_follow_llama_cpp)
    run mkmodel --arch qwen2 "$tmp/q2.gguf"
    expect_rc 0 "mkmodel --arch qwen2"
    run inspect "$tmp/q2.gguf"
    expect_in "$tmp/out" "qwen2.attention.head_count"
    expect_in "$tmp/out" "blk.0.attn_q.bias"
    expect_in "$tmp/out" "blk.0.attn_k.bias"
    expect_in "$tmp/out" "blk.0.attn_v.bias"
    expect_not_in "$tmp/out" "attn_q_norm"
    run mkmodel --arch qwen3 --tied "$tmp/q3.gguf"
    expect_rc 0 "mkmodel --arch qwen3 --tied"
    run inspect "$tmp/q3.gguf"
    expect_in "$tmp/out" "qwen3.attention.key_length"
    expect_in "$tmp/out" "blk.0.attn_q_norm.weight"
    expect_in "$tmp/out" "blk.0.attn_k_norm.weight"
    expect_not_in "$tmp/out" " output.weight"
    expect_not_in "$tmp/out" "attn_q.bias"
    # issue 49: the gpt-oss-20b preset (shrunk): sinks, biases, YaRN unrounded, MXFP4 experts
    run mkmodel --preset gpt-oss-20b --n-layer 1 --n-embd 256 --n-head 8 --n-head-kv 2 \
        --head-dim 32 --n-ff-exp 256 --n-vocab 4096 --type MXFP4_MOE "$tmp/oss.gguf"
    expect_rc 0 "mkmodel --preset gpt-oss-20b --type MXFP4_MOE"
    run inspect "$tmp/oss.gguf"
    expect_in "$tmp/out" "gpt-oss.rope.scaling.yarn_truncate"
    expect_in "$tmp/out" "blk.0.attn_sinks.weight"
    expect_in "$tmp/out" "blk.0.attn_output.bias"
    expect_in "$tmp/out" "blk.0.ffn_gate_inp.bias"
    expect_in "$tmp/out" "blk.0.ffn_down_exps.bias"
    grep "blk.0.ffn_up_exps.weight" "$tmp/out" | grep -qF MXFP4 ||
        fail "gpt-oss-20b MXFP4_MOE: ffn_up_exps is not MXFP4"
    ;;

mkmodel_is_deterministic)
    run mkmodel --seed 7 --type Q8_0 "$tmp/a.gguf"
    expect_rc 0 "mkmodel --seed 7 (1)"
    run mkmodel --type Q8_0 --seed 7 --threads 1 "$tmp/b.gguf"
    expect_rc 0 "mkmodel --seed 7 (2)"
    expect_same "$tmp/a.gguf" "$tmp/b.gguf"
    run mkmodel --seed 8 --type Q8_0 "$tmp/c.gguf"
    cmp -s "$tmp/a.gguf" "$tmp/c.gguf" && fail "seeds 7 and 8 gave the same file"
    ;;

quantize_matches_mkmodel_at_that_type)
    run mkmodel "$tmp/f32.gguf"
    expect_rc 0 "mkmodel F32"
    for t in Q4_K_M Q8_0 Q6_K; do
        run mkmodel --type "$t" "$tmp/direct.gguf"
        expect_rc 0 "mkmodel --type $t"
        run quantize "$tmp/f32.gguf" "$tmp/quant.gguf" "$t"
        expect_rc 0 "quantize $t"
        expect_in "$tmp/out" "quantized $tmp/f32.gguf -> $tmp/quant.gguf: $t"
        expect_in "$tmp/out" "fallbacks"
        expect_same "$tmp/direct.gguf" "$tmp/quant.gguf"
    done
    ;;

quantize_takes_the_k_and_iq4_mixes)
    # each name llama-quantize takes (Q3_K = Q3_K_M, as it reads it), the same bytes from
    # quantize as from mkmodel --type, the canonical name in the summary
    run mkmodel "$tmp/f32.gguf"
    expect_rc 0 "mkmodel F32"
    for t in Q2_K Q2_K_S Q3_K Q3_K_S Q3_K_M Q3_K_L IQ4_NL iq4_xs; do
        run mkmodel --type "$t" "$tmp/direct.gguf"
        expect_rc 0 "mkmodel --type $t"
        run quantize "$tmp/f32.gguf" "$tmp/quant.gguf" "$t"
        expect_rc 0 "quantize $t"
        case $t in Q3_K) want=Q3_K_M ;; iq4_xs) want=IQ4_XS ;; *) want=$t ;; esac
        expect_in "$tmp/out" "quantized $tmp/f32.gguf -> $tmp/quant.gguf: $want"
        expect_same "$tmp/direct.gguf" "$tmp/quant.gguf"
    done
    # tiny's 64-wide ffn_down cannot hold Q3_K: Q2_K falls back to IQ4_NL there
    run quantize "$tmp/f32.gguf" "$tmp/q.gguf" Q2_K
    expect_in "$tmp/out" "IQ4_NL"
    ;;

quantize_takes_mxfp4_moe)
    # llama.cpp's MXFP4_MOE (also "MXFP4"): the experts (3-D) MXFP4, the other matrices Q8_0;
    # the same bytes as mkmodel --type; from MXFP4 on to Q8_0 only with --allow-requantize
    run mkmodel --preset tiny-moe "$tmp/f32.gguf"
    expect_rc 0 "mkmodel tiny-moe"
    run mkmodel --preset tiny-moe --type MXFP4_MOE "$tmp/direct.gguf"
    expect_rc 0 "mkmodel --type MXFP4_MOE"
    run quantize "$tmp/f32.gguf" "$tmp/mx.gguf" MXFP4
    expect_rc 0 "quantize MXFP4"
    expect_in "$tmp/out" "quantized $tmp/f32.gguf -> $tmp/mx.gguf: MXFP4_MOE"
    expect_in "$tmp/out" "Q8_0 10, MXFP4 6"
    expect_same "$tmp/direct.gguf" "$tmp/mx.gguf"
    run quantize "$tmp/mx.gguf" "$tmp/q8.gguf" Q8_0
    expect_rc 1 "quantize an MXFP4 file without --allow-requantize"
    expect_in "$tmp/err" "already quantized"
    run quantize --allow-requantize "$tmp/mx.gguf" "$tmp/q8.gguf" Q8_0
    expect_rc 0 "quantize MXFP4 to Q8_0"
    expect_in "$tmp/out" "Q8_0 16"
    run quantize --pure "$tmp/f32.gguf" "$tmp/pure.gguf" mxfp4_moe
    expect_rc 0 "quantize --pure MXFP4_MOE"
    expect_in "$tmp/out" "MXFP4 16"
    ;;

quantize_reports_types_and_fallbacks)
    run mkmodel "$tmp/f32.gguf"
    run quantize "$tmp/f32.gguf" "$tmp/q.gguf" Q4_K_M --threads 2
    expect_rc 0 "quantize Q4_K_M"
    # tiny: attn_output (128) and ffn_down (64) rows cannot hold Q4_K/Q6_K
    expect_in "$tmp/out" "4 fallbacks"
    expect_in "$tmp/out" "Q4_K 10"
    expect_in "$tmp/out" "Q6_K 2"
    [ "$(wc -l <"$tmp/out" | tr -d ' ')" -eq 1 ] || fail "summary is not one line"
    run inspect "$tmp/q.gguf"
    expect_in "$tmp/out" "general.file_type"
    ;;

quantize_bad_arguments_exit_2)
    run mkmodel "$tmp/f32.gguf"
    run quantize "$tmp/f32.gguf" "$tmp/q.gguf" IQ2_XXS
    expect_rc 2 "quantize to IQ2_XXS"
    expect_in "$tmp/err" "unknown file type 'IQ2_XXS'"
    expect_absent "$tmp/q.gguf"
    run quantize "$tmp/f32.gguf" "$tmp/q.gguf"
    expect_rc 2 "quantize without TYPE"
    run quantize "$tmp/f32.gguf" "$tmp/q.gguf" Q8_0 --threads 0
    expect_rc 2 "quantize --threads 0"
    run mkmodel --n-head 3 "$tmp/m.gguf"
    expect_rc 2 "mkmodel --n-head 3 (not a multiple of the 2 KV heads)"
    expect_in "$tmp/err" "n_head 3"
    expect_absent "$tmp/m.gguf"
    run mkmodel --preset huge "$tmp/m.gguf"
    expect_rc 2 "mkmodel --preset huge"
    expect_in "$tmp/err" "unknown preset 'huge'"
    run mkmodel
    expect_rc 2 "mkmodel without OUT"
    ;;

quantize_failures_exit_1_and_leave_nothing)
    run quantize "$tmp/missing.gguf" "$tmp/q.gguf" Q8_0
    expect_rc 1 "quantize a missing file"
    expect_in "$tmp/err" "missing.gguf"
    expect_absent "$tmp/q.gguf"
    run mkmodel "$tmp/f32.gguf"
    run quantize "$tmp/f32.gguf" "$tmp/no/such/dir/q.gguf" Q8_0
    expect_rc 1 "quantize into a missing directory"
    expect_in "$tmp/err" "plumb quantize: error: "
    expect_in "$tmp/err" "$tmp/no/such/dir/q.gguf"
    run mkmodel "$tmp/no/such/dir/m.gguf"
    expect_rc 1 "mkmodel into a missing directory"
    ;;

run_generates_text_and_reports_speed)
    run mkmodel --preset tiny --type Q8_0 "$tmp/m.gguf"
    expect_rc 0 "mkmodel"
    run run -m "$tmp/m.gguf" -p "Once upon a time" -n 8 --ignore-eos --seed 1 -t 2
    expect_rc 0 "run"
    expect_in "$tmp/out" "Once upon a time"
    for w in "load:" "KV cache" "scratch" "prefill:" "decode:" "tok/s"; do
        expect_in "$tmp/err" "$w"
    done
    cp "$tmp/out" "$tmp/out1"
    run run -m "$tmp/m.gguf" -p "Once upon a time" -n 8 --ignore-eos --seed 1 -t 1 --chunk 3
    expect_same "$tmp/out" "$tmp/out1"
    run run -m "$tmp/m.gguf" -n 8
    expect_rc 2 "run without a prompt"
    run run -m "$tmp/m.gguf" --tokens 1,2,99999 -n 1
    expect_rc 1 "run with a token outside the vocabulary"
    expect_in "$tmp/err" "outside the vocabulary"
    run run -m "$tmp/m.gguf" -p "x" --sliding-window 8 --sinks 8
    expect_rc 2 "attention sinks filling the whole sliding window"
    expect_in "$tmp/err" "--sinks 8 must be less than --sliding-window 8"
    run run -m "$tmp/m.gguf" -p "x" -c 64 --sliding-window 32
    expect_rc 2 "a context window and a sliding window"
    expect_in "$tmp/err" "not both"
    ;;

tokenize_prints_ids_and_pieces)
    run mkmodel --preset tiny "$tmp/m.gguf"
    run tokenize -m "$tmp/m.gguf" "Hello world"
    expect_rc 0 "tokenize"
    expect_in "$tmp/out" "72 -> 'H'"
    run tokenize -m "$tmp/m.gguf" --ids-only "Hello world"
    expect_rc 0 "tokenize --ids-only"
    grep -qE '^\[[0-9, ]*\]$' "$tmp/out" || fail "--ids-only printed more than ids"
    ;;

logits_compare_gates_and_exit_codes)
    run mkmodel --preset tiny "$tmp/f32.gguf"
    run quantize "$tmp/f32.gguf" "$tmp/q4.gguf" Q4_K_M
    expect_rc 0 "quantize"
    run logits -m "$tmp/f32.gguf" -p "The quick brown fox jumps over the lazy dog" -o "$tmp/a.logits"
    expect_rc 0 "logits F32"
    run logits -m "$tmp/q4.gguf" -p "The quick brown fox jumps over the lazy dog" -o "$tmp/b.logits"
    expect_rc 0 "logits Q4_K_M"
    run logits compare "$tmp/a.logits" "$tmp/a.logits" --max-kld 0 --min-top1 100
    expect_rc 0 "a file against itself"
    run logits compare "$tmp/a.logits" "$tmp/b.logits"
    expect_rc 0 "F32 vs Q4_K_M"
    expect_in "$tmp/out" "KLD"
    run logits compare "$tmp/a.logits" "$tmp/b.logits" --max-kld 0.000001
    expect_rc 1 "a KLD gate that Q4_K_M cannot meet"
    run logits -m "$tmp/f32.gguf" -p "another text" -o "$tmp/c.logits"
    run logits compare "$tmp/a.logits" "$tmp/c.logits"
    expect_rc 1 "different texts"
    run logits compare "$tmp/a.logits"
    expect_rc 2 "compare with one file"
    head -c 100 "$tmp/a.logits" >"$tmp/t.logits"
    run logits compare "$tmp/a.logits" "$tmp/t.logits"
    expect_rc 1 "a truncated file"
    ;;

*)
    echo "unknown case '$case_name'" >&2
    exit 2
    ;;
esac

[ "$failures" -eq 0 ]
