#!/usr/bin/env bash
# quant_identity.sh — every tensor's type and bytes, `plumb quantize` against llama-quantize
# (the peer in ../shared/peers, c392e509), for each K/IQ4 mix on the qwen2-0.5b and llama-1b
# presets. An instrument, not a test: it needs the peers, so nothing in CI runs it.
#
# usage: perf/quant_identity.sh [BUILD_DIR]          (default: build)
# env:   LAYERS (16)   blocks of each preset: n/8 = 2 and n/16 = 1, so every layer-dependent
#                      rule (Q3_K_M's first two attn_v and first ffn_down, the first eighth's
#                      ffn_down of Q2_K_S and IQ4_*) has layers on both sides
#        VOCAB         --n-vocab for both presets (default: the preset's own); the rules read
#                      only the embedding's width, so a smaller vocabulary changes no type
#        MIXES         (Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L IQ4_NL IQ4_XS; llama-quantize refuses
#                      Q2_K_S without an importance matrix, and the row says so)
#        PRESETS       (qwen2-0.5b llama-1b)
#        THREADS       (nproc) for both quantizers; neither's bytes depend on it
#        PEERS         (../shared/peers from the repository root)
#        WORK          (build-quant-identity) the model files, removed mix by mix
# Prints a markdown table: mix, preset, tensors, same type, same bytes, and each tensor that
# differs under it. "same bytes" is "-" where plumb cannot write the mix (no quantizer yet).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
plumb=$build/tools/plumb
cmp=$build/perf/quant_cmp
peers=${PEERS:-$root/../shared/peers}
layers=${LAYERS:-16}
mixes=${MIXES:-Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L IQ4_NL IQ4_XS}
presets=${PRESETS:-qwen2-0.5b llama-1b}
threads=${THREADS:-$(nproc)}
work=${WORK:-$root/build-quant-identity}
for f in "$plumb" "$cmp"; do
    [ -x "$f" ] || { echo "quant_identity: no $f (build the plumb_cli and quant_cmp targets)" >&2; exit 2; }
done
[ -x "$peers/run" ] || { echo "quant_identity: no peers at $peers (set PEERS)" >&2; exit 2; }
mkdir -p "$work"
status=0
echo "| mix | preset | tensors | same type | same bytes |"
echo "|---|---|---:|---:|---:|"
for preset in $presets; do
    f32=$work/$preset-f32.gguf
    vocab_opt=()
    [ -n "${VOCAB:-}" ] && vocab_opt=(--n-vocab "$VOCAB")
    if ! "$plumb" mkmodel --preset "$preset" --n-layer "$layers" "${vocab_opt[@]}" "$f32" \
        >"$work/mkmodel.log" 2>&1; then
        echo "quant_identity: mkmodel $preset failed:" >&2; cat "$work/mkmodel.log" >&2; exit 1
    fi
    for mix in $mixes; do
        ll=$work/$preset-$mix-llama.gguf
        pb=$work/$preset-$mix-plumb.gguf
        log=$work/llama-$preset-$mix.log
        if ! "$peers/run" llama.cpp llama-quantize "$f32" "$ll" "$mix" "$threads" >"$log" 2>&1; then
            # llama-quantize's command line refuses Q2_K_S without an importance matrix
            if grep -q "without an importance matrix" "$log"; then
                echo "| $mix | $preset | llama-quantize refuses it without an imatrix | | |"
            else
                echo "| $mix | $preset | llama-quantize failed (see $log) | | |"
                status=1
            fi
            continue
        fi
        have_pb=1
        if ! "$plumb" quantize --threads "$threads" "$f32" "$pb" "$mix" >"$work/plumb.log" 2>&1; then
            have_pb=0
            why=$(tail -1 "$work/plumb.log")
        fi
        if [ $have_pb = 1 ]; then
            "$cmp" "$f32" "$ll" "$mix" "$pb" >"$work/cmp.txt"
        else
            "$cmp" "$f32" "$ll" "$mix" >"$work/cmp.txt"
        fi
        rc=$?
        [ $rc -ne 0 ] && status=1
        read -r _ n _ st _ sb < <(tail -1 "$work/cmp.txt")
        echo "| $mix | $preset | ${n:-?} | ${st:-?} | ${sb:-?} |"
        sed '$d' "$work/cmp.txt" | sed "s/^/    $mix $preset: /" >>"$work/diffs.txt"
        [ $have_pb = 0 ] && echo "    $mix $preset: plumb quantize: $why" >>"$work/diffs.txt"
        rm -f "$ll" "$pb"
    done
    rm -f "$f32"
done
if [ -s "$work/diffs.txt" ]; then
    echo
    echo "Differences:"
    cat "$work/diffs.txt"
fi
rm -f "$work/diffs.txt"
exit $status
