// memory.mjs — the wasm32 heap with a model in it: the file goes into the heap once (allocModel's
// view, no second copy) and a 0.5B Q4 model loads and evaluates within the 4 GiB limit. Prints
// the peak (wasm memory size, which only grows) for the demo model and for qwen2-0.5b Q4_0 made
// by `plumb mkmodel` (PLUMB_WASM_MEMORY_BIG=1: also a 1B Q8_0 and a 3B-shaped Q4_K_M). Usage: node memory.mjs WEB PLUMB MODEL [VARIANT]
import fs from 'fs';
import path from 'path';
import { MODEL, check, done, engine, load, plumb, tmp } from './util.mjs';

const variant = process.argv[5] ?? 'simd';
const GiB = 1024 ** 3, MiB = 1024 ** 2;
const big = path.join(tmp, 'qwen2-0.5b-q4_0.gguf');
plumb(['mkmodel', big, '--preset', 'qwen2-0.5b', '--type', 'Q4_0']);
const files = [MODEL, big];
// PLUMB_WASM_MEMORY_BIG=1 (minutes, ~3.5 GB of disk in the build tree's temp): a 1B Q8_0 and a
// 3B-shaped Q4_K_M (Llama 3.2 3B's dimensions on the llama-1b preset: 28 blocks, 3072 wide, 24
// heads, 8 KV heads, 8192 FF) load, evaluate and hold a default chat session within wasm32's 4 GiB.
if (process.env.PLUMB_WASM_MEMORY_BIG === '1') {
  const b1 = path.join(tmp, 'llama-1b-q8_0.gguf'), b3 = path.join(tmp, 'llama-3b-shape-q4_k_m.gguf');
  plumb(['mkmodel', b1, '--preset', 'llama-1b', '--type', 'Q8_0']);
  plumb(['mkmodel', b3, '--preset', 'llama-1b', '--type', 'Q4_K_M', '--n-layer', '28', '--n-embd', '3072',
    '--n-head', '24', '--n-head-kv', '8', '--n-ff', '8192']);
  files.push(b1, b3);
}

for (const file of files) {
  const eng = await engine(variant, 1);
  const size = fs.statSync(file).size;
  const t0 = performance.now();
  const info = load(eng, file);
  const loadMs = performance.now() - t0;
  const afterLoad = eng.memory();
  const l = eng.logits([1, 2, 3, 4]);
  // A chat session at the default window (min(training context, 4096)): its KV cache and scratch.
  eng.newChat({}).free();
  const m = eng.memory();
  const name = path.basename(file);
  console.log(`${name}: file ${(size / MiB).toFixed(1)} MiB, ${info.nParams} params, kernels ` +
    `${info.kernels}, load ${loadMs.toFixed(0)} ms; heap in use after load ` +
    `${(afterLoad.heapBytes / MiB).toFixed(1)} MiB; peak wasm memory ` +
    `${(m.peakHeapBytes / MiB).toFixed(1)} MiB with a default chat session (after load ` +
    `${(afterLoad.peakHeapBytes / MiB).toFixed(1)} MiB)`);
  check(m.peakHeapBytes < 4 * GiB && l.length === info.vocab && l.every(Number.isFinite),
    `${name} loads and evaluates within 4 GiB (peak ${(m.peakHeapBytes / MiB).toFixed(1)} MiB)`);
  // One copy of the file: what the heap holds after load is the file plus the engine's own.
  check(afterLoad.heapBytes < size + 64 * MiB + info.repackBytes,
    `${name}: heap in use ${(afterLoad.heapBytes / MiB).toFixed(1)} MiB < file + repack + 64 MiB`);
  eng.freeModel();
}
done();
