// webgpu.mjs — the webgpu kernel set (kernels/webgpu/) against the conformance suite, in headless
// chromium with its software WebGPU (SwiftShader): webgpu_cases (conformance/webgpu_cases.c)
// writes randomized cases and their inputs to a folder; the page conformance/web/webgpu.html runs
// the WGSL kernels on them and hands each output back here, into a folder per run; webgpu_cases
// then rebuilds the cases from the seed and holds every output to the CPU sets' bounds against
// the GSL double references (the quantized matmuls and quantizers also to ref's bits). Then each
// planted fault (a kernel's source patched in the page) must make the checker fail on the cases
// it concerns. Last, the forward pass of kernels/webgpu/llama.mjs on tiny llama files against
// `plumb logits --kernels ref`. Skips (77) without puppeteer-core, chromium or a WebGPU adapter,
// unless PLUMB_NO_SKIP=1.
// Env: PLUMB_WEBGPU_CASES (the webgpu_cases binary), PLUMB_CLI (plumb), PLUMB_WEB_NPM
// (puppeteer-core's folder), PLUMB_WEBGPU_ADAPTER (chromium's --use-webgpu-adapter, default
// swiftshader; "default": none), PLUMB_WEBGPU_FAULTS=0 (debugging: skip the planted faults),
// PLUMB_WEB_VERBOSE=1 (the page's console).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromiumPath, skip } from './web_lib.mjs';
import { startStatic } from './static_server.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
const kernelsDir = path.resolve(here, '../../kernels/webgpu');
const cases = process.env.PLUMB_WEBGPU_CASES;
if (!cases || !existsSync(cases)) {
  console.log(`FAIL: PLUMB_WEBGPU_CASES (${cases}) is not the webgpu_cases binary`);
  process.exit(1);
}
const npm = process.env.PLUMB_WEB_NPM;
const pkg = npm && path.resolve(npm, 'node_modules', 'puppeteer-core', 'package.json');
if (!pkg || !existsSync(pkg)) skip(`puppeteer-core is not in ${npm} (the web_npm fixture installs it)`);
const exe = chromiumPath();
if (!exe) skip('chromium not found (Debian: chromium; or PLUMB_CHROMIUM=PATH)');
const puppeteer = createRequire(pkg)('puppeteer-core');

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
const browser = await puppeteer.launch({ executablePath: exe, headless: true, args: FLAGS });
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
  const main = await runCases('all', null);
  if (main.noAdapter) {
    await browser.close();
    skip(`no WebGPU adapter in chromium (${FLAGS.join(' ')}): ${main.noAdapter}`);
  }
  console.log(`adapter: ${JSON.stringify(main.info)}; ${main.cases} cases in ${((Date.now() - t0) / 1000).toFixed(1)} s ` +
    `(page ms by kind: ${JSON.stringify(Object.fromEntries(Object.entries(main.ms).map(([k, v]) => [k, Math.round(v)])))})`);
  console.log(main.out);
  if (main.rc !== 0) { console.log('FAIL: the webgpu set is outside its bounds (above)'); failures++; }

  // The tiled prefill drivers (matmul_qt.wgsl, matmul_qt_q4_k.wgsl) on every case of their
  // types, with dot4 the other way from the run above where the adapter has both
  // (dot4I8Packed there: shifts here), so that both dot4s are held to ref's bits.
  const otherDot = main.packedDot ? { packedDot: false } : {};
  const dotName = main.packedDot || !main.packedDotAvailable ? 'shifts' : 'dot4I8Packed';
  if (!main.packedDot && main.packedDotAvailable) otherDot.packedDot = true;
  for (const type of ['Q8_0', 'Q4_0', 'Q4_K']) {
    const tr = await runCases(`tiled-${type}`, `matmul_${type}`, [], [`matmulT_${type}`], { tileMinT: 1, ...otherDot });
    console.log(`matmul ${type}, the tiled driver, dot4 by ${dotName}: ${(tr.out.match(/\d+ of \d+ cases failed/) || ['?'])[0]}`);
    if (tr.rc !== 0) { console.log(tr.out); console.log(`FAIL: the tiled ${type} matmul`); failures++; }
  }

  // Planted faults: each must fail the check of the cases it concerns.
  const FAULTS = [
    { name: 'Q4_0 nibble order swapped (high nibble as element j)', filter: 'matmul_Q4_0', only: ['matmul_Q4_0'],
      file: 'matmul_q4_0.wgsl', pairs: [['xu(xo + j))', '@LO@'], ['xu(xo + 16u + j))', 'xu(xo + j))'], ['@LO@', 'xu(xo + 16u + j))']] },
    { name: 'Q4_K sub-block nibble order swapped', filter: 'matmul_Q4_K', only: ['matmul_Q4_K'],
      file: 'matmul_q4_k.wgsl', pairs: [['(j % 2u) * 4u', '(1u - j % 2u) * 4u']] },
    { name: 'Q8_0 weight scale dropped', filter: 'matmul_Q8_0', only: ['matmul_Q8_0'],
      file: 'matmul_q8_0.wgsl', pairs: [['rnd(f16_to_f32(w16(wo)) * f16_to_f32(x16(xo)))', 'rnd(f16_to_f32(x16(xo)))']] },
    { name: 'Q4_K min term dropped', filter: 'matmul_Q4_K', only: ['matmul_Q4_K'],
      file: 'matmul_q4_k.wgsl', pairs: [[' - rnd(dmin * f32(summs))', '']] },
    { name: 'Q8_0 block terms added in reverse order (inside the bound, not ref\'s bits)', filter: 'matmul_Q8_0', only: ['matmul_Q8_0'],
      file: 'matmul_q8_0.wgsl', pairs: [['for (var b = 0u; b < n; b++) { s = s + terms[li * n + b]; }', 'for (var b = n; b > 0u; b--) { s = s + terms[li * n + b - 1u]; }']] },
    { name: 'Q8_0 quantizer rounds halves to even (WGSL round) instead of away from zero (roundf)', filter: 'quantize_Q8_0', only: ['quantize_Q8_0'],
      file: 'quantize_q8_0.wgsl', pairs: [['q = i32(clamp(roundf(v)', 'q = i32(clamp(round(v)']] },
    { name: 'Q8_0 quantizer takes a subnormal x as it is (a GPU flushes it)', filter: 'quantize_Q8_0', only: ['quantize_Q8_0'],
      file: 'quantize_q8_0.wgsl', pairs: [['if ((xb & 0x7f800000u) == 0u && (xb & 0x7fffffu) != 0u) {', 'if (false) {']] },
    { name: 'Q8_K quantizer bsums over 15 quants', filter: 'quantize_Q8_K', only: ['quantize_Q8_K'],
      file: 'quantize_q8_k.wgsl', pairs: [['      sum += q;', '      if (l < 15u) { sum += q; }']] },
    { name: 'matmul ignores the split grid\'s second dimension (rows past the first grid row)', filter: 'matmul_Q8_0', only: ['matmul_Q8_0'],
      file: 'matmul_q8_0.wgsl', pairs: [['let r0 = (wg.x + wg.y * P.rsplit) * NR;', 'let r0 = wg.x * NR;']] },
    { name: 'matmul tile: the last row of each workgroup\'s 8 left unwritten', filter: 'matmul_Q4_0', only: ['matmul_Q4_0'],
      file: 'matmul_q4_0.wgsl', pairs: [['if (li < NR && r0 + li < P.R)', 'if (li + 1u < NR && r0 + li < P.R)']] },
    { name: 'matmul: a block\'s last integer part dropped (Q4_K sub-block 7)', filter: 'matmul_Q4_K', only: ['matmul_Q4_K'],
      file: 'matmul_q4_k.wgsl', pairs: [['for (var p = 0u; p < NP; p++)', 'for (var p = 0u; p + 1u < NP; p++)']] },
    { name: 'matmul chunk edge: the parts of the next chunk\'s first block read (Q8_0 part index off by one)', filter: 'matmul_Q8_0', only: ['matmul_Q8_0'],
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
    { name: 'attention not causal (kv_pos > q_pos seen)', filter: 'attention', only: ['attention'],
      file: 'attention.wgsl', pairs: [['if (kp > qp) { return false; }', '']] },
    { name: 'rope sin sign flipped', filter: 'rope', only: ['rope'],
      file: 'rope.wgsl', pairs: [['xa * cs.x - xb * cs.y', 'xa * cs.x + xb * cs.y']] },
    { name: 'rmsnorm eps dropped', filter: 'rmsnorm', only: ['rmsnorm'],
      file: 'rmsnorm.wgsl', pairs: [[' + P.eps', '']] },
    { name: 'softmax sum misses the last entry', filter: 'softmax', only: ['softmax'],
      file: 'softmax.wgsl', pairs: [['for (var i = li; i < P.n; i += 256u) { s = s + weight(X[xo + i], m); }', 'for (var i = li; i + 1u < P.n; i += 256u) { s = s + weight(X[xo + i], m); }']] },
    { name: 'swiglu sigmoid of +gate', filter: 'swiglu', only: ['swiglu'],
      file: 'swiglu.wgsl', pairs: [['exp_f32(-g)', 'exp_f32(g)']] },
  ];
  for (const [i, f] of FAULTS.entries()) {
    if (process.env.PLUMB_WEBGPU_FAULTS === '0') break; // a debugging aid: the clean run only
    const r = await runCases(`fault${i}`, f.filter, [{ file: f.file, pairs: f.pairs }], f.only, f.opts);
    const failed = (r.out || '').match(/(\d+) of (\d+) cases failed/);
    const caught = r.rc !== 0 && failed && Number(failed[1]) > 0;
    console.log(`${caught ? 'ok  ' : 'FAIL'} planted fault caught: ${f.name} (${failed ? `${failed[1]} of ${failed[2]}` : '?'} cases failed)`);
    if (!caught) { failures++; console.log(r.out); }
  }

  // The forward pass (kernels/webgpu/llama.mjs) on tiny llama files against `plumb logits
  // --kernels ref --kv-type f32` on the same tokens: 6 tokens of prefill, then 6 of decode over
  // the GPU KV cache; every position within test_e2e.c's quantized tolerance (0.125 of the
  // position's logit RMS), argmax equal where ref's top two are more than twice that apart.
  const cli = process.env.PLUMB_CLI;
  if (!cli || !existsSync(cli)) { console.log(`FAIL: PLUMB_CLI (${cli}) is not plumb`); failures++; }
  else for (const [type, fault] of [['Q8_0'], ['Q4_0'], ['Q4_K'], ['Q8_0', 'the residual branches halved (planted: must fail)']]) {
    const name = `tiny-${type}.gguf`, file = path.join(dir, name);
    // Q4_K: every K a multiple of 256 (8 heads of 32, n_ff 256), so every matrix is Q4_K
    spawnSync(cli, ['mkmodel', file, '--preset', 'tiny', '--type', type, '--pure',
      ...(type === 'Q4_K' ? ['--n-head', '8', '--n-head-kv', '4', '--n-ff', '256'] : [])]);
    const tokens = Array.from({ length: 12 }, (_, i) => (i * 37 + 11) % 300);
    const refFile = path.join(root, `${type}.ref.logits`);
    const r = spawnSync(cli, ['logits', '-m', file, '--tokens', tokens.join(','), '--all', '--kernels', 'ref',
      '--kv-type', 'f32', '-t', '1', '-o', refFile], { encoding: 'utf8' });
    if (r.status !== 0) { console.log(`FAIL: plumb logits: ${r.stderr}`); failures++; continue; }
    const b = readFileSync(refFile);
    const V = Number(b.readBigUInt64LE(16)), nT = Number(b.readBigUInt64LE(24)), nR = Number(b.readBigUInt64LE(40));
    const at = 64 + b.readUInt32LE(56) + 4 * nT;
    const ref = new Float32Array(b.buffer.slice(b.byteOffset + at, b.byteOffset + at + 4 * V * nR));
    const tag = `model-${type}${fault ? '-fault' : ''}`;
    mkdirSync(path.join(root, tag));
    const patches = fault ? [{ file: 'add.wgsl', pairs: [['X[P.x_off + i] + Yv[P.y_off + i]', 'X[P.x_off + i] + 0.5 * Yv[P.y_off + i]']] }] : [];
    const res = await page.evaluate((t, n, tk, p) => window.wgpu.model(t, n, tk, 6, p), tag, name, tokens, patches);
    if (res.error) { console.log(`FAIL: ${res.error}`); failures++; continue; }
    const gb = readFileSync(path.join(root, tag, name + '.logits'));
    const gpu = new Float32Array(gb.buffer.slice(gb.byteOffset, gb.byteOffset + gb.length));
    let worst = 0, argBad = 0, argTested = 0, maxAbs = 0, same = 0;
    const ok = nR === tokens.length && gpu.length === V * nR;
    for (let p = 0; ok && p < nR; p++) {
      const rr = ref.subarray(p * V, (p + 1) * V), gg = gpu.subarray(p * V, (p + 1) * V);
      const rms = Math.sqrt(rr.reduce((a, v) => a + v * v, 0) / V), bound = 0.125 * rms;
      let a1 = 0, a2 = -1, ag = 0;
      for (let i = 0; i < V; i++) {
        worst = Math.max(worst, Math.abs(gg[i] - rr[i]) / bound);
        maxAbs = Math.max(maxAbs, Math.abs(gg[i] - rr[i]));
        same += gg[i] === rr[i];
        if (rr[i] > rr[a1]) { a2 = a1; a1 = i; } else if (i !== a1 && (a2 < 0 || rr[i] > rr[a2])) a2 = i;
        if (gg[i] > gg[ag]) ag = i;
      }
      if (rr[a1] - rr[a2] > 2 * bound) { argTested++; if (ag !== a1) argBad++; }
    }
    const pass = ok && worst <= 1 && argBad === 0;
    const what = `tiny llama ${type} (E ${res.hp.E}, ${res.hp.L} layers, H ${res.hp.H}/${res.hp.Hkv}, ` +
      `V ${res.hp.V}): ${nR} positions (6 prefill + 6 decode) against ref's logits, worst |err| / (0.125 rms) = ` +
      `${worst.toPrecision(3)} (max |err| ${maxAbs.toPrecision(3)}, ${same} of ${V * nR} logits ref's bits), ` +
      `argmax ${argTested - argBad} of ${argTested} clear positions`;
    if (fault) console.log(`${pass ? 'FAIL' : 'ok  '} planted fault caught: forward pass with ${fault}: ${what}`);
    else console.log(`${pass ? 'ok  ' : 'FAIL'} forward pass, ${what}`);
    if (pass === !!fault) failures++;
  }
} finally {
  await browser.close();
  stat.close(); // not awaited: it waits out chromium's keep-alive sockets (~90 s); exit ends them
}
console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
