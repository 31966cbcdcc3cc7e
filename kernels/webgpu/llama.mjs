// llama.mjs — the forward pass of llama, qwen2 and qwen3 GGUF files on the webgpu set: a file's
// weights uploaded once, the KV cache (f32) on the GPU, logits read back. The sequence is
// engine/runtime/forward.c's for these recipes: per layer rmsnorm -> Q8 quantize -> Q, K, V
// (+ their biases: qwen2, and llama where the file has them) -> per-head RMSNorm of Q and K
// (qwen3) -> RoPE (llama: normal style, GGUF's llama rows are permuted for it; qwen2/qwen3:
// neox) -> K, V into the cache -> attention -> quantize -> O -> residual add -> rmsnorm ->
// quantize -> gate, up -> SwiGLU -> quantize -> down -> residual add; then the output norm,
// quantize and the output head (token_embd itself when the file has no output.weight: tied).
// Token embeddings are dequantized on the CPU (one row per token, ref's float products).
// By default (fuse) the layer is recorded as 10 commands with the same bits: rmsnorm_q (the
// residual add, the norm and its quantize), one matmul for q | k | v and one for gate | up (per
// group of matrices of one type), rope_kv (biases, qwen3's head norms, RoPE, the K/V cache),
// attention (one dispatch and a quantize, or at decode two, the second quantizing), o,
// rmsnorm_q, swiglu_q, down; fuse: false records the sequence above,
// one dispatch per op (kernels/webgpu/README.md, "Fewer commands").
// Matrices: Q8_0, Q4_0, Q4_K, Q6_K (quantized activations, ref's bits) and F16 (f32 activations);
// norms and biases F32. A file with anything else — another architecture, a tensor type the set
// has no matmul for (Q5_K, Q5_0, ...), a tensor or a key that changes the forward pass and that
// this file does not implement (a layer sliding window, experts, soft-caps, longrope, ...) — is
// refused by `gpuSupport` naming what, before anything is uploaded: never half-run.

import { ropePlan, ropeTable, quantRowBytes } from './plumb-webgpu.mjs';

const GGML_NAMES = { 0: 'F32', 1: 'F16', 2: 'Q4_0', 3: 'Q4_1', 6: 'Q5_0', 7: 'Q5_1', 8: 'Q8_0', 9: 'Q8_1',
  10: 'Q2_K', 11: 'Q3_K', 12: 'Q4_K', 13: 'Q5_K', 14: 'Q6_K', 15: 'Q8_K', 16: 'IQ2_XXS', 17: 'IQ2_XS',
  18: 'IQ3_XXS', 19: 'IQ1_S', 20: 'IQ4_NL', 21: 'IQ3_S', 22: 'IQ2_S', 23: 'IQ4_XS', 24: 'I8', 25: 'I16',
  26: 'I32', 27: 'I64', 28: 'F64', 29: 'IQ1_M', 30: 'BF16' };
export const BLOCK = { F32: [1, 4], F16: [1, 2], Q4_0: [32, 18], Q8_0: [32, 34], Q4_K: [256, 144], Q6_K: [256, 210] };
const DOT = { Q4_0: 'Q8_0', Q8_0: 'Q8_0', Q4_K: 'Q8_K', Q6_K: 'Q8_K', F16: 'F32' };
// The architectures this forward pass runs: RoPE style, the attention's extra tensors.
export const ARCHS = {
  llama: { neox: false, bias: 'optional', qkNorm: false },
  qwen2: { neox: true, bias: 'required', qkNorm: false },
  qwen3: { neox: true, bias: 'none', qkNorm: true },
};
// The <arch>.* keys it understands; any other such key (a window, experts, a soft-cap, a
// multiplier) changes the forward pass and refuses the file. RoPE's scaling keys are read as
// engine/runtime/model.c's read_rope reads them (ropeOf).
const ROPE_KEYS = ['rope.scaling.type', 'rope.scaling.factor', 'rope.scale_linear',
  'rope.scaling.original_context_length', 'rope.scaling.attn_factor', 'rope.scaling.yarn_ext_factor',
  'rope.scaling.yarn_attn_factor', 'rope.scaling.yarn_beta_fast', 'rope.scaling.yarn_beta_slow',
  'rope.scaling.yarn_truncate'];
const KEYS = new Set(['context_length', 'embedding_length', 'block_count', 'feed_forward_length',
  'attention.head_count', 'attention.head_count_kv', 'attention.layer_norm_rms_epsilon', 'rope.freq_base',
  'rope.dimension_count', 'attention.key_length', 'attention.value_length', 'vocab_size', ...ROPE_KEYS]);

// The metadata and tensor table of a GGUF file (an ArrayBuffer): { kv, tensors: {name: {dims,
// type (ggml's name), data (a Uint8Array view; null for a type this set has no layout for)}} }.
// Refuses a type number ggml does not have.
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
    if (!GGML_NAMES[type]) throw new Error(`tensor ${name}: type ${type} is no ggml type`);
    infos.push({ name, dims, type: GGML_NAMES[type], offset });
  }
  const align = kv['general.alignment'] || 32;
  const base = Math.ceil(o / align) * align;
  const tensors = {};
  for (const t of infos) {
    if (!BLOCK[t.type]) { tensors[t.name] = { ...t, rowBytes: 0, data: null }; continue; }
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

// The engine's greedy pick of a row of logits (generate.c): the first maximum (`>` from best = 0:
// a NaN at 0 is never beaten, one elsewhere never wins); the reference argmax.wgsl is checked
// against.
export function firstMax(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

// Row r of an embedding matrix as f32, as ref's dequantize_row (one float product per element);
// the reference embed.wgsl's rows are checked against.
export function embedRow(t, r, out) {
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
  if (t.type === 'Q6_K') { // ref: (d sc) q, each product rounded to float
    const fr = Math.fround;
    for (let k = 0; k < E / 256; k++) {
      const o = 210 * k, d = f16(dv.getUint16(o + 208, true));
      for (let h = 0; h < 2; h++) {
        const ql = o + 64 * h, qh = o + 128 + 32 * h, sc = o + 192 + 8 * h, y = 256 * k + 128 * h;
        for (let l = 0; l < 32; l++) {
          const s = l >> 4, a = dv.getUint8(ql + l), b = dv.getUint8(ql + 32 + l), c = dv.getUint8(qh + l);
          out[y + l] = fr(fr(d * dv.getInt8(sc + s)) * (((a & 15) | ((c & 3) << 4)) - 32));
          out[y + 32 + l] = fr(fr(d * dv.getInt8(sc + s + 2)) * (((b & 15) | (((c >> 2) & 3) << 4)) - 32));
          out[y + 64 + l] = fr(fr(d * dv.getInt8(sc + s + 4)) * (((a >> 4) | (((c >> 4) & 3) << 4)) - 32));
          out[y + 96 + l] = fr(fr(d * dv.getInt8(sc + s + 6)) * (((b >> 4) | (((c >> 6) & 3) << 4)) - 32));
        }
      }
    }
    return;
  }
  throw new Error(`token_embd of type ${t.type}: not supported by the webgpu forward pass`);
}

// The file's RoPE as engine/runtime/model.c's read_rope (and its checks) makes it, for ropePlan:
// { rope } or { why }. A factor (rope.scaling.factor, else rope.scale_linear) scales positions
// linearly whatever the type (absent: linear; none: no scaling); YaRN adds its ramp (ext_factor
// 1 unless the file says otherwise) over the original context (else the training context);
// rope_freqs.weight (llama 3) divides each pair's frequency. Every float as the engine's float.
function ropeOf(gguf, arch, D, neox) {
  const { kv, tensors } = gguf;
  const g = (k) => kv[`${arch}.${k}`];
  const has = (k) => g(k) !== undefined;
  const fr = Math.fround;
  const type = g('rope.scaling.type');
  if (has('rope.scaling.type') && !['none', 'linear', 'yarn'].includes(type))
    return { why: `key ${arch}.rope.scaling.type = '${type}': plumb implements none, linear and yarn` };
  const yarn = type === 'yarn', none = type === 'none';
  if (has('rope.scaling.yarn_ext_factor') && g('rope.scaling.yarn_ext_factor') !== -1 && !yarn)
    return { why: `key ${arch}.rope.scaling.yarn_ext_factor: a RoPE scaling override plumb does not implement` };
  if (has('rope.scaling.yarn_attn_factor') && g('rope.scaling.yarn_attn_factor') !== 1)
    return { why: `key ${arch}.rope.scaling.yarn_attn_factor: a RoPE scaling override plumb does not implement` };
  if (has('rope.scaling.yarn_truncate') && !g('rope.scaling.yarn_truncate') && !yarn)
    return { why: `key ${arch}.rope.scaling.yarn_truncate = false without yarn scaling` };
  const factor = has('rope.scaling.factor') ? g('rope.scaling.factor') : (g('rope.scale_linear') ?? 1);
  if (factor !== 0 && factor < 1 && !none) return { why: `key ${arch}.rope.scaling.factor = ${factor} must be >= 1` };
  let factors = null;
  const t = tensors['rope_freqs.weight'];
  if (t) {
    if (t.type !== 'F32' || t.dims.length !== 1 || t.dims[0] !== D / 2)
      return { why: `tensor rope_freqs.weight: ${t.type} [${t.dims}], the pass wants F32 [${D / 2}]` };
    factors = Array.from(new Float32Array(t.data.slice().buffer));
    const bad = factors.findIndex((f) => !(f > 0) || f === Infinity);
    if (bad >= 0) return { why: `tensor rope_freqs.weight[${bad}] = ${factors[bad]} is not a positive finite divisor` };
  }
  const ext = has('rope.scaling.yarn_ext_factor') ? g('rope.scaling.yarn_ext_factor') : -1;
  return { rope: { n_rot: D, freq_base: fr(g('rope.freq_base') ?? 10000),
    freq_scale: none || factor === 0 ? 1 : fr(1 / factor), factors,
    ext_factor: !yarn ? 0 : ext >= 0 ? fr(ext) : 1,
    attn_factor: fr(g('rope.scaling.attn_factor') ?? 1),
    beta_fast: fr(g('rope.scaling.yarn_beta_fast') ?? 32), beta_slow: fr(g('rope.scaling.yarn_beta_slow') ?? 1),
    n_ctx_orig: has('rope.scaling.original_context_length') ? g('rope.scaling.original_context_length') : g('context_length'),
    neox, yarn_no_truncate: yarn && g('rope.scaling.yarn_truncate') === false } };
}

// Whether this forward pass runs the file (readGGUF's result) exactly as the engine would:
// { ok: true, arch } or { ok: false, why } naming the architecture, key, tensor or type.
export function gpuSupport(gguf) {
  const { kv, tensors } = gguf;
  const arch = kv['general.architecture'];
  const A = ARCHS[arch];
  if (!A) return { ok: false, why: `architecture ${arch}: the webgpu forward pass runs ${Object.keys(ARCHS).join(', ')}` };
  for (const k of Object.keys(kv)) {
    if (!k.startsWith(arch + '.')) continue;
    const key = k.slice(arch.length + 1);
    if (key === 'expert_count' && kv[k] === 0) continue;
    if (!KEYS.has(key)) return { ok: false, why: `key ${k}: not in the webgpu forward pass` };
  }
  const g = (k) => kv[`${arch}.${k}`];
  const E = g('embedding_length'), L = g('block_count'), H = g('attention.head_count');
  const Hkv = g('attention.head_count_kv') || H;
  for (const [n, v] of [['embedding_length', E], ['block_count', L], ['attention.head_count', H],
    ['feed_forward_length', g('feed_forward_length')], ['attention.layer_norm_rms_epsilon', g('attention.layer_norm_rms_epsilon')]])
    if (!(v > 0)) return { ok: false, why: `key ${arch}.${n}: missing or not positive` };
  const D = g('attention.key_length') || E / H;
  if (!Number.isInteger(D) || D % 2 || H % Hkv) return { ok: false, why: `heads: E ${E}, H ${H}, Hkv ${Hkv}, D ${D} not a shape the pass runs` };
  if (D > 256) return { ok: false, why: `heads of ${D} dims: the webgpu attention takes at most 256` };
  if ((g('attention.value_length') || D) !== D) return { ok: false, why: `key ${arch}.attention.value_length differs from the key length` };
  if ((g('rope.dimension_count') || D) !== D) return { ok: false, why: `key ${arch}.rope.dimension_count: partial RoPE is not in the webgpu forward pass` };
  const rp = ropeOf(gguf, arch, D, A.neox);
  if (rp.why) return { ok: false, why: rp.why };
  // every tensor the pass reads, with what it must be; anything else is refused
  const want = new Map([['token_embd.weight', 'embd'], ['output_norm.weight', 'norm'], ['output.weight', 'matrix'],
    ['rope_freqs.weight', 'factors']]);
  for (let l = 0; l < L; l++) {
    for (const s of ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down']) want.set(`blk.${l}.${s}.weight`, 'matrix');
    for (const s of ['attn_norm', 'ffn_norm']) want.set(`blk.${l}.${s}.weight`, 'norm');
    if (A.bias !== 'none') for (const s of ['attn_q', 'attn_k', 'attn_v']) want.set(`blk.${l}.${s}.bias`, 'bias');
    if (A.qkNorm) for (const s of ['attn_q_norm', 'attn_k_norm']) want.set(`blk.${l}.${s}.weight`, 'norm');
  }
  const noMatmul = new Map(); // type -> the matrices of that type (every one is named)
  for (const [name, t] of Object.entries(tensors)) {
    const role = want.get(name);
    if (!role) return { ok: false, why: `tensor ${name}: not in the webgpu forward pass of ${arch}` };
    if ((role === 'norm' || role === 'bias') && t.type !== 'F32') return { ok: false, why: `tensor ${name} is ${t.type}: the webgpu forward pass wants F32 ${role}s` };
    if (role === 'matrix' && !DOT[t.type]) noMatmul.set(t.type, [...(noMatmul.get(t.type) || []), name]);
    if (role === 'embd' && !BLOCK[t.type]) return { ok: false, why: `tensor ${name} is ${t.type}: the webgpu forward pass has no ${t.type} embedding row` };
  }
  if (noMatmul.size)
    return { ok: false, why: `the webgpu set has no matmul for ${[...noMatmul].map(([ty, ns]) =>
      `${ty} (${ns.length > 2 ? `${ns.slice(0, 2).join(', ')} and ${ns.length - 2} more` : ns.join(', ')})`).join(', ')}; it has ${Object.keys(DOT).join(', ')}` };
  for (const [name, role] of want) {
    if (tensors[name] || name === 'output.weight' || role === 'factors') continue;
    if (role === 'bias' && A.bias === 'optional') continue;
    return { ok: false, why: `tensor ${name}: missing` };
  }
  if (A.bias === 'optional') // llama's biases: all of a layer's, or none
    for (let l = 0; l < L; l++) {
      const n = ['attn_q', 'attn_k', 'attn_v'].filter((s) => tensors[`blk.${l}.${s}.bias`]).length;
      if (n !== 0 && n !== 3) return { ok: false, why: `layer ${l}: ${n} of the q/k/v biases (the pass wants all or none)` };
    }
  const out = tensors['output.weight'] || tensors['token_embd.weight'];
  if (!DOT[out.type]) return { ok: false, why: `tensor token_embd.weight is ${out.type}: tied to the output head, and the webgpu set has no ${out.type} matmul` };
  return { ok: true, arch };
}

// The model on the device: weights uploaded once, the KV cache allocated for nCtx positions
// (a context window), or, with opts.window W > 0 (the session's sliding window) and opts.sinks S
// (0 <= S < W), engine/runtime/kvcache.h's ring: positions < S in slots [0, S) for good, position
// p >= S in slot S + (p - S) mod 2 (W - S); a query at p sees the sinks and positions
// (p - (W - S), p] (attention's window W - S, pl_attn_args' rule); a step evaluates at most
// W - S tokens (the session's steps; forward refuses more). nCtx is then unused. opts.fuse: the
// default of forward's fuse (true: the fused pass; false: the unfused sequence). opts.replay
// (default true): a fused decode step replays the last one's recording (recordStep); false
// records every step afresh (the A/B of the replay, and its check).
// Throws gpuSupport's reason for a file it does not run.
export function loadModel(ks, gguf, nCtx, opts = {}) {
  const sup = gpuSupport(gguf);
  if (!sup.ok) throw new Error(sup.why);
  const W = opts.window || 0, S = opts.sinks || 0;
  if (!(Number.isInteger(W) && Number.isInteger(S) && W >= 0 && W <= 2 ** 29 && (W > 0 ? S >= 0 && S < W : S === 0)))
    throw new Error(`sliding window ${W} with ${S} sinks: the pass wants 0 <= sinks < window (or both 0)`);
  if (!W && !(Number.isInteger(nCtx) && nCtx > 0)) throw new Error(`context of ${nCtx} positions`);
  const { kv, tensors } = gguf;
  const arch = sup.arch, A = ARCHS[arch];
  const g = (k) => kv[`${arch}.${k}`];
  const hp = { arch, E: g('embedding_length'), L: g('block_count'), H: g('attention.head_count'),
    Hkv: g('attention.head_count_kv') || g('attention.head_count'), F: g('feed_forward_length'),
    eps: Math.fround(g('attention.layer_norm_rms_epsilon')),
    V: tensors['token_embd.weight'].dims[1], neox: A.neox, tied: !tensors['output.weight'] };
  hp.D = g('attention.key_length') || hp.E / hp.H;
  hp.rope = ropeOf(gguf, arch, hp.D, A.neox).rope;
  const up = (name) => (tensors[name] ? { ...tensors[name], buf: ks.upload(tensors[name].data), off: 0, wOff: 0 } : null);
  // Tensors that one dispatch reads together share one buffer, uploaded once (no second copy):
  // consecutive matrices of one type and row size (q | k | v, gate | up; a Q4_K_M file's Q6_K
  // attn_v stays apart), each a view (wOff: its first byte) and the group a matrix of all their
  // rows (`groups`: one matmul of the fused pass); the q, k, v biases (off: the first float) and
  // the q and k norms.
  const cat = (names) => {
    const ts = names.map((nm) => tensors[nm]);
    const bytes = ts.reduce((a, t) => a + (t ? t.data.byteLength : 0), 0);
    if (!bytes) return ts.map(() => null);
    const all = new Uint8Array(bytes);
    const offs = [];
    let o = 0;
    for (const t of ts) { offs.push(o); if (t) { all.set(t.data, o); o += t.data.byteLength; } }
    const buf = ks.upload(all);
    return ts.map((t, i) => (t ? { ...t, buf, wOff: offs[i], off: offs[i] / 4 } : null));
  };
  const mats = (names) => {
    const groups = [];
    for (const nm of names) {
      const t = tensors[nm], g = groups[groups.length - 1];
      if (g && g.type === t.type && g.rowBytes === t.rowBytes) { g.names.push(nm); g.rows += t.dims[1]; }
      else groups.push({ type: t.type, rowBytes: t.rowBytes, names: [nm], rows: t.dims[1] });
    }
    const views = [], whole = [];
    for (const g of groups) {
      const vs = cat(g.names);
      views.push(...vs);
      whole.push({ type: g.type, rowBytes: g.rowBytes, dims: [vs[0].dims[0], g.rows], buf: vs[0].buf, wOff: 0 });
    }
    return [views, whole];
  };
  const layers = [];
  for (let l = 0; l < hp.L; l++) {
    const b = (s) => `blk.${l}.${s}`, n = (s) => up(b(s));
    const [[q, k, v], qkv] = mats([b('attn_q.weight'), b('attn_k.weight'), b('attn_v.weight')]);
    const [[gate, upm], gateUp] = mats([b('ffn_gate.weight'), b('ffn_up.weight')]);
    const [bq, bk, bv] = cat([b('attn_q.bias'), b('attn_k.bias'), b('attn_v.bias')]);
    const [q_norm, k_norm] = cat([b('attn_q_norm.weight'), b('attn_k_norm.weight')]);
    // a decode step of this layer folds rope_kv into its q | k | v matmuls' output
    // (matmul_rope.wgsl): llama's (no bias, no head norm, adjacent pairs), every group's type
    // with the fold
    const ropeFold = !bq && !bk && !bv && !q_norm && !k_norm && !hp.rope.neox && qkv.every((w) => ks.hasRopeFold(w.type));
    layers.push({ attn_norm: n('attn_norm.weight'), q, k, v, bq, bk, bv, q_norm, k_norm, o: n('attn_output.weight'),
      ffn_norm: n('ffn_norm.weight'), gate, up: upm, down: n('ffn_down.weight'), groups: { qkv, gateUp }, ropeFold });
  }
  const output = up(hp.tied ? 'token_embd.weight' : 'output.weight');
  // slots: the context window's positions, or the ring's S + 2 (W - S)
  const recent = W ? W - S : 0, ring = 2 * recent, cap = W ? S + ring : nCtx;
  const kvBytes = 4 * cap * hp.Hkv * hp.D;
  const cache = layers.map(() => ({ k: ks.buffer(kvBytes), v: ks.buffer(kvBytes) }));
  // each slot's position (a context window: slot p holds p; the ring: as placed, KV_EMPTY when
  // none, which no query sees)
  const slotPos = W ? new Int32Array(cap).fill(KV_EMPTY) : Int32Array.from({ length: cap }, (_, i) => i);
  const kvPos = ks.upload(slotPos);
  return { ks, hp, embd: tensors['token_embd.weight'], layers, outNorm: up('output_norm.weight'), output, cache, kvPos,
    nCtx: W ? Infinity : nCtx, window: W, sinks: S, recent, ring, cap, slotPos, evicted: 0, nPast: 0,
    fuse: opts.fuse ?? true, replay: opts.replay ?? true, frames: {}, greedy: null, spec: null, specPause: 0, steps: {},
    replays: 0 };
}
// A step's parts (recordStep's cut): 'doubling', parts of 1, 1, 2, 4, ... layers. With the step
// recorded ahead, a part's submission is Dawn's own encoding of it (~3.5 us a dispatch on the
// H200's host), and the GPU waits only for the first, small part: tg64 interleaved in one run,
// two runs (llama-1b; 8B width Q4_K; Q4_K_M, 8 layers): doubling 447, 432; 489, 466; 424, 429
// tok/s, every layer 395, 392; 457, 440; 404, 405, one submission 418, 430; 482, 444; 405, 414.
// Recorded as it ran, every layer was best (every layer 280, every 2 265, every 4 258 on the 1B:
// the GPU started sooner; kernels/webgpu/README.md).
const SUBMIT_EVERY = 'doubling';
// forward's speculation: after a miss, the decode steps that do not speculate (the miss's own
// included): a sampler that does not pick greedily costs the GPU one step in SPEC_PAUSE + 1
const SPEC_PAUSE = 4;
// greedy's steps in flight: while the GPU runs one, the CPU records the ones after it (a step's
// id comes back some time after the GPU is done with it: with two in flight the GPU can wait)
const GREEDY_DEPTH = 3;
const KV_EMPTY = 0x7fffffff; // engine/runtime/kvcache.h's PL_KV_EMPTY

// The slot of position p (kvcache.c's pl_kvcache_slot).
function slotOf(m, p) {
  return m.ring === 0 || p < m.sinks ? p : m.sinks + ((p - m.sinks) % m.ring);
}
// The name the first version had (llama only); the same function.
export const loadLlama = loadModel;

// Keeps the first n cached positions (the common prefix of the next prompt): the rows past n
// are overwritten by the next forward before any attention reads them. With a sliding window,
// as pl_kvcache_truncate: refused when the ring already overwrote a position the next query
// needs; the slots of positions >= n emptied.
export function truncate(m, n) {
  if (!(n >= 0 && n <= m.nPast)) throw new Error(`truncate to ${n}: the cache holds ${m.nPast} positions`);
  if (m.ring && n < m.nPast) {
    const need = Math.max(n - m.recent + 1, m.sinks);
    if (need < n && need < m.evicted)
      throw new Error(`truncate to ${n}: position ${need} was evicted by the sliding window (oldest kept: ${m.evicted})`);
    for (let j = 0; j < m.cap; j++) if (m.slotPos[j] !== KV_EMPTY && m.slotPos[j] >= n) m.slotPos[j] = KV_EMPTY;
    if (m.evicted > n) m.evicted = n;
  }
  m.nPast = n;
}

// Drops the decode step recorded ahead (forward), if any: its readback buffer given back unread.
function dropAhead(m) {
  if (m.ahead) m.ahead.fetch.cancel();
  m.ahead = null;
}

// Drops a speculative step in flight (forward's opts.speculate; default the model's, which is
// cleared), if any: submitted, so its readbacks are awaited (and dropped) in the background.
function dropSpec(m, sp = m.spec) {
  if (sp === m.spec) m.spec = null;
  if (!sp) return;
  sp.fetch().catch(() => null);
  sp.fetchId().catch(() => null);
}

// A benchmark's instrument: the GPU's time for a fused decode step with no CPU in its way. n
// steps at position nPast are recorded first (each over the cache as it stands; each writes the
// cache row at nPast, past what any query sees, and x is whatever the last step left), then
// submitted part by part with no wait between them: ms a step from the first submission to the
// queue's drain (the first part's encoding at submit included, spread over the n).
export async function gpuStepMs(m, n) {
  const p0 = m.nPast;
  if (m.ring || p0 >= m.nCtx || !(Number.isInteger(n) && n >= 1)) throw new Error('gpuStepMs: no ring, room for a step, n >= 1');
  dropAhead(m);
  dropSpec(m);
  const steps = [];
  for (let i = 0; i < n; i++)
    steps.push(recordStep(m, p0, 1, { fuse: true, every: 0, rows: 1, x0: null, readLogits: false }, false));
  const t0 = performance.now();
  for (const st of steps) for (const cb of st.parts) m.ks.device.queue.submit([cb]);
  await m.ks.device.queue.onSubmittedWorkDone();
  const ms = (performance.now() - t0) / n;
  for (const st of steps) {
    const err = await st.err;
    if (err) throw new Error(`webgpu forward pass: ${err.message}`);
  }
  return ms;
}

// Every buffer of the model, freed (the device stays).
export function freeModel(m) {
  dropAhead(m);
  dropSpec(m);
  const bufs = [m.kvPos, m.outNorm.buf, m.output.buf, ...m.cache.flatMap((c) => [c.k, c.v])];
  if (m.pick) bufs.push(m.pick.ids, m.pick.part, m.pick.embd.buf);
  for (const st of Object.values(m.steps)) bufs.push(...Object.values(st));
  for (const L of m.layers) for (const t of Object.values(L)) if (t && t.buf) bufs.push(t.buf);
  for (const b of new Set(bufs)) b.destroy();
  for (const f of Object.values(m.frames)) m.ks.dropFrame(f); // the decode frames' uniforms
}

// Evaluates tokens at positions [nPast, nPast + T): every token's logits (T rows of V floats).
// opts.rows: only the last rows positions get the output head and come back (a chat's step wants the last one;
// default: every position's). opts.fuse: the fused pass or the unfused sequence (default: the
// model's, loadModel's opts.fuse); the same logits, bit for bit.
// A decode step is recorded ahead: once a decode step's commands are submitted, and while the
// GPU runs them, the next position's decode step is recorded (its command buffers finished,
// not submitted: nothing in them depends on the token, whose row is written at submission);
// the next call, if it is that step (one token at that position, the same fuse, submitEvery
// and rows), submits them, else drops them. The same commands in the same order: the same
// bits. The CPU's recording (4-9 us a dispatch in Dawn's node binding, 162 dispatches a 1B
// token) then overlaps the GPU's work instead of preceding it. Not for a windowed ring (its
// slots move with each step), while profiling (the timestamps are read in recording order),
// or with opts.ahead false.
// opts.speculate (a caller whose sampler picks greedily: the chat at temperature 0): a decode step
// also ends in the engine's greedy pick of its logits on the GPU (argmax.wgsl), and the next
// step, on that pick's embedding row (embed.wgsl), is submitted at once, reading back its logits
// and its own pick; the next call, if it asks for that token at that position, has it in flight
// or done (a hit: no wait for the readback and the submission between steps), else drops it
// (a miss: its cache row is written again by the step asked for) and does not speculate for
// SPEC_PAUSE steps. The same logits either way, bit for bit (embedRow's row, the same commands).
export async function forward(m, tokens, opts = {}) {
  const tStart = performance.now();
  const { ks, hp } = m;
  const { E } = hp;
  const T = tokens.length, p0 = m.nPast;
  if (p0 + T > m.nCtx) throw new Error('context full');
  if (m.ring && T > m.recent)
    throw new Error(`${T} tokens in one step: a sliding window of ${m.window} with ${m.sinks} sinks takes at most ${m.recent}`);
  if (p0 + T > 0x7ffffffe) throw new Error(`position ${p0 + T} would overflow int32`);
  // the tokens' embedding rows (none for a speculation hit: its row was formed on the GPU)
  const embedAll = () => {
    const x0 = new Float32Array(T * E);
    for (let t = 0; t < T; t++) embedRow(m.embd, tokens[t], x0.subarray(t * E, (t + 1) * E));
    return x0;
  };
  const decode = T === 1;
  const fuse = opts.fuse ?? m.fuse;
  // opts.submitEvery: the parts' size in layers (recordStep)
  const every = opts.submitEvery ?? SUBMIT_EVERY;
  // the positions whose logits are read back: the head runs on those rows only (a prefill for a
  // chat's next token: one row of V instead of T; each row's logits are the same bits either way)
  const rows = Math.min(T, opts.rows ?? T);
  // speculation (opts.speculate): the step for this token already in flight, run on the GPU's own
  // pick of the last step's logits, is this step when that pick is the token asked for (a hit);
  // else it is dropped (a miss: its cache row is written again below) and speculation pauses
  const sp = m.spec;
  m.spec = null;
  let hit = false;
  if (sp) {
    hit = decode && sp.p0 === p0 && sp.fuse === fuse && sp.rows === rows && sp.token === tokens[0];
    if (!hit) {
      dropSpec(m, sp);
      if (decode && sp.p0 === p0) m.specPause = SPEC_PAUSE;
    }
  }
  // this step speculates on the next: a decode step (not a ring's, not while profiling), asked to,
  // not paused since a miss, with a position left
  const paused = m.specPause > 0;
  if (paused && decode) m.specPause--;
  const specNext = decode && !!opts.speculate && !m.ring && !ks.profilingOn() && !paused && p0 + 2 <= m.nCtx;
  if (specNext || hit) gpuPick(m);
  const ahead = m.ahead;
  const useAhead = !hit && !specNext && decode && ahead && ahead.p0 === p0 && ahead.fuse === fuse && ahead.every === every &&
    ahead.rows === rows && !ks.profilingOn();
  if (useAhead) m.ahead = null;
  else dropAhead(m);
  const placed = place(m, p0, T);
  let step;
  if (hit) {
    step = { ...sp, cutMs: 0 };
  } else if (useAhead) {
    const t0 = performance.now();
    ks.device.queue.writeBuffer(ahead.bufs.x, 0, embedAll());
    ks.device.pushErrorScope('validation');
    for (const cb of ahead.parts) ks.device.queue.submit([cb]);
    const scope = ks.device.popErrorScope();
    step = { ...ahead, err: Promise.all([ahead.err, scope]).then(([a, b]) => a || b), cutMs: performance.now() - t0 };
  } else {
    try {
      step = recordStep(m, p0, T, { fuse, every, rows, x0: embedAll(), pick: specNext, readId: specNext }, true);
    } catch (e) {
      if (placed) [m.slotPos, m.evicted] = placed;
      throw e;
    }
  }
  const tSubmit = performance.now();
  if (specNext) {
    // the next step submitted now, on the GPU's pick of this step's logits (it ends in the pick
    // too, for the step after); its token known once this step's pick is back
    try {
      m.spec = recordStep(m, p0 + 1, 1, { fuse, every: 0, rows: 1, x0: null, fromGpu: true, pick: true, readId: true }, true);
    } catch {
      m.spec = null; // the next step records itself (and meets the error there)
    }
  } else if (decode && !m.ring && p0 + 2 <= m.nCtx && opts.ahead !== false && !ks.profilingOn()) {
    try {
      m.ahead = recordStep(m, p0 + 1, 1, { fuse, every, rows: 1, x0: null }, false);
    } catch {
      m.ahead = null; // the next step records itself (and meets the error there)
    }
  }
  const tAhead = performance.now();
  const [err, got, gotId] = await Promise.all([step.err, step.fetch().then((b) => ({ b }), (e) => ({ e })),
    step.fetchId().then((b) => ({ b }), (e) => ({ e }))]);
  // opts.timing (an object, for the benchmarks): the step's CPU time up to its last submission (the
  // embedding row, the angles, recording — none where it was recorded ahead; cutMs of it in the
  // parts' submissions), the next step's recording (aheadMs), and from the last submission until
  // its logits are back (aheadMs included); ahead: whether this step was recorded ahead; spec:
  // 'hit', 'miss' (another token at that position), 'dropped' (another position or a prefill) or
  // null (no step speculated on)
  if (opts.timing) Object.assign(opts.timing, { cpuMs: tSubmit - tStart, aheadMs: tAhead - tSubmit,
    waitMs: performance.now() - tSubmit, cutMs: step.cutMs, ahead: !!useAhead,
    spec: hit ? 'hit' : !sp ? null : decode && sp.p0 === p0 ? 'miss' : 'dropped' });
  if (err || got.e || gotId.e) {
    if (placed) [m.slotPos, m.evicted] = placed;
    dropAhead(m);
    dropSpec(m);
    if (!decode) for (const b of Object.values(step.bufs)) b.destroy();
    throw new Error(`webgpu forward pass: ${(err || got.e || gotId.e).message}`);
  }
  m.nPast = p0 + T;
  if (m.spec) m.spec.token = new Uint32Array(gotId.b)[0];
  const out = new Float32Array(got.b);
  if (!decode) for (const b of Object.values(step.bufs)) b.destroy();
  return out;
}

// The slots positions [p0, p0 + T) take (the ring evicts what held them), before any layer, so
// the step's tokens see each other (pl_kvcache_place); attention scans the occupied slots.
// Returns what to restore if the step fails (null: no ring).
function place(m, p0, T) {
  if (!m.ring) return null;
  const placed = [m.slotPos.slice(), m.evicted];
  for (let p = p0; p < p0 + T; p++) m.slotPos[slotOf(m, p)] = p;
  if (p0 + T - m.ring > m.evicted) m.evicted = p0 + T - m.ring;
  return placed;
}

// Once: what the GPU needs to pick tokens and embed them (greedy, speculation): the embedding
// matrix on the GPU (the output head's buffer where it is tied), the id the steps pass on, the
// argmax's partials.
function gpuPick(m) {
  const { ks, hp } = m;
  m.pick ||= { embd: hp.tied ? m.output : { ...m.embd, buf: ks.upload(m.embd.data), wOff: 0 }, ids: ks.buffer(4),
    part: ks.buffer(4 * ks.argmaxPartWords(hp.V)) };
}

// Greedy decoding with each token picked on the GPU: feeds `token` at position nPast, then the
// engine's greedy pick of each step's logits (generate.c's first maximum: argmax.wgsl) as the
// next step's token (its embedding row formed on the GPU: embed.wgsl), until n ids are picked,
// one of them is in opts.stop (kept, and the last), or the context is full. Returns the ids
// picked; the cache then holds `token` and every id but the last (nPast grows by ids.length).
// No logits come back, only each step's id, so step j + 1 is submitted before step j's id is
// read: the GPU runs the steps back to back while the CPU records the next. The same commands as
// forward's one token at a time with that pick made on the CPU: the same ids (the conformance
// run checks it). A windowed ring takes the steps one at a time (a step run ahead and not kept
// would have moved the ring's slots), as does profiling (timestamps read in recording order).
// opts.onToken(id, i): each id as it comes; opts.fuse: forward's; opts.submitEvery: forward's,
// default 0 (a step in one submission: the GPU is busy with the steps before it, so nothing is
// gained by starting its first layers sooner, and each submission costs); opts.depth: the steps
// in flight (default GREEDY_DEPTH). On the H200 (tg64 at depth 512, one call, two runs, tok/s):
// forward a token at a time 482, 494 (llama-1b Q8_0), 502, 531 (8B width Q4_K), 484, 467 (Q4_K_M);
// greedy in parts, 2 in flight 536, 521; 600, 602; 551, 541; one submission a step, 2 in flight
// 563, 538; 625, 636; 579, 581; and 3 in flight 589, 578; 654, 650; 607, 576.
export async function greedy(m, token, n, opts = {}) {
  const { ks, hp } = m;
  if (!(Number.isInteger(token) && token >= 0 && token < hp.V))
    throw new Error(`greedy: token ${token} is not an id of the vocabulary (${hp.V})`);
  if (!(Number.isInteger(n) && n >= 1)) throw new Error(`greedy: ${n} tokens (at least 1)`);
  const p0 = m.nPast;
  if (p0 >= m.nCtx) throw new Error('context full');
  const steps = Math.min(n, m.nCtx - p0, 0x7ffffffe - p0);
  const stop = new Set(opts.stop || []);
  const fuse = opts.fuse ?? m.fuse, every = opts.submitEvery ?? 0;
  const depth = m.ring || ks.profilingOn() ? 1 : opts.depth ?? GREEDY_DEPTH;
  if (!(Number.isInteger(depth) && depth >= 1)) throw new Error(`greedy: depth ${depth} (steps in flight, at least 1)`);
  dropAhead(m);
  dropSpec(m);
  gpuPick(m);
  ks.device.queue.writeBuffer(m.pick.ids, 0, Uint32Array.of(token));
  const ids = [], inFlight = [];
  let next = 0;
  try {
    while (ids.length < steps) {
      while (next < steps && inFlight.length < depth) {
        const placed = place(m, p0 + next, 1);
        try {
          inFlight.push({ placed, st: recordStep(m, p0 + next, 1,
            { fuse, every, rows: 1, x0: null, fromGpu: true, pick: true, readId: true, readLogits: false }, true) });
        } catch (e) {
          if (placed) [m.slotPos, m.evicted] = placed;
          throw e;
        }
        next++;
      }
      const { placed, st } = inFlight.shift();
      const [err, got] = await Promise.all([st.err, st.fetchId().then((b) => ({ b }), (e) => ({ e }))]);
      if (err || got.e) {
        if (placed) [m.slotPos, m.evicted] = placed;
        throw new Error(`webgpu forward pass: ${(err || got.e).message}`);
      }
      const id = new Uint32Array(got.b)[0];
      ids.push(id);
      m.nPast = p0 + ids.length;
      if (opts.onToken) opts.onToken(id, ids.length - 1);
      if (stop.has(id)) break;
    }
  } finally {
    // a step submitted past the last one kept: its id read and dropped (its cache row lies past
    // nPast, written again before any query sees it)
    for (const { st } of inFlight) await Promise.all([st.err, st.fetchId().catch(() => null)]);
  }
  return ids;
}

// Records the step of T tokens at positions [p0, p0 + T) (fuse, every, rows: forward's; x0: the
// tokens' embedding rows, written here; null: the caller writes them into the step's x before
// submitting; fromGpu: a decode step whose row is the embedding of the id m.pick.ids holds;
// pick: ending in the engine's greedy pick of its logits into that id; readId, readLogits: what
// comes back) and writes its
// positions, angles and (ring) slots; with submitNow each part is
// submitted as it is finished, else the parts' command buffers are kept. Returns { p0, fuse,
// every, bufs, parts, fetch and fetchId (the logits' and the pick's readbacks, to call once all
// parts are submitted, null when not read; cancel() gives the buffer back unread), err (the
// recording's validation scope), cutMs }.
function recordStep(m, p0, T, { fuse, every, rows, x0, fromGpu = false, pick = false, readId = false, readLogits = true },
  submitNow) {
  const { ks, hp } = m;
  const { E, H, Hkv, D, F, V } = hp;
  const pos = Array.from({ length: T }, (_, t) => p0 + t);
  const rope = hp.rope;
  // the angles of these positions, once for q, k and every layer
  const plan = ropePlan(rope, D);
  const table = ropeTable(rope, plan, pos);
  // A decode step (T = 1) reuses one set of buffers, sized for the whole context, and records the
  // same dispatches every token (ks.beginFrame): only the token's row, its position, its angles
  // and the attention's length are written. A prefill makes its own and frees them.
  const decode = T === 1;
  const N = Math.min(p0 + T, m.cap);
  // the cache rows of the step's tokens, as runs of consecutive slots: [first token, slot, count]
  const runs = [];
  for (let t = 0; t < T; t++) {
    const sl = slotOf(m, p0 + t), r = runs[runs.length - 1];
    if (r && r[1] + r[2] === sl) r[2]++;
    else runs.push([t, sl, 1]);
  }
  const bufs = decode ? (m.steps[fuse ? 'fused' : 'unfused'] ||= stepBuffers(m, 1, m.cap, fuse, 1, true)) : stepBuffers(m, T, N, fuse, rows);
  const { x, xn, xq, q, k, v, qkv, att, tmp, gate, upb, gu, ffh, qPos, scratch, logits, cs } = bufs;
  if (x0) ks.device.queue.writeBuffer(x, 0, x0);
  ks.device.queue.writeBuffer(qPos, 0, new Int32Array(pos));
  ks.device.queue.writeBuffer(cs, 0, table);
  if (m.ring) ks.device.queue.writeBuffer(m.kvPos, 0, m.slotPos);
  ks.device.pushErrorScope('validation');
  try {
    let enc = ks.device.createCommandEncoder();
    ks.mark(enc); // a benchmark's timestamp (profiling('marks')); else nothing
    // The step goes to the GPU in parts (SUBMIT_EVERY: parts of 1, 1, 2, 4, ... layers): at each
    // cut the commands so far are submitted and a new encoder takes the rest, so the GPU runs the
    // first layers while the CPU records (or, recorded ahead, submits) the next (recording a layer
    // takes about as long as the GPU runs it: kernels/webgpu/README.md). The queue runs the submissions in order, each seeing
    // the writes of those before it: the same commands in the same order, the same bits. Not for
    // a windowed ring: a step that fails after a part ran would have overwritten cache slots that
    // entries the restored state still sees hold (elsewhere a failed step's rows lie past nPast).
    // every: the parts' size in layers (default SUBMIT_EVERY; 0: the step in one submission;
    // 'doubling': parts of 1, 1, 2, 4, ... layers, cuts after layers 2^k - 1), a benchmark's
    // knob: the same commands in the same order either way. A step recorded ahead keeps the same
    // parts and submits them one by one.
    const cutAfter = (l) => (every === 'doubling' ? ((l + 1) & l) === 0 : l === 0 || (l + 1) % every === 0);
    const parts = [];
    const send = () => {
      const cb = enc.finish();
      if (submitNow) ks.device.queue.submit([cb]);
      else parts.push(cb);
    };
    let cutMs = 0; // the time in the parts' submissions (opts.timing)
    const cutNow = () => {
      const t0 = performance.now();
      ks.flush(enc);
      send();
      enc = ks.device.createCommandEncoder();
      cutMs += performance.now() - t0;
    };
    // the fused and the unfused sequences record different dispatches, as do the steps that
    // embed on the GPU or end in the pick: a frame each
    const key = decode ? m.frames[(fuse ? 'fused' : 'unfused') + (fromGpu ? '/embed' : '') + (pick ? '/pick' : '')] ||= {} : null;
    // A fused decode step replays the last one's recording when nothing but the position differs
    // (the same cuts; no ring, whose slots and window move; the attention the same way, split or
    // not, for this N): the parameters that depend on the position — the q | k | v matmuls with
    // RoPE folded in (the slot) or rope_kv (p0), the attention (N, and the split's chunks) — are
    // patched in the frame (tpl.dyn: each dispatch's index and its patch, ks.patchFrame), then
    // the frame's dispatches are recorded as they stand, cut where the recording was. The same
    // commands in the same order as recording the step afresh: the same bits. tpl is made by each
    // fresh recording of such a step.
    const replayable = decode && fuse && m.replay && !m.ring && !ks.profilingOn();
    const split = ks.attnSplits(T, H, N, D);
    const tpl = replayable && key.tpl && key.tpl.every === every && key.tpl.split === split ? key.tpl : null;
    const cap = replayable && !tpl ? { every, split, dyn: [], cuts: [] } : null;
    const cut = (l) => {
      if (!every || m.ring || l === hp.L - 1 || !cutAfter(l)) return;
      if (cap) cap.cuts.push(ks.frameAt());
      cutNow();
    };
    // a dispatch (or two: the split attention) whose parameters follow the step: recorded now by
    // record(), and its patch(k, step) kept for a replay
    const st = { p0, N, slot: slotOf(m, p0) };
    const dynamic = (record, patch) => {
      if (cap) cap.dyn.push({ k: ks.frameAt(), patch });
      record();
    };
    if (tpl) {
      ks.patchFrame(key, () => {
        for (const d of tpl.dyn) d.patch(d.k, st);
      });
      let at = 0;
      for (const c of tpl.cuts) {
        ks.replayFrame(enc, key, at, c);
        cutNow();
        at = c;
      }
      ks.replayFrame(enc, key, at);
      m.replays++;
    }
    if (decode && !tpl) ks.beginFrame(key);
    const g = fromGpu || pick || readId ? m.pick : null;
    // fromGpu: the input row is the embedding of the id the GPU holds (the last step's pick)
    if (!tpl && fromGpu) ks.embed(enc, { w: g.embd.buf, wOff: g.embd.wOff, type: g.embd.type, E, V, rowBytes: g.embd.rowBytes, ids: g.ids, x });
    // y[T][ldy] from column yOff = W . quantize(src[T][K]). same: src is unchanged since the last
    // mm (or rmsnormQ / swigluQ wrote it quantized), so xq still holds it where the dot type is this
    // one's (q, k, v of one input; gate, up).
    let xqHolds = null;
    // options: same (above); yOff, ldy (y's first column and row length); tRows: the last tRows of
    // the T rows only (the output head when rows asks for fewer); foldRope: a decode step's
    // q | k | v matmul with rope_kv folded in (ks.matmul's rope, but for its slot: the step's,
    // patched on a replay)
    const mm = (w, src, K, y, { same = false, yOff = 0, ldy = w.dims[1], tRows = T, foldRope = null } = {}) => {
      const dt = DOT[w.type];
      if (!dt) throw new Error(`matmul of ${w.type}: not in the webgpu set`);
      const held = same && xqHolds && xqHolds.src === src && xqHolds.dt === dt && xqHolds.K === K;
      if (dt !== 'F32' && !held) ks.quantize(enc, dt, { x: src, y: xq, n: K, rows: T });
      xqHolds = dt === 'F32' ? null : { src, dt, K };
      const xRow = dt === 'F32' ? 4 * K : quantRowBytes(dt, K);
      const a = { w: w.buf, wOff: w.wOff, x: dt === 'F32' ? src : xq, xOff: (T - tRows) * xRow, y, K, R: w.dims[1],
        T: tRows, wRow: w.rowBytes, xRow, yOff, ldy, rope: foldRope && { ...foldRope, slot: st.slot } };
      if (foldRope) dynamic(() => ks.matmul(enc, w.type, a), (k, s) => ks.patchMatmulRope(k, w.type, s.slot));
      else ks.matmul(enc, w.type, a);
    };
    const scale = Math.fround(1 / Math.sqrt(D));
    const nq = H * D, nkv = Hkv * D, nqkv = nq + 2 * nkv;
    if (tpl) {
      // replayed above
    } else if (!fuse) {
      // The unfused sequence (opts.fuse false): a dispatch per op, the biases by add, qwen3's
      // norms through att, the cache by copies. The A/B of the fused pass, and its bits.
      // y[t][0, n) += b for every token (a bias: one add over the T rows, b repeated)
      const bias = (y, b, n) => { if (b) ks.add(enc, { x: y, y: b.buf, yOff: b.off, n: T * n, ym: n }); };
      for (let l = 0; l < hp.L; l++) {
        const L = m.layers[l], C = m.cache[l];
        ks.rmsnorm(enc, { x, w: L.attn_norm.buf, y: xn, n: E, rows: T, eps: hp.eps });
        mm(L.q, xn, E, q);
        mm(L.k, xn, E, k, { same: true });
        mm(L.v, xn, E, v, { same: true });
        bias(q, L.bq, nq);
        bias(k, L.bk, nkv);
        bias(v, L.bv, nkv);
        if (L.q_norm) { // qwen3: RMSNorm of every head's D values (into att, then back), before RoPE
          ks.rmsnorm(enc, { x: q, w: L.q_norm.buf, wOff: L.q_norm.off, y: att, n: D, rows: T * H, eps: hp.eps });
          ks.copy(enc, att, 0, q, 0, 4 * T * nq);
        }
        if (L.k_norm) {
          ks.rmsnorm(enc, { x: k, w: L.k_norm.buf, wOff: L.k_norm.off, y: att, n: D, rows: T * Hkv, eps: hp.eps });
          ks.copy(enc, att, 0, k, 0, 4 * T * nkv);
        }
        ks.rope(enc, { x: q, tokens: T, H, D, pos, rope, cs });
        ks.rope(enc, { x: k, tokens: T, H: Hkv, D, pos, rope, cs });
        for (const [t, sl, n] of runs) {
          ks.copy(enc, k, 4 * t * nkv, C.k, 4 * sl * nkv, 4 * n * nkv);
          ks.copy(enc, v, 4 * t * nkv, C.v, 4 * sl * nkv, 4 * n * nkv);
        }
        ks.attention(enc, { q, k: C.k, v: C.v, qPos, kvPos: m.kvPos, scratch, out: att, T, H, Hkv, D, N,
          kvF16: false, window: m.recent, nSinks: m.sinks, layerWindow: 0, scale });
        mm(L.o, att, nq, tmp);
        ks.add(enc, { x, y: tmp, n: T * E });
        ks.rmsnorm(enc, { x, w: L.ffn_norm.buf, y: xn, n: E, rows: T, eps: hp.eps });
        mm(L.gate, xn, E, gate);
        mm(L.up, xn, E, upb, { same: true });
        ks.swiglu(enc, { gate, up: upb, y: ffh, n: T * F });
        mm(L.down, ffh, F, tmp);
        ks.add(enc, { x, y: tmp, n: T * E });
        cut(l);
      }
      ks.rmsnorm(enc, { x, w: m.outNorm.buf, y: xn, n: E, rows: T, eps: hp.eps });
      mm(m.output, xn, E, logits, { ldy: V, tRows: rows });
    } else {
      // The fused sequence: the same operations on the same floats in the same order, so the same
      // bits (kernels/webgpu/README.md, "Fewer commands"). A residual branch (in tmp) is added by
      // the next norm's rmsnormQ, which also quantizes for the matmuls it feeds; q | k | v and
      // gate | up are one matmul per group of matrices of one type (one when the types agree) into
      // rows [T][q | k | v] and [T][gate | up]; ropeKV adds the biases, norms qwen3's heads, ropes q
      // and k and writes k and v into the cache at their slots; swigluQ quantizes for down.
      // The residual stream lives in x and x2 by turns: a norm that adds the pending branch writes
      // the sum to the other one (rmsnorm_q's workgroups each read the whole row: none may write it).
      let pending = null, cur = x, other = bufs.x2;
      const norm = (w, next) => { // the norm of x (+ the pending branch) into xn, quantized for next
        const dt = DOT[next.type];
        ks.rmsnormQ(enc, dt === 'F32' ? null : dt, { x: cur, r: pending, xo: other, w: w.buf, y: xn, q: xq, n: E, rows: T,
          eps: hp.eps });
        if (pending) [cur, other] = [other, cur];
        pending = null;
        xqHolds = dt === 'F32' ? null : { src: xn, dt, K: E };
      };
      const group = (ws, y, ld, foldRope = null) => {
        let col = 0;
        for (const w of ws) { mm(w, xn, E, y, { same: true, yOff: col, ldy: ld, foldRope }); col += w.dims[1]; }
      };
      for (let l = 0; l < hp.L; l++) {
        const L = m.layers[l], C = m.cache[l], G = L.groups;
        norm(L.attn_norm, G.qkv[0]);
        const bias = L.bq || L.bk || L.bv, qn = L.q_norm || L.k_norm;
        // a decode step of a layer that folds rope_kv into the q | k | v matmuls' output (loadModel's
        // ropeFold): one dispatch fewer a layer
        if (decode && L.ropeFold) {
          group(G.qkv, qkv, nqkv, { cs, q, kc: C.k, vc: C.v, H, Hkv, D, half: plan.half });
        } else {
          group(G.qkv, qkv, nqkv);
          dynamic(() => ks.ropeKV(enc, { x: qkv, ld: nqkv, T, H, Hkv, D, rope, cs, bias: bias ? bias.buf : null,
            bq: L.bq?.off, bk: L.bk?.off, bv: L.bv?.off, norm: qn ? qn.buf : null, nq: L.q_norm?.off, nk: L.k_norm?.off,
            eps: hp.eps, q, kc: C.k, vc: C.v, p0, sinks: m.sinks, ring: m.ring }), (k, s) => ks.patchRopeKV(k, s.p0));
        }
        const od = DOT[L.o.type]; // the attention's rows quantized for o by its last dispatch
        dynamic(() => ks.attention(enc, { q, k: C.k, v: C.v, qPos, kvPos: m.kvPos, scratch, out: att, T, H, Hkv, D, N,
          kvF16: false, window: m.recent, nSinks: m.sinks, layerWindow: 0, scale,
          quant: od === 'F32' ? null : { type: od, y: xq } }), (k, s) => ks.patchAttention(k, s.N));
        xqHolds = od === 'F32' ? null : { src: att, dt: od, K: nq };
        mm(L.o, att, nq, tmp, { same: true });
        pending = tmp;
        norm(L.ffn_norm, G.gateUp[0]);
        group(G.gateUp, gu, 2 * F);
        const dd = DOT[L.down.type];
        ks.swigluQ(enc, dd === 'F32' ? null : dd, { gate: gu, up: gu, y: ffh, q: xq, n: F, rows: T, gateLd: 2 * F, upOff: F, upLd: 2 * F });
        xqHolds = dd === 'F32' ? null : { src: ffh, dt: dd, K: F };
        mm(L.down, ffh, F, tmp, { same: true });
        pending = tmp;
        cut(l);
      }
      norm(m.outNorm, m.output);
      mm(m.output, xn, E, logits, { same: true, ldy: V, tRows: rows });
    }
    // pick: the engine's greedy pick of the step's logits into the id a next step embeds
    if (!tpl && pick) ks.argmax(enc, { x: logits, n: V, part: g.part, ids: g.ids });
    if (decode && !tpl) {
      ks.endFrame();
      key.tpl = cap; // null where this recording cannot be replayed
    }
    ks.mark(enc);
    // the logits' (and readId: the pick's) copy to a mappable buffer in the same command buffer:
    // one submission a step, and the validation scope and the mapping awaited together
    const none = async () => null;
    none.cancel = () => {};
    const fetch = readLogits ? ks.readAfter(enc, logits, 4 * rows * V) : none;
    const fetchId = readId ? ks.readAfter(enc, g.ids, 4) : none;
    ks.flush(enc); // (readAfter ends the pass; a step that reads nothing back ends it here)
    send();
    return { p0, fuse, every, rows, bufs, parts, fetch, fetchId, cutMs, err: ks.device.popErrorScope() };
  } catch (e) {
    if (decode) {
      ks.endFrame();
      key.tpl = null; // the frame may hold part of a recording
    }
    ks.device.popErrorScope();
    if (!decode) for (const b of Object.values(bufs)) b.destroy();
    throw e;
  }
}

// The activation buffers of a step of T tokens whose attention spans N slots (default: one
// token over every slot, the decode step's set), for the fused pass (fuse: the rows [T][q | k | v]
// and [T][gate | up], and x2, the residual stream's second buffer) or the unfused sequence (q, k, v, gate, up apart).
// rows: the positions whose logits the step keeps (the head's rows); decode: the set serves every
// position below N (the attention's scratch sized for any N' <= N).
function stepBuffers(m, T = 1, N = m.cap, fuse = true, rows = T, decode = false) {
  const { ks, hp } = m;
  const { E, H, Hkv, D, F, V } = hp;
  const maxK = Math.max(E, H * D, F);
  const mode = fuse ? { qkv: ks.buffer(4 * T * (H + 2 * Hkv) * D), gu: ks.buffer(8 * T * F), x2: ks.buffer(4 * T * E) }
    : { k: ks.buffer(4 * T * Hkv * D), v: ks.buffer(4 * T * Hkv * D), gate: ks.buffer(4 * T * F), upb: ks.buffer(4 * T * F) };
  return { x: ks.buffer(4 * T * E), xn: ks.buffer(4 * T * E),
    xq: ks.buffer(T * (maxK / 32) * 34 + T * (Math.ceil(maxK / 256) + 1) * 292),
    q: ks.buffer(4 * T * H * D), ...mode, att: ks.buffer(4 * T * H * D), tmp: ks.buffer(4 * T * E),
    ffh: ks.buffer(4 * T * F), qPos: ks.buffer(4 * T), scratch: ks.buffer(4 * ks.attnScratchFloats(T, H, N, D, decode)),
    logits: ks.buffer(4 * rows * V),
    cs: ks.buffer(4 * T * D) };
}
