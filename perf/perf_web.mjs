// perf_web.mjs — `make perf-web` (issue 30): plumb's wasm build against wllama in ONE headless
// chromium session, plus native plumb (avx2) on the same files, interleaved round by round
// (plumb-wasm, wllama, native; per file x threads) so the machine's load hits all alike; medians.
// Then the chat page (web/index.html, engine in its Worker) for 10 turns: time to first token of
// turn 10 against turn 2, with the prefix cache. Not a test: a measurement (see perf/NOTES.md).
//
//   node perf/perf_web.mjs            (env: ROUNDS=3 PROMPT_REPEAT N=32 THREADS=1,2 MODELS=a,b
//                                      NPM=build/perf-web-npm WEB=build-wasm/web PLUMB=build/tools/plumb
//                                      OUT=perf/reports SMOKE=1: R=1, N=4, demo model, no page)
// Exit 0 with a report; 2 (a FAIL line first) when something needed is missing or a run failed.
import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const env = process.env;
const SMOKE = env.SMOKE === '1';
const ROUNDS = Number(env.ROUNDS || (SMOKE ? 1 : 3));
const N = Number(env.N || (SMOKE ? 4 : 32));
const THREADS = (env.THREADS || '1,2').split(',').map(Number);
const DEMO = path.join(ROOT, 'models/plumb-en-8m-Q8_0.gguf');
const MODELS = (env.MODELS ? env.MODELS.split(',') : SMOKE ? [DEMO]
  : [DEMO, path.join(ROOT, 'build/perf-web-models/qwen2-0.5b-Q4_0.gguf')]).map((m) => path.resolve(m));
const NPM = path.resolve(env.NPM || path.join(ROOT, 'build/perf-web-npm'));
const WEB = path.resolve(env.WEB || path.join(ROOT, 'build-wasm/web'));
const PLUMB = path.resolve(env.PLUMB || path.join(ROOT, 'build/tools/plumb'));
const OUT = path.resolve(env.OUT || path.join(ROOT, SMOKE ? 'build/perf-web-smoke' : 'perf/reports'));
const CHROMIUM = env.PLUMB_CHROMIUM || '/usr/bin/chromium';
const N_CTX = Number(env.N_CTX || 2048);
const TIMEOUT_MS = Number(env.TIMEOUT_MS || 20 * 60 * 1000);
const SYSTEM = 'You are a helpful assistant.';
// ~100 prompt tokens with the chat template (both engines report what they saw).
const USER = 'The jury said it did find that the city executive committee, which had over-all charge ' +
  'of the election, deserves the praise and thanks of the city for the manner in which the election ' +
  'was conducted. The jury further said in term-end presentments that the city council had done a ' +
  'good job. Tell me more about the election and the committee.';
// plumb's engine has no ignore-EOS: its decode rows sample (temp 1.5, seed 38, no truncation) so
// that replies run to N; wllama decodes greedy with ignore_eos. Sampling costs plumb a softmax a token.
const PLUMB_SAMPLER = { temp: 1.5, topK: 0, topP: 1, minP: 0, seed: 38 };

function fail(why) { console.log(`FAIL: ${why}`); process.exit(2); }
const watchdog = setTimeout(() => fail(`timed out after ${TIMEOUT_MS / 1000} s`), TIMEOUT_MS);
watchdog.unref();

// ---- what is needed ------------------------------------------------------------------------
if (Number(process.versions.node.split('.')[0]) < 18) fail(`node ${process.version} is too old (18+)`);
if (!existsSync(CHROMIUM)) fail(`chromium not found at ${CHROMIUM} (Debian: chromium; or PLUMB_CHROMIUM=PATH)`);
for (const f of ['plumb-engine.mjs', 'plumb-simd-threads.mjs', 'plumb-simd-threads.wasm'])
  if (!existsSync(path.join(WEB, f))) fail(`${path.join(WEB, f)} missing (run \`make wasm\`)`);
const WLLAMA = path.join(NPM, 'node_modules/@wllama/wllama');
for (const p of ['puppeteer-core/package.json', '@wllama/wllama/esm/index.js'])
  if (!existsSync(path.join(NPM, 'node_modules', p))) fail(`${p} not in ${NPM}/node_modules (make perf-web installs it with npm)`);
if (!existsSync(PLUMB)) fail(`${PLUMB} missing (build plumb: cmake --build build; or PLUMB=PATH)`);
for (const m of MODELS) if (!existsSync(m)) fail(`model ${m} missing (make perf-web makes the larger one with plumb mkmodel)`);
const RELAXED = env.RELAXED !== '0' && existsSync(path.join(WEB, 'plumb-simd-relaxed-threads.wasm'));
const wllamaVersion = JSON.parse(readFileSync(path.join(WLLAMA, 'package.json'), 'utf8')).version;

// ---- a static server with COOP/COEP (cross-origin isolated: both multi-thread builds run) ------
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm' };
const MOUNTS = { '/bench/': [path.join(ROOT, 'perf/web')], '/plumb/': [WEB], '/wllama/': [path.join(WLLAMA, 'esm')],
  '/page/': [path.join(ROOT, 'web'), WEB], '/m/': MODELS.map((m) => path.dirname(m)) };
function resolveUrl(pathname) {
  for (const [pre, dirs] of Object.entries(MOUNTS)) {
    if (!pathname.startsWith(pre)) continue;
    let rel = pathname.slice(pre.length) || 'index.html';
    if (rel.split('/').some((s) => s === '..' || s === '')) return null;
    for (const d of dirs) {
      const p = path.join(d, rel);
      try { if (statSync(p).isFile()) return p; } catch { /* next */ }
    }
  }
  return null;
}
const server = http.createServer((req, res) => {
  const file = resolveUrl(decodeURIComponent(new URL(req.url, 'http://x').pathname));
  if (!file) { res.writeHead(404); res.end('not found'); return; }
  res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream',
    'Content-Length': statSync(file).size, 'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp', 'Cross-Origin-Resource-Policy': 'same-origin',
    'Cache-Control': 'no-cache' });
  if (req.method === 'HEAD') { res.end(); return; }
  createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const BASE = `http://127.0.0.1:${server.address().port}`;

const puppeteer = createRequire(path.join(NPM, 'node_modules/puppeteer-core/package.json'))('puppeteer-core');
const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'], protocolTimeout: TIMEOUT_MS });
const chromeVersion = await browser.version();
const done = async (code) => { await browser.close().catch(() => {}); server.close(); process.exit(code); };

const load1 = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
const med = (a) => { const s = a.filter(Number.isFinite).sort((x, y) => x - y); return s.length ? s[(s.length - 1) >> 1] : NaN; };
const loads = [];

function native(model, threads) {
  const out = execFileSync(PLUMB, ['bench', '-m', model, '-p', String(P_NATIVE[model] || 64), '-n', String(N),
    '-t', String(threads), '-r', '1', '--kernels', 'avx2', '--no-probe', '-o', 'json'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const j = JSON.parse(out);
  const row = (t) => j.results.find((r) => r.test === t);
  return { prefill: row(`pp${P_NATIVE[model] || 64}`).tok_s.median, decode: row(`tg${N}`).tok_s.median };
}
const P_NATIVE = {};
const P_LOGITS = Number(env.P_LOGITS || 108); // the demo file's prompt length with the chat template

const rows = [];
let page;
try {
  // One page (tab) per file and thread count, closed after: the engines' wasm memories of one
  // group are gone before the next loads.
  for (const model of MODELS) for (const t of THREADS) {
    page = await browser.newPage();
    page.on('pageerror', (e) => console.log(`  [page error] ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error' || env.PLUMB_WEB_VERBOSE) console.log(`  [page ${m.type()}] ${m.text()}`); });
    await page.goto(`${BASE}/bench/bench.html`, { waitUntil: 'load' });
    await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
    if (!(await page.evaluate(() => window.bench.isolated()))) fail('the bench page is not cross-origin isolated');
    const name = path.basename(model);
    const url = `/m/${name}`;
    console.log(`== ${name}, ${t} thread(s): loading plumb, wllama`);
    const cfgs = [];
    {
      const sets = ['wasm128'];
      // wasm128r: the relaxed-SIMD module (its own Worker), interleaved with wasm128's.
      if (RELAXED) sets.push('wasm128r');
      if (model === DEMO && !SMOKE && env.REF !== '0') sets.push('ref');
      for (const k of sets) {
        const id = `p-${t}-${k}`;
        const v = k === 'wasm128r' ? 'simd-relaxed-threads' : env.VARIANT;
        const r = await page.evaluate((id, url, t, k, v) => window.bench.plumbLoad(id, url, t, k, v), id, url, t, k, v);
        if (r.model.kernels !== k) fail(`plumb loaded kernels ${r.model.kernels}, asked ${k}`);
        // One untimed turn: the first runs cold (wasm tier-up, the heap growing). A file whose
        // chat turn the engine refuses is measured through eng.logits instead (mode 'logits').
        let mode = 'chat', why = null;
        try {
          await page.evaluate((id, o) => window.bench.plumbTurn(id, o), id, { system: SYSTEM, user: USER, maxTokens: N, nCtx: N_CTX, sampler: PLUMB_SAMPLER });
        } catch (e) {
          mode = 'logits'; why = e.message;
          console.log(`  plumb's chat turn failed on ${name} (${why}): measuring through eng.logits`);
          await page.evaluate((id, p) => window.bench.plumbLogits(id, p, 2), id, P_LOGITS);
        }
        cfgs.push({ engine: 'plumb', kernels: k, threads: t, id, mode, why, pre: [], dec: [], prompt: [], gen: [] });
      }
      const id = `w-${t}`;
      let w;
      try {
        w = await page.evaluate((id, url, t, c) => window.bench.wllamaLoad(id, url, t, c), id, url, t, N_CTX);
      } catch (e) {
        console.log(`  wllama could not load ${name} with ${t} threads: ${e.message}`);
        rows.push({ model: name, engine: 'wllama', threads: t, error: e.message });
      }
      if (w) await page.evaluate((id, o) => window.bench.wllamaTurn(id, o), id, { system: SYSTEM, user: USER, maxTokens: N });
      if (w) cfgs.push({ engine: 'wllama', kernels: w.multithread ? 'multi-thread' : 'single-thread', threads: t,
        wllamaThreads: w.threads, id, pre: [], dec: [], prompt: [], gen: [] });
      cfgs.push({ engine: 'native', kernels: 'avx2', threads: t, pre: [], dec: [], prompt: [], gen: [] });
    }
    for (let r = 0; r < ROUNDS; r++) {
      const l0 = load1();
      for (const c of cfgs) {
        const o = { system: SYSTEM, user: USER, maxTokens: N, nCtx: N_CTX, sampler: PLUMB_SAMPLER };
        if (c.engine === 'plumb') {
          const st = c.mode === 'logits' ? await page.evaluate((id, p, n) => window.bench.plumbLogits(id, p, n), c.id, P_LOGITS, N)
            : await page.evaluate((id, o) => window.bench.plumbTurn(id, o), c.id, o);
          c.pre.push(st.prefillTokS); c.prompt.push(st.prefilled); c.gen.push(st.generated);
          if (st.generated >= Math.min(8, N)) c.dec.push(st.decodeTokS);
          P_NATIVE[model] = st.prefilled;
        } else if (c.engine === 'wllama') {
          const st = await page.evaluate((id, o) => window.bench.wllamaTurn(id, o), c.id, o);
          c.pre.push(st.timings.prompt_per_second); c.dec.push(st.timings.predicted_per_second);
          c.prompt.push(st.timings.prompt_n); c.gen.push(st.timings.predicted_n);
        } else {
          const st = native(model, c.threads);
          c.pre.push(st.prefill); c.dec.push(st.decode); c.prompt.push(P_NATIVE[model]); c.gen.push(N);
        }
      }
      loads.push([l0, load1()]);
      console.log(`  round ${r + 1}/${ROUNDS} (load ${l0.toFixed(2)} -> ${load1().toFixed(2)})`);
    }
    for (const c of cfgs) {
      rows.push({ model: name, engine: c.engine, mode: c.mode, why: c.why, kernels: c.kernels, threads: c.threads, wllamaThreads: c.wllamaThreads,
        prefill: med(c.pre), decode: med(c.dec), prefillSamples: c.pre, decodeSamples: c.dec,
        promptTokens: [...new Set(c.prompt)], genTokens: [...new Set(c.gen)] });
      if (c.engine === 'plumb') await page.evaluate((id) => window.bench.plumbFree(id), c.id);
      if (c.engine === 'wllama') await page.evaluate((id) => window.bench.wllamaFree(id), c.id);
      const r = rows[rows.length - 1];
      console.log(`  ${r.engine} ${r.kernels}: prefill ${r.prefill.toFixed(1)} tok/s (${r.promptTokens} tokens), decode ${r.decode.toFixed(1)} tok/s (${r.genTokens} tokens)`);
    }
    await page.close();
  }
} catch (e) {
  console.log(`FAIL: ${e.stack || e}`);
  await done(2);
}

// ---- the chat page: 10 turns on the demo model, per-turn stats ------------------------------
let turns = [];
if (!SMOKE && env.PAGE !== '0') {
  try {
    const TURNS = ['Hello! Who are you?', 'Tell me a story about a small cat.', 'What did the cat find?',
      'Where did it go next?', 'Who did it meet?', 'What happened then?', 'Was the cat happy?',
      'What did the friends eat?', 'How did the day end?', 'Tell me the moral of the story.'];
    const p = await browser.newPage();
    p.on('pageerror', (e) => console.log(`  [page error] ${e.message}`));
    const t = THREADS.includes(2) ? 2 : THREADS[0];
    await p.goto(`${BASE}/page/?backend=wasm&variant=simd-threads&threads=${t}&temp=0&seed=7&max_tokens=32&n_ctx=2048&model=/m/${path.basename(DEMO)}`, { waitUntil: 'load' });
    await p.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
    await p.waitForFunction(() => document.body.dataset.chat === '1' || document.getElementById('settings-error').textContent, { timeout: 120000 });
    const err = await p.$eval('#settings-error', (el) => el.textContent);
    if (err) throw new Error(`the page: ${err}`);
    for (const text of TURNS) {
      const i = await p.evaluate(() => window.plumb.turns.length);
      await p.$eval('#input', (el, v) => { el.value = v; }, text);
      await p.click('#send');
      await p.waitForFunction((i) => window.plumb.turns[i] && window.plumb.turns[i].done, { timeout: 120000 }, i);
      turns.push(await p.evaluate((i) => ({ ...window.plumb.turns[i].stats, error: window.plumb.turns[i].error || null }), i));
    }
    turns.env = await p.$eval('#env', (el) => el.textContent);
    await p.close();
  } catch (e) {
    console.log(`FAIL: the chat page: ${e.stack || e}`);
    await done(2);
  }
}
await browser.close();
server.close();

// ---- the report -----------------------------------------------------------------------------
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '—');
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—');
const get = (m, e, t, k) => rows.find((r) => r.model === m && r.engine === e && r.threads === t && (!k || r.kernels === k));
const notes = new Set();
let md = `plumb wasm (simd-threads; wasm128r: simd-relaxed-threads) vs wllama ${wllamaVersion} (${chromeVersion}, headless, one session) vs native plumb (avx2);\n` +
  `${ROUNDS} interleaved rounds, medians; decode over ${N} tokens; load average (1 min) ${f2(Math.min(...loads.flat()))}-${f2(Math.max(...loads.flat()))}; ` +
  `${os.cpus().length} CPUs (${os.cpus()[0].model}); ${new Date().toISOString()}\n\n` +
  '| file | threads | test | prompt tok | wllama | plumb wasm128 | plumb/wllama | plumb wasm128r (relaxed) | wasm128r/wasm128 | plumb wasm ref | native avx2 | wasm128/native |\n' +
  '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n';
for (const m of MODELS.map((x) => path.basename(x)))
  for (const t of THREADS)
    for (const test of ['prefill', 'decode']) {
      const w = get(m, 'wllama', t), p = get(m, 'plumb', t, 'wasm128'), ref = get(m, 'plumb', t, 'ref'), n = get(m, 'native', t);
      const rx = get(m, 'plumb', t, 'wasm128r');
      const toks = `${p ? p.promptTokens.join('/') : '?'}${w && w.promptTokens ? ` (wllama ${w.promptTokens.join('/')})` : ''}`;
      if (p && p.mode === 'logits') notes.add(`${m}: plumb's chat turn failed (${p.why}); its rows are eng.logits of ${P_LOGITS} tokens (prefill) and of 1 token from a fresh session (decode column: a depth-0 step, not a decode in a chat)`);
      md += `| ${m} | ${t} | ${test} | ${test === 'prefill' ? toks : `${N} gen`} | ${w && !w.error ? f1(w[test]) : 'no load'} | ${f1(p && p[test])} | ` +
        `${w && !w.error ? f2(p[test] / w[test]) : '—'} | ${rx ? f1(rx[test]) : '—'} | ${rx ? f2(rx[test] / p[test]) : '—'} | ${ref ? f1(ref[test]) : '—'} | ${f1(n && n[test])} | ${n ? f2(p[test] / n[test]) : '—'} |\n`;
    }
for (const x of notes) md += `\nNote: ${x}\n`;
if (turns.length) {
  md += `\nThe chat page (web/index.html, engine in its Worker; ${turns.env}), demo model, greedy, 32 tokens a reply, prefix cache on:\n\n` +
    '| turn | path | reused | prefilled | generated | ttft ms |\n| ---: | --- | ---: | ---: | ---: | ---: |\n';
  turns.forEach((s, i) => { md += `| ${i + 1} | ${s.path} | ${s.reused} | ${s.prefilled} | ${s.generated} | ${f1(s.ttftMs ?? s.ttft_ms ?? s.ttft)} |\n`; });
}
console.log(`\n${md}`);
mkdirSync(OUT, { recursive: true });
const sha = (() => { try { return execFileSync('git', ['rev-parse', '--short=8', 'HEAD'], { cwd: ROOT }).toString().trim(); } catch { return 'nogit'; } })();
const stem = path.join(OUT, `${new Date().toISOString().slice(0, 10)}-${sha}-web${SMOKE ? '-smoke' : ''}`);
writeFileSync(`${stem}.md`, md);
writeFileSync(`${stem}.json`, JSON.stringify({ commit: sha, date: new Date().toISOString(), chromium: chromeVersion,
  wllama: wllamaVersion, node: process.version, cpus: os.cpus().length, cpu: os.cpus()[0].model, rounds: ROUNDS, n: N,
  threads: THREADS, system: SYSTEM, user: USER, plumbSampler: PLUMB_SAMPLER, loads, rows, pageTurns: turns }, null, 1));
console.log(`report: ${stem}.md, ${stem}.json`);
process.exit(0);
