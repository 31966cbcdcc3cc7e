// bench-page.mjs — bench.mjs end to end in a page of headless chromium (software WebGPU:
// SwiftShader, or the machine's GPU with PLUMB_WEBGPU_ADAPTER=default) on tiny shapes: a smoke
// test of the benchmark (every part runs, its numbers are finite), no speed claims.
//   PLUMB_WEB_NPM=build/web-npm node kernels/webgpu/bench-page.mjs [MODEL.gguf]
// (build/web-npm: puppeteer-core, installed by ctest's web_npm fixture.) Exit 0 when every part
// ran and gave positive figures, 1 otherwise.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { startStatic } from '../../conformance/web/static_server.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
const npm = process.env.PLUMB_WEB_NPM || path.resolve(here, '../../build/web-npm');
const pkg = path.resolve(npm, 'node_modules', 'puppeteer-core', 'package.json');
if (!existsSync(pkg)) { console.log(`bench-page: no puppeteer-core in ${npm}`); process.exit(1); }
const puppeteer = createRequire(pkg)('puppeteer-core');
const model = process.argv[2] ? path.resolve(process.argv[2]) : null;
const adapterFlag = process.env.PLUMB_WEBGPU_ADAPTER || 'swiftshader';
const browser = await puppeteer.launch({ executablePath: process.env.PLUMB_CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--enable-unsafe-webgpu',
    ...(adapterFlag === 'default' ? [] : [`--use-webgpu-adapter=${adapterFlag}`])] });
const page = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"></head><body><script type="module">
import { bench, markdownTable } from '/bench.mjs';
window.runBench = async (withModel) => {
  const a = await navigator.gpu.requestAdapter();
  const device = await a.requestDevice({ requiredFeatures: a.features.has('timestamp-query') ? ['timestamp-query'] : [] });
  const log = [];
  const model = withModel ? await (await fetch('/model.gguf')).arrayBuffer() : null;
  // both decode drivers compared (bench-node's --decode-ab), v2 also at 2 rows x 8 threads and
  // grouped at 4 rows x 8 threads, 2 rows a thread; the fused pass also in one submission, and
  // without its decode steps recorded ahead, and greedy on the GPU
  const options = { copyBytes: 1 << 20, K: 256, R: 72, tPrefill: 70, reps: 1, pp: 5, tg: 2,
    decodeAB: ['v1', 'v2', 'v2:2x8', 'v2/g8', 'v2:4x8/g8r2'], modes: ['fused', 'unfused', 'fused/s0', 'fused/na', 'fused/g'], profile: 2, warmMs: 50 };
  const res = await bench(device, { ...options, model, log: (s) => log.push(s) });
  const i = a.info || {};
  const table = markdownTable({ options, device: res, models: withModel ? { 'model.gguf': res } : {} },
    [i.vendor, i.architecture, i.description].join(' '));
  return { res, log, table };
};
document.body.dataset.ready = '1';
</script></body></html>`;
const tmp = path.join(process.env.TMPDIR || '/tmp', `bench-page-${process.pid}.html`);
const { writeFileSync, rmSync } = await import('node:fs');
writeFileSync(tmp, page);
const srv = await startStatic([here], { '/index.html': tmp, ...(model ? { '/model.gguf': model } : {}) });
let ok = false;
try {
  const p = await browser.newPage();
  p.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
  await p.goto(`${srv.base}/`, { waitUntil: 'load' });
  await p.waitForSelector('body[data-ready="1"]');
  const { res, log, table } = await p.evaluate((m) => window.runBench(m), !!model);
  for (const l of log) console.log(l);
  console.log('\n' + table);
  const figures = [res.copy.readGBs, res.int8mm.gops, ...Object.values(res.matmul).flatMap((r) => Object.entries(r)
    .flatMap(([T, x]) => (T === 'ab' ? Object.values(x).map((y) => y.weightGBs) : [x.gops]))),
    ...(model ? [res.model.mmDecode.weightGBs, res.model.mmPrefill.gops, res.model.ppTokS, res.model.tgTokS,
      res.model.unfused.ppTokS, res.model.unfused.tgTokS, res.model.cmds, res.model.unfused.cmds,
      ...Object.values(res.model.mmDecodeAB).map((y) => y.tokS),
      // the profile, where the adapter has timestamps: every step's GPU time in its dispatches
      ...(res.model.profile ? [res.model.profile.prefill.gpuMs, res.model.profile.decode.gpuMs] : [])] : [])];
  console.log(`profile: ${model ? (res.model.profile ? 'timestamps' : 'no timestamp-query on this adapter') : 'no model'}`);
  ok = figures.every((x) => Number.isFinite(x) && x > 0);
  console.log(`${ok ? 'ok' : 'FAIL'}: bench.mjs ran end to end in chromium (${figures.length} figures, all finite and positive: ${ok}); ` +
    'software WebGPU: no speed claims');
} finally {
  await browser.close();
  await srv.close();
  rmSync(tmp, { force: true });
}
process.exit(ok ? 0 : 1);
