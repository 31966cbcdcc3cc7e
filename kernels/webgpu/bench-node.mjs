// bench-node.mjs — bench.mjs under node with Dawn's node binding (npm `webgpu`), no browser:
//   node kernels/webgpu/bench-node.mjs [MODEL.gguf ...] [--copy-mib N] [--k N] [--r N]
//        [--prefill-t N] [--pp N] [--tg N] [--reps N] [--nr N] [--modes fused,unfused] [--decode D]
//        [--decode-ab D,D,...] [--profile N] [--json OUT.json] [--md OUT.md]
// --profile N: also each model's profiled prefill and N profiled decode steps: every dispatch's GPU
// time by timestamps, by kernel (needs the adapter's timestamp-query; DAWN_FLAGS can add
// disable-dawn-features=timestamp_quantization for full resolution).
// --nr: rows per workgroup of the v1 decode driver (createKernels' matmulNR).
// --attn-split auto|always|never: createKernels' attnSplit (always: prefill's attention split too).
// --modes: the forward pass fused (llama.mjs's default) and/or unfused (fuse: false, one dispatch per
// op), interleaved in each of the reps rounds (default both: the A/B); each mode's medians and its
// commands a decode token. fused/sN, fused/sd: the step in parts of N layers, or doubling; any
// mode with /na: no decode step recorded ahead (forward's ahead: false).
// --decode D: the quantized matmuls' decode driver, auto (the default: v2 for Q8_0 and Q4_0, v2's
// grouped mode at 8 x 128 with 4 rows a thread for Q4_K and Q6_K, as measured on the H200), v1,
// v2 or v2:NRxTPR (v2 with NR rows x TPR threads a workgroup), v2 also with /g8 (Q4_K's and Q6_K's
// grouped mode, 8 lanes a block) and /g8rRPT (RPT rows a thread; the shape then the K-quants'
// only; createKernels' decodeDriver, decodeNR, decodeTPR, decodeGP, decodeRPT).
// --decode-ab D,D,...: also time the T = 1 matmuls (each type's, each model's) with each of
// these drivers, in interleaved rounds (e.g. --decode-ab v1,v2,v2:8x32).
// The device's figures first (copy bandwidth, the int8 matmul microbenchmark, each quantized
// matmul at T = 1 and T = prefill-t), then each model's (its matmuls alone at T = 1 and T = pp,
// then llama.mjs's forward pass: pp tokens as one prefill, tg decoded one at a time); --md writes
// (and prints) the markdown table of kernels/webgpu/README.md.
// PLUMB_WEBGPU_NODE: where the `webgpu` package is (default: node's resolution from here);
// DAWN_FLAGS: comma-separated options for create() (e.g. backend=vulkan, adapter=NAME).
// Exit 2 when the package or an adapter is missing, saying which (this 2-core machine's Dawn
// finds no usable Vulkan adapter: issue 50).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { bench, decodeOptions, markdownTable, optionReader } from './bench.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
const args = process.argv.slice(2);
const opt = optionReader(args);
const num = (name, def) => Number(opt(name, def));
const o = { copyBytes: num('--copy-mib', 256) * 2 ** 20, K: num('--k', 4096), R: num('--r', 4096),
  tPrefill: num('--prefill-t', 512), pp: num('--pp', 512), tg: num('--tg', 32), reps: num('--reps', 5),
  matmulNR: num('--nr', 0), profile: num('--profile', 0), modes: opt('--modes', 'fused,fused/g,unfused').split(','), decode: opt('--decode', 'auto'),
  attnSplit: opt('--attn-split', undefined) };
const ab = opt('--decode-ab', null);
if (ab) o.decodeAB = ab.split(',');
for (const d of [o.decode, ...(o.decodeAB || [])]) decodeOptions(d); // a bad name throws here
const json = opt('--json', null);
const md = opt('--md', null);
const modelFiles = args.filter((a) => !a.startsWith('--'));

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
  console.error('bench-node: Dawn found no WebGPU adapter (no Vulkan driver it can use: is the NVIDIA ICD ' +
    'found (VK_DRIVER_FILES), the Vulkan loader installed (libvulkan.so.1)? DAWN_FLAGS=backend=vulkan?)');
  process.exit(2);
}
const info = adapter.info || {};
const adapterLine = `${info.vendor} ${info.architecture} ${info.device} ${info.description}`.replace(/\s+/g, ' ').trim();
console.log(`adapter: ${adapterLine}`);
if (args.includes('--probe')) { // only whether there is an adapter (run.sh asks before making models)
  gpu = null;
  process.exit(0);
}
const lim = adapter.limits;
const device = await adapter.requestDevice({ requiredFeatures: adapter.features.has('timestamp-query') ? ['timestamp-query'] : [],
  requiredLimits: {
  maxStorageBufferBindingSize: lim.maxStorageBufferBindingSize, maxBufferSize: lim.maxBufferSize } });
device.addEventListener?.('uncapturederror', (e) => console.error('webgpu: ' + e.error.message));
o.copyBytes = Math.min(o.copyBytes, lim.maxStorageBufferBindingSize, lim.maxBufferSize);
const source = async (name) => readFileSync(path.join(here, name), 'utf8');
const wgslFeatures = gpu.wgslLanguageFeatures;
const res = { adapter: info, options: o, device: await bench(device, { ...o, source, wgslFeatures }), models: {} };
for (const f of modelFiles) {
  const b = readFileSync(f);
  console.log(`model ${path.basename(f)}`);
  res.models[path.basename(f)] = await bench(device, { ...o, source, wgslFeatures, base: res.device,
    model: b.buffer.slice(b.byteOffset, b.byteOffset + b.length) });
}
if (json) writeFileSync(json, JSON.stringify(res, null, 2) + '\n');
if (md) {
  const text = markdownTable(res, adapterLine);
  writeFileSync(md, text);
  console.log('\n' + text);
}
device.destroy();
gpu = null; // dawn.node keeps node alive while create()'s object is referenced
process.exit(0);
