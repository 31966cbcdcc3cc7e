// bench-ab.mjs — an A/B of whole decode steps in one node process (Dawn's node binding, npm
// `webgpu`): each model loaded once under each kernel set, then, round after round, greedy
// decoding (llama.mjs's greedy, tg tokens from depth: mode g), forward a token at a time (the
// CPU's pick: f) and the GPU alone (llama.mjs's gpuStepMs, tg steps recorded, then submitted
// together: u) under each set in turn, the sets' order reversed every other round:
//   node kernels/webgpu/bench-ab.mjs --kernels DIR[@KEY=V+KEY=V...],DIR... [--depth 512] [--tg 64]
//        [--rounds 15] [--modes g,f,u] MODEL.gguf ...
// DIR: a copy of kernels/webgpu (its plumb-webgpu.mjs, llama.mjs and kernels); KEY=V: a
// createKernels option taking a number (decodeNR=8, decodeTPR=32, ...), or depth=N (greedy's
// steps in flight). Prints, per model and mode, each set's median tok/s (u: ms a step), its best
// and every round's; for g and f also the process's CPU time a token (every thread's, Dawn's
// included; the event loop's utilization says nothing here: Dawn's binding polls for the GPU on
// node's main thread, so it reads ~100% either way), medians over the rounds, and whether every
// set gave the same ids (a set that computes something else says so).
// Why: separate processes minutes apart see the host's CPU and the GPU's clocks move the same
// code's rate by ±20% (kernels/webgpu/README.md); alternating inside one process, the sets meet
// the same states. Not a test: a benchmark's instrument (PLUMB_WEBGPU_NODE: where the package is).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { optionReader } from './bench.mjs';

const args = process.argv.slice(2);
const opt = optionReader(args);
const count = (name, def) => {
  const v = Number(opt(name, def));
  if (!(Number.isInteger(v) && v >= 1)) {
    console.error(`bench-ab: ${name} takes a whole number from 1, not ${v}`);
    process.exit(2);
  }
  return v;
};
const kernels = opt('--kernels', null);
const depth = count('--depth', 512), tg = count('--tg', 64), rounds = count('--rounds', 15);
const modes = opt('--modes', 'g,f').split(',');
const files = args.filter((a) => !a.startsWith('--'));
if (!kernels || !files.length || modes.some((m) => !['g', 'f', 'u'].includes(m)) || args.some((a) => a.startsWith('--'))) {
  console.error('usage: node bench-ab.mjs --kernels DIR[@KEY=V+...],DIR... [--depth N] [--tg N] [--rounds N] [--modes g,f,u] MODEL.gguf ...');
  process.exit(2);
}
const sets = kernels.split(',').map((spec) => {
  const [dir, text] = spec.split('@');
  const o = {};
  for (const kv of (text || '').split('+').filter(Boolean)) {
    const [k, v] = kv.split('=');
    if (!k || !Number.isFinite(Number(v))) {
      console.error(`bench-ab: ${spec}: an option is KEY=NUMBER, not ${kv}`);
      process.exit(2);
    }
    o[k] = Number(v);
  }
  const { depth: gdepth, ...kopts } = o;
  return { spec, dir: path.resolve(dir), gdepth, kopts };
});

const spec = process.env.PLUMB_WEBGPU_NODE || 'webgpu';
let webgpu;
try {
  webgpu = await import(spec.includes('/') ? pathToFileURL(path.resolve(spec)).href : spec);
} catch (e) {
  console.error(`bench-ab: cannot load the webgpu package (${spec}): ${e.message}`);
  process.exit(2);
}
Object.assign(globalThis, webgpu.globals || {});
let gpu = webgpu.create((process.env.DAWN_FLAGS || '').split(',').filter(Boolean));
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
if (!adapter) {
  console.error('bench-ab: Dawn found no WebGPU adapter');
  process.exit(2);
}
const lim = adapter.limits;
const device = await adapter.requestDevice({ requiredLimits: { maxStorageBufferBindingSize: lim.maxStorageBufferBindingSize,
  maxBufferSize: lim.maxBufferSize } });
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const firstMaxOf = (row) => {
  let b = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[b]) b = i;
  return b;
};
for (const f of files) {
  const b = readFileSync(f);
  const bytes = b.buffer.slice(b.byteOffset, b.byteOffset + b.length);
  const runs = [];
  for (const s of sets) {
    const { createKernels } = await import(pathToFileURL(path.join(s.dir, 'plumb-webgpu.mjs')).href);
    const L = await import(pathToFileURL(path.join(s.dir, 'llama.mjs')).href);
    const ks = await createKernels(device, { source: async (n) => readFileSync(path.join(s.dir, n), 'utf8'),
      wgslFeatures: gpu.wgslLanguageFeatures, ...s.kopts });
    const m = L.loadLlama(ks, L.readGGUF(bytes), depth + tg + 8);
    const toks = Array.from({ length: depth }, (_, i) => (i * 7919 + 13) % m.hp.V);
    const first = firstMaxOf(await L.forward(m, toks, { rows: 1 }));
    runs.push({ s, L, m, first, ms: { g: [], f: [], u: [] }, cpu: { g: [], f: [] }, ids: {} });
  }
  for (let r = 0; r <= rounds; r++) { // round 0 untimed (each pipeline's first use)
    for (const run of r & 1 ? [...runs].reverse() : runs) {
      const { L, m } = run;
      for (const mode of modes) {
        L.truncate(m, depth);
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        let ids, gpuMs = null;
        if (mode === 'g') {
          ids = await L.greedy(m, run.first, tg, run.s.gdepth ? { depth: run.s.gdepth } : {});
        } else if (mode === 'u') {
          ids = [];
          gpuMs = await L.gpuStepMs(m, tg);
        } else {
          ids = [];
          let tok = run.first;
          for (let i = 0; i < tg; i++) ids.push(tok = firstMaxOf(await L.forward(m, [tok], { rows: 1 })));
        }
        const ms = performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        if (r) {
          run.ms[mode].push(gpuMs ?? ms); // u: the GPU's ms a step
          if (mode !== 'u') run.cpu[mode].push((cpu.user + cpu.system) / tg);
        } else run.ids[mode] = ids.join(',');
      }
    }
  }
  console.log(`${path.basename(f)}: depth ${depth}, tg ${tg}, ${rounds} rounds`);
  for (const mode of modes) {
    if (mode === 'u') {
      console.log('  GPU alone (ms a step): ' + runs.map((x) => `${x.s.spec} ${median(x.ms.u).toFixed(3)} (best ` +
        `${Math.min(...x.ms.u).toFixed(3)}) [${x.ms.u.map((v) => v.toFixed(3)).join(' ')}]`).join('  |  '));
      continue;
    }
    const same = runs.every((x) => x.ids[mode] === runs[0].ids[mode]);
    console.log(`  ${mode === 'g' ? 'greedy' : 'forward'}: ` + runs.map((x) => {
      const tps = x.ms[mode].map((ms) => (tg / ms) * 1e3);
      return `${x.s.spec} ${(tg / median(x.ms[mode]) * 1e3).toFixed(1)} tok/s (best ${Math.max(...tps).toFixed(0)}) ` +
        `[${tps.map((v) => v.toFixed(0)).join(' ')}], CPU ${median(x.cpu[mode]).toFixed(0)} us a token`;
    }).join('  |  ') + `  ids ${same ? 'the same' : 'DIFFER'}`);
  }
  for (const x of runs) x.L.freeModel(x.m);
}
device.destroy();
gpu = null;
process.exit(0);
