// bench-node.mjs — bench.mjs under node with Dawn's node binding (npm `webgpu`), no browser:
//   node kernels/webgpu/bench-node.mjs [MODEL.gguf] [--copy-mib N] [--k N] [--r N]
//        [--prefill-t N] [--pp N] [--tg N] [--reps N] [--json OUT.json]
// PLUMB_WEBGPU_NODE: where the `webgpu` package is (default: node's resolution from here);
// DAWN_FLAGS: comma-separated options for create() (e.g. backend=vulkan, adapter=NAME).
// Exit 2 when the package or an adapter is missing (this 2-core machine's Dawn finds no usable
// Vulkan adapter: issue 50), saying which.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { bench } from './bench.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  if (i < 0) return def;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const num = (name, def) => Number(opt(name, def));
const o = { copyBytes: num('--copy-mib', 256) * 2 ** 20, K: num('--k', 4096), R: num('--r', 4096),
  tPrefill: num('--prefill-t', 512), pp: num('--pp', 512), tg: num('--tg', 32), reps: num('--reps', 5) };
const json = opt('--json', null);
const modelFile = args.find((a) => !a.startsWith('--'));

let webgpu;
const spec = process.env.PLUMB_WEBGPU_NODE || 'webgpu';
try {
  webgpu = await import(spec.includes('/') ? pathToFileURL(path.resolve(spec)).href : spec);
} catch (e) {
  console.error(`bench-node: cannot load the webgpu package (${spec}): ${e.message}\n` +
    '  npm install webgpu (Dawn\'s node binding), or PLUMB_WEBGPU_NODE=path/to/node_modules/webgpu/index.js');
  process.exit(2);
}
const create = webgpu.create || webgpu.default?.create;
Object.assign(globalThis, webgpu.globals || webgpu.default?.globals || {});
let gpu = create((process.env.DAWN_FLAGS || '').split(',').filter(Boolean));
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
if (!adapter) {
  console.error('bench-node: Dawn found no WebGPU adapter (DAWN_FLAGS=backend=vulkan? the Vulkan ICD and loader?)');
  process.exit(2);
}
const info = adapter.info || {};
console.log(`adapter: ${info.vendor} ${info.architecture} ${info.device} ${info.description}`);
const lim = adapter.limits;
const device = await adapter.requestDevice({ requiredLimits: {
  maxStorageBufferBindingSize: lim.maxStorageBufferBindingSize, maxBufferSize: lim.maxBufferSize } });
o.copyBytes = Math.min(o.copyBytes, lim.maxStorageBufferBindingSize, lim.maxBufferSize);
const model = modelFile ? readFileSync(modelFile) : null;
const res = await bench(device, { ...o, model: model && model.buffer.slice(model.byteOffset, model.byteOffset + model.length),
  source: async (name) => readFileSync(path.join(here, name), 'utf8') });
if (json) writeFileSync(json, JSON.stringify({ adapter: info, options: o, ...res }, null, 2) + '\n');
device.destroy();
gpu = null; // dawn.node keeps node alive while create()'s object is referenced
process.exit(0);
