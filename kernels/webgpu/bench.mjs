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
import { createKernels, quantRowBytes } from './plumb-webgpu.mjs';
import { readGGUF, loadLlama, forward, greedy, truncate, firstMax, BLOCK } from './llama.mjs';

const COPY = `
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let n = arrayLength(&src);
  let stride = nw.x * 256u;
  for (var i = g.x; i < n; i += stride) { dst[i] = src[i]; }
}`;

const DOT4_SHIFTS = `fn dot4(a: u32, b: u32) -> i32 {
  return (bitcast<i32>(a << 24u) >> 24u) * (bitcast<i32>(b << 24u) >> 24u)
       + (bitcast<i32>(a << 16u) >> 24u) * (bitcast<i32>(b << 16u) >> 24u)
       + (bitcast<i32>(a << 8u) >> 24u) * (bitcast<i32>(b << 8u) >> 24u)
       + (bitcast<i32>(a) >> 24u) * (bitcast<i32>(b) >> 24u);
}
`;
const INT8MM = `
struct U { M: u32, N: u32, Kw: u32, pad: u32 }
@group(0) @binding(0) var<storage, read> A: array<u32>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<i32>;
@group(0) @binding(3) var<uniform> P: U;
var<workgroup> as_: array<u32, 1024>;
var<workgroup> bs_: array<u32, 1024>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let m0 = wg.x * 64u;
  let n0 = wg.y * 64u;
  let tm = li % 16u;
  let tn = li / 16u;
  var acc: array<i32, 16>;
  for (var i = 0u; i < 16u; i++) { acc[i] = 0; }
  for (var k0 = 0u; k0 < P.Kw; k0 += 16u) {
    for (var i = li; i < 1024u; i += 256u) {
      let k = i % 16u;
      let rr = i / 16u;
      as_[i] = select(0u, A[(m0 + rr) * P.Kw + k0 + k], m0 + rr < P.M);
      bs_[i] = select(0u, B[(n0 + rr) * P.Kw + k0 + k], n0 + rr < P.N);
    }
    workgroupBarrier();
    for (var k = 0u; k < 16u; k++) {
      var av: array<u32, 4>;
      var bv: array<u32, 4>;
      for (var i = 0u; i < 4u; i++) { av[i] = as_[(tm + 16u * i) * 16u + k]; bv[i] = bs_[(tn + 16u * i) * 16u + k]; }
      for (var i = 0u; i < 4u; i++) { for (var j = 0u; j < 4u; j++) { acc[i * 4u + j] += dot4(av[i], bv[j]); } }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    for (var j = 0u; j < 4u; j++) {
      let m = m0 + tm + 16u * i;
      let n = n0 + tn + 16u * j;
      if (m < P.M && n < P.N) { C[n * P.M + m] = acc[i * 4u + j]; }
    }
  }
}`;

// The best of reps timed submissions (after a warm-up). A validation error (an invalid bind group:
// a dispatch that does nothing, timed as fast) throws rather than giving a figure.
async function timed(device, reps, record, flush = () => {}) {
  let best = Infinity;
  for (let r = 0; r <= reps; r++) {
    device.pushErrorScope('validation');
    const enc = device.createCommandEncoder();
    record(enc);
    flush(enc);
    const t0 = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    const ms = performance.now() - t0;
    const err = await device.popErrorScope();
    if (err) throw new Error(`bench: a timed dispatch is invalid: ${err.message}`);
    if (r > 0) best = Math.min(best, ms); // r = 0: warm-up
  }
  return best;
}

// A command line's options: opt(name, def) takes `name value` out of args (so what is left is
// the positional arguments) and gives the value, or def where name is not there.
export function optionReader(args) {
  return (name, def) => {
    const i = args.indexOf(name);
    if (i < 0) return def;
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
}

// A decode driver as bench-node's --decode / --decode-ab name it: 'auto' (v2 for Q8_0, Q4_0;
// grouped v2 8 x 128, 4 rows a thread, for Q4_K and Q6_K), 'v1', 'v2', 'v2:NRxTPR' (v2 with NR
// rows x TPR threads a workgroup), each v2 optionally '/g8' (Q4_K's and Q6_K's grouped mode: 8
// lanes a block) or '/g8rRPT' (and RPT rows a thread), as createKernels' options.
export function decodeOptions(spec) {
  const m = /^(auto|v1|v2)(?::(\d+)x(\d+))?(?:\/g(8)(?:r([1248]))?)?$/.exec(spec || 'auto');
  if (!m || (m[1] !== 'v2' && (m[2] || m[4])))
    throw new Error(`bench: a decode driver is auto, v1, v2, v2:NRxTPR, v2/g8, v2:NRxTPR/g8 or v2:NRxTPR/g8rRPT, not ${spec}`);
  return { decodeDriver: m[1], ...(m[2] ? { decodeNR: Number(m[2]), decodeTPR: Number(m[3]) } : {}),
    ...(m[4] ? { decodeGP: Number(m[4]) } : {}), ...(m[5] ? { decodeRPT: Number(m[5]) } : {}) };
}

// o.decodeAB (a list of decodeOptions names): the T = 1 matmuls, recorded by `record(ks, enc)`,
// timed with each decode driver in interleaved rounds (a, b, ..., a, b, ...: the GPU's clock
// state moves between short bursts), the best of each's rounds; { name: ms }.
async function decodeAB(device, o, kss, record) {
  const best = {};
  for (let round = 0; round < 3; round++)
    for (const [name, ks] of kss) {
      const ms = await timed(device, o.reps, (enc) => record(ks, enc), ks.flush);
      best[name] = Math.min(best[name] ?? Infinity, ms);
    }
  return best;
}

export async function bench(device, opts = {}) {
  const o = { copyBytes: 256 << 20, K: 4096, R: 4096, tPrefill: 512, reps: 5, model: null, pp: 512, tg: 32,
    types: ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K'], log: console.log, ...opts };
  const out = {};
  const kopts = { ...(o.source ? { source: o.source } : {}),
    ...(o.wgslFeatures ? { wgslFeatures: o.wgslFeatures } : {}), ...(o.matmulNR ? { matmulNR: o.matmulNR } : {}),
    ...(o.attnSplit ? { attnSplit: o.attnSplit } : {}) };
  // o.profile (tokens): also a profiled prefill and o.profile profiled decode steps of each model,
  // every dispatch's GPU time by timestamps (createKernels' profile; needs 'timestamp-query')
  const profile = o.profile > 0 && device.features.has('timestamp-query');
  if (o.profile > 0 && !profile) o.log('profile: the device has no timestamp-query feature; not profiled');
  const ks = await createKernels(device, { ...kopts, ...decodeOptions(o.decode), profile });
  out.packedDot = ks.packedDot;
  out.decode = o.decode || 'auto';
  // the decode drivers to compare (--decode-ab): a kernel set each, its matmuls and quantizers
  const kss = [];
  for (const name of o.decodeAB || [])
    kss.push([name, await createKernels(device, { ...kopts, ...decodeOptions(name),
      only: ['matmul_Q8_0', 'matmul_Q4_0', 'matmul_Q4_K', 'matmul_Q6_K', 'matmul_F16', 'quantize_Q8_0', 'quantize_Q8_K'], tileMinT: Infinity })]);
  o.log(`decode driver: ${out.decode}${kss.length ? `; compared: ${kss.map(([n]) => n).join(', ')}` : ''}`);
  o.log(`dot4: ${ks.packedDot ? 'dot4I8Packed (packed_4x8_integer_dot_product)' : 'shifts (no packed_4x8_integer_dot_product)'}`);

  // o.base: an earlier run's result, whose copy and int8 figures a model's run reuses
  if (!o.base) {
    // copy bandwidth
    const cmod = device.createShaderModule({ code: COPY });
    const cpipe = device.createComputePipeline({ layout: 'auto', compute: { module: cmod, entryPoint: 'main' } });
    const src = ks.buffer(o.copyBytes), dst = ks.buffer(o.copyBytes);
    const bind = device.createBindGroup({ layout: cpipe.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: src } }, { binding: 1, resource: { buffer: dst } }] });
    const copyOnce = (enc) => {
      const p = enc.beginComputePass();
      p.setPipeline(cpipe);
      p.setBindGroup(0, bind);
      p.dispatchWorkgroups(Math.min(65535, Math.ceil(o.copyBytes / 16 / 256)));
      p.end();
    };
    // The GPU's clocks first (an idle H200 ran the first copies at 692 GB/s against 1.56e3 a
    // minute later): copies back to back for at least o.warmMs (default 500 ms), then timed.
    for (const tw = performance.now(); performance.now() - tw < (o.warmMs ?? 500);) {
      const enc = device.createCommandEncoder();
      for (let i = 0; i < 20; i++) copyOnce(enc);
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
    }
    const copyMs = await timed(device, o.reps, copyOnce);
    out.copy = { bytes: o.copyBytes, ms: copyMs, readGBs: o.copyBytes / copyMs / 1e6 };
    o.log(`copy ${o.copyBytes >> 20} MiB: ${copyMs.toFixed(3)} ms, ${out.copy.readGBs.toPrecision(3)} GB/s read (as much written)`);
    src.destroy();
    dst.destroy();

    // The int8 matmul microbenchmark (the yardstick of prefill): C[n][m] = A[m] . B[n] over K int8
    // (packed 4 a word), i32 results, no scales: tiles of 64 x 64 staged in workgroup memory, 4 x 4
    // outputs a thread, dot4 (dot4I8Packed where the adapter has it, as the kernels).
    {
      const M = o.R, N = o.tPrefill, Kw = o.K / 4;
      const mod = device.createShaderModule({ code: (ks.packedDot ? 'fn dot4(a: u32, b: u32) -> i32 { return dot4I8Packed(a, b); }\n'
        : DOT4_SHIFTS) + INT8MM });
      const pipe = device.createComputePipeline({ layout: 'auto', compute: { module: mod, entryPoint: 'main' } });
      const a = ks.upload(new Uint32Array(M * Kw).map((_, i) => (i * 2654435761) >>> 0));
      const b = ks.upload(new Uint32Array(N * Kw).map((_, i) => (i * 40503 + 7) >>> 0));
      const c = ks.buffer(4 * M * N);
      const u = ks.uniform(new Uint32Array([M, N, Kw, 0]));
      const bind = device.createBindGroup({ layout: pipe.getBindGroupLayout(0), entries: [a, b, c].map((buffer, binding) => ({ binding, resource: { buffer } }))
        .concat([{ binding: 3, resource: { buffer: u } }]) });
      const ms = await timed(device, o.reps, (enc) => {
        const p = enc.beginComputePass();
        p.setPipeline(pipe);
        p.setBindGroup(0, bind);
        p.dispatchWorkgroups(Math.ceil(M / 64), Math.ceil(N / 64));
        p.end();
      });
      out.int8mm = { M, N, K: o.K, ms, gops: 2 * M * N * o.K / ms / 1e6 };
      o.log(`int8 matmul microbenchmark ${M} x ${o.K} x ${N}: ${ms.toFixed(3)} ms, ${out.int8mm.gops.toPrecision(4)} GOP/s`);
      for (const x of [a, b, c, u]) x.destroy();
    }

    // The dispatch floor: o.floorN (default 512) dispatches of the add kernel (one workgroup, 256
    // floats, each reading what the one before wrote: a barrier between each two, as a forward
    // pass's dispatches) recorded in one pass of a frame (a decode step's way: bind groups kept,
    // only changed parameters written), then submitted: the GPU's time a dispatch (wall from
    // submit to the queue drained, over n) and the CPU's time to record one. What a step of D
    // dispatches costs beside its work: D times each.
    {
      const n = o.floorN ?? 512, x = ks.buffer(4 * 256), y = ks.buffer(4 * 256), key = {};
      const record = (enc) => {
        ks.beginFrame(key);
        for (let i = 0; i < n; i++) ks.add(enc, { x, y, n: 256 });
        ks.endFrame();
      };
      await timed(device, 1, record, ks.flush); // the frame's bind groups made
      let cpuMs = Infinity;
      const ms = await timed(device, o.reps, (enc) => {
        const t0 = performance.now();
        record(enc);
        cpuMs = Math.min(cpuMs, performance.now() - t0);
      }, ks.flush);
      out.floor = { n, gpuUs: 1e3 * ms / n, cpuUs: 1e3 * cpuMs / n };
      o.log(`dispatch floor: ${n} dependent one-workgroup dispatches in one pass: GPU ${out.floor.gpuUs.toFixed(2)} us each ` +
        `(submit to done), CPU ${out.floor.cpuUs.toFixed(2)} us each to record (best of ${o.reps})`);
      ks.dropFrame(key);
      x.destroy();
      y.destroy();
    }

    // Each quantized type's matmul (quantize + matmul, as a forward pass runs it) of an R x K weight
    // at T = 1 (decode: GB/s of weights read, against copy's) and T = tPrefill (prefill: GOP/s,
    // against the microbenchmark's). Random quants; the scales set to 1.0 so no NaN slows anything.
    const { K, R } = o;
    out.matmul = {};
    for (const type of o.types) {
      const [bs, bb, dt, dbs, dbb] = { Q8_0: [32, 34, 'Q8_0', 32, 34], Q4_0: [32, 18, 'Q8_0', 32, 34],
        Q4_K: [256, 144, 'Q8_K', 256, 292], Q6_K: [256, 210, 'Q8_K', 256, 292] }[type];
      const wRow = (K / bs) * bb, xRow = quantRowBytes(dt, K);
      const w = new Uint8Array(R * wRow);
      for (let i = 0; i < w.length; i++) w[i] = (i * 2654435761) >>> 24;
      for (let q = 0; q < w.length; q += bb) {
        if (type === 'Q6_K') { w[q + 208] = 0x00; w[q + 209] = 0x3c; continue; } // d last
        w[q] = 0x00; w[q + 1] = 0x3c;
        if (type === 'Q4_K') { w[q + 2] = 0x00; w[q + 3] = 0x3c; }
      }
      const wb = ks.upload(w);
      out.matmul[type] = {};
      for (const T of [1, o.tPrefill]) {
        const x = ks.upload(new Float32Array(T * K).map((_, i) => Math.sin(i)));
        const xq = ks.buffer(T * xRow), y = ks.buffer(4 * T * R);
        const ms = await timed(device, o.reps, (enc) => {
          ks.quantize(enc, dt, { x, y: xq, n: K, rows: T });
          ks.matmul(enc, type, { w: wb, x: xq, y, K, R, T, wRow, xRow, ldy: R });
        }, ks.flush);
        const r = { T, ms, weightGBs: R * wRow / ms / 1e6, gops: 2 * R * K * T / ms / 1e6 };
        out.matmul[type][T] = r;
        o.log(`matmul ${type} ${R} x ${K}, T ${T}: ${ms.toFixed(3)} ms, weights ${r.weightGBs.toPrecision(3)} GB/s ` +
          `(${(100 * r.weightGBs / out.copy.readGBs).toFixed(0)}% of copy), ${r.gops.toPrecision(3)} GOP/s ` +
          `(${(100 * r.gops / out.int8mm.gops).toFixed(0)}% of the int8 microbenchmark)`);
        for (const b of [x, xq, y]) b.destroy();
      }
      if (kss.length) { // the T = 1 matmul with each compared decode driver
        const x = ks.upload(new Float32Array(K).map((_, i) => Math.sin(i)));
        const xq = ks.buffer(xRow), y = ks.buffer(4 * R);
        const ab = await decodeAB(device, o, kss, (k, enc) => {
          k.quantize(enc, dt, { x, y: xq, n: K, rows: 1 });
          k.matmul(enc, type, { w: wb, x: xq, y, K, R, T: 1, wRow, xRow, ldy: R });
        });
        out.matmul[type].ab = Object.fromEntries(Object.entries(ab).map(([n, ms]) => [n, { ms, weightGBs: R * wRow / ms / 1e6 }]));
        o.log(`matmul ${type} ${R} x ${K}, T 1, decode drivers: ` + Object.entries(out.matmul[type].ab)
          .map(([n, r]) => `${n} ${r.ms.toFixed(3)} ms (${r.weightGBs.toPrecision(3)} GB/s)`).join(', '));
        for (const b of [x, xq, y]) b.destroy();
      }
      wb.destroy();
    }
  } else {
    Object.assign(out, { copy: o.base.copy, int8mm: o.base.int8mm, floor: o.base.floor });
  }

  // a model's prefill and decode
  if (o.model) {
    const gguf = readGGUF(o.model);
    const m = loadLlama(ks, gguf, o.pp + Math.max(o.tg, 3 * (o.profile || 0)));
    // the bytes a decoded token reads: every weight matrix (the embedding table only where it is
    // the output head), the norms
    const weightBytes = [...m.layers.flatMap((L) => Object.values(L)), m.output, m.outNorm]
      .filter((t) => t && t.data) // the tensors a family lacks (biases, head norms) are null
      .reduce((a, t) => a + t.data.byteLength, 0);
    out.model = { weightBytes, L: m.hp.L, E: m.hp.E, F: m.hp.F, V: m.hp.V,
      types: [...new Set(m.layers.flatMap((L) => [L.q.type, L.gate.type, L.down.type]))].join('+') };
    // The matmuls alone (quantize + matmul of every weight matrix, the output head included, in
    // one command buffer, as a forward pass records them) at T = 1 and T = pp: the kernels'
    // share of the copy bandwidth and of the int8 microbenchmark, apart from the forward pass's
    // other ops and its per-token overheads.
    {
      const mats = [...m.layers.flatMap((L) => [L.q, L.k, L.v, L.o, L.gate, L.up, L.down]), m.output];
      const maxK = Math.max(...mats.map((w) => w.dims[0])), maxR = Math.max(...mats.map((w) => w.dims[1]));
      for (const T of [1, o.pp]) {
        const x = ks.upload(new Float32Array(T * maxK).map((_, i) => Math.sin(i)));
        const xq = ks.buffer(T * (maxK / 32) * 34 + T * (maxK / 256 + 1) * 292), y = ks.buffer(4 * T * maxR);
        const record = (k, enc) => {
          for (const w of mats) {
            const K = w.dims[0], dt = w.type === 'Q4_K' || w.type === 'Q6_K' ? 'Q8_K' : 'Q8_0';
            k.quantize(enc, dt, { x, y: xq, n: K, rows: T });
            k.matmul(enc, w.type, { w: w.buf, wOff: w.wOff, x: xq, y, K, R: w.dims[1], T, wRow: w.rowBytes, xRow: quantRowBytes(dt, K), ldy: w.dims[1] });
          }
        };
        const ms = await timed(device, o.reps, (enc) => record(ks, enc), ks.flush);
        if (T === 1 && kss.length) {
          const ab = await decodeAB(device, o, kss, record);
          out.model.mmDecodeAB = Object.fromEntries(Object.entries(ab).map(([n, t]) => [n, { ms: t, tokS: 1e3 / t }]));
          o.log('model matmuls T 1, decode drivers: ' + Object.entries(ab).map(([n, t]) => `${n} ${t.toFixed(3)} ms`).join(', '));
        }
        const bytes = mats.reduce((a, w) => a + w.data.byteLength, 0);
        const ops = mats.reduce((a, w) => a + 2 * w.dims[0] * w.dims[1] * T, 0);
        out.model[T === 1 ? 'mmDecode' : 'mmPrefill'] = { T, ms, weightGBs: bytes / ms / 1e6, gops: ops / ms / 1e6, tokS: T / ms * 1e3 };
        o.log(`model matmuls T ${T}: ${ms.toFixed(3)} ms, ${(bytes / ms / 1e6).toPrecision(4)} GB/s of weights ` +
          `(${(100 * bytes / ms / 1e6 / out.copy.readGBs).toFixed(0)}% of copy), ${(ops / ms / 1e6).toPrecision(4)} GOP/s ` +
          `(${(100 * ops / ms / 1e6 / out.int8mm.gops).toFixed(0)}% of the int8 microbenchmark)`);
        for (const b of [x, xq, y]) b.destroy();
      }
    }
    // The forward pass, fused (the default) and unfused (llama.mjs's fuse: false, the sequence of
    // one dispatch per op: the A/B), interleaved in each round (o.modes: which; default both):
    // one untimed round (each pipeline's first use, the prefill's buffers), then reps rounds from
    // an empty cache, medians. A prefill reads back its last position's logits only (as plumb
    // bench's pp and the chat do); each decode step its one row. Also the commands a decode step
    // records (ks.counts: dispatches + copies + clears).
    const toks = Array.from({ length: o.pp + Math.max(o.tg, 3 * (o.profile || 0)) }, (_, i) => (i * 7919 + 13) % m.hp.V);
    // a mode 'fused/sN': the fused pass submitted every N layers (forward's submitEvery; 0: once);
    // 'fused/sd': in parts of 1, 1, 2, 4, ... layers (submitEvery 'doubling'); a mode ending in
    // '/na': no decode step recorded ahead (forward's ahead: false); '/cp': each decode step fed
    // the CPU's greedy pick of the last logits (a greedy chat), '/sp' the same with forward's
    // speculate (the next step run on the GPU's pick before it is asked for); in '/g' ('/gN': N steps in
    // flight, greedy's depth): greedy decoding with
    // the token picked on the GPU (llama.mjs's greedy: tg ids from the prefill's last token, the
    // steps back to back, each id read back and no logits), checked once against forward one token
    // at a time with the pick made on the CPU (greedySame)
    const modes = Object.fromEntries((o.modes || ['fused', 'unfused']).map((n) => {
      const sm = /^(fused|unfused)(?:\/s(\d+|d))?(\/na|\/g(\d)?|\/cp|\/sp)?$/.exec(n);
      if (!sm || (sm[1] === 'unfused' && sm[2])) throw new Error(`bench: a mode is fused, unfused, fused/sN or fused/sd, each optionally /na or /g, not ${n}`);
      const submitEvery = !sm[2] ? undefined : sm[2] === 'd' ? 'doubling' : Number(sm[2]);
      return [n, { fuse: sm[1] === 'fused', submitEvery, ahead: sm[3] !== '/na', greedy: !!sm[3] && sm[3].startsWith('/g'),
        depth: sm[4] ? Number(sm[4]) : undefined, cpuPick: sm[3] === '/cp' || sm[3] === '/sp', speculate: sm[3] === '/sp',
        ppRuns: [], tgRuns: [] }];
    }));
    for (let r = 0; r <= o.reps; r++)
      for (const mo of Object.values(modes)) {
        truncate(m, 0);
        let t0 = performance.now();
        await forward(m, toks.slice(0, o.pp), { rows: 1, fuse: mo.fuse, submitEvery: mo.submitEvery, ahead: mo.ahead });
        const ppMs = performance.now() - t0;
        if (mo.greedy && r === 0) { // the check: forward one token at a time, picked on the CPU
          const want = [];
          for (let t = 0, tok = toks[o.pp - 1]; t < o.tg; t++) {
            // (the prefill above ends at toks[pp - 1]: drop it, feed it as greedy does)
            if (t === 0) truncate(m, o.pp - 1);
            tok = firstMax(await forward(m, [tok], { fuse: mo.fuse, submitEvery: mo.submitEvery }));
            want.push(tok);
          }
          truncate(m, o.pp - 1);
          const got = await greedy(m, toks[o.pp - 1], o.tg, { fuse: mo.fuse, submitEvery: mo.submitEvery });
          mo.greedySame = got.length === want.length && got.every((v, i) => v === want[i]);
        }
        t0 = performance.now();
        if (mo.greedy) {
          truncate(m, o.pp - 1); // the prefill's last token fed again, by greedy
          ks.counts.reset();
          await greedy(m, toks[o.pp - 1], o.tg, { fuse: mo.fuse, submitEvery: mo.submitEvery, depth: mo.depth });
          (mo.cmdRuns ||= []).push([Math.round(ks.counts.total() / o.tg), Math.round(ks.counts.write / o.tg)]);
        }
        let fed = toks[o.pp], hits = 0;
        for (let t = 0; t < (mo.greedy ? 0 : o.tg); t++) {
          ks.counts.reset();
          const timing = {};
          const lg = await forward(m, [mo.cpuPick ? fed : toks[o.pp + t]], { fuse: mo.fuse, submitEvery: mo.submitEvery,
            ahead: mo.ahead, speculate: mo.speculate, timing });
          if (mo.cpuPick) fed = firstMax(lg);
          if (timing.spec === 'hit') hits++;
          // a call records one step (its own, or the next one ahead; the first both, the last
          // only its own): the median over the steps
          (mo.cmdRuns ||= []).push([ks.counts.total(), ks.counts.write]);
        }
        const tgMs = performance.now() - t0;
        if (mo.speculate) mo.hits = hits;
        if (r > 0) { mo.ppRuns.push(ppMs); mo.tgRuns.push(tgMs); }
      }
    const mid = (a) => [...a].sort((x, y) => x - y)[(a.length - 1) >> 1];
    for (const [name, mo] of Object.entries(modes)) {
      if (mo.greedy) o.log(`greedy on the GPU (${name}): ids ${mo.greedySame ? 'the same as' : 'DIFFERENT FROM'} forward's one token at a time picked on the CPU`);
      if (mo.speculate) o.log(`speculation (${name}): ${mo.hits} of ${o.tg - 1} decode steps hit`);
      mo.cmds = mid((mo.cmdRuns || [[0, 0]]).map((c) => c[0]));
      mo.writes = mid((mo.cmdRuns || [[0, 0]]).map((c) => c[1]));
      delete mo.cmdRuns;
      const ppMs = mid(mo.ppRuns), tgMs = mid(mo.tgRuns);
      Object.assign(mo, { ppTokS: o.pp / ppMs * 1e3, tgTokS: o.tg / tgMs * 1e3, decodeGBs: weightBytes * o.tg / tgMs / 1e6,
        ppMsRuns: mo.ppRuns, tgMsRuns: mo.tgRuns });
    }
    const first = modes.fused || Object.values(modes)[0];
    Object.assign(out.model, { pp: o.pp, tg: o.tg, fused: !!modes.fused, ppTokS: first.ppTokS, tgTokS: first.tgTokS,
      decodeGBs: first.decodeGBs, ppMsRuns: first.ppRuns, tgMsRuns: first.tgRuns, cmds: first.cmds,
      ...(modes.fused && modes.unfused ? { unfused: modes.unfused } : {}),
      ...(modes['fused/g'] ? { greedy: modes['fused/g'] } : {}) });
    if (profile) out.model.profile = await profileModel(ks, m, toks, o);
    for (const [name, mo] of Object.entries(modes))
      o.log(`model (${(weightBytes / 1e6).toFixed(1)} MB of weights), ${name}: pp${o.pp} ${mo.ppTokS.toPrecision(3)} tok/s, ` +
        `tg${o.tg} ${mo.tgTokS.toPrecision(3)} tok/s = ${mo.decodeGBs.toPrecision(3)} GB/s of weights ` +
        `(${(100 * mo.decodeGBs / out.copy.readGBs).toFixed(0)}% of copy), ${mo.cmds} commands a decode step` +
        (out.floor ? ` (times the dispatch floor: GPU ${(mo.cmds * out.floor.gpuUs / 1e3).toFixed(3)} ms, CPU ${(mo.cmds * out.floor.cpuUs / 1e3).toFixed(3)} ms)` : '') +
        `, ${mo.writes} uniform writes; each token ` +
        `one command buffer, its logits read back (medians of ${o.reps} after one untimed round, the modes interleaved; ` +
        `pp ${mo.ppRuns.map((x) => x.toFixed(0)).join('/')} ms, tg ${mo.tgRuns.map((x) => x.toFixed(0)).join('/')} ms)`);
  }
  return out;
}


// A profiled prefill of o.pp tokens from an empty cache, then o.profile decode steps (the fused
// pass): each dispatch's GPU time (timestamps around a pass of its own), summed by tag, per step;
// the steps' wall time beside the sum of their dispatches' GPU times (the rest: the gaps between
// passes, the CPU's recording, submission and the logits' readback). Logged, largest first.
async function profileModel(ks, m, toks, o) {
  const sum = (recs, steps) => {
    const by = new Map();
    for (const { tag, us } of recs) {
      const e = by.get(tag) || { tag, n: 0, us: 0 };
      e.n++;
      e.us += us;
      by.set(tag, e);
    }
    const rows = [...by.values()].map((e) => ({ tag: e.tag, perStep: e.n / steps, usPerStep: e.us / steps, usEach: e.us / e.n }));
    for (const r of rows) {
      const mm = /^matmul (\w+) (\d+)x(\d+) T1\b/.exec(r.tag);
      if (mm && BLOCK[mm[1]]) r.GBs = Number(mm[2]) * (Number(mm[3]) / BLOCK[mm[1]][0]) * BLOCK[mm[1]][1] / r.usEach / 1e3;
    }
    return rows.sort((a, b) => b.usPerStep - a.usPerStep);
  };
  const show = (what, rows, wallMs) => {
    const gpu = rows.reduce((a, r) => a + r.usPerStep, 0);
    o.log(`profile, ${what}: GPU ${(gpu / 1e3).toFixed(3)} ms a step in its dispatches, wall ${wallMs.toFixed(3)} ms`);
    for (const r of rows)
      o.log(`  ${r.tag.padEnd(34)} ${r.perStep.toFixed(0).padStart(4)}x ${r.usEach.toFixed(1).padStart(8)} us each ` +
        `${(r.usPerStep / 1e3).toFixed(3).padStart(8)} ms ${(100 * r.usPerStep / gpu).toFixed(1).padStart(5)}%` +
        (r.GBs ? ` ${r.GBs.toFixed(0)} GB/s` : ''));
    return { gpuMs: gpu / 1e3, wallMs, rows };
  };
  truncate(m, 0);
  ks.profiling(true);
  let t0 = performance.now();
  await forward(m, toks.slice(0, o.pp), { rows: 1 });
  const prefill = show(`prefill of ${o.pp}`, sum(await ks.profileRead(), 1), performance.now() - t0);
  const recs = [];
  t0 = performance.now();
  for (let t = 0; t < o.profile; t++) {
    await forward(m, [toks[o.pp + t]]);
    recs.push(...await ks.profileRead());
  }
  const wall = (performance.now() - t0) / o.profile;
  ks.profiling(false);
  const decode = show(`decode at depth ${o.pp}, ${o.profile} steps`, sum(recs, o.profile), wall);
  // the same number of steps unprofiled (one pass a step), each step's CPU time to its
  // submission and its wait for the logits (medians): what a step costs beside its kernels
  const cpu = [], wait = [], cuts = [], aheads = [];
  for (let t = 0; t < o.profile; t++) {
    const timing = {};
    await forward(m, [toks[o.pp + o.profile + t]], { timing });
    cpu.push(timing.cpuMs);
    wait.push(timing.waitMs);
    cuts.push(timing.cutMs ?? 0);
    aheads.push(timing.aheadMs ?? 0);
  }
  const mid = (a) => [...a].sort((x, y) => x - y)[(a.length - 1) >> 1];
  decode.cpuMs = mid(cpu);
  decode.waitMs = mid(wait);
  decode.cutMs = mid(cuts);
  decode.aheadMs = mid(aheads);
  // and again with a timestamp at each step's start and end (no pass of its own per dispatch):
  // the GPU's span of an unprofiled step, its parts' gaps included
  const span = [], walls = [];
  ks.profiling('marks');
  for (let t = 0; t < o.profile; t++) {
    const w0 = performance.now();
    await forward(m, [toks[o.pp + 2 * o.profile + t]]);
    walls.push(performance.now() - w0);
    const mk = (await ks.profileRead()).filter((r) => r.tag === 'mark');
    if (mk.length === 2) span.push((mk[1].t0 - mk[0].t1) / 1e3);
  }
  ks.profiling(false);
  decode.spanMs = span.length ? mid(span) : null;
  decode.stepWallMs = mid(walls);
  o.log(`profile, unprofiled decode steps: CPU ${decode.cpuMs.toFixed(3)} ms to the submission (${decode.cutMs.toFixed(3)} ms of it ` +
    `in the parts' submissions), the next step recorded ahead in ${decode.aheadMs.toFixed(3)} ms, ` +
    `${decode.waitMs.toFixed(3)} ms from there to the logits; the GPU's span of a step ` +
    `${decode.spanMs === null ? '(no marks)' : decode.spanMs.toFixed(3) + ' ms'}, wall ${decode.stepWallMs.toFixed(3)} ms (medians of ${o.profile})`);
  return { prefill, decode };
}

// The markdown table of a run: res = { options, device: bench()'s result, models: { name: bench()'s
// result with a model } } (bench-node.mjs's JSON), adapterLine: the adapter in words.
export function markdownTable(res, adapterLine) {
  const o = res.options;
  const d = res.device, f = (x, p = 3) => Number(x).toPrecision(p), pc = (a, b) => `${(100 * a / b).toFixed(0)}%`;
  const lines = [`GPU (WebGPU): ${adapterLine}; dot4: ${d.packedDot ? 'dot4I8Packed' : 'shifts'}; decode driver ${d.decode || 'auto'}`, '',
    '| what | figure | share |', '|---|---:|---:|',
    `| copy kernel, read bandwidth (${o.copyBytes >> 20} MiB read and written) | ${f(d.copy.readGBs)} GB/s | — |`,
    `| int8 matmul microbenchmark ${d.int8mm.M} x ${d.int8mm.K} x ${d.int8mm.N} | ${f(d.int8mm.gops)} GOP/s | — |`];
  if (d.floor)
    lines.push(`| dispatch floor (${d.floor.n} dependent one-workgroup dispatches, one pass) | GPU ${f(d.floor.gpuUs)} us, CPU ${f(d.floor.cpuUs)} us a dispatch | — |`);
  for (const [t, r] of Object.entries(d.matmul))
    for (const [T, x] of Object.entries(r))
      lines.push(T === '1'
        ? `| matmul ${t} ${o.R} x ${o.K}, T 1 (decode kernel) | ${f(x.weightGBs)} GB/s of weights | ${pc(x.weightGBs, d.copy.readGBs)} of copy |`
        : T === 'ab' ? Object.entries(x).map(([n, y]) =>
          `| matmul ${t} ${o.R} x ${o.K}, T 1, decode driver ${n} (interleaved) | ${f(y.weightGBs)} GB/s of weights | ${pc(y.weightGBs, d.copy.readGBs)} of copy |`).join('\n')
        : `| matmul ${t} ${o.R} x ${o.K}, T ${T} (tiled kernel) | ${f(x.gops)} GOP/s | ${pc(x.gops, d.int8mm.gops)} of int8 mm |`);
  for (const [name, m] of Object.entries(res.models)) {
    const mm = m.model;
    const w = `${name}: ${mm.types}, E ${mm.E}, F ${mm.F}, ${mm.L} layers, V ${mm.V}, ${(mm.weightBytes / 2 ** 20).toFixed(1)} MiB read a token`;
    lines.push(`| ${w}: matmuls alone, T 1 | ${f(mm.mmDecode.tokS)} tok/s, ${f(mm.mmDecode.weightGBs)} GB/s | ${pc(mm.mmDecode.weightGBs, d.copy.readGBs)} of copy |`);
    for (const [n, y] of Object.entries(mm.mmDecodeAB || {}))
      lines.push(`| ${w}: matmuls alone, T 1, decode driver ${n} (interleaved) | ${f(y.tokS)} tok/s, ${f(y.ms)} ms | — |`);
    lines.push(`| ${w}: matmuls alone, T ${o.pp} | ${f(mm.mmPrefill.tokS)} tok/s, ${f(mm.mmPrefill.gops)} GOP/s | ${pc(mm.mmPrefill.gops, d.int8mm.gops)} of int8 mm |`);
    lines.push(`| ${w}: forward pass (llama.mjs) pp${o.pp} | ${f(mm.ppTokS)} tok/s | — |`);
    lines.push(`| ${w}: forward pass (llama.mjs) tg${o.tg}, ${mm.cmds} commands a token | ${f(mm.tgTokS)} tok/s, ${f(mm.decodeGBs)} GB/s | ${pc(mm.decodeGBs, d.copy.readGBs)} of copy |`);
    if (mm.greedy) {
      const g = mm.greedy;
      lines.push(`| ${w}: greedy decoding on the GPU (llama.mjs's greedy) tg${o.tg}, ${g.cmds} commands a token, ids ${g.greedySame ? 'those of' : 'NOT those of'} forward + a CPU pick | ${f(g.tgTokS)} tok/s, ${f(g.decodeGBs)} GB/s | ${pc(g.decodeGBs, d.copy.readGBs)} of copy |`);
    }
    if (mm.unfused) {
      const u = mm.unfused;
      lines.push(`| ${w}: unfused forward pass (fuse: false) pp${o.pp} | ${f(u.ppTokS)} tok/s | — |`);
      lines.push(`| ${w}: unfused forward pass (fuse: false) tg${o.tg}, ${u.cmds} commands a token | ${f(u.tgTokS)} tok/s, ${f(u.decodeGBs)} GB/s | ${pc(u.decodeGBs, d.copy.readGBs)} of copy |`);
    }
  }
  return lines.join('\n') + '\n';
}
