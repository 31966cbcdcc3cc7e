// webgpu.mjs — the webgpu kernel set (kernels/webgpu/) against the conformance suite, in headless
// chromium with its software WebGPU (SwiftShader): webgpu_cases (conformance/webgpu_cases.c)
// writes randomized cases and their inputs to a folder; the page conformance/web/webgpu.html runs
// the WGSL kernels on them and hands each output back here, into a folder per run; webgpu_cases
// then rebuilds the cases from the seed and holds every output to the CPU sets' bounds against
// the GSL double references (the quantized matmuls and quantizers also to ref's bits). Then each
// planted fault (a kernel's source patched in the page) must make the checker fail on the cases
// it concerns. Last, the forward pass of kernels/webgpu/llama.mjs on tiny llama, qwen2 and qwen3
// files (webgpu_models, conformance/webgpu_models.c) against the double-precision reference
// transformer and the ref set's greedy choices. Skips (77) without puppeteer-core, chromium or a WebGPU adapter,
// unless PLUMB_NO_SKIP=1.
// Env: PLUMB_WEBGPU_CASES (the webgpu_cases binary), PLUMB_WEBGPU_MODELS (webgpu_models), PLUMB_WEB_NPM
// (puppeteer-core's folder), PLUMB_WEBGPU_ADAPTER (chromium's --use-webgpu-adapter, default
// swiftshader; "default": none), PLUMB_WEBGPU_FAULTS=0 (debugging: skip the planted faults),
// PLUMB_WEBGPU_PART=models (debugging: the forward passes only), PLUMB_WEB_VERBOSE=1 (the page's
// console).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { launch, skip } from './web_lib.mjs';
import { startStatic } from './static_server.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
const kernelsDir = path.resolve(here, '../../kernels/webgpu');
const cases = process.env.PLUMB_WEBGPU_CASES;
if (!cases || !existsSync(cases)) {
  console.log(`FAIL: PLUMB_WEBGPU_CASES (${cases}) is not the webgpu_cases binary`);
  process.exit(1);
}

// The flags that give headless chromium a WebGPU adapter with no GPU: WebGPU on (Linux keeps it
// behind --enable-unsafe-webgpu) and the SwiftShader adapter; the page must be a secure context
// (http://127.0.0.1 is one; about:blank is not).
const adapterFlag = process.env.PLUMB_WEBGPU_ADAPTER || 'swiftshader';
const FLAGS = ['--no-sandbox', '--disable-dev-shm-usage', '--enable-unsafe-webgpu',
  ...(adapterFlag === 'default' ? [] : [`--use-webgpu-adapter=${adapterFlag}`])];

const root = mkdtempSync(path.join(tmpdir(), 'plumb-webgpu.'));
process.on('exit', () => rmSync(root, { recursive: true, force: true }));

function tool(args) {
  const r = spawnSync(cases, args, { encoding: 'utf8', maxBuffer: 1 << 26 });
  return { rc: r.status, out: (r.stdout || '') + (r.stderr || '') };
}

const tl = Date.now();
const browser = await launch(FLAGS);
console.log(`chromium up in ${Date.now() - tl} ms`);
// Every case is generated once; each run (the clean one, then one per planted fault) writes its
// outputs into a folder of its own, which the checker reads with the run's filter.
const dir = path.join(root, 'cases');
mkdirSync(dir);
const g = tool(['gen', dir]);
if (g.rc !== 0) throw new Error(`webgpu_cases gen failed: ${g.out}`);
const stat = await startStatic([kernelsDir, here, dir]);
const page = await browser.newPage();
page.on('console', (m) => { if (m.type() === 'error' || process.env.PLUMB_WEB_VERBOSE) console.log(`  [page ${m.type()}] ${m.text()}`); });
page.on('pageerror', (e) => console.log(`  [page error] ${e.message}`));
await page.exposeFunction('saveOutput', (tag, name, b64) => {
  if (!/^[A-Za-z0-9._-]+$/.test(tag + name)) throw new Error(`bad output name ${tag}/${name}`);
  writeFileSync(path.join(root, tag, name), Buffer.from(b64, 'base64'));
});
await page.goto(`${stat.base}/webgpu.html`, { waitUntil: 'load' });
await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });

// One run: the cases whose name holds filter, with the patches planted, then checked.
async function runCases(tag, filter, patches = [], only = undefined, opts = {}) {
  mkdirSync(path.join(root, tag));
  const res = await page.evaluate((t, f, p, o, k) => window.wgpu.run(t, f, p, o, k), tag, filter || '', patches, only, opts);
  if (res.error) return { noAdapter: res.error };
  const c = tool(['check', dir, filter || '', path.join(root, tag)]);
  return { ...res, rc: c.rc, out: c.out };
}

let failures = 0;
try {
  const t0 = Date.now();
  // PLUMB_WEBGPU_PART=models (debugging): the forward passes only, not the kernel cases. The
  // main run takes attention in one dispatch everywhere (attnSplit 'never'; 'auto' splits from
  // 256 entries), the split run below the other way, so that every case runs both.
  const modelsOnly = process.env.PLUMB_WEBGPU_PART === 'models';
  const main = modelsOnly ? { rc: 0, out: '(kernel cases skipped: PLUMB_WEBGPU_PART=models)', cases: 0, ms: {},
    noAdapter: (await page.evaluate(() => window.wgpu.adapter())).error } : await runCases('all', null, [], undefined, { attnSplit: 'never' });
  if (main.noAdapter) {
    await browser.close();
    skip(`no WebGPU adapter in chromium (${FLAGS.join(' ')}): ${main.noAdapter}`);
  }
  console.log(`adapter: ${JSON.stringify(main.info)}; ${main.cases} cases in ${((Date.now() - t0) / 1000).toFixed(1)} s ` +
    `(page ms by kind: ${JSON.stringify(Object.fromEntries(Object.entries(main.ms).map(([k, v]) => [k, Math.round(v)])))})`);
  console.log(main.out);
  if (main.rc !== 0) { console.log('FAIL: the webgpu set is outside its bounds (above)'); failures++; }

  // The tiled prefill drivers (matmul_qt.wgsl, matmul_qt_q4_k.wgsl, matmul_qt_q6_k.wgsl) on every case of their
  // types, with dot4 the other way from the run above where the adapter has both
  // (dot4I8Packed there: shifts here), so that both dot4s are held to ref's bits.
  const otherDot = main.packedDot ? { packedDot: false } : {};
  const dotName = main.packedDot || !main.packedDotAvailable ? 'shifts' : 'dot4I8Packed';
  if (!main.packedDot && main.packedDotAvailable) otherDot.packedDot = true;
  for (const type of ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K']) {
    const tr = await runCases(`tiled-${type}`, `matmul_${type}`, [], [`matmulT_${type}`], { tileMinT: 1, ...otherDot });
    console.log(`matmul ${type}, the tiled driver, dot4 by ${dotName}: ${(tr.out.match(/\d+ of \d+ cases failed/) || ['?'])[0]}`);
    if (tr.rc !== 0) { console.log(tr.out); console.log(`FAIL: the tiled ${type} matmul`); failures++; }
  }

  // The decode drivers: the run above used the default ('auto': v2, matmul_qv.wgsl, for Q8_0 and
  // Q4_0 at 4 rows x 64 threads, chunks of 64 blocks; grouped v2 at 8 x 128, 4 rows a thread, for
  // Q4_K and Q6_K); v2 again with 3 rows x 4 threads a workgroup (chunks of
  // 4 blocks: most cases span several chunks and end in a partial one, R rarely a multiple of
  // 3), and v1 (matmul_q.wgsl), which stays selectable: every quantized matmul case, ref's bits.
  // The K-quants' grouped mode (8 lanes a block) too: at its default shape (4 x 64: chunks of 8
  // blocks) and at 3 rows x 16 threads (chunks of 2).
  // The default is 'auto' (v2 for Q8_0 and Q4_0, grouped v2 with rows a thread for the K-quants),
  // so v2 at its default shape runs the K-quants' cases too, and grouped with 4 and 2 rows a
  // thread at two more shapes.
  for (const [tag, what, o, types] of [['v2s', 'v2 with 3 rows x 4 threads a workgroup', { decodeDriver: 'v2', decodeNR: 3, decodeTPR: 4 }],
    ['v1', 'v1 (matmul_q.wgsl)', { decodeDriver: 'v1' }],
    ['v2', 'v2 (4 rows x 16 threads)', { decodeDriver: 'v2' }, ['Q4_K', 'Q6_K']],
    ['g8', 'v2 grouped (8 lanes a block, 4 x 64)', { decodeDriver: 'v2', decodeGP: 8 }, ['Q4_K', 'Q6_K']],
    ['g8s', 'v2 grouped (8 lanes a block, 3 x 16)', { decodeDriver: 'v2', decodeGP: 8, decodeNR: 3, decodeTPR: 16 }, ['Q4_K', 'Q6_K']],
    ['g8r4', 'v2 grouped, 4 rows a thread (8 rows x 64 threads)', { decodeDriver: 'v2', decodeGP: 8, decodeNR: 8, decodeTPR: 64, decodeRPT: 4 }, ['Q4_K', 'Q6_K']],
    ['g8r2s', 'v2 grouped, 2 rows a thread (6 rows x 16 threads)', { decodeDriver: 'v2', decodeGP: 8, decodeNR: 6, decodeTPR: 16, decodeRPT: 2 }, ['Q4_K', 'Q6_K']]]) {
    for (const type of types || ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K']) {
      const dr = await runCases(`decode-${tag}-${type}`, `matmul_${type}`, [], [`matmul_${type}`], o);
      console.log(`matmul ${type}, the decode driver ${what}: ${(dr.out.match(/\d+ of \d+ cases failed/) || ['?'])[0]}`);
      if (dr.rc !== 0) { console.log(dr.out); console.log(`FAIL: the ${type} decode driver ${what}`); failures++; }
    }
  }

  // Attention split into two dispatches (attnSplit 'always'; 'auto' takes it for a decode step
  // from 256 entries): every case within the bound, and every output bit for bit the one-dispatch
  // run's above; with its rows quantized by the last dispatch (attn_combine.wgsl), the bytes of
  // the quantize kernel on those rows. Planted faults of the split path that stay inside the
  // bound (the chunks combined last to first; the four threads' partial sums or partial dots
  // added in another order) must break the bits; one that does not (the last chunk dropped) the
  // bound; and a quantize handed -o, the bytes.
  if (!modelsOnly) {
    const only = ['attention', 'attn_combine_Q8_0', 'attn_combine_Q8_K', 'quantize_Q8_0', 'quantize_Q8_K'];
    const split = async (tag, patches) => {
      const r = await runCases(tag, 'attention', patches, only, { attnSplit: 'always', attnQuant: true });
      const files = readdirSync(path.join(root, tag));
      const diff = files.filter((f) => !readFileSync(path.join(root, tag, f)).equals(readFileSync(path.join(root, 'all', f))));
      return { ...r, files, diff };
    };
    const sr = await split('attn-split', []);
    console.log(`attention split into two dispatches: ${(sr.out.match(/\d+ of \d+ cases failed/) || ['?'])[0]}`);
    if (sr.rc !== 0) { console.log(sr.out); console.log('FAIL: attention split into two dispatches'); failures++; }
    console.log(sr.diff.length || !sr.files.length ? `FAIL attention split into two dispatches differs from one dispatch: ${sr.diff.join(', ') || 'no outputs'}`
      : `ok   attention split into two dispatches gives the one-dispatch outputs bit for bit (${sr.files.length} cases)`);
    if (sr.diff.length || !sr.files.length) failures++;
    const aq = sr.attnQuant || { checked: 0, diff: ['(no result)'] };
    console.log(aq.diff.length || !aq.checked ? `FAIL the split attention's quantized rows differ from the quantize kernel's: ${aq.diff.join(', ') || 'no case checked'}`
      : `ok   the split attention's rows quantized by its last dispatch: the quantize kernel's bytes (${aq.checked} cases, Q8_0 and Q8_K)`);
    if (aq.diff.length || !aq.checked) failures++;
    const comb = 'attn_combine.wgsl', acc = 'acco = acco + rnd(rc * ov[k]);';
    for (const [tag, what, patches] of [
      ['attn-split-rev', 'the split\'s chunks combined last to first', [{ file: comb, pairs: [['ov[k] = S[oc + (th * nc + c) * P.D + d];', 'ov[k] = S[oc + (th * nc + (nc - 1u - c)) * P.D + d];']] }]],
      ['attn-split-tree', 'the chunk\'s four threads\' partial sums added (0 + 1) + (2 + 3), not (0 + 2) + (1 + 3)', [{ file: 'attention.wgsl',
        pairs: [['(ex[li] + ex[512u + li]) + (ex[256u + li] + ex[768u + li])', '(ex[li] + ex[256u + li]) + (ex[512u + li] + ex[768u + li])']] }]],
      ['attn-split-dot', 'a score\'s four partial dots (4 threads) added (0 + 2) + (1 + 3)', [{ file: 'attention.wgsl',
        pairs: [['(grp[li] + grp[li + 1u]) + (grp[li + 2u] + grp[li + 3u])', '(grp[li] + grp[li + 2u]) + (grp[li + 1u] + grp[li + 3u])']] }]]]) {
      const r = await split(tag, patches);
      console.log(`${r.diff.length ? 'ok  ' : 'FAIL'} planted fault caught: ${what} (inside the bound: ${r.rc === 0}; outputs differing from one dispatch: ${r.diff.length})`);
      if (!r.diff.length) failures++;
    }
    const drop = await split('attn-split-drop', [{ file: comb, pairs: [[acc, `if (c0 + k + 1u < nc) { ${acc} }`]] }]);
    const dropFailed = (drop.out.match(/(\d+) of \d+ cases failed/) || [0, 0])[1];
    console.log(`${drop.rc !== 0 && Number(dropFailed) > 0 ? 'ok  ' : 'FAIL'} planted fault caught: the split's last chunk dropped (${dropFailed} cases outside the bound)`);
    if (!(drop.rc !== 0 && Number(dropFailed) > 0)) failures++;
    const qf = await split('attn-split-qf', [{ file: comb, pairs: [['u = bitcast<u32>(o);', 'u = bitcast<u32>(-o);']] }]);
    const qd = qf.attnQuant?.diff.length || 0;
    console.log(`${qd ? 'ok  ' : 'FAIL'} planted fault caught: the combine's quantize handed -o, not o (${qd} cases' bytes differ)`);
    if (!qd) failures++;
  }

  // Planted faults: each must fail the check of the cases it concerns.
  const FAULTS = [
    { name: 'Q4_0 nibble order swapped (high nibble as element j; v1\'s parts)', filter: 'matmul_Q4_0', only: ['matmul_Q4_0'], opts: { decodeDriver: 'v1' },
      file: 'matmul_q4_0.wgsl', pairs: [['xu(xo + j))', '@LO@'], ['xu(xo + 16u + j))', 'xu(xo + j))'], ['@LO@', 'xu(xo + 16u + j))']] },
    { name: 'Q4_0 nibble order swapped (high nibble as element j; v2\'s whole-block sum)', filter: 'matmul_Q4_0', only: ['matmul_Q4_0'],
      file: 'matmul_q4_0.wgsl', pairs: [['fsh(xat(xi + k), xat(xi + k + 1u), xs)', '@LO@'],
        ['fsh(xat(xi + k + 4u), xat(xi + k + 5u), xs)', 'fsh(xat(xi + k), xat(xi + k + 1u), xs)'], ['@LO@', 'fsh(xat(xi + k + 4u), xat(xi + k + 5u), xs)']] },
    { name: 'decode v2, Q8_0\'s word window: an odd byte offset read as the even one below it (only W at an odd offset shows it)', filter: 'matmul_Q8_0', only: ['matmul_Q8_0'],
      file: 'matmul_q8_0.wgsl', pairs: [['let ws = (wo & 3u) * 8u;', 'let ws = (wo & 2u) * 8u;']] },
    { name: 'the funnel shift by 32 - s (WGSL takes a shift of 32 as 0: an aligned word ORed with the next; Q4_0)', filter: 'matmul_Q4_0', only: ['matmul_Q4_0'],
      file: 'matmul_q4_0.wgsl', pairs: [['((b << 1u) << (31u - s))', '(b << (32u - s))']] },
    { name: 'Q4_K sub-block nibble order swapped', filter: 'matmul_Q4_K', only: ['matmul_Q4_K'],
      file: 'matmul_q4_k.wgsl', pairs: [['(j % 2u) * 4u', '(1u - j % 2u) * 4u']] },
    { name: 'Q6_K sub-block scale sign dropped (even sub-blocks\' int8 scale taken unsigned)', filter: 'matmul_Q6_K', only: ['matmul_Q6_K'],
      file: 'matmul_q6_k.wgsl', pairs: [['let s0 = bitcast<i32>(sc << 24u) >> 24u;', 'let s0 = i32(sc & 0xffu);']] },
    { name: 'Q6_K high bits from the neighbouring quarter\'s pair', filter: 'matmul_Q6_K', only: ['matmul_Q6_K'],
      file: 'matmul_q6_k.wgsl', pairs: [['let hsh = 2u * s;', 'let hsh = 2u * (s ^ 1u);']] },
    { name: 'Q8_0 weight scale dropped', filter: 'matmul_Q8_0', only: ['matmul_Q8_0'],
      file: 'matmul_q8_0.wgsl', pairs: [['rnd(f16_to_f32(w16(wo)) * f16_to_f32(x16(xo)))', 'rnd(f16_to_f32(x16(xo)))']] },
    { name: 'Q4_K min term dropped', filter: 'matmul_Q4_K', only: ['matmul_Q4_K'],
      file: 'matmul_q4_k.wgsl', pairs: [[' - rnd(dmin * f32(summs))', '']] },
    { name: 'decode v2: two adjacent block terms swapped in the row\'s ordered sum (inside the bound, not ref\'s bits)', filter: 'matmul_Q8_0', only: ['matmul_Q8_0'],
      file: 'matmul_q8_0.wgsl', pairs: [['s = s + bitcast<f32>(terms[o + j].x);', 's = s + bitcast<f32>(terms[o + (j ^ 1u)].x);']] },
    { name: 'decode v2: a chunk ends a block early (its last block added again at the next chunk\'s start, Q4_0)', filter: 'matmul_Q4_0', only: ['matmul_Q4_0'],
      file: 'matmul_q4_0.wgsl', pairs: [['c0 += CB;', 'c0 += CB - 1u;']] },
    { name: 'decode v2: the row\'s adder reads the chunk being written, not the last one (Q6_K)', filter: 'matmul_Q6_K', only: ['matmul_Q6_K'],
      file: 'matmul_q6_k.wgsl', pairs: [['(WG - cur) + lr * TPR', 'cur + lr * TPR']] },
    { name: 'decode v2: rows past R written (the workgroup\'s row edge, Q4_K)', filter: 'matmul_Q4_K', only: ['matmul_Q4_K'],
      file: 'matmul_q4_k.wgsl', pairs: [['let own = lb == 0u && r < P.R;', 'let own = lb == 0u;']] },
    { name: 'decode v2 grouped: rows past R added and written (the workgroup\'s row edge, Q4_K)', filter: 'matmul_Q4_K', only: ['matmul_Q4_K'],
      opts: { decodeGP: 8 }, file: 'matmul_q4_k.wgsl', pairs: [['if (lb < RPT && rg + lb < P.R) {', 'if (lb < RPT) {'],
        ['t, s, lb < RPT && rg + lb < P.R);', 't, s, lb < RPT);']] },
    { name: 'decode v2 grouped: Q4_K\'s lanes take the mins of sub-block 0 (not their own)', filter: 'matmul_Q4_K', only: ['matmul_Q4_K'], opts: { decodeGP: 8 },
      file: 'matmul_q4_k.wgsl', pairs: [['i32(sm_of(s0, s1, s2, g).y)', 'i32(sm_of(s0, s1, s2, 0u).y)']] },
    { name: 'decode v2 grouped, 4 rows a thread: every row\'s sums against the group\'s first row\'s weights (Q4_K)', filter: 'matmul_Q4_K', only: ['matmul_Q4_K'],
      opts: { decodeDriver: 'v2', decodeGP: 8, decodeNR: 8, decodeTPR: 64, decodeRPT: 4 },
      file: 'matmul_q4_k.wgsl', pairs: [['e = gpart_x(rg + i, b, g, x);', 'e = gpart_x(rg, b, g, x);']] },
    { name: 'decode v2 grouped, 2 rows a thread: a row\'s term formed from the other row\'s lane sums (Q6_K)', filter: 'matmul_Q6_K', only: ['matmul_Q6_K'],
      opts: { decodeDriver: 'v2', decodeGP: 8, decodeNR: 6, decodeTPR: 16, decodeRPT: 2 },
      file: 'matmul_q6_k.wgsl', pairs: [['v += terms[g * WG + li - g + k];', 'v += terms[(1u - g) * WG + li - g + k];']] },
    { name: 'decode v2 grouped: a block\'s term put in the next block\'s slot (Q4_K)', filter: 'matmul_Q4_K', only: ['matmul_Q4_K'], opts: { decodeGP: 8 },
      file: 'matmul_q4_k.wgsl', pairs: [['tg[(lr * RPT + g) * CB + lb / GP] = term(', 'tg[(lr * RPT + g) * CB + (lb / GP + 1u) % CB] = term(']] },
    { name: 'decode v2 grouped: Q6_K\'s words 4..7 of a part scaled by the part\'s first sub-block\'s scale', filter: 'matmul_Q6_K', only: ['matmul_Q6_K'], opts: { decodeGP: 8 },
      file: 'matmul_q6_k.wgsl', pairs: [['wb4(wo + 192u + 2u * p + g / 4u)', 'wb4(wo + 192u + 2u * p)']] },
    { name: 'decode v2 grouped: the adder drops a block\'s last lane (Q6_K)', filter: 'matmul_Q6_K', only: ['matmul_Q6_K'], opts: { decodeGP: 8 },
      file: 'matmul_q6_k.wgsl', pairs: [['for (var k = 0u; k < GP; k++)', 'for (var k = 0u; k + 1u < GP; k++)']] },
    { name: 'Q8_0 block terms added in reverse order (inside the bound, not ref\'s bits)', filter: 'matmul_Q8_0', only: ['matmul_Q8_0'], opts: { decodeDriver: 'v1' },
      file: 'matmul_q8_0.wgsl', pairs: [['for (var b = 0u; b < n; b++) { s = s + terms[li * n + b]; }', 'for (var b = n; b > 0u; b--) { s = s + terms[li * n + b - 1u]; }']] },
    { name: 'Q8_K subnormal scale: the 2^-64 taken back dropped (Q4_K)', filter: 'matmul_Q4_K', only: ['matmul_Q4_K'],
      file: 'matmul_q4_k.wgsl', pairs: [['5.421010862427522e-20); // 2^-64', '1.0); // 2^-64']] },
    { name: 'Q8_0 quantizer rounds halves to even (WGSL round) instead of away from zero (roundf)', filter: 'quantize_Q8_0', only: ['quantize_Q8_0'],
      file: 'quantize_q8_0.wgsl', pairs: [['q = i32(clamp(roundf(v)', 'q = i32(clamp(round(v)']] },
    { name: 'Q8_0 quantizer takes a subnormal x as it is (a GPU flushes it)', filter: 'quantize_Q8_0', only: ['quantize_Q8_0'],
      file: 'quantize_q8_0.wgsl', pairs: [['if ((xb & 0x7f800000u) == 0u && (xb & 0x7fffffu) != 0u) {', 'if (false) {']] },
    { name: 'Q8_K quantizer bsums over 15 quants', filter: 'quantize_Q8_K', only: ['quantize_Q8_K'],
      file: 'quantize_q8_k.wgsl', pairs: [['atomicAdd(&qsum[li / 16u], q);', 'if (li % 16u < 15u) { atomicAdd(&qsum[li / 16u], q); }']] },
    { name: 'Q8_K quantizer takes the last element of largest |x| on ties, not the first (its sign is the scale\'s)', filter: 'quantize_Q8_K', only: ['quantize_Q8_K'],
      file: 'quantize_q8_k.wgsl', pairs: [['(li << 1u) | (u >> 31u)', '((255u - li) << 1u) | (u >> 31u)']] },
    { name: 'matmul ignores the split grid\'s second dimension (rows past the first grid row)', filter: 'matmul_Q8_0', only: ['matmul_Q8_0'],
      file: 'matmul_q8_0.wgsl', pairs: [['let r0 = (wg.x + wg.y * P.rsplit) * NR;', 'let r0 = wg.x * NR;']] },
    { name: 'matmul tile: the last row of each workgroup\'s 8 left unwritten', filter: 'matmul_Q4_0', only: ['matmul_Q4_0'], opts: { decodeDriver: 'v1' },
      file: 'matmul_q4_0.wgsl', pairs: [['if (li < NR && r0 + li < P.R)', 'if (li + 1u < NR && r0 + li < P.R)']] },
    { name: 'matmul: a block\'s last integer part dropped (Q4_K sub-block 7)', filter: 'matmul_Q4_K', only: ['matmul_Q4_K'],
      file: 'matmul_q4_k.wgsl', pairs: [['for (var p = 0u; p < NP; p++)', 'for (var p = 0u; p + 1u < NP; p++)']] },
    { name: 'matmul chunk edge: the parts of the next chunk\'s first block read (Q8_0 part index off by one)', filter: 'matmul_Q8_0', only: ['matmul_Q8_0'], opts: { decodeDriver: 'v1' },
      file: 'matmul_q8_0.wgsl', pairs: [['v += parts[q * NP + p];', 'v += parts[q * NP + p + 1u];']] },
    { name: 'tiled Q8_0: a step\'s second staged weight block taken from its first', filter: 'matmul_Q8_0', only: ['matmulT_Q8_0'], opts: { tileMinT: 1 },
      file: 'matmul_qt_q8_0.wgsl', pairs: [['wword(r, b0 + bb, k)', 'wword(r, b0, k)']] },
    { name: 'tiled Q4_0: the tile\'s last token left unwritten (token edge off by one)', filter: 'matmul_Q4_0', only: ['matmulT_Q4_0'], opts: { tileMinT: 1 },
      file: 'matmul_qt_q4_0.wgsl', pairs: [['if (r < P.R && t < P.T) { Y', 'if (r < P.R && t + 1u < P.T) { Y']] },
    { name: 'tiled Q8_0: the token tiles past the first computed as the first', filter: 'matmul_Q8_0', only: ['matmulT_Q8_0'], opts: { tileMinT: 1 },
      file: 'matmul_qt_q8_0.wgsl', pairs: [['let t0 = wg.z * TT;', 'let t0 = 0u;']] },
    { name: 'tiled Q4_K: each sub-block scaled by its neighbour\'s scale', filter: 'matmul_Q4_K', only: ['matmulT_Q4_K'], opts: { tileMinT: 1 },
      file: 'matmul_qt_q4_k.wgsl', pairs: [['wsm[(tr + 16u * i) * 8u + j0 + jj] & 0xffffu', 'wsm[(tr + 16u * i) * 8u + ((j0 + jj) ^ 1u)] & 0xffffu']] },
    { name: 'tiled Q4_K: a step\'s second staged sub-block of activations taken from its first', filter: 'matmul_Q4_K', only: ['matmulT_Q4_K'], opts: { tileMinT: 1 },
      file: 'matmul_qt_q4_k.wgsl', pairs: [['b * 292u + 4u + 32u * j + 4u * k', 'b * 292u + 4u + 32u * j0 + 4u * k']] },
    { name: 'tiled Q6_K: each part\'s second sub-block scaled by its first\'s scale', filter: 'matmul_Q6_K', only: ['matmulT_Q6_K'], opts: { tileMinT: 1 },
      file: 'matmul_qt_q6_k.wgsl', pairs: [['16u + 2u * (p0 + pp) + hh];', '16u + 2u * (p0 + pp)];']] },
    { name: 'tiled Q6_K: a step\'s second staged part of weights taken from its first', filter: 'matmul_Q6_K', only: ['matmulT_Q6_K'], opts: { tileMinT: 1 },
      file: 'matmul_qt_q6_k.wgsl', pairs: [['b * 210u, p, k);', 'b * 210u, p0, k);']] },
    { name: 'dot4 by shifts: a byte taken unsigned (the fallback of dot4I8Packed)', filter: 'matmul_Q8_0', only: ['matmulT_Q8_0'], opts: { packedDot: false, tileMinT: 1 },
      file: 'matmul_qt_q8_0.wgsl', pairs: [['(bitcast<i32>(a << 16u) >> 24u)', 'i32((a << 16u) >> 24u)']] },
    { name: 'F16 matmul drops the last element of an odd K', filter: 'matmul_F16', only: ['matmul_F16'],
      file: 'matmul_f16.wgsl', pairs: [['if (l == 0u && P.K % 2u == 1u)', 'if (false)']] },
    { name: 'F16 matmul: the rows of a workgroup past its first 64 threads\' row read from the first', filter: 'matmul_F16', only: ['matmul_F16'],
      file: 'matmul_f16.wgsl', pairs: [['let r = r0 + rr;', 'let r = r0;']] },
    { name: 'attention window off by one', filter: 'attention', only: ['attention'],
      file: 'attention.wgsl', pairs: [['return diff <= P.wm1;', 'return diff <= P.wm1 + 1u;']] },
    { name: 'attention sinks ignored', filter: 'attention', only: ['attention'],
      file: 'attention.wgsl', pairs: [['|| j < P.n_sinks)', ')']] },
    { name: 'attention: the V rows of entries j = 15 mod 16 dropped (one of the 16 partial sums)', filter: 'attention', only: ['attention'],
      file: 'attention.wgsl', pairs: [['if (wj != -1.0) {', 'if (wj != -1.0 && j % 16u != 15u) {']] },
    { name: 'attention: the sentinel ignored (an invisible entry\'s -1 added as a weight in the V sums)', filter: 'attention', only: ['attention'],
      file: 'attention.wgsl', pairs: [['if (wj != -1.0) {', 'if (true) {']] },
    { name: 'attention: a chunk\'s partials\' tree one level short (its last add, partial 0 + partial 1, dropped)', filter: 'attention', only: ['attention'],
      file: 'attention.wgsl', pairs: [['for (var hk = 8u; hk > 0u; hk >>= 1u)', 'for (var hk = 8u; hk > 1u; hk >>= 1u)']] },
    { name: 'attention: the last chunk of each batch left out of the running sums (one dispatch)', filter: 'attention', only: ['attention'],
      file: 'attention.wgsl', pairs: [['if (c0 + k < nc && S[', 'if (c0 + k < nc && k + 1u < G && S[']] },
    { name: 'attention: the running sum of the weights skipping chunk 0', filter: 'attention', only: ['attention'],
      file: 'attention.wgsl', pairs: [['accl = accl + rnd(rc * grpl[k]);', 'accl = accl + select(rnd(rc * grpl[k]), 0.0, c0 + k == 0u);']] },
    { name: 'attention: every round of 64 chunks\' maxes put over the first round\'s in MC (one dispatch)', filter: 'attention', only: ['attention'],
      file: 'attention.wgsl', pairs: [['let c = c0 + li / 4u;', 'let c = li / 4u;']] },
    { name: 'attention: the chunks\' sums not rescaled to the common max (r_c taken as 1)', filter: 'attention', only: ['attention'],
      file: 'attention.wgsl', pairs: [['let rc = attn_rescale(', 'let rc = 1.0 + 0.0 * attn_rescale(']] },
    { name: 'attention: the scores\' dims d = 1 mod 4 dropped (one of the four partial dots)', filter: 'attention', only: ['attention'],
      file: 'attention.wgsl', pairs: [['if (d0 + 4u * k < D) {', 'if (d0 + 4u * k < D && q != 1u) {']] },
    { name: 'attention not causal (kv_pos > q_pos seen)', filter: 'attention', only: ['attention'],
      file: 'attention.wgsl', pairs: [['if (kp > qp) { return false; }', '']] },
    { name: 'rope sin sign flipped', filter: 'rope', only: ['rope'],
      file: 'rope.wgsl', pairs: [['return vec2f(ac - bs, as_ + bc);', 'return vec2f(ac + bs, as_ + bc);']] },
    { name: 'rmsnorm eps dropped', filter: 'rmsnorm', only: ['rmsnorm'],
      file: 'rmsnorm.wgsl', pairs: [[' + P.eps', '']] },
    { name: 'softmax sum misses the last entry', filter: 'softmax', only: ['softmax'],
      file: 'softmax.wgsl', pairs: [['for (var i = li; i < P.n; i += 256u) { s = s + weight(X[xo + i], m); }', 'for (var i = li; i + 1u < P.n; i += 256u) { s = s + weight(X[xo + i], m); }']] },
    { name: 'swiglu sigmoid of +gate', filter: 'swiglu', only: ['swiglu'],
      file: 'swiglu.wgsl', pairs: [['exp_f32(-g)', 'exp_f32(g)']] },
    // the quantizers' word-owning chunks (no clear) and the fused kernels (rmsnorm_q, swiglu_q)
    { name: 'quantize: a chunk\'s words rounded down (a row of an odd number of Q8_0 blocks loses its last bytes)', filter: 'quantize_Q8_0', only: ['quantize_Q8_0'],
      file: 'quantize_q8_0.wgsl', pairs: [['let words = (nbc * BB + 3u) / 4u;', 'let words = (nbc * BB) / 4u;']] },
    { name: 'div_rn: the low bit of each 8-bit quotient digit dropped', filter: 'quantize_Q8_K', only: ['quantize_Q8_K'],
      file: 'quantize_q8_k.wgsl', pairs: [['let dq = t / mb;', 'let dq = (t / mb) & 0xfeu;']] },
    { name: 'quantize: a chunk\'s last word not stored', filter: 'quantize_Q8_K', only: ['quantize_Q8_K'],
      file: 'quantize_q8_k.wgsl', pairs: [['if (li < words) {', 'if (li + 1u < words) {']] },
    { name: 'rmsnorm_q: every row adds the first row\'s residual', filter: 'fused_norm', only: ['rmsnorm_q_Q8_0', 'rmsnorm_q_Q8_K'],
      file: 'rmsnorm_q.wgsl', pairs: [['va[k] = va[k] + Rs[ro + i];', 'va[k] = va[k] + Rs[i];']] },
    { name: 'rmsnorm_q: every row quantized into the first row\'s bytes', filter: 'fused_norm', only: ['rmsnorm_q_Q8_0', 'rmsnorm_q_Q8_K'],
      file: 'rmsnorm_q.wgsl', pairs: [['(P.q_off + row * P.q_row) / 4u', 'P.q_off / 4u']] },
    { name: 'rmsnorm_q: each workgroup\'s sum of squares over its own chunk, not the row', filter: 'fused_norm', only: ['rmsnorm_q_Q8_0', 'rmsnorm_q_Q8_K'],
      file: 'rmsnorm_q.wgsl', pairs: [['if (i < P.n) {\n        let v = va[k];', 'if (i == i0 && i < P.n) {\n        let v = va[k];']] },
    { name: 'rmsnorm_q: the sum stored without the residual (x into xo)', filter: 'fused_norm', only: ['rmsnorm_q_Q8_0', 'rmsnorm_q_Q8_K'],
      file: 'rmsnorm_q.wgsl', pairs: [['if (add) { Xo[xo + i0] = mine; }', 'if (add) { Xo[xo + i0] = X[xo + i0]; }']] },
    { name: 'swiglu_q: the up rows\' stride ignored', filter: 'fused_glu', only: ['swiglu_q_Q8_0', 'swiglu_q_Q8_K'],
      file: 'swiglu_q.wgsl', pairs: [['Up[P.u_off + row * P.u_ld + i]', 'Up[P.u_off + row * P.n + i]']] },
    { name: 'rope_kv: the ring\'s slots one off (position p at p + 1\'s slot)', filter: 'fused_qkv', only: ['rope_kv', 'add', 'rmsnorm', 'rope'],
      file: 'rope_kv.wgsl', pairs: [['slot = P.sinks + (p - P.sinks) % P.ring;', 'slot = P.sinks + (p - P.sinks + 1u) % P.ring;']] },
    { name: 'rope_kv: the rows\' stride ignored (rows taken tight)', filter: 'fused_qkv', only: ['rope_kv', 'add', 'rmsnorm', 'rope'],
      file: 'rope_kv.wgsl', pairs: [['let row = P.x_off + t * P.ld;', 'let row = P.x_off + t * (P.H + 2u * P.Hkv) * P.D;']] },
    { name: 'rope_kv: the k heads normed by q_norm\'s weights', filter: 'fused_qkv', only: ['rope_kv', 'add', 'rmsnorm', 'rope'],
      file: 'rope_kv.wgsl', pairs: [['let noff = select(P.nk, P.nq, isq);', 'let noff = P.nq;']] },
    { name: 'rope_kv: v\'s bias dropped', filter: 'fused_qkv', only: ['rope_kv', 'add', 'rmsnorm', 'rope'],
      file: 'rope_kv.wgsl', pairs: [['if ((P.flags & 4u) != 0u) {', 'if (false) {']] },
    { name: 'rope_kv: the head norm\'s eps dropped', filter: 'fused_qkv', only: ['rope_kv', 'add', 'rmsnorm', 'rope'],
      file: 'rope_kv.wgsl', pairs: [['part[0] / f32(P.D) + P.eps)', 'part[0] / f32(P.D))']] },
    { name: 'swiglu_q: a chunk\'s last product not formed (its float left stale, quantized as 0)', filter: 'fused_glu', only: ['swiglu_q_Q8_0', 'swiglu_q_Q8_K'],
      file: 'swiglu_q.wgsl', pairs: [['if (i < P.n) {', 'if (i < P.n && li != 255u) {']] },
    { name: 'swiglu_q: the quantize handed the gate\'s bits, not the product\'s', filter: 'fused_glu', only: ['swiglu_q_Q8_0', 'swiglu_q_Q8_K'],
      file: 'swiglu_q.wgsl', pairs: [['u = bitcast<u32>(y);', 'u = bitcast<u32>(gv);']] },
    { name: 'quantize: a thread handed its neighbour\'s float (i ^ 1)', filter: 'quantize_Q8_K', only: ['quantize_Q8_K'],
      file: 'quantize_q8_k.wgsl', pairs: [['u = X[P.x_off + row * P.n + i];', 'u = X[P.x_off + row * P.n + (i ^ 1u)];']] },
    { name: 'Q8_0 quantizer: every block quantized with its chunk\'s first block\'s id', filter: 'quantize_Q8_0', only: ['quantize_Q8_0'],
      file: 'quantize_q8_0.wgsl', pairs: [['mul_x(u, bitcast<f32>(qid[b]))', 'mul_x(u, bitcast<f32>(qid[0]))']] },
  ];
  for (const [i, f] of FAULTS.entries()) {
    if (process.env.PLUMB_WEBGPU_FAULTS === '0' || modelsOnly) break; // debugging aids
    // a matmul fault runs on the driver it was written against: v2 unless it says (the default,
    // 'auto', takes v2's grouped mode with 4 rows a thread for the K-quants)
    // and an attention fault on the one-dispatch way (the split run above has its own)
    const opts = /^matmul_/.test(f.filter) ? { decodeDriver: 'v2', ...f.opts }
      : f.filter === 'attention' ? { attnSplit: 'never', ...f.opts } : f.opts;
    const r = await runCases(`fault${i}`, f.filter, [{ file: f.file, pairs: f.pairs }], f.only, opts);
    const failed = (r.out || '').match(/(\d+) of (\d+) cases failed/);
    const caught = r.rc !== 0 && failed && Number(failed[1]) > 0;
    console.log(`${caught ? 'ok  ' : 'FAIL'} planted fault caught: ${f.name} (${failed ? `${failed[1]} of ${failed[2]}` : '?'} cases failed)`);
    if (!caught) { failures++; console.log(r.out); }
  }

  // A long row through rmsnormQ (16416 floats with the residual add, past the 16384 the kernel
  // once took): the fused kernel's sum, y and bytes are the separate add, rmsnorm and quantize's
  // bit for bit, x is not written, an add with no output buffer of its own is refused with nothing
  // recorded; and with the row's floats past 16384 left out of the sum of squares, the bits differ.
  for (const patches of modelsOnly ? [] : [[], [{ file: 'rmsnorm_q.wgsl', pairs: [['if (i < P.n) {\n        let v = va[k];', 'if (i < min(P.n, 16384u)) {\n        let v = va[k];']] }]]) {
    if (patches.length && process.env.PLUMB_WEBGPU_FAULTS === '0') break;
    const r = await page.evaluate((p) => window.wgpu.rmsnormLong(p), patches);
    if (r.error) throw new Error(`rmsnormLong: ${r.error}`);
    const ok = patches.length ? !(r.ysame && r.qsame)
      : r.xsame && r.ysame && r.qsame && r.xkept && r.refused.length === 2 && r.refused.every((m) => /xo/.test(m)) && r.recorded === 0;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${patches.length ? 'planted fault caught: rmsnorm_q\'s sum of squares stopping at 16384 floats (a 16416-float row\'s bits differ from the separate kernels\')'
      : `rmsnormQ on rows of 16416 floats (Q8_0, with the add) against the separate add, rmsnorm and quantize: the sum ${r.xsame ? 'the same bits' : 'DIFFERS'}, y ${r.ysame ? 'the same bits' : 'DIFFERS'}, the bytes ${r.qsame ? 'the same' : 'DIFFER'}; x ${r.xkept ? 'unwritten' : 'WRITTEN'}; an add with no xo of its own ${r.refused.length === 2 ? `refused (${r.refused[0]})` : 'NOT REFUSED'}, ${r.recorded} dispatches recorded`}`);
    if (!ok) failures++;
  }

  // The forward pass (kernels/webgpu/llama.mjs) on tiny llama, qwen2 and qwen3 files of every
  // matmul type (webgpu_models gen): 4 tokens of prefill, then 2 decoded one at a time over the
  // GPU KV cache; webgpu_models check holds every position to test_e2e.c's bound against the
  // double-precision reference transformer, the argmax to the reference's and to the ref set's
  // where their top two are clear (a Q4_K_M file among them: Q6_K attn_v, ffn_down, output and
  // token_embd); a Q4_K_M-like file with Q5_0 matrices must be refused naming Q5_0. Then planted faults in the forward pass, each on the models it concerns, must fail it.
  const mtool = process.env.PLUMB_WEBGPU_MODELS;
  const models = (args) => {
    const r = spawnSync(mtool, args, { encoding: 'utf8', maxBuffer: 1 << 24 });
    return { rc: r.status, out: (r.stdout || '') + (r.stderr || '') };
  };
  if (!mtool || !existsSync(mtool)) { console.log(`FAIL: PLUMB_WEBGPU_MODELS (${mtool}) is not webgpu_models`); failures++; }
  else {
    const mg = models(['gen', dir]);
    if (mg.rc !== 0) throw new Error(`webgpu_models gen failed: ${mg.out}`);
    const list = JSON.parse(readFileSync(path.join(dir, 'models.json'), 'utf8')).models;
    const unfusedDiff = [], cmdLines = [];
    const runModels = async (tag, filter, patches = [], edits = []) => {
      mkdirSync(path.join(root, tag));
      for (const m of list) {
        if (filter.startsWith('=') ? m.name !== filter.slice(1) : !m.name.includes(filter)) continue; // =NAME: that one
        const t0 = Date.now();
        const res = await page.evaluate((t, n, f, tk, s, w, p, e) => window.wgpu.model(t, n, f, tk, s, w, p, e),
          tag, m.name, m.file, m.tokens, m.steps, { window: m.window, sinks: m.sinks }, patches, edits);
        if (res.error) throw new Error(`${m.name}: ${res.error}`);
        if (res.unfused) { // the clean run: the fused pass against the unfused sequence, bits
          if (!res.unfused.same) unfusedDiff.push(`${m.name} (logit ${res.unfused.first})`);
          const c = (x) => x ? `${x.dispatch + x.copy + x.clear} (${x.dispatch} dispatches, ${x.copy} copies, ${x.clear} clears, ${x.pass} passes)` : '-';
          if (res.cmds) cmdLines.push(`  ${m.name} (${res.hp.L} layers): fused ${c(res.cmds)}, unfused ${c(res.unfused.cmds)}`);
        }
        if (process.env.PLUMB_WEB_VERBOSE)
          console.log(`  ${tag} ${m.name}: ${Date.now() - t0} ms (the pass ${Math.round(res.ms || 0)} ms, unfused ${Math.round(res.unfused?.ms || 0)} ms)`);
      }
      return models(['check', dir, path.join(root, tag), filter]);
    };
    const tm = Date.now();
    const clean = await runModels('models', '');
    console.log(`forward passes in ${((Date.now() - tm) / 1000).toFixed(1)} s:`);
    console.log(clean.out.trimEnd());
    if (clean.rc !== 0) { console.log('FAIL: the forward pass is outside the e2e bound (above)'); failures++; }
    // the fused pass (the default) against the unfused sequence (forward's fuse: false), every file
    console.log(unfusedDiff.length ? `FAIL the fused forward pass differs from the unfused sequence: ${unfusedDiff.join(', ')}`
      : 'ok   the fused forward pass gives the unfused sequence\'s logits bit for bit on every file it runs');
    if (unfusedDiff.length) failures++;
    console.log('commands a decode step records (fused, unfused):\n' + cmdLines.join('\n'));
    // The prefix cache on the GPU: 6 tokens, the cache truncated to the 3 the next prompt shares,
    // its other 3 evaluated over them: bit for bit a fresh evaluation's last 3 rows; and the
    // planted fault of a cache not truncated on divergence must break that.
    const pf = list.find((m) => m.name === 'llama-F16');
    const pa = pf.tokens, pb = [...pf.tokens.slice(0, 3), ...pf.tokens.slice(3).map((t) => (t + 1) % 256)];
    for (const skip of [false, true]) {
      const r = await page.evaluate((f, a, b, k, s) => window.wgpu.prefix(f, a, b, k, s), pf.file, pa, pb, 3, skip);
      if (r.error) throw new Error(r.error);
      const ok = skip ? !r.same : r.same && r.refusedPast;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${skip ? 'planted fault caught: the GPU KV cache not truncated on divergence (logits differ from a fresh evaluation)'
        : `prefix cache: ${r.rows} tokens after truncating to 3 of 6 cached give a fresh evaluation's logits bit for bit; truncating past the cache ${r.refusedPast ? 'throws' : 'DOES NOT THROW'}`}`);
      if (!ok) failures++;
      if (!skip) {
        console.log(`${r.lastSame ? 'ok  ' : 'FAIL'} the output head on the last position only (rows: 1) gives a full evaluation's last row bit for bit`);
        if (!r.lastSame) failures++;
      }
    }
    // A query's bits whatever N: 8 tokens alone against the first 8 rows of 13 (query 7 sees 8
    // entries, enough for the order of attention's 16 V partials to matter); and with the V
    // partials' entries 1 and 4 swapped where N is odd (a planted N-dependent order: a cyclic
    // shift or a reversal of the 16 partials would not do, the butterfly tree's pairs being
    // invariant under both) the rows must differ.
    {
      const toks = Array.from({ length: 13 }, (_, i) => pf.tokens[i % pf.tokens.length] ^ (i >> 2));
      const nFault = [{ file: 'attention.wgsl', pairs: [['let j = c * 64u + p + 16u * i;',
        'let j = c * 64u + select(p, 5u - p, (P.N & 1u) == 1u && (p == 1u || p == 4u)) + 16u * i;']] }];
      for (const [patches, stepwise] of [[null, false], [nFault, false], [null, true]]) {
        const r = await page.evaluate((f, t, k, p, sw) => window.wgpu.nInvariance(f, t, k, p, sw), pf.file, toks, 8, patches, stepwise);
        if (r.error) throw new Error(r.error);
        // stepwise: steps 1..7 submitted as recorded ahead, and position 4's second step (after a
        // truncate) recorded afresh
        const ok = patches ? !r.same : stepwise ? r.same && r.aheadSteps === 7 && r.redoAhead === false : r.same;
        console.log(`${ok ? 'ok  ' : 'FAIL'} ${patches ? 'planted fault caught: attention\'s V partials 1 and 4 swapped where N is odd (a query\'s bits depend on N)'
          : stepwise ? '8 tokens decoded one at a time with attention split into two dispatches give the first 8 rows of 13 tokens\' prefill (one dispatch) bit for bit ' +
            `(${r.aheadSteps} of the 8 steps recorded ahead, 7 wanted; position 4 taken again after a truncate, recorded ${r.redoAhead === false ? 'afresh' : 'AHEAD'})`
            : '8 tokens alone (8 cache entries) give the first 8 rows of 13 tokens\' evaluation (13 entries, the rest invisible to them) bit for bit'}`);
        if (!ok) failures++;
      }
    }
    // Greedy decoding with the token picked on the GPU (llama.mjs's greedy; embed.wgsl and
    // argmax.wgsl): the embedding rows against the CPU's (every token_embd type the files have, and
    // F32), the pick against the engine's rule on hostile rows, and greedy's ids against forward
    // one token at a time with the pick made on the CPU (webgpu.html's greedyCheck)
    {
      const gnames = ['llama-F16', 'qwen3-F16-tied', 'llama-Q8_0', 'qwen2-Q4_K-tied', 'qwen3-Q4_0', 'llama-Q4_K-q4km', 'llama-F16-w5s2'];
      const gfiles = gnames.map((n) => list.find((m) => m.name === n));
      const judge = (r) => {
        const bad = [];
        for (const e of r.embed) if (!e.same) bad.push(`embed ${e.name} (${e.type})`);
        for (const a of r.argmax) if (a.got !== a.want) bad.push(`argmax ${a.name}: ${a.got}, want ${a.want}`);
        for (const g of r.greedy) {
          if (g.got !== g.want) bad.push(`greedy ${g.name}: ids ${g.got}, want ${g.want}`);
          for (const k of ['streamed', 'nPast', 'stop', 'ctx']) if (!g[k]) bad.push(`greedy ${g.name}: ${k}`);
        }
        return bad;
      };
      const r = await page.evaluate((fs) => window.wgpu.greedyCheck(fs), gfiles);
      if (r.error) throw new Error(r.error);
      const bad = judge(r);
      console.log(bad.length ? `FAIL greedy decoding on the GPU: ${bad.join('; ')}`
        : `ok   greedy decoding on the GPU: the embedding rows embedRow's bits (${[...new Set(r.embed.map((e) => e.type))].join(', ')}; an id past V ` +
          `clamped), the pick the engine's on ${r.argmax.length} hostile rows, and greedy's ids those of forward one token at a time ` +
          `picked on the CPU on ${r.greedy.length} files (a second call going on, a stop id's in-flight step dropped, a full context, ` +
          `onToken): ${r.greedy.map((g) => g.name).join(', ')}`);
      if (bad.length) failures++;
      const GFAULTS = [
        ['argmax: ties to the higher index', [['(vb == va && ib < ia)', '(vb == va && ib > ia)']]],
        ['argmax: a NaN at 0 not kept', [['r.y == NONE || is_nan(X[P.x_off])', 'r.y == NONE']]],
        ['argmax: the partials past the first 256 not read', [['p < P.nparts; p += 256u', 'p < min(P.nparts, 256u); p += 256u']]],
        ['embed: Q4_K\'s min added, not subtracted', [['return rnd(d1 * f32(q)) - m1;', 'return rnd(d1 * f32(q)) + m1;']]],
        ['embed: Q6_K\'s quarters 1 and 3 scaled by those of 0 and 2', [['l / 16u + 2u * k', 'l / 16u + 4u * (k / 2u)']]],
        ['embed: Q4_0\'s high nibbles first', [['>> (4u * (j / 16u))', '>> (4u * (1u - j / 16u))']]],
      ];
      for (const [name, pairs] of GFAULTS) {
        if (process.env.PLUMB_WEBGPU_FAULTS === '0') break;
        const file = name.startsWith('argmax') ? 'argmax.wgsl' : 'embed.wgsl';
        const fr = await page.evaluate((fs, p) => window.wgpu.greedyCheck(fs, p, true), gfiles, [{ file, pairs }]);
        if (fr.error) throw new Error(fr.error);
        const fb = judge(fr);
        console.log(`${fb.length ? 'ok  ' : 'FAIL'} planted fault caught: ${name} (${fb.length ? fb[0] : 'every check passed'})`);
        if (!fb.length) failures++;
      }
    }
    // rope_kv folded into a decode step's q | k | v matmuls: the same bits as the matmuls then rope_kv
    {
      const fnames = ['llama-Q8_0', 'qwen3-Q4_0', 'qwen2-Q4_K-tied', 'llama-Q4_K-q4km'];
      const ffiles = fnames.map((n) => list.find((m) => m.name === n));
      // folded where every q | k | v type has a block a thread (Q8_0, Q4_0: the v2 driver's GP 1);
      // the grouped K-quants keep rope_kv (plumb-webgpu.mjs's ropeFold)
      const folds = (types) => types.split('+').every((t) => t === 'Q8_0' || t === 'Q4_0');
      const fjudge = (r) => r.filter((x) => (x.skipped ? folds(x.skipped) : !folds(x.types) || x.diff.length))
        .map((x) => x.skipped ? `${x.name} not folded (${x.skipped})` : !folds(x.types) ? `${x.name} folded (${x.types}), a grouped type`
          : `${x.name} ${x.rope}: ${x.diff.join(', ')} differ`);
      const r = await page.evaluate((fs) => window.wgpu.ropeFoldCheck(fs), ffiles);
      if (r.error) throw new Error(r.error);
      const bad = fjudge(r);
      console.log(bad.length ? `FAIL rope_kv folded into the q | k | v matmul: ${bad.join('; ')}`
        : `ok   rope_kv folded into a decode step's q | k | v matmuls (matmul_rope.wgsl) gives the matmuls then rope_kv's bits: ` +
          `the rows, q and every cache slot, ${r.filter((x) => !x.skipped).length} cases (${[...new Set(r.filter((x) => !x.skipped).map((x) => x.types))].join(', ')}; ` +
          `the file's angles and n_rot = D / 2); not folded where grouped: ${r.filter((x) => x.skipped).map((x) => `${x.name} (${x.skipped})`).join(', ')}`);
      if (bad.length) failures++;
      const RFAULTS = [
        ['a pair\'s partner taken as the row itself', [['let o = ep[lrow ^ 1u];', 'let o = ep[lrow];']]],
        ['k written to slot 0', [['KC[P.rslot * nk + c - nq] = v;', 'KC[c - nq] = v;']]],
        ['an odd dim rotated as the even one', [['v = rope_rot(o, s, cs, P.zero).y;', 'v = rope_rot(s, o, cs, P.zero).y;']]],
      ];
      for (const [name, pairs] of RFAULTS) {
        if (process.env.PLUMB_WEBGPU_FAULTS === '0') break;
        const fr = await page.evaluate((fs, p) => window.wgpu.ropeFoldCheck(fs, p), ffiles.slice(0, 1), [{ file: 'matmul_rope.wgsl', pairs }]);
        if (fr.error) throw new Error(fr.error);
        const fb = fjudge(fr);
        console.log(`${fb.length ? 'ok  ' : 'FAIL'} planted fault caught: rope_kv folded into the matmul, ${name} (${fb[0] || 'every case passed'})`);
        if (!fb.length) failures++;
      }
    }
    // forward's speculation: the same rows with and without, and the hits and misses its rule gives
    {
      const snames = ['llama-Q8_0', 'qwen2-Q4_K-tied', 'llama-Q4_K-q4km', 'llama-F16-w5s2'];
      const r = await page.evaluate((fs) => window.wgpu.specCheck(fs), snames.map((n) => list.find((m) => m.name === n)));
      if (r.error) throw new Error(r.error);
      const bad = r.filter((x) => !x.same || x.hits !== (x.ring ? 0 : 8) || x.misses !== (x.ring ? 0 : 1));
      console.log(`${bad.length ? 'FAIL' : 'ok  '} forward's speculation (the next decode step run on the GPU's pick): the same logits bit ` +
        `for bit as without on ${r.length} files, hits and misses as its rule gives (8 and 1; none on a ring): ` +
        r.map((x) => `${x.name} ${x.same ? 'same' : 'DIFFERENT'} ${x.hits} hits ${x.misses} misses`).join(', '));
      if (bad.length) failures++;
    }
    // a fused decode step replayed from the last one's recording against each recorded afresh:
    // the fold's path (llama-Q8_0) and rope_kv's (qwen2's biases), across a split chunk's edge
    {
      const r = [];
      for (const x of ['llama-Q8_0', 'qwen2-Q4_K-tied']) {
        const one = await page.evaluate((f) => window.wgpu.replayCheck(f), list.find((m) => m.name === x));
        if (one.error) throw new Error(one.error);
        r.push(one);
      }
      // every decode step replayed but each frame's first recording (forward's, greedy's) and the
      // step after the truncate (the one recorded ahead was for another position: replayed too)
      const bad = r.filter((x) => !x.same || x.fresh !== 0 || x.replays < x.steps - 2 || !x.caught);
      console.log(`${bad.length ? 'FAIL' : 'ok  '} a fused decode step replayed from the last one's recording (its position's ` +
        `dispatches patched): the same logits and greedy ids bit for bit as each step recorded afresh across a split ` +
        `chunk's edge both ways (a truncate), and with the patches dropped the rows differ: ` +
        r.map((x) => `${x.name} ${x.same ? 'same' : 'DIFFERENT'}, ${x.replays} recordings replayed for ${x.steps} steps, ` +
          `patches dropped ${x.caught ? 'caught' : 'NOT CAUGHT'}`).join('; '));
      if (bad.length) failures++;
    }
    // on the F16 files: cheap in SwiftShader, and their bound (1e-4 of the RMS) the tightest
    const MFAULTS = [
      { name: 'the residual branches halved', filter: '=llama-F16',
        patches: [{ file: 'add.wgsl', pairs: [['X[P.x_off + i] + Yv[P.y_off + j]', 'X[P.x_off + i] + 0.5 * Yv[P.y_off + j]']] },
          { file: 'rmsnorm_q.wgsl', pairs: [['va[k] = va[k] + Rs[ro + i];', 'va[k] = va[k] + 0.5 * Rs[ro + i];']] }] },
      { name: 'a bias added to the first token\'s row only (its repeat ignored)', filter: '=qwen2-F16',
        patches: [{ file: 'add.wgsl', pairs: [['let j = select(i, i % P.ym, P.ym != 0u);', 'let j = i;\n  if (P.ym != 0u && i >= P.ym) { return; }']] },
          { file: 'rope_kv.wgsl', pairs: [['if (bias) { v = v + B[boff + i]; }', 'if (bias && t == 0u) { v = v + B[boff + i]; }']] }] },
      { name: 'neox RoPE rotated as normal (adjacent pairs)', filter: '=qwen3-F16-tied',
        patches: [{ file: 'rope.wgsl', pairs: [['if (P.neox != 0u) {', 'if (false) {']] },
          { file: 'rope_kv.wgsl', pairs: [['if (P.neox != 0u) {', 'if (false) {']] }] },
      { name: 'the Q6_K v matmul written at column 0 of [q | k | v] over q (its yOff ignored)', filter: 'q4km',
        patches: [{ file: 'matmul_q6_k.wgsl', pairs: [['P.y_off', '0u']] }] },
      { name: 'qwen2\'s k bias dropped', filter: '=qwen2-F16', edits: ['bk'] },
      { name: 'qwen3\'s per-head k RMSNorm skipped', filter: '=qwen3-F16-tied', edits: ['k_norm'] },
      { name: 'the sliding window\'s sinks dropped (the ring over every position)', filter: 'w5s2', edits: ['model.sinks'] },
      { name: 'llama 3\'s rope_freqs.weight ignored', filter: 'llama3rope', edits: ['rope.factors'] },
      { name: 'YaRN\'s ramp dropped (ext_factor 0)', filter: 'yarn', edits: ['rope.ext_factor'] },
      { name: 'the linear RoPE scaling dropped', filter: 'qwen3-F16-linear', edits: ['rope.freq_scale'] },
      { name: 'attention past the sliding window (its window test always true)', filter: 'w5s2',
        patches: [{ file: 'attention.wgsl', pairs: [['return diff <= P.wm1;', 'return true;']] }] },
    ];
    for (const [i, f] of MFAULTS.entries()) {
      if (process.env.PLUMB_WEBGPU_FAULTS === '0') break;
      const r = await runModels(`mfault${i}`, f.filter, f.patches || [], f.edits || []);
      const caught = r.rc !== 0 && /FAIL/.test(r.out);
      console.log(`${caught ? 'ok  ' : 'FAIL'} planted fault caught: forward pass with ${f.name} (${f.filter}): ` +
        (r.out.split('\n').find((l) => l.startsWith('FAIL') || l.startsWith('ok')) || r.out).trim());
      if (!caught) failures++;
    }
  }
} finally {
  await browser.close();
  stat.close(); // not awaited: it waits out chromium's keep-alive sockets (~90 s); exit ends them
}
console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
