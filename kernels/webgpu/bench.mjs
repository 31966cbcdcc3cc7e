// bench.mjs — the webgpu set's benchmark (issue 50's targets), for any WebGPU device: a page
// (navigator.gpu) or node with Dawn (bench-node.mjs). Not a test: it times, it does not judge.
//
//   copy:   a WGSL copy kernel over `copyBytes` (vec4<u32> loads and stores, repeated): the
//           device's measured read bandwidth, the yardstick of decode (GB/s read).
//   matmul: the Q8_0 matmul (quantize + matmul, as a forward pass runs it) of an R x K weight at
//           T = 1 (decode: GB/s of weights read, against copy's) and T = tPrefill (prefill:
//           integer GOP/s).
//   model:  a GGUF file's forward pass (llama.mjs): prefill of `pp` tokens, then `tg` tokens
//           decoded one at a time: tokens per second, and decode's weight bytes per second
//           against the copy bandwidth.
// Times are wall clock from submit to onSubmittedWorkDone (the device's queue drained), best of
// `reps`; the first run of each is a warm-up.
import { createKernels } from './plumb-webgpu.mjs';
import { readGGUF, loadLlama, forward } from './llama.mjs';

const COPY = `
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let n = arrayLength(&src);
  let stride = nw.x * 256u;
  for (var i = g.x; i < n; i += stride) { dst[i] = src[i]; }
}`;

async function timed(device, reps, record) {
  let best = Infinity;
  for (let r = 0; r <= reps; r++) {
    const enc = device.createCommandEncoder();
    record(enc);
    const t0 = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    const ms = performance.now() - t0;
    if (r > 0) best = Math.min(best, ms); // r = 0: warm-up
  }
  return best;
}

export async function bench(device, opts = {}) {
  const o = { copyBytes: 256 << 20, K: 4096, R: 4096, tPrefill: 512, reps: 5, model: null, pp: 512, tg: 32,
    log: console.log, ...opts };
  const out = {};
  const ks = await createKernels(device, o.source ? { source: o.source } : {});

  // copy bandwidth
  const cmod = device.createShaderModule({ code: COPY });
  const cpipe = device.createComputePipeline({ layout: 'auto', compute: { module: cmod, entryPoint: 'main' } });
  const src = ks.buffer(o.copyBytes), dst = ks.buffer(o.copyBytes);
  const bind = device.createBindGroup({ layout: cpipe.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: src } }, { binding: 1, resource: { buffer: dst } }] });
  const copyMs = await timed(device, o.reps, (enc) => {
    const p = enc.beginComputePass();
    p.setPipeline(cpipe);
    p.setBindGroup(0, bind);
    p.dispatchWorkgroups(Math.min(65535, Math.ceil(o.copyBytes / 16 / 256)));
    p.end();
  });
  out.copy = { bytes: o.copyBytes, ms: copyMs, readGBs: o.copyBytes / copyMs / 1e6 };
  o.log(`copy ${o.copyBytes >> 20} MiB: ${copyMs.toFixed(3)} ms, ${out.copy.readGBs.toPrecision(3)} GB/s read (as much written)`);
  src.destroy();
  dst.destroy();

  // Q8_0 matmul at T = 1 and T = tPrefill (random bytes: the time does not depend on the values;
  // scales set to 1.0 so no NaN slows anything)
  const { K, R } = o;
  const wRow = (K / 32) * 34;
  const w = new Uint8Array(R * wRow);
  for (let i = 0; i < w.length; i++) w[i] = (i * 2654435761) >>> 24;
  for (let b = 0; b < w.length; b += 34) { w[b] = 0x00; w[b + 1] = 0x3c; }
  const wb = ks.upload(w);
  out.matmul = {};
  for (const T of [1, o.tPrefill]) {
    const x = ks.upload(new Float32Array(T * K).map((_, i) => Math.sin(i)));
    const xq = ks.buffer(T * wRow), y = ks.buffer(4 * T * R);
    const ms = await timed(device, o.reps, (enc) => {
      ks.quantize(enc, 'Q8_0', { x, y: xq, n: K, rows: T });
      ks.matmul(enc, 'Q8_0', { w: wb, x: xq, y, K, R, T, wRow, xRow: wRow, ldy: R });
    });
    const r = { T, ms, weightGBs: R * wRow / ms / 1e6, gops: 2 * R * K * T / ms / 1e6 };
    out.matmul[T] = r;
    o.log(`matmul Q8_0 ${R} x ${K}, T ${T}: ${ms.toFixed(3)} ms, weights ${r.weightGBs.toPrecision(3)} GB/s ` +
      `(${(100 * r.weightGBs / out.copy.readGBs).toFixed(0)}% of copy), ${r.gops.toPrecision(3)} GOP/s`);
    for (const b of [x, xq, y]) b.destroy();
  }
  wb.destroy();

  // a model's prefill and decode
  if (o.model) {
    const gguf = readGGUF(o.model);
    const m = loadLlama(ks, gguf, o.pp + o.tg);
    const weightBytes = Object.values(gguf.tensors).reduce((a, t) => a + t.data.byteLength, 0);
    const toks = Array.from({ length: o.pp + o.tg }, (_, i) => (i * 7919 + 13) % m.hp.V);
    let t0 = performance.now();
    await forward(m, toks.slice(0, o.pp));
    const ppMs = performance.now() - t0;
    t0 = performance.now();
    for (let t = 0; t < o.tg; t++) await forward(m, [toks[o.pp + t]]);
    const tgMs = performance.now() - t0;
    out.model = { pp: o.pp, tg: o.tg, ppTokS: o.pp / ppMs * 1e3, tgTokS: o.tg / tgMs * 1e3,
      decodeGBs: weightBytes * o.tg / tgMs / 1e6 };
    o.log(`model (${(weightBytes / 1e6).toFixed(1)} MB of weights): pp${o.pp} ${out.model.ppTokS.toPrecision(3)} tok/s, ` +
      `tg${o.tg} ${out.model.tgTokS.toPrecision(3)} tok/s = ${out.model.decodeGBs.toPrecision(3)} GB/s of weights ` +
      `(${(100 * out.model.decodeGBs / out.copy.readGBs).toFixed(0)}% of copy); each token one command buffer, ` +
      `its logits read back`);
  }
  return out;
}
