#!/bin/sh
# readme_perplexity.sh — the perplexity example of tools/README.md, regenerated: the demo model's F32
# conversion and its committed Q8_0 GGUF on the committed held-out slice
# (conformance/oracle/heldout-brown.txt), `plumb perplexity` then `--kl-divergence-base`.
# Prints the transcript tools/README.md shows between its readme_perplexity.sh markers; with --check
# tools/README.md, compares it with them instead (exit 1 when they differ: regenerate, paste).
#
# usage: readme_perplexity.sh PLUMB SOURCE_DIR [--check tools/README.md]
# The avx2 kernel set is named so the digits do not depend on the machine's best set (exit 77
# where the CPU has no AVX2).
set -u
LC_ALL=C
export LC_ALL

plumb=${1:?usage: readme_perplexity.sh PLUMB SOURCE_DIR [--check tools/README.md]}
src=${2:?usage: readme_perplexity.sh PLUMB SOURCE_DIR [--check tools/README.md]}
check=${4:-}
[ "${3:-}" = --check ] || check=

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plumb-readme-ppl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

case $plumb in /*) ;; *) plumb=$(pwd)/$plumb ;; esac
case $src in /*) ;; *) src=$(pwd)/$src ;; esac
case $check in /* | "") ;; *) check=$(pwd)/$check ;; esac
if ! "$plumb" kernels 2>/dev/null | grep -qE '^  avx2 +supported'; then
    echo "SKIP: this CPU has no AVX2 (the example is computed with --kernels avx2)"
    exit 77
fi

# Short names in the transcript: the files sit in the working directory.
cd "$tmp" || exit 1
cp "$src/conformance/oracle/heldout-brown.txt" heldout-brown.txt
ln -s "$src/models/plumb-en-8m-Q8_0.gguf" plumb-en-8m-Q8_0.gguf
"$plumb" convert "$src/models/plumb-en-8m-hf" f32.gguf --type F32 >/dev/null 2>convert.err ||
    { cat convert.err >&2; exit 1; }

# step COMMAND...: "$ plumb ..." then its stdout (stderr, the speed, is left out).
step() {
    echo "\$ plumb $*"
    "$plumb" "$@" 2>step.err || { cat step.err >&2; exit 1; }
}
{
    step perplexity -m f32.gguf -f heldout-brown.txt -c 256 --kernels avx2 --save-logits f32.logits
    step perplexity -m plumb-en-8m-Q8_0.gguf -f heldout-brown.txt --kernels avx2 \
        --kl-divergence-base f32.logits
} >transcript.txt

if [ -z "$check" ]; then
    cat transcript.txt
    exit 0
fi
sed -n '/<!-- readme_perplexity.sh: begin -->/,/<!-- readme_perplexity.sh: end -->/p' "$check" |
    sed '1,2d;$d' | sed '$d' >readme.txt
if ! diff -u readme.txt transcript.txt; then
    echo "FAIL: $check's perplexity example is not what tools/tests/readme_perplexity.sh prints" >&2
    exit 1
fi
echo "ok: $check's perplexity example is current"
