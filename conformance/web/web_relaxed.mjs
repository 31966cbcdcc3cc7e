// web_relaxed.mjs — the relaxed-SIMD module (wasm128r) in headless chromium, which runs relaxed
// SIMD (node 20 computes it wrongly: web/README.md): detectVariant() picks simd-relaxed on a
// page without isolation; its wasm128r logits of 3 prompts on the demo model are, bit for bit,
// the simd module's wasm128 logits and native `plumb logits --kernels wasm128r`'s; a 3-turn
// greedy chat equals native `plumb chat --kernels wasm128r`; then the chat page served by plumb
// serve (cross-origin isolated) with the engine menu on auto starts simd-relaxed-threads (2
// threads) and its greedy turns with kernels=wasm128r equal native's. The 32-block types with an
// offset or a min (Q4_0, Q4_1, Q5_0, Q5_1: tiny mkmodel files) through the decode path (prompts of
// at most 4 tokens, and greedy chat steps): wasm128r's logits = wasm128's = native wasm128r's,
// and the two modules' replies are equal; the same for the K-quants (Q2_K .. Q6_K, --pure tiny
// files 256 wide). Needs make wasm.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { env, finish, startServer, stopAndCheck } from '../serve/serve_lib.mjs';
import { launch, openPage, say, check, skip } from './web_lib.mjs';
import { startStatic } from './static_server.mjs';

const engineDir = process.env.PLUMB_WEB_ENGINE;
if (!engineDir || !existsSync(path.join(engineDir, 'plumb-simd-relaxed.wasm')))
  skip(`no relaxed wasm module in ${engineDir} (run \`make wasm\`)`);
const { cli, model } = env();
const PROMPTS = ['Once upon a time',
  'The jury said it did find that the city executive committee, which had over-all charge of the election,',
  'Hello, world! 123 456.789 -- "quoted" text; éàü ñ 日本語'];
const SYSTEM = 'You are a helpful assistant.';
const LINES = ['Hello! Who are you?', 'Tell me a story about a small cat.', 'Thank you. Goodbye!'];
const N = 24;

const dir = mkdtempSync(path.join(tmpdir(), 'web_relaxed.'));
const nativeLogits = (m, p, i) => {
  const out = path.join(dir, `p${i}.logits`);
  execFileSync(cli, ['logits', '-m', m, '-p', p, '--last', '--kernels', 'wasm128r', '-t', '1', '-o', out],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  const b = readFileSync(out); // plumb.h, "logit files": the last row
  const nV = Number(b.readBigUInt64LE(16)), nT = Number(b.readBigUInt64LE(24));
  const nR = Number(b.readBigUInt64LE(40)), nl = b.readUInt32LE(56);
  const at = 64 + nl + 4 * nT + 4 * nV * (nR - 1);
  return Array.from({ length: nV }, (_, j) => b.readUInt32LE(at + 4 * j));
};
const native = PROMPTS.map((p, i) => nativeLogits(model, p, i));
// Short prompts (BOS + 1-3 tokens: a matmul of T <= 4 tokens, the decode path) on tiny files of
// the offset/min types.
const SHORT = ['Hi', 'Go!']; // tiny's vocabulary is bytes: BOS + 2 or 3 tokens
// The K-quants (every matrix of the type: --pure, widths a multiple of 256) too: their one-token
// decode path (the greedy steps) takes the dots as the quants are decoded (issue 52).
const KQ = ['--pure', '--n-embd', '256', '--n-ff', '512'];
const small = ['Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K'].map((t) => {
  const f = path.join(dir, `tiny-${t}.gguf`);
  execFileSync(cli, ['mkmodel', f, '--preset', 'tiny', '--type', t, ...(t.endsWith('_K') ? KQ : [])],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  return { t, f, url: `/tiny-${t}.gguf`, native: SHORT.map((p, i) => nativeLogits(f, p, 100 + i)) };
});
const nativeChat = execFileSync(cli, ['chat', '-m', model, '--system', SYSTEM, '--temp', '0', '-n', String(N),
  '--kernels', 'wasm128r', '-t', '1'], { input: LINES.join('\n') + '\n', stdio: ['pipe', 'pipe', 'ignore'] }).toString();
const save = path.join(dir, 'conv.json');
execFileSync(cli, ['chat', '-m', model, '--kernels', 'wasm128r', '--system', SYSTEM, '-n', String(N),
  '--temp', '0', '--seed', '7', '-c', '2048', '-t', '1'], { input: `${LINES.join('\n')}\n/save ${save}\n`, stdio: ['pipe', 'ignore', 'ignore'] });
const conv = JSON.parse(readFileSync(save, 'utf8'));
const nativeSaved = (conv.messages || conv).filter((m) => m.role === 'assistant').map((m) => m.content);

const firstDiff = (a, b) => (a.length !== b.length ? 0 : a.findIndex((x, j) => x !== b[j]));
const stat = await startStatic([engineDir, path.dirname(new URL(import.meta.url).pathname)],
  { '/model.gguf': model, ...Object.fromEntries(small.map((x) => [x.url, x.f])) });
const browser = await launch();
try {
  const page = await openPage(browser, `${stat.base}/relaxed.html`);
  const det = await page.evaluate(() => window.relaxed.detect());
  check(det.exact && det.variant === 'simd-relaxed', 'chromium: relaxed dot exact, detectVariant() picks simd-relaxed (no isolation)', det);
  const run = (v, k) => page.evaluate((v, k, p, s, l, n) => window.relaxed.run(v, k, p, s, l, n), v, k, PROMPTS, SYSTEM, LINES, N);
  const plain = await run('simd', 'wasm128');
  const rx = await run('simd-relaxed', 'wasm128r');
  check(plain.info.kernels === 'wasm128' && rx.info.kernels === 'wasm128r',
    'default sets: simd module wasm128, relaxed module wasm128r', { simd: plain.info.kernels, relaxed: rx.info.kernels });
  PROMPTS.forEach((_, i) => {
    const d = firstDiff(rx.logits[i], plain.logits[i]), dn = firstDiff(rx.logits[i], native[i]);
    check(d < 0, `prompt ${i}: wasm128r logits bit-identical to the simd module's wasm128 (${native[i].length} floats)`, d);
    check(dn < 0, `prompt ${i}: wasm128r logits bit-identical to native wasm128r`, dn);
  });
  const text = rx.replies.map((r) => r + '\n').join('');
  check(text === nativeChat, 'greedy chat on simd-relaxed/wasm128r equals native plumb chat --kernels wasm128r', { wasm: text, native: nativeChat });
  for (const x of small) {
    const runT = (v, k) => page.evaluate((v, k, p, s, l, n, u) => window.relaxed.run(v, k, p, s, l, n, u), v, k, SHORT, SYSTEM, LINES.slice(0, 2), 8, x.url);
    const a = await runT('simd', 'wasm128'), b = await runT('simd-relaxed', 'wasm128r');
    SHORT.forEach((p, i) => {
      check(firstDiff(b.logits[i], a.logits[i]) < 0 && firstDiff(b.logits[i], x.native[i]) < 0,
        `${x.t} '${p}' (decode path): wasm128r logits = wasm128's = native wasm128r's`,
        { wasm128: firstDiff(b.logits[i], a.logits[i]), native: firstDiff(b.logits[i], x.native[i]) });
    });
    check(b.replies.join('\n') === a.replies.join('\n'), `${x.t}: greedy replies (decode steps) equal on both modules`, { a: a.replies, b: b.replies });
  }
  await page.close();

  // The chat page, isolated (plumb serve's COOP/COEP), engine on auto: the Worker's module.
  const server = await startServer(['--slots', '1', '-t', '1', '--web-dir', engineDir]);
  try {
    const p2 = await openPage(browser, `${server.base}/?backend=wasm&temp=0&seed=7&max_tokens=${N}&n_ctx=2048&kernels=wasm128r`);
    await (await p2.$('#file')).uploadFile(model);
    await p2.waitForFunction(() => document.body.dataset.chat === '1' || document.getElementById('settings-error').textContent, { timeout: 120000 });
    const info = await p2.evaluate(() => ({ err: document.getElementById('settings-error').textContent,
      variant: window.plumb.wasm.info && window.plumb.wasm.info.variant, threads: window.plumb.wasm.info && window.plumb.wasm.info.threads }));
    check(!info.err && info.variant === 'simd-relaxed-threads' && info.threads >= 2,
      'isolated page, engine auto: simd-relaxed-threads with 2+ threads', info);
    for (let k = 0; k < LINES.length; k++) {
      const t = await say(p2, LINES[k]);
      check(t.done && !t.error && t.stats && t.stats.text === nativeSaved[k],
        `page turn ${k + 1} (wasm128r, ${info.threads} threads) equals native --kernels wasm128r`, { page: t.stats && t.stats.text, native: nativeSaved[k], error: t.error });
    }
    await p2.close();
  } finally {
    await stopAndCheck(server);
  }
} finally {
  await browser.close();
  stat.close();
  rmSync(dir, { recursive: true, force: true });
}
finish('web_relaxed');
