#!/bin/sh
# check_oracle.sh — plumb convert against transformers: converts the checkpoint NAME (a tiny random
# model saved by make_tiny_models.py, with the float32 logits transformers computed for ids.txt)
# and compares plumb's logits with them. Not a tokenizer test: the ids are given.
# usage: check_oracle.sh NAME PLUMB LOGITS_CONVERT WORKDIR MAX_DLOGIT
# MAX_DLOGIT: the largest logit difference allowed (logits here are O(1..10)): float rounding,
# 1e-5, for F32 checkpoints; 1e-3 for llama-bf16, whose reference ran after .to(bfloat16) had
# also rounded transformers' RoPE inverse frequencies to BF16 (plumb computes them in F32).
set -eu
name=$1 plumb=$2 lconv=$3 work=$4 bound=$5
dir=$(cd "$(dirname "$0")" && pwd)/$name
mkdir -p "$work"
out="$work/$name"
"$plumb" convert "$dir" "$out.gguf" >/dev/null
n_vocab=$(( $(wc -c <"$dir/logits.f32") / 4 / $(tr ',' '\n' <"$dir/ids.txt" | grep -c .) ))
"$lconv" "$dir/logits.f32" "$n_vocab" "$dir/ids.txt" "hf-$name" "$out-hf.logits" >/dev/null
# F32 weights, F32 KV: only the order of float sums differs from PyTorch's
"$plumb" logits -m "$out.gguf" --tokens "$(cat "$dir/ids.txt")" --kv-type f32 -t 1 \
    -o "$out-plumb.logits" >/dev/null 2>&1
"$plumb" logits compare "$out-hf.logits" "$out-plumb.logits" --max-kld 1e-6 --min-top1 100 \
    >"$out-compare.txt"
cat "$out-compare.txt"
awk -v b="$bound" '/^Max \|dlogit\|:/ { if ($3 + 0 > b + 0) { print "max |dlogit| " $3 " > " b; exit 1 } }' \
    "$out-compare.txt"
