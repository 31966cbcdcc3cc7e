// llama.mjs — a llama forward pass on the webgpu set: a GGUF file's weights uploaded once, the
// KV cache (f32) on the GPU, logits read back. The sequence is engine/runtime/forward.c's for
// the llama recipe: per layer rmsnorm -> Q8 quantize -> Q, K, V -> RoPE (normal style: GGUF's
// llama rows are permuted for it) -> K, V into the cache -> attention -> quantize -> O ->
// residual add -> rmsnorm -> quantize -> gate, up -> SwiGLU -> quantize -> down -> residual add;
// then the output norm, quantize and the output head. Token embeddings are dequantized on the CPU
// (one row per token, ref's float products). Weights: Q8_0, Q4_0 and Q4_K matrices (F32 norms).
// Not the engine's other families (biases, Q/K norms, windows): kernels/webgpu/README.md.

const GGUF_TYPES = { 0: 'F32', 1: 'F16', 2: 'Q4_0', 8: 'Q8_0', 12: 'Q4_K' };
const BLOCK = { F32: [1, 4], F16: [1, 2], Q4_0: [32, 18], Q8_0: [32, 34], Q4_K: [256, 144] };
const DOT = { Q4_0: 'Q8_0', Q8_0: 'Q8_0', Q4_K: 'Q8_K' };
const DOT_BLOCK = { Q8_0: [32, 34], Q8_K: [256, 292] };

// The metadata and tensor table of a GGUF file (an ArrayBuffer): { kv, tensors: {name: {dims,
// type, data (a Uint8Array view)}} }. Refuses what it does not know by name.
export function readGGUF(buf) {
  const dv = new DataView(buf);
  let o = 0;
  const u32 = () => { const v = dv.getUint32(o, true); o += 4; return v; };
  const u64 = () => { const v = Number(dv.getBigUint64(o, true)); o += 8; return v; };
  const str = () => { const n = u64(); const s = new TextDecoder().decode(new Uint8Array(buf, o, n)); o += n; return s; };
  if (u32() !== 0x46554747) throw new Error('not a GGUF file');
  const version = u32();
  if (version < 2) throw new Error(`GGUF version ${version} not supported`);
  const nTensors = u64(), nKv = u64();
  const scalar = {
    0: () => { const v = dv.getUint8(o); o += 1; return v; }, 1: () => { const v = dv.getInt8(o); o += 1; return v; },
    2: () => { const v = dv.getUint16(o, true); o += 2; return v; }, 3: () => { const v = dv.getInt16(o, true); o += 2; return v; },
    4: u32, 5: () => { const v = dv.getInt32(o, true); o += 4; return v; },
    6: () => { const v = dv.getFloat32(o, true); o += 4; return v; }, 7: () => { const v = dv.getUint8(o); o += 1; return v !== 0; },
    8: str, 10: u64, 11: () => { const v = Number(dv.getBigInt64(o, true)); o += 8; return v; },
    12: () => { const v = dv.getFloat64(o, true); o += 8; return v; },
  };
  const value = (t) => {
    if (t === 9) {
      const et = u32(), n = u64();
      const a = new Array(n);
      for (let i = 0; i < n; i++) a[i] = value(et);
      return a;
    }
    if (!scalar[t]) throw new Error(`GGUF value type ${t} unknown`);
    return scalar[t]();
  };
  const kv = {};
  for (let i = 0; i < nKv; i++) { const k = str(); kv[k] = value(u32()); }
  const infos = [];
  for (let i = 0; i < nTensors; i++) {
    const name = str(), nd = u32(), dims = [];
    for (let d = 0; d < nd; d++) dims.push(u64());
    const type = u32(), offset = u64();
    if (!GGUF_TYPES[type]) throw new Error(`tensor ${name}: type ${type} not supported by the webgpu set`);
    infos.push({ name, dims, type: GGUF_TYPES[type], offset });
  }
  const align = kv['general.alignment'] || 32;
  const base = Math.ceil(o / align) * align;
  const tensors = {};
  for (const t of infos) {
    const [bs, bb] = BLOCK[t.type];
    const n = t.dims.reduce((a, b) => a * b, 1);
    tensors[t.name] = { ...t, rowBytes: (t.dims[0] / bs) * bb, data: new Uint8Array(buf, base + t.offset, (n / bs) * bb) };
  }
  return { kv, tensors };
}

function f16(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1024 + m) * 2 ** (e - 25);
}

// Row r of an embedding matrix as f32, as ref's dequantize_row (one float product per element).
function embedRow(t, r, out) {
  const E = t.dims[0], b = t.data.subarray(r * t.rowBytes, (r + 1) * t.rowBytes);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (t.type === 'F32') { for (let i = 0; i < E; i++) out[i] = dv.getFloat32(4 * i, true); return; }
  if (t.type === 'F16') { for (let i = 0; i < E; i++) out[i] = f16(dv.getUint16(2 * i, true)); return; }
  if (t.type === 'Q8_0') {
    for (let k = 0; k < E / 32; k++) {
      const d = f16(dv.getUint16(34 * k, true));
      for (let j = 0; j < 32; j++) out[32 * k + j] = Math.fround(dv.getInt8(34 * k + 2 + j) * d);
    }
    return;
  }
  if (t.type === 'Q4_0') {
    for (let k = 0; k < E / 32; k++) {
      const d = f16(dv.getUint16(18 * k, true));
      for (let j = 0; j < 16; j++) {
        const q = dv.getUint8(18 * k + 2 + j);
        out[32 * k + j] = Math.fround(((q & 15) - 8) * d);
        out[32 * k + 16 + j] = Math.fround(((q >> 4) - 8) * d);
      }
    }
    return;
  }
  if (t.type === 'Q4_K') { // ref: d1 = d sc, m1 = dmin m, then d1 q - m1, each rounded to float
    const fr = Math.fround;
    const u8 = (i) => dv.getUint8(i);
    for (let k = 0; k < E / 256; k++) {
      const o = 144 * k, d = f16(dv.getUint16(o, true)), dmin = f16(dv.getUint16(o + 2, true));
      const sm = (j) => (j < 4 ? [u8(o + 4 + j) & 63, u8(o + 8 + j) & 63]
        : [(u8(o + 8 + j) & 15) | ((u8(o + j) >> 6) << 4), (u8(o + 8 + j) >> 4) | ((u8(o + 4 + j) >> 6) << 4)]);
      for (let p = 0; p < 4; p++) {
        const [s1, n1] = sm(2 * p), [s2, n2] = sm(2 * p + 1);
        const d1 = fr(d * s1), m1 = fr(dmin * n1), d2 = fr(d * s2), m2 = fr(dmin * n2);
        for (let l = 0; l < 32; l++) {
          const q = u8(o + 16 + 32 * p + l);
          out[256 * k + 64 * p + l] = fr(fr(d1 * (q & 15)) - m1);
          out[256 * k + 64 * p + 32 + l] = fr(fr(d2 * (q >> 4)) - m2);
        }
      }
    }
    return;
  }
  throw new Error(`token_embd of type ${t.type}: not supported by the webgpu forward pass`);
}

// The model on the device: weights uploaded once, the KV cache allocated for nCtx positions.
export function loadLlama(ks, gguf, nCtx) {
  const { kv, tensors } = gguf;
  const arch = kv['general.architecture'];
  if (arch !== 'llama') throw new Error(`architecture ${arch}: the webgpu forward pass runs llama`);
  const g = (k) => kv[`${arch}.${k}`];
  const hp = { E: g('embedding_length'), L: g('block_count'), H: g('attention.head_count'),
    Hkv: g('attention.head_count_kv'), F: g('feed_forward_length'), eps: Math.fround(g('attention.layer_norm_rms_epsilon')),
    base: Math.fround(g('rope.freq_base') || 10000), V: tensors['token_embd.weight'].dims[1] };
  hp.D = g('attention.key_length') || hp.E / hp.H;
  if ((g('rope.dimension_count') || hp.D) !== hp.D) throw new Error('partial RoPE: not in the webgpu forward pass');
  const up = (name) => {
    const t = tensors[name];
    if (!t) throw new Error(`no tensor ${name}`);
    return { ...t, buf: ks.upload(t.data) };
  };
  const layers = [];
  for (let l = 0; l < hp.L; l++) {
    const n = (s) => up(`blk.${l}.${s}.weight`);
    layers.push({ attn_norm: n('attn_norm'), q: n('attn_q'), k: n('attn_k'), v: n('attn_v'), o: n('attn_output'),
      ffn_norm: n('ffn_norm'), gate: n('ffn_gate'), up: n('ffn_up'), down: n('ffn_down') });
  }
  const output = up(tensors['output.weight'] ? 'output.weight' : 'token_embd.weight');
  const kvBytes = 4 * nCtx * hp.Hkv * hp.D;
  const cache = layers.map(() => ({ k: ks.buffer(kvBytes), v: ks.buffer(kvBytes) }));
  const kvPos = ks.upload(new Int32Array(Array.from({ length: nCtx }, (_, i) => i)));
  return { ks, hp, embd: tensors['token_embd.weight'], layers, outNorm: up('output_norm.weight'), output, cache, kvPos, nCtx, nPast: 0 };
}

// Evaluates tokens at positions [nPast, nPast + T): every token's logits (T rows of V floats).
export async function forward(m, tokens) {
  const { ks, hp } = m;
  const { E, H, Hkv, D, F, V } = hp;
  const T = tokens.length, p0 = m.nPast;
  if (p0 + T > m.nCtx) throw new Error('context full');
  const x0 = new Float32Array(T * E);
  for (let t = 0; t < T; t++) embedRow(m.embd, tokens[t], x0.subarray(t * E, (t + 1) * E));
  const x = ks.upload(x0), xn = ks.buffer(4 * T * E);
  const maxK = Math.max(E, H * D, F);
  const xq = ks.buffer(T * (maxK / 32) * 34 + T * (maxK / 256 + 1) * 292);
  const q = ks.buffer(4 * T * H * D), k = ks.buffer(4 * T * Hkv * D), v = ks.buffer(4 * T * Hkv * D);
  const att = ks.buffer(4 * T * H * D), tmp = ks.buffer(4 * T * E);
  const gate = ks.buffer(4 * T * F), upb = ks.buffer(4 * T * F), ffh = ks.buffer(4 * T * F);
  const qPos = ks.upload(new Int32Array(Array.from({ length: T }, (_, t) => p0 + t)));
  const scratch = ks.buffer(4 * T * H * (p0 + T));
  const logits = ks.buffer(4 * T * V);
  const pos = Array.from({ length: T }, (_, t) => p0 + t);
  const rope = { n_rot: D, freq_base: hp.base, freq_scale: 1, factors: null, ext_factor: 0, attn_factor: 1,
    beta_fast: 0, beta_slow: 0, n_ctx_orig: 0, neox: false, yarn_no_truncate: false };
  ks.device.pushErrorScope('validation');
  const enc = ks.device.createCommandEncoder();
  // y[T][R] = W . quantize(src[T][K])
  const mm = (w, src, K, y) => {
    const dt = DOT[w.type];
    if (!dt) throw new Error(`matmul of ${w.type}: not in the webgpu set`);
    const [bs, bb] = DOT_BLOCK[dt];
    ks.quantize(enc, dt, { x: src, y: xq, n: K, rows: T });
    ks.matmul(enc, w.type, { w: w.buf, x: xq, y, K, R: w.dims[1], T, wRow: w.rowBytes, xRow: (K / bs) * bb, ldy: w.dims[1] });
  };
  const scale = Math.fround(1 / Math.sqrt(D));
  for (let l = 0; l < hp.L; l++) {
    const L = m.layers[l], C = m.cache[l];
    ks.rmsnorm(enc, { x, w: L.attn_norm.buf, y: xn, n: E, rows: T, eps: hp.eps });
    mm(L.q, xn, E, q);
    mm(L.k, xn, E, k);
    mm(L.v, xn, E, v);
    ks.rope(enc, { x: q, tokens: T, H, D, pos, rope });
    ks.rope(enc, { x: k, tokens: T, H: Hkv, D, pos, rope });
    enc.copyBufferToBuffer(k, 0, C.k, 4 * p0 * Hkv * D, 4 * T * Hkv * D);
    enc.copyBufferToBuffer(v, 0, C.v, 4 * p0 * Hkv * D, 4 * T * Hkv * D);
    ks.attention(enc, { q, k: C.k, v: C.v, qPos, kvPos: m.kvPos, scratch, out: att, T, H, Hkv, D, N: p0 + T,
      kvF16: false, window: 0, nSinks: 0, layerWindow: 0, scale });
    mm(L.o, att, H * D, tmp);
    ks.add(enc, { x, y: tmp, n: T * E });
    ks.rmsnorm(enc, { x, w: L.ffn_norm.buf, y: xn, n: E, rows: T, eps: hp.eps });
    mm(L.gate, xn, E, gate);
    mm(L.up, xn, E, upb);
    ks.swiglu(enc, { gate, up: upb, y: ffh, n: T * F });
    mm(L.down, ffh, F, tmp);
    ks.add(enc, { x, y: tmp, n: T * E });
  }
  ks.rmsnorm(enc, { x, w: m.outNorm.buf, y: xn, n: E, rows: T, eps: hp.eps });
  mm(m.output, xn, E, logits);
  ks.device.queue.submit([enc.finish()]);
  const err = await ks.device.popErrorScope();
  if (err) throw new Error(`webgpu forward pass: ${err.message}`);
  m.nPast = p0 + T;
  const out = new Float32Array(await ks.read(logits, 4 * T * V));
  for (const b of [x, xn, xq, q, k, v, att, tmp, gate, upb, ffh, qPos, scratch, logits]) b.destroy();
  return out;
}
