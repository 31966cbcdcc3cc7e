// webgpu_page.mjs — the chat page's webgpu backend (issue 50) in headless chromium with its
// software WebGPU (SwiftShader): the page served by plumb serve (cross-origin isolated) with the
// engine folder of `make wasm` (build-wasm/web: the wasm modules, gpu-worker.js, llama.mjs, the
// .wgsl files). On a tiny llama Q8_0 file the webgpu set runs (plumb mkmodel), the page says it
// runs webgpu, two greedy turns stream and equal native `plumb chat --kernels ref --kv-type f32`
// (the webgpu Q8_0 pass gives the ref set's bits, kernels/webgpu/README.md), turn 2 takes the
// fast path and reuses turn 1's tokens (the GPU KV cache), Reset then the same turn again equals
// turn 1, and the wasm backend (gpu=off) gives the same replies. A chat with a sliding window
// (16, 4 sinks: smaller than the conversation) runs on webgpu too, its two turns equal to native
// ref's with that window. Fallbacks, each saying why: a Q5_0 file (the webgpu set has no Q5_0)
// and a chromium without WebGPU run the wasm kernels. Planted faults (each a patched copy of the
// engine folder): the page choosing webgpu for the Q5_0 file (gpuSupport says ok), the engine's
// hook dropping truncate, the GPU worker ignoring truncate and its position check, the GPU
// Worker dropping the session's window (its cache a context window of the ring's slots): each
// must fail a check.
// Skips (77) without the wasm build, puppeteer-core, chromium or a WebGPU adapter unless
// PLUMB_NO_SKIP=1. PLUMB_WEBGPU_FAULTS=0 (debugging): no planted faults.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { env, finish, startServer, stopAndCheck } from '../serve/serve_lib.mjs';
import { launch, openPage, say, check, skip } from './web_lib.mjs';

const engineDir = process.env.PLUMB_WEB_ENGINE;
for (const f of ['plumb-simd-threads.wasm', 'gpu-worker.js', 'llama.mjs', 'matmul_q8_0.wgsl'])
  if (!engineDir || !existsSync(path.join(engineDir, f))) skip(`no ${f} in ${engineDir} (run \`make wasm\`)`);
const { cli } = env();
const adapterFlag = process.env.PLUMB_WEBGPU_ADAPTER || 'swiftshader';
const GPU_FLAGS = ['--no-sandbox', '--disable-dev-shm-usage', '--enable-unsafe-webgpu',
  ...(adapterFlag === 'default' ? [] : [`--use-webgpu-adapter=${adapterFlag}`])];
const SYSTEM = 'You are a helpful assistant.';
const LINES = ['Hello! Who are you?', 'Tell me a story about a small cat.'];
const N = 10; // tokens a reply (SwiftShader runs every forward step on the CPU)

const dir = mkdtempSync(path.join(tmpdir(), 'webgpu_page.'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const mk = (name, type) => {
  const f = path.join(dir, name);
  execFileSync(cli, ['mkmodel', f, '--preset', 'tiny', '--type', type], { stdio: ['ignore', 'ignore', 'pipe'] });
  return f;
};
const q8 = mk('tiny-q8_0.gguf', 'Q8_0'), q5 = mk('tiny-q5_0.gguf', 'Q5_0');

// The C reference: native greedy chat on the ref set with an F32 KV cache (the GPU's), saved.
const save = path.join(dir, 'conv.json');
execFileSync(cli, ['chat', '-m', q8, '--kernels', 'ref', '--kv-type', 'f32', '--system', SYSTEM, '-n', String(N),
  '--temp', '0', '--seed', '7', '-c', '2048', '-t', '1'], { input: `${LINES.join('\n')}\n/save ${save}\n`, stdio: ['pipe', 'ignore', 'ignore'] });
const conv = JSON.parse(readFileSync(save, 'utf8'));
const native = (conv.messages || conv).filter((m) => m.role === 'assistant').map((m) => m.content);
// and with a sliding window of 16 tokens, 4 of them sinks (the conversation is longer)
const WINDOW = 16, SINKS = 4;
const saveW = path.join(dir, 'conv-window.json');
execFileSync(cli, ['chat', '-m', q8, '--kernels', 'ref', '--kv-type', 'f32', '--system', SYSTEM, '-n', String(N),
  '--temp', '0', '--seed', '7', '--sliding-window', String(WINDOW), '--sinks', String(SINKS), '-t', '1'],
{ input: `${LINES.join('\n')}\n/save ${saveW}\n`, stdio: ['pipe', 'ignore', 'ignore'] });
const convW = JSON.parse(readFileSync(saveW, 'utf8'));
const nativeW = (convW.messages || convW).filter((m) => m.role === 'assistant').map((m) => m.content);

// extra: settings after the defaults (a sliding window needs n_ctx=0: exactly one window)
const query = (gpu, extra = '') => `/?backend=wasm&temp=0&seed=7&max_tokens=${N}&gpu=${gpu}${extra || '&n_ctx=2048'}`;

// Opens the page, loads file, waits for the chat; returns what the page says about the backend.
async function open(browser, base, file, gpu = 'auto', extra = '') {
  const page = await openPage(browser, base + query(gpu, extra));
  await (await page.$('#file')).uploadFile(file);
  await page.waitForFunction(() => document.body.dataset.chat === '1' || document.getElementById('settings-error').textContent,
    { timeout: 180000 });
  const info = await page.evaluate(() => ({
    err: document.getElementById('settings-error').textContent,
    engine: document.body.dataset.engine,
    shown: document.getElementById('engine-backend').textContent,
    on: document.getElementById('on').textContent,
    backend: window.plumb.wasm.backend, gpu: window.plumb.wasm.gpu, gpuModel: window.plumb.wasm.gpuModel,
    variant: window.plumb.wasm.info && window.plumb.wasm.info.variant,
  }));
  console.log(`  [${path.basename(file)}, gpu=${gpu}${extra}] the page says: ${info.shown} | ${info.on}`);
  return { page, info };
}

// quiet (a planted fault's run): the first failing check ends the run, throwing its name.
const quietCheck = (cond, what, detail) => {
  if (!cond) throw new Error(`${what}: ${JSON.stringify(detail).slice(0, 300)}`);
  return true;
};

// The GPU backend's two turns, Reset and turn 1 again; { ok: every check held }.
async function gpuRun(browser, base, label, quiet = false) {
  const c = quiet ? quietCheck : check;
  const { page, info } = await open(browser, base, q8);
  let ok = c(!info.err && info.engine === 'webgpu' && /^backend webgpu$/.test(info.shown) && /WebGPU on /.test(info.on),
    `${label}: the page runs the tiny Q8_0 file on webgpu and says so`, info);
  const t1 = await say(page, LINES[0], { timeoutMs: 300000 });
  ok = c(t1.done && !t1.error && t1.stats && t1.stats.text === native[0] && t1.streamed === t1.stats.text,
    `${label}: turn 1 on webgpu streams native ref's greedy reply`, { page: t1.stats && t1.stats.text, native: native[0], error: t1.error }) && ok;
  // a greedy chat (temperature 0): the GPU Worker runs each next decode step on its own pick
  // (llama.mjs's forward, speculate), and the engine's tokens were those picks
  ok = c(t1.stats && t1.stats.gpuSpecHits >= N - 2,
    `${label}: the GPU Worker ran turn 1's decode steps ahead on its own picks (${t1.stats && t1.stats.gpuSpecHits} hits)`, t1.stats) && ok;
  // (a planted truncate fault shows after Reset: its runs skip turn 2, SwiftShader's time)
  const t2 = quiet ? null : await say(page, LINES[1], { timeoutMs: 300000 });
  if (t2) {
    console.log(`  turn 2 stats: ${JSON.stringify(t2.stats)}`);
    ok = c(t2.done && !t2.error && t2.stats && t2.stats.text === native[1],
      `${label}: turn 2 on webgpu equals native ref's`, { page: t2.stats && t2.stats.text, native: native[1], error: t2.error }) && ok;
    ok = c(t2.stats && t2.stats.path === 'fast' && t2.stats.reused > 0 && t2.stats.prefilled > 0 &&
      t2.stats.prefilled < t2.stats.reused && /reused/.test(t2.shownStats || ''),
      `${label}: turn 2 reuses turn 1's tokens in the GPU KV cache (fast path)`, t2.stats) && ok;
  }
  // Reset (the session truncates to 0, the GPU cache with it), then turn 1 again.
  await page.click('#reset');
  await page.waitForFunction(() => window.plumb.turns.length === 0, { timeout: 60000 });
  const t3 = await say(page, LINES[0], { timeoutMs: 300000 });
  ok = c(t3.done && !t3.error && t3.stats && t3.stats.text === native[0] && t3.stats.reused === 0,
    `${label}: after Reset, turn 1 again on webgpu gives the same reply from an empty cache`,
    { page: t3.stats && t3.stats.text, error: t3.error, stats: t3.stats }) && ok;
  await page.close();
  return { ok, replies: [t1, t2].map((t) => t && t.stats && t.stats.text) };
}

// The Q5_0 file on a WebGPU browser: the wasm kernels, saying the webgpu set's reason.
async function unsupportedRun(browser, base, label, quiet = false) {
  const c = quiet ? quietCheck : check;
  const { page, info } = await open(browser, base, q5);
  let ok = c(!info.err && info.engine && info.engine.startsWith('wasm128') &&
    /not on the GPU: .*Q5_0/.test(info.shown) &&
    info.backend && info.backend.name === info.engine,
    `${label}: a Q5_0 file runs on ${info.engine}, saying why`, info);
  const t = await say(page, LINES[0], { timeoutMs: 120000 });
  ok = c(t.done && !t.error && t.stats && t.stats.text.length > 0, `${label}: and its turn runs`, { error: t.error }) && ok;
  await page.close();
  return ok;
}

// A chat with a sliding window smaller than the conversation on the GPU backend: two turns equal
// to native ref's with that window.
async function windowRun(browser, base, label, quiet = false) {
  const c = quiet ? quietCheck : check;
  const { page, info } = await open(browser, base, q8, 'auto', `&n_ctx=0&window=${WINDOW}&sinks=${SINKS}`);
  let ok = c(!info.err && info.engine === 'webgpu' && /^backend webgpu$/.test(info.shown),
    `${label}: a sliding-window chat (${WINDOW}, ${SINKS} sinks) runs on webgpu and says so`, info);
  for (const [i, l] of LINES.entries()) {
    const t = await say(page, l, { timeoutMs: 300000 });
    ok = c(t.done && !t.error && t.stats && t.stats.text === nativeW[i],
      `${label}: windowed turn ${i + 1} on webgpu equals native ref's with --sliding-window ${WINDOW} --sinks ${SINKS}`,
      { page: t.stats && t.stats.text, native: nativeW[i], error: t.error, stats: t.stats }) && ok;
    if (!ok && quiet) break;
  }
  await page.close();
  return ok;
}

// A copy of the engine folder with one file patched (a planted fault).
function planted(name, file, from, to) {
  const d = path.join(dir, `fault-${name}`);
  cpSync(engineDir, d, { recursive: true });
  const p = path.join(d, file);
  const src = readFileSync(p, 'utf8');
  if (!src.includes(from)) throw new Error(`planted fault ${name}: '${from}' not in ${file}`);
  writeFileSync(p, src.split(from).join(to));
  return d;
}

const t0 = Date.now();
const browser = await launch(GPU_FLAGS);
try {
  const probe = await browser.newPage();
  const server = await startServer(['--slots', '1', '-t', '1', '--web-dir', engineDir]);
  try {
    await probe.goto(server.base + '/', { waitUntil: 'load' });
    const hasAdapter = await probe.evaluate(async () => !!(navigator.gpu && await navigator.gpu.requestAdapter()));
    await probe.close();
    if (!hasAdapter) skip('chromium gives no WebGPU adapter here');
    const g = await gpuRun(browser, server.base, 'webgpu');
    // The wasm backend on the same file and prompts (F16 KV and wasm128r: no near-tie here).
    const { page, info } = await open(browser, server.base, q8, 'off');
    check(!info.err && info.engine && info.engine.startsWith('wasm128') && /gpu=off/.test(info.shown),
      'gpu=off: the page runs the wasm kernels and says the GPU backend is off', info);
    const w = [];
    for (const l of LINES) w.push((await say(page, l)).stats?.text);
    check(w.join('\n') === g.replies.join('\n'), 'the wasm backend\'s greedy replies equal the webgpu backend\'s', { wasm: w, webgpu: g.replies });
    await page.close();
    await unsupportedRun(browser, server.base, 'fallback');
    // A sliding window: the GPU cache keeps the session's ring (llama.mjs), so that chat runs on
    // webgpu, equal to native ref's with the same window.
    await windowRun(browser, server.base, 'window');
  } finally {
    await stopAndCheck(server);
  }
  console.log(`webgpu page checks: ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  if (process.env.PLUMB_WEBGPU_FAULTS !== '0') {
    const faults = [
      ['page-picks-webgpu', 'llama.mjs', 'export function gpuSupport(gguf) {', 'export function gpuSupport(gguf) {\n  return { ok: true, arch: gguf.kv[\'general.architecture\'] };', 'unsupported'],
      ['hook-drops-truncate', 'plumb-engine.mjs', 'plumbGpuTruncate: (id, n, msg, cap) => gpuCall(', 'plumbGpuTruncate: (id, n, msg, cap) => 0 && gpuCall(', 'gpu'],
    ];
    // the GPU Worker ignoring truncate, and without its position check: only the logits can tell
    faults.push(['gpu-ignores-truncate-unchecked', 'gpu-worker.js', 'truncate(model, n);\n      } catch', '} catch', 'gpu', 'if (pos0 !== model.nPast)', 'if (false)']);
    // the engine's side never telling the GPU Worker that the chat is greedy: no speculation
    faults.push(['engine-never-greedy', 'plumb-engine.mjs', 'rec.gpu.views.ctl[GREEDY] = (s.temp ?? 0.8) === 0 ? 1 : 0;',
      'rec.gpu.views.ctl[GREEDY] = 0;', 'gpu']);
    // the GPU Worker dropping the session's window: its cache a context window of the ring's slots
    faults.push(['gpu-cache-without-window', 'gpu-worker.js', 'chat(m.channel, m.nCtx, m.window, m.sinks)', 'chat(m.channel, m.nCtx, 0, 0)', 'window']);
    for (const [name, file, from, to, run, from2, to2] of faults) {
      let d = planted(name, file, from, to);
      if (from2) {
        const p = path.join(d, file);
        writeFileSync(p, readFileSync(p, 'utf8').split(from2).join(to2));
      }
      const srv = await startServer(['--slots', '1', '-t', '1', '--web-dir', d]);
      let ok, by = '';
      try {
        ok = run === 'gpu' ? (await gpuRun(browser, srv.base, `[planted ${name}]`, true)).ok
          : run === 'window' ? await windowRun(browser, srv.base, `[planted ${name}]`, true)
            : await unsupportedRun(browser, srv.base, `[planted ${name}]`, true);
      } catch (e) {
        ok = false; // a failed check (or a page that hangs) ends the run
        by = e.message;
      } finally {
        for (const p of await browser.pages()) await p.close();
        await stopAndCheck(srv);
      }
      check(!ok, `planted fault ${name} is caught${by ? ` (by: ${by.slice(0, 400)})` : ''}`);
    }
  }
} finally {
  await browser.close();
}

// Without WebGPU (chromium's default flags here: --disable-gpu, no --enable-unsafe-webgpu).
const plain = await launch();
try {
  const server = await startServer(['--slots', '1', '-t', '1', '--web-dir', engineDir]);
  try {
    const { page, info } = await open(plain, server.base, q8);
    check(!info.err && info.engine && info.engine.startsWith('wasm128') &&
      /not on the GPU: (no navigator\.gpu|navigator\.gpu\.requestAdapter\(\) gave no adapter)/.test(info.shown),
      'chromium without WebGPU: the page runs the wasm kernels and says why', info);
    const t = await say(page, LINES[0]);
    check(t.done && !t.error && t.stats && t.stats.text.length > 0, 'and its turn runs', { error: t.error });
    await page.close();
  } finally {
    await stopAndCheck(server);
  }
} finally {
  await plain.close();
}
console.log(`webgpu_page: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
finish('webgpu_page');
