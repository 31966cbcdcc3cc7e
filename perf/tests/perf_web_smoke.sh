#!/usr/bin/env bash
# perf_web_smoke.sh — ctest perf_web_smoke: `make perf-web`'s harness end to end, small (one
# round, 4 tokens, the demo model, 1 and 2 threads, then the demo model's memory row), the second
# group made to time out (GROUP_TIMEOUT_MS=...,1,...). Checks: exit 3 (a partial report); the
# report still holds the first group's rows (plumb wasm128 and wasm128r when built, wllama,
# native: numbers, greedy to N tokens, each row's wasm memory after load and after the runs) with
# the second group marked timed out; the run went on past it (the memory row after it is done,
# within 4 GiB); the JSON lines have every sample, written before the group that timed out ended;
# every decode figure follows the one rule from the engine's raw figures (N - 1 tokens over the
# N - 1 steps after the first draw); the int8 dot rates of one core (wasm's relaxed dot, its
# answer checked, and native's) and the prefill shares are in the report. Never a speed check. Usage: perf_web_smoke.sh BUILD
set -uo pipefail
BUILD=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
SMOKE=1 THREADS=1,2 GROUP_TIMEOUT_MS=${FIRST_GROUP_MS:-240000},1,${FIRST_GROUP_MS:-240000} OUT=$OUT bash "$ROOT/perf/perf_web.sh" -b "$BUILD"
rc=$?
[ "$rc" = 77 ] && exit 77
[ "$rc" = 3 ] || { echo "FAIL: expected exit 3 (a partial report: the second group timed out), got $rc"; exit 1; }
json=$(ls "$OUT"/*-web-smoke.json 2>/dev/null | head -1)
[ -n "$json" ] || { echo "FAIL: no report JSON in $OUT"; exit 1; }
RELAXED=$([ -f "$ROOT/build-wasm/web/plumb-simd-relaxed-threads.wasm" ] && echo 1 || echo 0) \
node - "$json" "${json%.json}.md" "${json%.json}.jsonl" <<'JS'
const fs = require('node:fs');
const [json, md, jl] = process.argv.slice(2);
const r = JSON.parse(fs.readFileSync(json, 'utf8'));
const text = fs.readFileSync(md, 'utf8');
const lines = fs.existsSync(jl) ? fs.readFileSync(jl, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : [];
let bad = 0;
const check = (c, what, d) => { console.log(`${c ? 'ok  ' : 'FAIL'} ${what}${c ? '' : `: ${JSON.stringify(d)}`}`); if (!c) bad++; };
check(r.groups.length === 3 && r.groups[0].status === 'done', 'the first group completed', r.groups);
check(r.groups[1].status === 'timed out' && /limit/.test(r.groups[1].why || ''), 'the second group timed out and says so', r.groups[1]);
const first = r.rows.filter((x) => x.threads === 1 && !x.memory); // the first group's (the memory row is 1 thread too)
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
// Every row's wasm memory: after load and after the runs (it only grows).
for (const x of first.filter((x) => x.engine !== 'native' && !x.error && !x.memory))
  check(pos(x.memoryAfterLoad) && x.memoryAfterRuns >= x.memoryAfterLoad && x.memoryAfterRuns < 2 ** 32,
    `${x.engine} ${x.kernels}: wasm memory after load and after the runs`, x);
// The run went on past the group that timed out: the memory row after it.
const mg = r.groups[2], mr = r.rows.find((x) => x.memory);
check(mg && mg.memory && mg.status === 'done', 'the run went on after the timeout: the memory row ran', mg);
check(mr && pos(mr.memoryAfterLoad) && mr.memoryAfterRuns >= mr.memoryAfterLoad && mr.memoryAfterRuns < 2 ** 32 && pos(mr.fileBytes),
  'the memory row: wasm memory after load and after a turn, within 4 GiB', mr);
check(/Memory rows[\s\S]*\| yes \| done \|/.test(text) && /wasm memory per row/.test(text), 'the markdown has both memory tables', text);
// The JSON lines: each sample as it was measured, before the timed-out group's end was written.
const samples = lines.filter((l) => l.type === 'sample');
const endOf = (i) => lines.findIndex((l) => l.type === 'group' && l.threads === r.groups[i].threads && !l.memory);
check(lines[0] && lines[0].type === 'run', 'jsonl: the run line first', lines[0]);
check(samples.length === first.filter((x) => !x.error && !x.memory).length && samples.every((l) => l.threads === 1),
  'jsonl: one sample per row of the first group', samples);
check(endOf(1) > 0 && lines[endOf(1)].status === 'timed out' && lines.indexOf(samples[samples.length - 1]) < endOf(0),
  'jsonl: the samples written as measured, the timed-out group recorded', lines.filter((l) => l.type === 'group'));
check(lines.filter((l) => l.type === 'memory').length === 2, 'jsonl: the memory row\'s load and turn', lines.filter((l) => l.type === 'memory'));
// One decode rule from each engine's raw figures: N - 1 tokens over the N - 1 steps after the first draw.
const near = (a, b) => Math.abs(a - b) <= 1e-9 * Math.abs(b);
for (const l of samples) {
  const n = l.genTokens;
  const want = l.engine === 'plumb' ? l.raw.decodeTokS * n / (n - 1)
    : l.engine === 'wllama' ? (l.raw.predicted_n - 1) * 1000 / l.raw.predicted_ms : l.raw.tg_tok_s;
  check(pos(l.decode) && near(l.decode, want), `${l.engine} ${l.kernels}: decode = N - 1 tokens over the N - 1 steps after the first draw`, { l, want });
}
// What this chromium does with memory64 is recorded (a fact about the browser, not checked).
check(r.memory64 && typeof r.memory64.validates === 'boolean' && lines.some((l) => l.type === 'memory64') && /memory64 in this chromium/.test(text),
  'the memory64 probe\'s answer is in the report', r.memory64);
// The int8 dot rate of one core on both sides (the wasm probe checks its own answer: ok), and
// the first group's prefill as a share of each.
const dr = r.dotRate || {};
check(dr.wasm && dr.wasm.ok && pos(dr.wasm.gmacs) && dr.native && pos(dr.native.gmacs) && /vpdpbusd|pmaddubsw|dot/.test(dr.native.kernel || '') &&
  lines.some((l) => l.type === 'dotRate'), 'the int8 dot rates of one core, wasm (its answer checked) and native', dr);
check(/The int8 dot rate of one core \(GMAC\/s, medians\): wasm's relaxed dot [0-9.]+ [^\n]*native [0-9.]+ [^\n]*wasm\/native [0-9.]+/.test(text) &&
  /\| plumb-en-8m-Q8_0\.gguf \| [0-9.]+ M \| [0-9.]+ \| [0-9]+% \| [0-9.]+ \| [0-9]+% \|/.test(text), 'the dot rates and the prefill shares are in the report', text.slice(-1500));
check(/\| 1 \| prefill \|[^\n]*done/.test(text) && /\| 2 \| prefill \|[^\n]*timed out/.test(text), 'the markdown table has both groups, marked', text);
check(new RegExp(`Headline, ${process.env.RELAXED === '1' ? 'wasm128r' : 'wasm128'} \\(the module the page picks\\):\\n- [^\\n]*1 thread\\(s\\): prefill [0-9.]+x wllama, [0-9.]+x native`).test(text),
  'the headline ratios are on the module the page picks', text.slice(0, 800));
check(/greedy/.test(r.sampler) && /N - 1 tokens after the first/.test(r.decode), 'the report states the sampler and the decode timing', [r.sampler, r.decode]);
console.log(bad ? `perf_web_smoke: ${bad} check(s) failed` : 'perf_web_smoke: all checks passed');
process.exit(bad ? 1 : 0);
JS
