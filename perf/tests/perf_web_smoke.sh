#!/usr/bin/env bash
# perf_web_smoke.sh — ctest perf_web_smoke: `make perf-web`'s harness end to end, small (one
# round, 4 tokens, the demo model, 1 and 2 threads), the second group made to time out
# (GROUP_TIMEOUT_MS=...,1). Checks: exit 3 (a partial report), and the report still holds the
# first group's rows (plumb wasm128 and wasm128r when built, wllama, native: numbers, greedy to
# N tokens) with the second group marked timed out. Never a speed check. Usage: perf_web_smoke.sh BUILD
set -uo pipefail
BUILD=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
SMOKE=1 THREADS=1,2 GROUP_TIMEOUT_MS=${FIRST_GROUP_MS:-240000},1 OUT=$OUT bash "$ROOT/perf/perf_web.sh" -b "$BUILD"
rc=$?
[ "$rc" = 77 ] && exit 77
[ "$rc" = 3 ] || { echo "FAIL: expected exit 3 (a partial report: the second group timed out), got $rc"; exit 1; }
json=$(ls "$OUT"/*.json 2>/dev/null | head -1)
[ -n "$json" ] || { echo "FAIL: no report JSON in $OUT"; exit 1; }
RELAXED=$([ -f "$ROOT/build-wasm/web/plumb-simd-relaxed-threads.wasm" ] && echo 1 || echo 0) \
node - "$json" "${json%.json}.md" <<'JS'
const fs = require('node:fs');
const [json, md] = process.argv.slice(2);
const r = JSON.parse(fs.readFileSync(json, 'utf8'));
const text = fs.readFileSync(md, 'utf8');
let bad = 0;
const check = (c, what, d) => { console.log(`${c ? 'ok  ' : 'FAIL'} ${what}${c ? '' : `: ${JSON.stringify(d)}`}`); if (!c) bad++; };
check(r.groups.length === 2 && r.groups[0].status === 'done', 'the first group completed', r.groups);
check(r.groups[1].status === 'timed out' && /limit/.test(r.groups[1].why || ''), 'the second group timed out and says so', r.groups[1]);
const first = r.rows.filter((x) => x.threads === 1);
const pos = (x) => Number.isFinite(x) && x > 0;
const want = ['wasm128', ...(process.env.RELAXED === '1' ? ['wasm128r'] : [])];
for (const k of want) {
  const p = first.find((x) => x.engine === 'plumb' && x.kernels === k);
  check(p && pos(p.prefill) && pos(p.decode) && p.genTokens.join() === String(r.n), `plumb ${k}: the first group's row kept, ${r.n} tokens greedy`, p);
}
const w = first.find((x) => x.engine === 'wllama');
check(w && (w.error || (pos(w.prefill) && pos(w.decode))), 'wllama: the first group\'s row kept', w);
const n = first.find((x) => x.engine === 'native');
check(n && pos(n.prefill) && pos(n.decode) && n.kernels && n.kernels !== 'best', 'native: the first group\'s row kept, with the set it ran', n);
check(/\| 1 \| prefill \|[^\n]*done/.test(text) && /\| 2 \| prefill \|[^\n]*timed out/.test(text), 'the markdown table has both groups, marked', text);
check(/greedy/.test(r.sampler) && /N-1 decode steps/.test(r.decode), 'the report states the sampler and the decode timing', [r.sampler, r.decode]);
console.log(bad ? `perf_web_smoke: ${bad} check(s) failed` : 'perf_web_smoke: all checks passed');
process.exit(bad ? 1 : 0);
JS
