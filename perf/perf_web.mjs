// perf_web.mjs — `make perf-web` (issues 30, 52): plumb's wasm build (wasm128 and wasm128r)
// against wllama in ONE headless chromium session, plus native plumb (the machine's best kernel
// set) on the same files, interleaved round by round (per file x threads: a group) so the
// machine's load hits all alike; medians. Then the chat page (web/index.html, engine in its
// Worker) for 10 turns. Not a test: a measurement (see perf/NOTES.md).
//
// Measured the same way on every engine: greedy decoding to N tokens (no end-of-generation:
// plumb's ignoreEos, wllama's ignore_eos); prefill = prompt tokens / prompt time; decode = the
// N - 1 tokens after the first over the time from the first token drawn to the N-th (N - 1
// decode steps: tokens per decode step). From each engine's own figures: wllama (llama.cpp's
// server code) times exactly that span and reports N tokens over it: (predicted_n - 1) /
// predicted_ms; plumb's engine times N steps from the first draw (it also evaluates the N-th
// token into its cache) and reports N - 1 tokens over them: decodeTokS * N / (N - 1); native
// `plumb bench` tgN times N steps: its tok/s as is. Both raw figures are in the JSON lines.
// Memory per row: the engine's wasm memory (buffer.byteLength) after load and after the runs.
// Every sample goes to <stem>.jsonl the moment it is measured; the table (md) and the summary
// (json) are rewritten after every round of every group: a group that fails or runs past its own
// limit (GROUP_TIMEOUT_MS) loses only itself, and a killed run keeps its rows. Then the memory
// rows (MEM_MODELS: each file loaded alone into the page's module, a short chat turn, the wasm
// memory against wasm32's 4 GiB), each under the same per-group limit. Before the groups, the
// int8 dot rate of one core on both sides (wasm's relaxed dot in a tab, native plumb bench's
// probe): the ceiling of prefill's wasm/native ratio, and each 1-thread prefill as a share of it.
//
//   node perf/perf_web.mjs            (env: ROUNDS=3 N=32 THREADS=1,2 MODELS=a,b NPM=build/perf-web-npm
//                                      WEB=build-wasm/web PLUMB=build/tools/plumb OUT=perf/reports
//                                      GROUP_TIMEOUT_MS=1200000 (a list: one per group, the last repeats)
//                                      WEB_B=DIR (A/B of two wasm builds) ENGINES=plumb,wllama,native
//                                      NATIVE_KERNELS= (default: the best) MEM_MODELS=a,b (none: no memory rows)
//                                      SMOKE=1: R=1, N=4, demo model, no page, the demo model's memory row)
// Exit 0 with a full report; 3 with a partial one (a group timed out or failed: the report says
// which); 2 (a FAIL line first) when something needed is missing.
import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, createReadStream, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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
const TIMEOUT_MS = Number(env.TIMEOUT_MS || 60 * 60 * 1000); // the whole run (a backstop)
const GROUP_TIMEOUT_MS = (env.GROUP_TIMEOUT_MS || String(20 * 60 * 1000)).split(',').map(Number);
const groupLimit = (i) => GROUP_TIMEOUT_MS[Math.min(i, GROUP_TIMEOUT_MS.length - 1)];
const NATIVE_KERNELS = env.NATIVE_KERNELS || '';
// An A/B run of two wasm builds: WEB_B (another build-wasm/web) adds its plumb rows, "<set> B",
// interleaved with WEB's in every round; ENGINES=plumb leaves out wllama and native.
const WEB_B = env.WEB_B ? path.resolve(env.WEB_B) : null;
const ENGINES = (env.ENGINES || 'plumb,wllama,native').split(',');
const MEM_MODELS = (env.MEM_MODELS !== undefined ? env.MEM_MODELS.split(',').filter(Boolean) : SMOKE ? [DEMO] : [])
  .map((m) => path.resolve(m));
const GiB = 1024 ** 3, MiB = 1024 ** 2;
const SYSTEM = 'You are a helpful assistant.';
// ~100 prompt tokens with the chat template (both engines report what they saw).
const USER = 'The jury said it did find that the city executive committee, which had over-all charge ' +
  'of the election, deserves the praise and thanks of the city for the manner in which the election ' +
  'was conducted. The jury further said in term-end presentments that the city council had done a ' +
  'good job. Tell me more about the election and the committee.';
// Greedy on both engines (wllama: temperature 0), to N tokens whatever is drawn.
const PLUMB_SAMPLER = { temp: 0, topK: 0, topP: 1, minP: 0, seed: 38 };
const SAMPLER = 'greedy (plumb temp 0, wllama temperature 0), end-of-generation off (ignoreEos / ignore_eos)';

function fail(why) { console.log(`FAIL: ${why}`); process.exit(2); }
// The backstop: the report as it stands, then exit 3.
const watchdog = setTimeout(() => {
  console.log(`the whole run passed TIMEOUT_MS (${TIMEOUT_MS / 1000} s): writing what was measured`);
  for (const g of groups) if (g.status === 'running' || g.status === 'pending') g.status = 'not run (TIMEOUT_MS)';
  writeReport();
  process.exit(3);
}, TIMEOUT_MS);
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
for (const m of [...MODELS, ...MEM_MODELS]) if (!existsSync(m)) fail(`model ${m} missing (make perf-web makes the larger one with plumb mkmodel)`);
const RELAXED = env.RELAXED !== '0' && existsSync(path.join(WEB, 'plumb-simd-relaxed-threads.wasm'));
const wllamaVersion = JSON.parse(readFileSync(path.join(WLLAMA, 'package.json'), 'utf8')).version;

// ---- a static server with COOP/COEP (cross-origin isolated: both multi-thread builds run) ------
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm' };
const MOUNTS = { '/bench/': [path.join(ROOT, 'perf/web')], '/plumb/': [WEB], '/wllama/': [path.join(WLLAMA, 'esm')],
  '/page/': [path.join(ROOT, 'web'), WEB], '/m/': [...new Set([...MODELS, ...MEM_MODELS, DEMO].map((m) => path.dirname(m)))], // DEMO: the chat page's
  ...(WEB_B ? { '/plumb-b/': [WEB_B] } : {}) };
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

const load1 = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
const med = (a) => { const s = a.filter(Number.isFinite).sort((x, y) => x - y); return s.length ? s[(s.length - 1) >> 1] : NaN; };
const loads = [];
const runStart = new Date();
const sha = (() => { try { return execFileSync('git', ['rev-parse', '--short=8', 'HEAD'], { cwd: ROOT }).toString().trim(); } catch { return 'nogit'; } })();
const stem = path.join(OUT, `${runStart.toISOString().slice(0, 10)}-${sha}-web${SMOKE ? '-smoke' : ''}`);
mkdirSync(OUT, { recursive: true });
// The JSON lines: one object a line, appended (and flushed) the moment it is known.
writeFileSync(`${stem}.jsonl`, '');
const jsonl = (o) => appendFileSync(`${stem}.jsonl`, `${JSON.stringify({ t: new Date().toISOString(), ...o })}\n`);

// decode = (N - 1) tokens over the N - 1 decode steps from the first token drawn to the N-th.
// plumb's stats: decodeTokS = (n - 1) tokens over n steps (it evaluates the n-th token too), so
// a step is decode_ms / n: n / decode_ms = decodeTokS * n / (n - 1). wllama (llama.cpp's server
// code): predicted_ms runs from the first token drawn to the n-th, predicted_n = n.
const decodeFromPlumb = (st) => (st.generated > 1 && st.decodeTokS > 0 ? st.decodeTokS * st.generated / (st.generated - 1) : NaN);
const decodeFromWllama = (t) => (t.predicted_n > 1 && t.predicted_ms > 0 ? (t.predicted_n - 1) * 1000 / t.predicted_ms : NaN);
jsonl({ type: 'run', commit: sha, chromium: chromeVersion, wllama: wllamaVersion, node: process.version, cpus: os.cpus().length,
  cpu: os.cpus()[0].model, rounds: ROUNDS, n: N, threads: THREADS, models: MODELS.map((m) => path.basename(m)),
  memModels: MEM_MODELS.map((m) => path.basename(m)), engines: ENGINES, groupTimeoutMs: GROUP_TIMEOUT_MS, sampler: SAMPLER });
const DECODE = 'N - 1 tokens after the first over the time from the first token drawn to the N-th (N - 1 decode steps): ' +
  'plumb engine decodeTokS * N/(N-1) (it times N steps), wllama (predicted_n - 1) / predicted_ms, native plumb bench tgN tok/s (N steps)';

// Native plumb bench, asynchronous (a group's limit must be able to stop it); the set it ran.
function native(ctx, model, threads) {
  const p = P_NATIVE[model] || 64;
  const args = ['bench', '-m', model, '-p', String(p), '-n', String(N), '-t', String(threads), '-r', '1',
    '--no-probe', '-o', 'json', ...(NATIVE_KERNELS ? ['--kernels', NATIVE_KERNELS] : [])];
  return new Promise((resolve, reject) => {
    const child = execFile(PLUMB, args, { maxBuffer: 64 << 20 }, (err, out) => {
      ctx.children.delete(child);
      if (err) return reject(new Error(`plumb bench: ${err.message}`));
      const j = JSON.parse(out);
      const row = (t) => j.results.find((r) => r.test === t);
      // tgN: N tokens over N one-token steps, i.e. tokens per decode step as it is.
      resolve({ prefill: row(`pp${p}`).tok_s.median, decode: row(`tg${N}`).tok_s.median,
        kernels: row(`tg${N}`).kernels, macsPerToken: row(`pp${p}`).macs_per_token });
    });
    ctx.children.add(child);
  });
}
const P_NATIVE = {};
const MACS = {}; // a file's multiply-adds a prefill token (native plumb bench's macs_per_token)

// One group per file x threads, each in its own tab (its wasm heaps are gone before the next
// loads) and under its own time limit.
const groups = [];
for (const model of MODELS) for (const t of THREADS)
  groups.push({ model, name: path.basename(model), threads: t, status: 'pending', why: null, rounds: 0, cfgs: [], ms: 0 });
// Then one memory row per MEM_MODELS file (a group of its own, under the same kind of limit).
for (const model of MEM_MODELS)
  groups.push({ model, name: path.basename(model), threads: 1, memory: true, status: 'pending', why: null, rounds: 0, cfgs: [], ms: 0 });

class Abort extends Error {}
async function runGroup(g, ctx) {
  // Every await goes through step: once the group's limit has passed nothing more is recorded.
  const step = async (p) => { const r = await p; if (ctx.aborted) throw new Abort('aborted'); return r; };
  if (g.memory) return runMemory(g, ctx, step);
  const page = await browser.newPage();
  ctx.page = page;
  if (ctx.aborted) { await page.close().catch(() => {}); throw new Abort('aborted'); } // the limit passed while it opened
  page.on('pageerror', (e) => console.log(`  [page error] ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' || env.PLUMB_WEB_VERBOSE) console.log(`  [page ${m.type()}] ${m.text()}`); });
  await step(page.goto(`${BASE}/bench/bench.html`, { waitUntil: 'load' }));
  await step(page.waitForSelector('body[data-ready="1"]', { timeout: 30000 }));
  if (!(await step(page.evaluate(() => window.bench.isolated())))) throw new Error('the bench page is not cross-origin isolated');
  const { model, name, threads: t } = g;
  const url = `/m/${name}`;
  const o = { system: SYSTEM, user: USER, maxTokens: N, nCtx: N_CTX, sampler: PLUMB_SAMPLER, ignoreEos: true };
  console.log(`== ${name}, ${t} thread(s): loading plumb, wllama (limit ${groupLimit(groups.indexOf(g)) / 1000} s)`);
  const sets = ['wasm128'];
  // wasm128r: the relaxed-SIMD module (its own Worker), interleaved with wasm128's.
  if (RELAXED) sets.push('wasm128r');
  if (model === DEMO && !SMOKE && env.REF !== '0') sets.push('ref');
  for (const [k, base, label] of [...sets.map((k) => [k, '/plumb/', k]),
    ...(WEB_B ? sets.filter((k) => k !== 'ref').map((k) => [k, '/plumb-b/', `${k} B`]) : [])]) {
    const id = `p-${t}-${label.replace(' ', '-')}`;
    const v = k === 'wasm128r' ? 'simd-relaxed-threads' : env.VARIANT;
    const r = await step(page.evaluate((id, url, t, k, v, base) => window.bench.plumbLoad(id, url, t, k, v, base), id, url, t, k, v, base));
    if (r.model.kernels !== k) throw new Error(`plumb loaded kernels ${r.model.kernels}, asked ${k}`);
    // One untimed turn: the first runs cold (wasm tier-up, the heap growing).
    const w0 = await step(page.evaluate((id, o) => window.bench.plumbTurn(id, o), id, o));
    g.cfgs.push({ engine: 'plumb', kernels: label, variant: v || 'simd-threads', threads: t, id, pre: [], dec: [], prompt: [], gen: [],
      memLoad: r.memory.memoryBytes, memRun: w0.memory.memoryBytes });
    jsonl({ type: 'load', model: name, engine: 'plumb', kernels: label, threads: t, memoryAfterLoad: r.memory, memoryAfterWarmup: w0.memory });
  }
  const id = `w-${t}`;
  let w = null;
  if (ENGINES.includes('wllama')) try {
    w = await step(page.evaluate((id, url, t, c) => window.bench.wllamaLoad(id, url, t, c), id, url, t, N_CTX));
  } catch (e) {
    if (e instanceof Abort) throw e;
    console.log(`  wllama could not load ${name} with ${t} threads: ${e.message}`);
    g.cfgs.push({ engine: 'wllama', threads: t, error: e.message, pre: [], dec: [], prompt: [], gen: [] });
  }
  if (w) {
    const w0 = await step(page.evaluate((id, o) => window.bench.wllamaTurn(id, o), id, o));
    g.cfgs.push({ engine: 'wllama', kernels: w.multithread ? 'multi-thread' : 'single-thread', threads: t,
      wllamaThreads: w.threads, id, pre: [], dec: [], prompt: [], gen: [], memLoad: w.memoryBytes, memRun: w0.memoryBytes });
    jsonl({ type: 'load', model: name, engine: 'wllama', threads: t, memoryAfterLoad: w.memoryBytes, memoryAfterWarmup: w0.memoryBytes });
  }
  if (ENGINES.includes('native'))
    g.cfgs.push({ engine: 'native', kernels: NATIVE_KERNELS || 'best', threads: t, pre: [], dec: [], prompt: [], gen: [] });
  for (let r = 0; r < ROUNDS; r++) {
    const l0 = load1();
    // A round's samples are kept only once the whole round is in: every row has the same rounds.
    const got = [];
    for (const c of g.cfgs) {
      if (c.error) continue;
      let row;
      if (c.engine === 'plumb') {
        const st = await step(page.evaluate((id, o) => window.bench.plumbTurn(id, o), c.id, o));
        if (st.generated !== N) throw new Error(`plumb ${c.kernels} generated ${st.generated} of ${N} tokens (finish ${st.finish})`);
        row = [c, st.prefillTokS, decodeFromPlumb(st), st.prefilled, st.generated];
        c.memRun = Math.max(c.memRun || 0, st.memory.memoryBytes);
        P_NATIVE[model] = st.prefilled;
        row.raw = { prefillTokS: st.prefillTokS, decodeTokS: st.decodeTokS, ttftMs: st.ttftMs, totalMs: st.totalMs, memory: st.memory };
      } else if (c.engine === 'wllama') {
        const st = await step(page.evaluate((id, o) => window.bench.wllamaTurn(id, o), c.id, o));
        row = [c, st.timings.prompt_per_second, decodeFromWllama(st.timings), st.timings.prompt_n, st.timings.predicted_n];
        if (st.memoryBytes) c.memRun = Math.max(c.memRun || 0, st.memoryBytes);
        row.raw = { ...st.timings, memoryBytes: st.memoryBytes };
      } else {
        const st = await step(native(ctx, model, c.threads));
        c.kernels = st.kernels;
        row = [c, st.prefill, st.decode, P_NATIVE[model] || 64, N];
        row.raw = { pp_tok_s: st.prefill, tg_tok_s: st.decode, macs_per_token: st.macsPerToken };
        if (st.macsPerToken) MACS[model] = st.macsPerToken;
      }
      got.push(row);
      jsonl({ type: 'sample', model: name, threads: t, round: r + 1, engine: c.engine, kernels: c.kernels, variant: c.variant,
        prefill: row[1], decode: row[2], promptTokens: row[3], genTokens: row[4], memoryBytes: c.memRun ?? null, raw: row.raw });
    }
    for (const [c, pre, dec, prompt, gen] of got) { c.pre.push(pre); c.dec.push(dec); c.prompt.push(prompt); c.gen.push(gen); }
    g.rounds = r + 1;
    loads.push([l0, load1()]);
    console.log(`  round ${r + 1}/${ROUNDS} (load ${l0.toFixed(2)} -> ${load1().toFixed(2)})`);
    writeReport();
  }
  for (const c of g.cfgs) {
    if (c.engine === 'plumb') await step(page.evaluate((id) => window.bench.plumbFree(id), c.id));
    if (c.engine === 'wllama' && !c.error) await step(page.evaluate((id) => window.bench.wllamaFree(id), c.id));
    if (!c.error) console.log(`  ${c.engine} ${c.kernels}: prefill ${med(c.pre).toFixed(1)} tok/s, decode ${med(c.dec).toFixed(1)} tok/s`);
  }
}

// A memory row: the file alone in a fresh tab, loaded into the module the page picks (wasm128r
// where relaxed SIMD is exact, else wasm128), one thread; the wasm memory after load, then after
// a chat session at the default window (min(training context, 4096)) and a short turn. wasm32
// holds at most 65536 pages (4 GiB); the row fails if the file does not load or the turn fails.
async function runMemory(g, ctx, step) {
  const page = await browser.newPage();
  ctx.page = page;
  if (ctx.aborted) { await page.close().catch(() => {}); throw new Abort('aborted'); }
  page.on('pageerror', (e) => console.log(`  [page error] ${e.message}`));
  await step(page.goto(`${BASE}/bench/bench.html`, { waitUntil: 'load' }));
  await step(page.waitForSelector('body[data-ready="1"]', { timeout: 30000 }));
  const k = RELAXED ? 'wasm128r' : 'wasm128', v = RELAXED ? 'simd-relaxed-threads' : 'simd-threads';
  const bytes = statSync(g.model).size;
  console.log(`== memory: ${g.name} (${(bytes / MiB).toFixed(1)} MiB) in ${v}, kernels ${k} (limit ${groupLimit(groups.indexOf(g)) / 1000} s)`);
  const c = { engine: 'plumb', kernels: k, variant: v, threads: 1, id: 'mem', fileBytes: bytes, pre: [], dec: [], prompt: [], gen: [] };
  g.cfgs.push(c);
  const t0 = Date.now();
  const r = await step(page.evaluate((url, k, v) => window.bench.plumbLoad('mem', url, 1, k, v), `/m/${g.name}`, k, v));
  c.loadMs = Date.now() - t0;
  c.nParams = r.model.nParams;
  c.memLoad = r.memory.memoryBytes;
  c.heapLoad = r.memory.heapBytes;
  jsonl({ type: 'memory', model: g.name, stage: 'load', kernels: k, variant: v, fileBytes: bytes, loadMs: c.loadMs, nParams: c.nParams, memory: r.memory });
  writeReport();
  const st = await step(page.evaluate((o) => window.bench.plumbTurn('mem', o), { system: SYSTEM, user: 'Hello!', maxTokens: 4,
    nCtx: 0, sampler: PLUMB_SAMPLER, ignoreEos: true }));
  c.memRun = st.memory.memoryBytes;
  c.heapRun = st.memory.heapBytes;
  c.gen.push(st.generated);
  g.rounds = 1;
  jsonl({ type: 'memory', model: g.name, stage: 'turn', kernels: k, variant: v, fileBytes: bytes, generated: st.generated, memory: st.memory });
  await step(page.evaluate(() => window.bench.plumbFree('mem')));
  if (!(c.memRun < 4 * GiB)) throw new Error(`wasm memory ${c.memRun} bytes: past wasm32's 4 GiB`);
  console.log(`  after load ${(c.memLoad / MiB).toFixed(1)} MiB, after a turn ${(c.memRun / MiB).toFixed(1)} MiB of wasm memory`);
}

// Runs a group under its limit; whatever happens, its tab and its native child end with it.
async function runLimited(g, limitMs) {
  const ctx = { aborted: false, children: new Set(), page: null };
  const t0 = Date.now();
  g.status = 'running';
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: past its limit of ${limitMs / 1000} s`)), limitMs);
  });
  const work = runGroup(g, ctx);
  work.catch(() => {}); // after a timeout its rejection (the tab closed under it) is expected
  try {
    await Promise.race([work, limit]);
    g.status = 'done';
  } catch (e) {
    g.status = /timed out/.test(e.message) ? 'timed out' : 'failed';
    g.why = e.message;
    console.log(`  ${g.name}, ${g.threads} thread(s): ${e.message}; ${g.rounds} of ${ROUNDS} rounds kept`);
  } finally {
    clearTimeout(timer);
    ctx.aborted = true;
    for (const c of ctx.children) c.kill('SIGKILL');
    if (ctx.page) await ctx.page.close().catch(() => {});
    g.ms = Date.now() - t0;
    jsonl({ type: 'group', model: g.name, threads: g.threads, memory: !!g.memory, status: g.status, why: g.why, rounds: g.rounds, ms: g.ms });
    writeReport();
  }
}

// ---- the report: rewritten as rows come in ---------------------------------------------------
let turns = [];
let memory64 = null; // the memory64 probe's answer
let dotRate = null; // the int8 dot rates of one core: { wasm: bench_page's dotProbe, native: { gmacs, kernel } }
function rowsOf() {
  const rows = [];
  for (const g of groups)
    for (const c of g.cfgs)
      rows.push({ model: g.name, memory: !!g.memory, engine: c.engine, kernels: c.kernels, variant: c.variant, threads: c.threads,
        wllamaThreads: c.wllamaThreads, error: c.error || null, group: g.status, rounds: g.memory ? g.rounds : c.pre.length,
        memoryAfterLoad: c.memLoad ?? null, memoryAfterRuns: c.memRun ?? null, heapAfterLoad: c.heapLoad ?? null, heapAfterTurn: c.heapRun ?? null,
        fileBytes: c.fileBytes ?? null, loadMs: c.loadMs ?? null, nParams: c.nParams ?? null,
        prefill: med(c.pre), decode: med(c.dec), prefillSamples: c.pre, decodeSamples: c.dec,
        promptTokens: [...new Set(c.prompt)], genTokens: [...new Set(c.gen)] });
  return rows;
}
function writeReport() {
  const rows = rowsOf();
  const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '—');
  const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—');
  const ratio = (a, b) => (a && b ? f2(a / b) : '—');
  const get = (m, e, t, k) => rows.find((r) => !r.memory && r.model === m && r.engine === e && r.threads === t && (!k || r.kernels === k) && r.rounds > 0);
  const mib = (x) => (Number.isFinite(x) && x > 0 ? (x / MiB).toFixed(1) : '—');
  const bench = groups.filter((x) => x.model && !x.memory);
  const flat = loads.flat();
  let md = `plumb wasm (wasm128: simd-threads; wasm128r: simd-relaxed-threads; ${chromeVersion}, headless, one session)` +
    `${ENGINES.includes('wllama') ? ` vs wllama ${wllamaVersion}` : ''}${ENGINES.includes('native') ? ` vs native plumb (${NATIVE_KERNELS || 'the best kernel set'})` : ''};\n` +
    `${ROUNDS} interleaved rounds, medians; ${SAMPLER}; decode over ${N} tokens: the ${N - 1} tokens after the first over the time from the first token drawn to the ${N}-th (${N - 1} decode steps, the same points on every engine); ` +
    `load average (1 min) ${flat.length ? `${f2(Math.min(...flat))}-${f2(Math.max(...flat))}` : '—'}; ` +
    `${os.cpus().length} CPUs (${os.cpus()[0].model}); started ${runStart.toISOString()}, written ${new Date().toISOString()}\n\n`;
  // The headline: the module the page picks (wasm128r where relaxed SIMD is exact and built).
  const pick = RELAXED ? 'wasm128r' : 'wasm128';
  const heads = [];
  for (const g of bench) {
    const p = get(g.name, 'plumb', g.threads, pick), w = get(g.name, 'wllama', g.threads), n = get(g.name, 'native', g.threads);
    if (!p) continue;
    const part = (test) => `${test} ${[w && `${ratio(p[test], w[test])}x wllama`, n && `${ratio(p[test], n[test])}x native (${n.kernels})`].filter(Boolean).join(', ') || f1(p[test])}`;
    heads.push(`- ${g.name}, ${g.threads} thread(s): ${part('prefill')}; ${part('decode')}`);
  }
  if (heads.length) md += `Headline, ${pick} (the module the page picks):\n${heads.join('\n')}\n\n`;
  md += '| file | threads | test | prompt tok | wllama | plumb wasm128 | plumb wasm128r | plumb wasm ref | native | wasm128/wllama | wasm128r/wllama | wasm128/native | wasm128r/native | group |\n' +
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n';
  for (const g of bench)
    for (const test of ['prefill', 'decode']) {
      const m = g.name, t = g.threads;
      const w = get(m, 'wllama', t), p = get(m, 'plumb', t, 'wasm128'), rx = get(m, 'plumb', t, 'wasm128r');
      const ref = get(m, 'plumb', t, 'ref'), n = get(m, 'native', t);
      const we = rows.find((r) => r.model === m && r.engine === 'wllama' && r.threads === t && r.error);
      const toks = `${p ? p.promptTokens.join('/') : '?'}${w ? ` (wllama ${w.promptTokens.join('/')})` : ''}`;
      const status = g.status === 'done' ? `done (${g.rounds})` : `${g.status}${g.rounds ? ` after ${g.rounds} of ${ROUNDS} rounds` : ', no round'}`;
      md += `| ${m} | ${t} | ${test} | ${test === 'prefill' ? toks : `${N} gen`} | ${we ? 'no load' : f1(w && w[test])} | ${f1(p && p[test])} | ` +
        `${f1(rx && rx[test])} | ${f1(ref && ref[test])} | ${n ? `${f1(n[test])} (${n.kernels})` : '—'} | ` +
        `${ratio(p && p[test], w && w[test])} | ${ratio(rx && rx[test], w && w[test])} | ${ratio(p && p[test], n && n[test])} | ${ratio(rx && rx[test], n && n[test])} | ${status} |\n`;
    }
  if (WEB_B) {
    md += `\nA/B: B is ${WEB_B}, interleaved with ${WEB} in every round (medians; the per-round ratio's median in brackets):\n\n` +
      '| file | threads | test | set | A | B | B/A |\n| --- | ---: | --- | --- | ---: | ---: | ---: |\n';
    for (const g of bench)
      for (const test of ['prefill', 'decode'])
        for (const k of ['wasm128', 'wasm128r']) {
          const a = get(g.name, 'plumb', g.threads, k), b = get(g.name, 'plumb', g.threads, `${k} B`);
          if (!a || !b) continue;
          const sa = a[`${test}Samples`], sb = b[`${test}Samples`];
          const per = med(sa.map((x, i) => sb[i] / x));
          md += `| ${g.name} | ${g.threads} | ${test} | ${k} | ${f1(a[test])} | ${f1(b[test])} | ${f2(b[test] / a[test])} [${f2(per)}] |\n`;
        }
  }
  // Memory: each row's wasm memory (buffer.byteLength: it only grows, so after the runs is the peak).
  const memRows = rows.filter((r) => !r.memory && (r.memoryAfterLoad || r.memoryAfterRuns));
  if (memRows.length) {
    md += '\nwasm memory per row (MiB; buffer.byteLength after load, and after the warm-up and every timed turn: the peak):\n\n' +
      '| file | threads | engine | set | after load | after the runs |\n| --- | ---: | --- | --- | ---: | ---: |\n';
    for (const r of memRows) md += `| ${r.model} | ${r.threads} | ${r.engine} | ${r.kernels} | ${mib(r.memoryAfterLoad)} | ${mib(r.memoryAfterRuns)} |\n`;
  }
  const memGroups = groups.filter((x) => x.memory);
  if (memGroups.length) {
    md += '\nMemory rows (each file alone in a fresh tab, the module the page picks, 1 thread; a chat session at the default ' +
      'window and a 4-token turn; wasm32 holds at most 4096 MiB):\n\n' +
      '| file | MiB | params | set | load s | malloc in use after load | wasm memory after load | malloc in use, chat open | wasm memory after the turn | within 4 GiB | status |\n' +
      '| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |\n';
    for (const g of memGroups) {
      const c = g.cfgs[0] || {};
      md += `| ${g.name} | ${mib(c.fileBytes ?? statSync(g.model).size)} | ${c.nParams ? `${(c.nParams / 1e6).toFixed(0)} M` : '—'} | ${c.kernels || '—'} | ` +
        `${c.loadMs ? (c.loadMs / 1000).toFixed(1) : '—'} | ${mib(c.heapLoad)} | ${mib(c.memLoad)} | ${mib(c.heapRun)} | ${mib(c.memRun)} | ` +
        `${c.memRun ? (c.memRun < 4 * GiB ? 'yes' : 'NO') : '—'} | ${g.status} |\n`;
    }
  }
  if (memory64) {
    const m = memory64;
    md += `\nmemory64 in this chromium (a hand-made module, i64 addresses): ${m.validates ? 'validates' : 'does not validate'}, ` +
      `${m.instantiates ? 'instantiates' : 'does not instantiate'}` +
      (m.grewTo ? `, grew to ${mib(m.grewTo)} MiB, a byte at 4 GiB + 4097 ${m.beyond4GiB ? 'reads back' : 'does NOT read back'}` : '') +
      `; a wasm32 memory grew to ${mib(m.wasm32Max)} MiB${m.error ? `; error: ${m.error}` : ''}\n`;
  }
  if (dotRate) {
    const wz = dotRate.wasm || {}, nz = dotRate.native || {};
    md += `\nThe int8 dot rate of one core (GMAC/s, medians): wasm's relaxed dot ${f1(wz.gmacs)} (${wz.kernel || '—'}` +
      `${wz.error ? `; error: ${wz.error}` : ''}), native ${f1(nz.gmacs)} (${nz.kernel || '—'}${nz.error ? `; error: ${nz.error}` : ''}); ` +
      `wasm/native ${ratio(wz.gmacs, nz.gmacs)}: the prefill ratio wasm/native if both ran at the same share of their own peak.\n`;
    const eff = [];
    for (const g of bench) {
      if (g.threads !== 1 || !MACS[g.model]) continue;
      const rx = get(g.name, 'plumb', 1, pick), n = get(g.name, 'native', 1);
      if (!rx || !n) continue;
      const share = (tokS, gmacs) => (Number.isFinite(tokS) && gmacs > 0 ? `${((100 * tokS * MACS[g.model]) / (gmacs * 1e9)).toFixed(0)}%` : '—');
      eff.push(`| ${g.name} | ${f1(MACS[g.model] / 1e6)} M | ${f1(rx.prefill)} | ${share(rx.prefill, wz.gmacs)} | ${f1(n.prefill)} | ${share(n.prefill, nz.gmacs)} |`);
    }
    if (eff.length)
      md += `\nPrefill at 1 thread as a share of each side's dot rate (multiply-adds a token from native plumb bench):\n\n` +
        `| file | MAC a token | ${pick} tok/s | of the wasm dot rate | native tok/s | of the native dot rate |\n| --- | ---: | ---: | ---: | ---: | ---: |\n${eff.join('\n')}\n`;
  }
  for (const g of groups) if (g.why) md += `\n${g.name}, ${g.threads} thread(s)${g.memory ? ', memory row' : ''}: ${g.why}\n`;
  if (turns.length) {
    md += `\nThe chat page (web/index.html, engine in its Worker; ${turns.env}), demo model, greedy, 32 tokens a reply, prefix cache on:\n\n` +
      '| turn | path | reused | prefilled | generated | ttft ms |\n| ---: | --- | ---: | ---: | ---: | ---: |\n';
    turns.forEach((s, i) => { md += `| ${i + 1} | ${s.path} | ${s.reused} | ${s.prefilled} | ${s.generated} | ${f1(s.ttftMs)} |\n`; });
  }
  writeFileSync(`${stem}.md`, md);
  writeFileSync(`${stem}.json`, JSON.stringify({ commit: sha, date: runStart.toISOString(), written: new Date().toISOString(),
    chromium: chromeVersion, wllama: wllamaVersion, node: process.version, cpus: os.cpus().length, cpu: os.cpus()[0].model,
    rounds: ROUNDS, n: N, threads: THREADS, system: SYSTEM, user: USER, sampler: SAMPLER, plumbSampler: PLUMB_SAMPLER,
    decode: DECODE, jsonl: `${path.basename(stem)}.jsonl`,
    groups: groups.map(({ cfgs, ...g }) => g), loads, rows, memory64, dotRate, macsPerToken: MACS, pageTurns: turns }, null, 1));
  return md;
}

// What this chromium does with memory64 (a wasm64 build's memory) and with a wasm32 memory at
// its limit: a hand-made module in a tab of its own (perf/web/bench_page.mjs, memory64Probe).
try {
  const p = await browser.newPage();
  await p.goto(`${BASE}/bench/bench.html`, { waitUntil: 'load' });
  await p.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  memory64 = await p.evaluate(() => window.bench.memory64(true));
  await p.close();
} catch (e) { memory64 = { error: String(e.message || e) }; }
jsonl({ type: 'memory64', ...memory64 });
console.log(`memory64: ${JSON.stringify(memory64)}`);

// The int8 dot rate of one core, before any group: wasm's relaxed dot in a tab
// (perf/web/bench_page.mjs, dotProbe) and native plumb bench's probe on one thread (SMOKE: short).
{
  dotRate = { wasm: null, native: null };
  try {
    const p = await browser.newPage();
    await p.goto(`${BASE}/bench/bench.html`, { waitUntil: 'load' });
    await p.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
    dotRate.wasm = await p.evaluate((ms, reps) => window.bench.dotProbe(ms, reps), SMOKE ? 50 : 200, SMOKE ? 3 : 7);
    await p.close();
  } catch (e) { dotRate.wasm = { error: String(e.message || e) }; }
  if (ENGINES.includes('native')) {
    try {
      const out = execFileSync(PLUMB, ['bench', '-m', MODELS[0], '-p', '1', '-n', '0', '-r', '1', '-t', '1', '--probe-mib', '64', '-o', 'json',
        ...(NATIVE_KERNELS ? ['--kernels', NATIVE_KERNELS] : [])], { maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'ignore'], timeout: 120000 });
      const pr = JSON.parse(out).probes;
      dotRate.native = { gmacs: pr.int8_gops[0].median, best: pr.int8_gops[0].best, kernel: pr.int8_kernel };
    } catch (e) { dotRate.native = { error: String(e.message || e) }; }
  }
  jsonl({ type: 'dotRate', ...dotRate });
  console.log(`int8 dot rate, one core: ${JSON.stringify(dotRate)}`);
}

for (const [i, g] of groups.entries()) await runLimited(g, groupLimit(i));

// ---- the chat page: 10 turns on the demo model, per-turn stats ------------------------------
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
    console.log(`the chat page failed: ${e.stack || e}`);
    groups.push({ name: 'chat page', threads: 0, status: 'failed', why: String(e.message || e), rounds: 0, cfgs: [] });
  }
}
await browser.close();
server.close();
const md = writeReport();
console.log(`\n${md}`);
console.log(`report: ${stem}.md, ${stem}.json, ${stem}.jsonl`);
const partial = groups.filter((g) => g.status !== 'done');
if (partial.length) console.log(`PARTIAL: ${partial.map((g) => `${g.name} ${g.threads}t ${g.status}`).join('; ')}`);
process.exit(partial.length ? 3 : 0);
