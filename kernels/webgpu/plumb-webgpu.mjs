// plumb-webgpu.mjs — the webgpu kernel set's runtime: compiles the WGSL kernels of this folder
// into compute pipelines, makes buffers, records dispatches into a command encoder and reads
// results back. Runs wherever WebGPU does (a page with navigator.gpu, or node with Dawn's
// `webgpu` package): it only needs a GPUDevice and a way to load the .wgsl text.
//
//   const ks = await createKernels(device);           // sources fetched next to this module
//   const w = ks.upload(bytes);                        // a storage buffer (padded to 4 bytes)
//   const enc = device.createCommandEncoder();
//   ks.matmul(enc, 'Q8_0', { w, x, y, K, R, T, wRow, xRow, ldy });
//   ks.flush(enc);                                     // ends the kernels' compute pass
//   device.queue.submit([enc.finish()]);
//   const out = await ks.read(y, bytes);               // an ArrayBuffer
//
// What each kernel computes, and the bound it is held to, is in its .wgsl file and in
// kernels/webgpu/README.md; conformance/webgpu_cases.c is the judge.

const MATMUL = { Q8_0: 'matmul_q8_0.wgsl', Q4_0: 'matmul_q4_0.wgsl', Q4_K: 'matmul_q4_k.wgsl',
  Q6_K: 'matmul_q6_k.wgsl' };
// The tiled prefill drivers (matmul_qt.wgsl) and their types' weight readers.
// [the driver (null: the type's file is whole), the type's file]
const MATMUL_TILED = { Q8_0: ['matmul_qt.wgsl', 'matmul_qt_q8_0.wgsl'], Q4_0: ['matmul_qt.wgsl', 'matmul_qt_q4_0.wgsl'],
  Q4_K: [null, 'matmul_qt_q4_k.wgsl'], Q6_K: [null, 'matmul_qt_q6_k.wgsl'] };
const QUANT = { Q8_0: 'quantize_q8_0.wgsl', Q8_K: 'quantize_q8_k.wgsl' };
// The dot types' blocks: [elements, bytes].
const QBLOCK = { Q8_0: [32, 34], Q8_K: [256, 292] };
// The bytes of a quantized row of n floats as the quantizers lay rows out: the blocks, rounded up
// to a word (quantize.wgsl: each workgroup owns whole words, so rows start on words).
export function quantRowBytes(type, n) {
  const [bs, bb] = QBLOCK[type];
  return Math.ceil(((n / bs) * bb) / 4) * 4;
}
const OPS = ['rmsnorm', 'softmax', 'swiglu', 'rope', 'rope_kv', 'attention', 'add', 'embed', 'argmax'];
// embed.wgsl's row types (its P.type_ is the index) and their blocks: [elements, bytes]
const EMBED_TYPES = ['F32', 'F16', 'Q8_0', 'Q4_0', 'Q4_K', 'Q6_K'];
const EMBED_BLOCK = { F32: [1, 4], F16: [1, 2], Q8_0: [32, 34], Q4_0: [32, 18], Q4_K: [256, 144], Q6_K: [256, 210] };
export const MATMUL_TYPES = ['Q8_0', 'Q4_0', 'Q4_K', 'Q6_K', 'F16'];

// dot4(a, b): the four signed-byte products of a and b summed (exact in i32).
const DOT4_PACKED = 'fn dot4(a: u32, b: u32) -> i32 { return dot4I8Packed(a, b); }\n';
const DOT4_SHIFTS = `fn dot4(a: u32, b: u32) -> i32 {
  return (bitcast<i32>(a << 24u) >> 24u) * (bitcast<i32>(b << 24u) >> 24u)
       + (bitcast<i32>(a << 16u) >> 24u) * (bitcast<i32>(b << 16u) >> 24u)
       + (bitcast<i32>(a << 8u) >> 24u) * (bitcast<i32>(b << 8u) >> 24u)
       + (bitcast<i32>(a) >> 24u) * (bitcast<i32>(b) >> 24u);
}
`;
// Rows per workgroup of each matmul kernel (its NR).
const MATMUL_NR = { Q8_0: 8, Q4_0: 8, Q4_K: 8, Q6_K: 8, F16: 4 };
// The second decode driver's shape per type (matmul_qv.wgsl): [rows per workgroup, threads per
// row]; a thread takes whole blocks, a chunk is TPR blocks of each row. The K-quants' grouped
// mode (8 lanes a block: createKernels' decodeGP) takes 4 x 64 (chunks of 8 blocks).
const MATMUL_V2 = { Q8_0: [4, 64], Q4_0: [4, 64], Q4_K: [4, 16], Q6_K: [4, 16] };
const MATMUL_V2_GROUPED = [4, 64];
// attnSplit 'auto': attention in two dispatches from this many entries (below, one: a chunk of 64
// entries a workgroup would leave most of the two's work to their floor), for a prefill too where
// its scratch (the chunks' maxes, counts and sums: T H ceil(N / 64) (3 + D) floats) takes at most
// ATTN_SPLIT_MAX_BYTES:
// on the H200 at T = N = 512 a layer's attention took 1213 us split against 1853 in one dispatch
// (1B, D 64) and 2003 against 3485 (8B width, D 128), one run.
const ATTN_SPLIT_MIN_N = 256;
const ATTN_SPLIT_MAX_BYTES = 128 * 2 ** 20;
// decodeDriver 'auto': each type's decode driver as measured on an NVIDIA H200 (GPU timestamps of
// every matmul of a token, kernels/webgpu/README.md "Where a decode token's GPU time goes"):
// [driver, lanes a block, [rows, threads a row] of v2, rows a thread]. Q4_K and Q6_K: v2 grouped,
// 8 rows x 128 threads, 4 rows a thread (Q4_K 28672 x 4096: 53 us, 1245 GB/s, against 91.7 us
// with the grouped 2 x 128, one row a thread; the Q6_K head 1527 GB/s against v1's 920; 16 x 64
// the same on the large shapes, 10-15% slower on the 4096-row ones: kernels/webgpu/README.md).
const AUTO = { Q8_0: ['v2', 1, [4, 64]], Q4_0: ['v2', 1, [4, 64]], Q4_K: ['v2', 8, [8, 128], 4], Q6_K: ['v2', 8, [8, 128], 4] };
const GROUPED = ['Q4_K', 'Q6_K'];

const U = () => globalThis.GPUBufferUsage;

// The 2-D grid for n workgroups, at most max per dimension (WebGPU's limit is 65535): [x, y]
// with x * y >= n; the kernels take their index as x + y * (the grid's x).
function gridOf(n, max) {
  if (n <= max) return [Math.max(n, 1), 1];
  const y = Math.ceil(n / max);
  return [Math.ceil(n / y), y];
}

// options.source(name) -> Promise<string>: the text of a .wgsl file of this folder (default:
// fetched next to this module). options.patch(name, text) -> text: a hook the conformance test
// uses to plant faults in a kernel's source; production code leaves it out.
export async function createKernels(device, options = {}) {
  const source = options.source || (async (name) => {
    const r = await fetch(new URL(name, import.meta.url));
    if (!r.ok) throw new Error(`plumb-webgpu: cannot load ${name} (${r.status})`);
    return r.text();
  });
  const patch = options.patch || ((name, text) => text);
  // options.maxGrid: the largest grid dimension used (default 65535, the limit): the conformance
  // run sets it small so that every kernel's split grid is tested on small shapes.
  const maxGrid = options.maxGrid || 65535;
  const grid = (n) => gridOf(n, maxGrid);
  // options.packedDot: dot4 (4 int8 products summed, exact) by WGSL's dot4I8Packed (the
  // packed_4x8_integer_dot_product language feature) or by shifts; default: the feature where
  // navigator.gpu (or options.wgslFeatures, e.g. Dawn's gpu.wgslLanguageFeatures) has it.
  const feats = options.wgslFeatures || globalThis.navigator?.gpu?.wgslLanguageFeatures;
  const packedDot = options.packedDot ?? !!(feats && feats.has('packed_4x8_integer_dot_product'));
  const common = (await source('common.wgsl')) + '\n' + (packedDot ? DOT4_PACKED : DOT4_SHIFTS);
  // every matmul driver: the shared parameters, buffers and readers first; the quantized ones'
  // byte-stream activations
  const io = (await source('matmul_io.wgsl')) + '\n';
  const xq = io + (await source('matmul_xq.wgsl')) + '\n';
  // options.decodeDriver: the quantized matmuls' decode driver (T below tileMinT): 'auto' (the
  // default: AUTO's per type), 'v2' (matmul_qv.wgsl, whole blocks a thread, one barrier a chunk;
  // grouped: 8 lanes a block, two barriers a chunk) or 'v1' (matmul_q.wgsl, integer parts a
  // thread, three barriers a chunk); the same bits either way (ref's).
  // options.decodeNR, options.decodeTPR: v2's rows per workgroup and threads per row for every
  // type (default MATMUL_V2's; a benchmark knob and the conformance run's small-chunk run: the
  // order of the sums, hence every bit, is the same for any shape). options.decodeGP: 1 (the
  // default) or 8, the lanes sharing a Q4_K or Q6_K block in v2 (8: the grouped mode, word g of
  // each 32-byte run a lane; decodeTPR then a multiple of 8).
  // Under 'auto' decodeGP (given) puts both K-quants on the grouped v2 at MATMUL_V2_GROUPED's shape.
  const decodeDriver = options.decodeDriver ?? 'auto';
  if (decodeDriver !== 'v1' && decodeDriver !== 'v2' && decodeDriver !== 'auto')
    throw new Error(`plumb-webgpu: decodeDriver must be 'auto', 'v1' or 'v2', not ${decodeDriver}`);
  const auto = decodeDriver === 'auto';
  const driverOf = (t) => (auto ? AUTO[t][0] : decodeDriver);
  const gp = options.decodeGP ?? 1;
  if (gp !== 1 && gp !== 8) throw new Error(`plumb-webgpu: decodeGP must be 1 or 8, not ${gp}`);
  // lanes a block: decodeGP where given, else auto's per type
  const gpOf = (t) => (!GROUPED.includes(t) ? 1 : auto && options.decodeGP === undefined ? AUTO[t][1] || 1 : gp);
  // With decodeGP given, decodeNR and decodeTPR shape the grouped types only (Q8_0 and Q4_0 keep
  // their default: a grouped experiment's 8 rows x 64 threads would pass their workgroup).
  const v2Shape = (t) => {
    const d = auto && options.decodeGP === undefined && AUTO[t][2] ? AUTO[t][2]
      : gpOf(t) > 1 ? MATMUL_V2_GROUPED : MATMUL_V2[t];
    if (options.decodeGP !== undefined && !GROUPED.includes(t)) return d;
    return [options.decodeNR || d[0], options.decodeTPR || d[1]];
  };
  if (GROUPED.some((t) => v2Shape(t)[1] % gpOf(t)))
    throw new Error(`plumb-webgpu: decodeTPR (${options.decodeTPR}) must be a multiple of decodeGP (${gp})`);
  for (const k of ['decodeNR', 'decodeTPR'])
    if (options[k] !== undefined && !(Number.isInteger(options[k]) && options[k] >= 1 && options[k] <= 256))
      throw new Error(`plumb-webgpu: ${k} must be an integer from 1 to 256, not ${options[k]}`);
  // options.decodeRPT: 1 (the default), 2, 4 or 8, the rows a thread works for in the grouped
  // mode (its activation words read once for them all: matmul_qv.wgsl); decodeNR then a multiple
  // of it, and the workgroup NR / RPT x TPR threads. Under 'auto' (no decodeGP given), AUTO's.
  const rpt = options.decodeRPT;
  if (rpt !== undefined && ![1, 2, 4, 8].includes(rpt))
    throw new Error(`plumb-webgpu: decodeRPT must be 1, 2, 4 or 8, not ${rpt}`);
  const rptOf = (t) => (gpOf(t) === 1 ? 1 : rpt ?? (auto && options.decodeGP === undefined ? AUTO[t][3] || 1 : 1));
  for (const t of GROUPED)
    if (v2Shape(t)[0] % rptOf(t)) throw new Error(`plumb-webgpu: decodeNR (${v2Shape(t)[0]}) must be a multiple of decodeRPT (${rptOf(t)})`);
  if (Object.keys(MATMUL_V2).some((t) => (v2Shape(t)[0] / rptOf(t)) * v2Shape(t)[1] > 256))
    throw new Error('plumb-webgpu: decodeNR / decodeRPT x decodeTPR must be at most 256 (a workgroup)');
  const drivers = { v1: xq + await source('matmul_q.wgsl'), v2: xq + await source('matmul_qv.wgsl') };
  // the v2 driver's output: into Y (matmul_emit.wgsl), or a decode step's q | k | v with RoPE and
  // the cache writes folded in (matmul_rope.wgsl: RoPE's fields in MM, the four buffers it adds
  // bound after P)
  const emitPlain = await source('matmul_emit.wgsl');
  const emitRope = await source('matmul_rope.wgsl');
  const decodeSource = (t, text, rope = false) => {
    if (driverOf(t) === 'v1') return withNR(drivers.v1 + '\n' + text);
    const [n, tpr] = v2Shape(t);
    return `const NR: u32 = ${n}u;\nconst TPR: u32 = ${tpr}u;\nconst GP: u32 = ${gpOf(t)}u;\nconst RPT: u32 = ${rptOf(t)}u;\n` +
      drivers.v2 + '\n' + text + '\n' + (rope ? emitRope : emitPlain);
  };
  // the types whose decode matmul folds rope_kv in: the v2 driver with a block a thread (GP 1:
  // Q8_0, Q4_0), an even number of rows a workgroup (a pair of rows in one workgroup). On the
  // H200 (one process, the two ways alternated, greedy tg64 at depth 512) the fold took llama-1b
  // Q8_0 from 458 and 612 tok/s to 486 and 636 (16 dispatches fewer a token: node's recording of
  // a step is the 1B's bound), and the 8B width's Q4_K_M from 614 and 605 to 586 and 574 through
  // the grouped K-quant driver (8 dispatches fewer, a barrier and the rows' partners in every
  // q | k | v workgroup): the grouped types keep rope_kv.
  const ropeFold = (t) => driverOf(t) === 'v2' && gpOf(t) === 1 && v2Shape(t)[0] % 2 === 0;
  // rows per workgroup of the decode driver of type t
  const decodeRows = (t) => (driverOf(t) === 'v1' ? nr : v2Shape(t)[0]);

  // options.pipelineCache (a Map, for one device): pipelines by label and source text, shared by
  // the kernel sets made with it — a set with a planted fault (options.patch) compiles only the
  // pipelines whose text the fault changed (the conformance run makes a dozen sets).
  const cache = options.pipelineCache || null;
  // name: the file the kernel is (patch's name), or a list of them (each patch applied)
  function pipeline(label, name, text) {
    let code = common + '\n' + text;
    for (const n of Array.isArray(name) ? name : [name]) code = patch(n, code);
    if (!cache) return compile(label, code);
    const key = label + '\n' + code;
    let p = cache.get(key);
    if (!p) {
      p = compile(label, code);
      cache.set(key, p);
      p.catch(() => cache.delete(key)); // a failed compile is not kept (the caller sees its error)
    }
    return p;
  }
  async function compile(label, code) {
    device.pushErrorScope('validation');
    const module = device.createShaderModule({ label, code });
    const info = await module.getCompilationInfo();
    const errors = info.messages.filter((m) => m.type === 'error');
    if (errors.length)
      throw new Error(`plumb-webgpu: ${label} does not compile: ` +
        errors.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('; '));
    const p = await device.createComputePipelineAsync({ label, layout: 'auto', compute: { module, entryPoint: 'main' } });
    const err = await device.popErrorScope();
    if (err) throw new Error(`plumb-webgpu: ${label}: ${err.message}`);
    return p;
  }

  // options.only: the pipelines to build (names as in `pipes`: matmul_Q8_0, ..., attention);
  // default all.
  const want = (k) => !options.only || options.only.includes(k);
  // options.matmulNR: rows per workgroup of the decode driver v1 (default MATMUL_NR's 8;
  // a benchmark knob: the sums' order, hence every bit, is the same for any NR), each type's
  // chunk CH shrunk where NR x CH (x NP) would pass the driver's workgroup arrays (512, 1024).
  const nr = options.matmulNR || MATMUL_NR.Q8_0;
  const withNR = (text) => {
    if (nr === MATMUL_NR.Q8_0) return text;
    const np = Number(/const NP: u32 = (\d+)u;/.exec(text)[1]);
    return text.replace(/const NR: u32 = \d+u;/, `const NR: u32 = ${nr}u;`)
      .replace(/const CH: u32 = (\d+)u;/, (_, ch) =>
        `const CH: u32 = ${Math.min(Number(ch), Math.floor(512 / nr), Math.floor(1024 / (nr * np)))}u;`);
  };
  const pipes = {};
  for (const [t, f] of Object.entries(MATMUL)) {
    if (want('matmul_' + t)) pipes['matmul_' + t] = await pipeline('matmul ' + t, f, decodeSource(t, await source(f)));
    if (want('matmulR_' + t) && ropeFold(t))
      pipes['matmulR_' + t] = await pipeline('matmul + rope ' + t, [f, 'matmul_rope.wgsl'], decodeSource(t, await source(f), true));
  }
  // options.tileMinT: the fewest tokens for which a type with a tiled driver uses it (default 16;
  // the conformance run sets 1 or Infinity so that each driver sees every case). Infinity: the
  // tiled pipelines are not built.
  const tileMinT = options.tileMinT ?? 16;
  for (const [t, [drv, f]] of Object.entries(MATMUL_TILED))
    if (want('matmulT_' + t) && tileMinT !== Infinity)
      pipes['matmulT_' + t] = await pipeline('matmul tiled ' + t, f, xq + (drv ? await source(drv) + '\n' : '') + await source(f));
  if (want('matmul_F16'))
    pipes.matmul_F16 = await pipeline('matmul F16', 'matmul_f16.wgsl', io + await source('matmul_f16.wgsl'));
  // the quantizers and the kernels that end in one (rmsnorm_q: residual add + RMSNorm + quantize;
  // swiglu_q: SwiGLU + quantize; attn_combine: a split attention's last step + quantize):
  // quantize.wgsl, the type's block, the driver
  const quant = await source('quantize.wgsl');
  for (const [t, f] of Object.entries(QUANT))
    for (const [k, drv] of [['quantize_', 'quantize_main.wgsl'], ['rmsnorm_q_', 'rmsnorm_q.wgsl'], ['swiglu_q_', 'swiglu_q.wgsl'],
      ['attn_combine_', 'attn_combine.wgsl']])
      if (want(k + t)) pipes[k + t] = await pipeline(k + t, k === 'quantize_' ? f : drv, quant + '\n' + await source(f) + '\n' + await source(drv));
  for (const op of OPS) if (want(op)) pipes[op] = await pipeline(op, op + '.wgsl', await source(op + '.wgsl'));
  const need = (k) => {
    if (!pipes[k]) throw new Error(`plumb-webgpu: no pipeline ${k} (not built, or no such kernel)`);
    return pipes[k];
  };

  const storage = () => U().STORAGE | U().COPY_SRC | U().COPY_DST;

  function buffer(bytes, usage = storage()) {
    return device.createBuffer({ size: Math.max(4, Math.ceil(bytes / 4) * 4), usage });
  }
  // bound where a fused kernel's optional input or output is off (a binding needs a buffer)
  const dummy = [buffer(4), buffer(4), buffer(4)];

  // Commands recorded, for the benchmarks: dispatches, compute passes, copies and clears (what
  // a step costs on a GPU where each command has a floor of ~12 us: README "Where decode's time
  // goes"). Reset with counts.reset().
  const counts = { dispatch: 0, pass: 0, copy: 0, clear: 0, write: 0, // write: a frame's uniform writes
    reset() { this.dispatch = this.pass = this.copy = this.clear = this.write = 0; },
    total() { return this.dispatch + this.copy + this.clear; } };

  // A storage buffer holding the bytes of data (an ArrayBuffer or a view), padded to 4 bytes.
  function upload(data) {
    const u8 = data instanceof ArrayBuffer ? new Uint8Array(data)
      : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const b = buffer(u8.byteLength);
    const padded = new Uint8Array(Math.ceil(u8.byteLength / 4) * 4);
    padded.set(u8);
    device.queue.writeBuffer(b, 0, padded);
    return b;
  }

  function uniform(words) {
    const b = buffer(words.byteLength, U().UNIFORM | U().COPY_DST);
    device.queue.writeBuffer(b, 0, words);
    return b;
  }

  // A recorded frame (beginFrame .. endFrame): the k-th dispatch of a frame keeps its bind group
  // from the last frame of that key when its pipeline and buffers are the same objects; only
  // changed parameters are written. A decode step is the same ~10 dispatches a layer every token:
  // creating a buffer and a bind group for each was most of its time on a real GPU
  // (kernels/webgpu/README.md). A frame's uniforms live in pages of FRAME_PAGE dispatches, one
  // buffer a page, 256 bytes a dispatch (WebGPU's uniform offset alignment), mirrored on the CPU;
  // a changed parameter is written to the mirror, and flush(enc) writes each page's changed
  // stretch with one queue.writeBuffer (a token changes ~3 dispatches' parameters a layer: the
  // attention's length, the position; one write a part, not one a dispatch). queue.writeBuffer
  // runs after the work submitted before it and before the work submitted after it, and every
  // submission of a frame's commands follows the flush that ends its pass: each dispatch reads
  // its own parameters.
  const FRAME_PAGE = 64, U_STRIDE = 256;
  // A frame can also be replayed (replayFrame): its dispatches recorded again as the last
  // recording of that key left them, each its pipeline, bind group and grid, with no wrapper's
  // JS run (node's recording bounds a small model's decode: kernels/webgpu/README.md). The
  // parameters that follow a decode step's position are first patched in the frame's slots
  // (patchFrame, then patchAttention, patchMatmulRope, patchRopeKV: what attention, matmul with
  // a.rope and ropeKV would write there for the new N, slot or p0). So a replay records the
  // commands a recording would, in the same order.
  const frames = new WeakMap(); // by key (an object: forward's model, or its unfused sequence's)
  let frame = null;
  const dirtyPages = new Set();
  function beginFrame(key) {
    frame = frames.get(key) || { slots: [], pages: [], i: 0, n: 0 };
    frames.set(key, frame);
    frame.i = 0;
  }
  function endFrame() {
    if (frame) frame.n = frame.i; // the dispatches of its last recording
    frame = null;
  }
  // the index the next dispatch takes in the frame being recorded
  function frameAt() {
    if (!frame) throw new Error('plumb-webgpu: frameAt() outside a frame');
    return frame.i;
  }
  // fn() patches key's last recording (the patch functions below, each given a dispatch's index)
  function patchFrame(key, fn) {
    const f = frames.get(key);
    if (!f || frame) throw new Error('plumb-webgpu: patchFrame() with no recorded frame of that key, or inside a frame');
    frame = f;
    f.patching = true;
    try {
      fn();
    } finally {
      f.patching = false;
      frame = null;
    }
  }
  // slot k of the frame being patched, recorded by the pipeline named `name`
  function patchSlot(k, name) {
    const s = frame && frame.patching && k < frame.n ? frame.slots[k] : null;
    if (!s || s.pipe !== pipes[name]) throw new Error(`plumb-webgpu: no ${name} dispatch ${k} in the frame being patched`);
    return s;
  }
  // word i of slot k's parameters set to v (written with the frame's next flush where it changed)
  function patchWord(k, s, i, v) {
    if (s.words[i] === v) return;
    s.words[i] = v;
    frameUniform(k, s.words);
  }
  // Dispatches [from, to) of key's last recording (to: default its end) recorded into enc's pass
  // as they stand.
  function replayFrame(enc, key, from, to = frames.get(key)?.n) {
    const f = frames.get(key);
    if (!f || frame || !(from >= 0 && from <= to && to <= f.n))
      throw new Error(`plumb-webgpu: replayFrame(${from}, ${to}) of a frame of ${f ? f.n : 'no'} dispatches`);
    if (prof && prof.on) throw new Error('plumb-webgpu: replayFrame() while profiling');
    const pass = passOf(enc);
    for (let k = from; k < to; k++) {
      const s = f.slots[k];
      pass.setPipeline(s.pipe);
      pass.setBindGroup(0, s.bind);
      pass.dispatchWorkgroups(s.x, s.y, s.z);
    }
    counts.dispatch += to - from;
  }
  // The frame of key forgotten and its uniform pages freed (freeModel).
  function dropFrame(key) {
    const f = frames.get(key);
    if (!f) return;
    for (const p of f.pages) {
      dirtyPages.delete(p);
      p.ub.destroy();
    }
    frames.delete(key);
    if (frame === f) frame = null;
  }
  // (a plain loop: a decode step compares ~165 dispatches' buffers and parameters, and node's
  // recording of a step is the 1B's bound on the H200's host)
  const same = (a, b) => {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  };
  // dispatch k's uniform in the current frame: its page (made on first use) and offset, with
  // words put in the mirror and marked for the next flush
  function frameUniform(k, words) {
    if (words.byteLength > U_STRIDE) throw new Error(`plumb-webgpu: a uniform of ${words.byteLength} bytes (at most ${U_STRIDE})`);
    const pg = Math.floor(k / FRAME_PAGE), at = k % FRAME_PAGE;
    const page = frame.pages[pg] ||= { ub: buffer(FRAME_PAGE * U_STRIDE, U().UNIFORM | U().COPY_DST),
      mirror: new Uint32Array(FRAME_PAGE * U_STRIDE / 4), lo: FRAME_PAGE, hi: -1 };
    page.mirror.set(words, at * U_STRIDE / 4);
    page.lo = Math.min(page.lo, at);
    page.hi = Math.max(page.hi, at);
    dirtyPages.add(page);
    return { page, off: at * U_STRIDE };
  }
  function writeUniforms() {
    for (const p of dirtyPages) {
      device.queue.writeBuffer(p.ub, p.lo * U_STRIDE, p.mirror, p.lo * U_STRIDE / 4, (p.hi - p.lo + 1) * U_STRIDE / 4);
      counts.write++;
      p.lo = FRAME_PAGE;
      p.hi = -1;
    }
    dirtyPages.clear();
  }

  // buffers: GPUBuffers bound whole, or the last one { buffer, offset, size } (a frame's uniform)
  // a bind group's buffers with the uniform u put at binding uAt (the buffers from there after it)
  const withUniform = (buffers, u, uAt) => [...buffers.slice(0, uAt), u, ...buffers.slice(uAt)];
  function bindGroup(pipe, buffers) {
    return device.createBindGroup({
      layout: pipe.getBindGroupLayout(0),
      entries: buffers.map((b, binding) => ({ binding, resource: b.buffer ? b : { buffer: b } })),
    });
  }

  // Consecutive dispatches recorded into one encoder share one compute pass (within a pass
  // WebGPU runs the dispatches in order, each seeing the writes of those before it): a pass
  // each cost a decode step ~370 passes. flush(enc) ends the open pass; it must come before
  // any other command on enc (clearBuffer, copyBufferToBuffer) and before enc.finish().
  const open = new WeakMap();
  function flush(enc) {
    writeUniforms();
    const p = open.get(enc);
    if (p) {
      p.end();
      open.delete(enc);
    }
  }
  // options.profile (a benchmark's instrument; needs the device's 'timestamp-query' feature):
  // while profiling(true), each dispatch runs in a compute pass of its own between two GPU timestamps, so
  // profileRead() gives every dispatch's GPU time since the last read, by its tag (a matmul's
  // type, shape and driver; else the kernel's name). Passes of one dispatch each add the work
  // a pass boundary costs, so a profiled step is slower than an unprofiled one; the figures
  // say where the GPU's time goes, not what a step costs.
  const PROFILE_MAX = 2048; // dispatches between reads (a query set holds 4096 timestamps)
  const prof = options.profile ? { qs: device.createQuerySet({ type: 'timestamp', count: 2 * PROFILE_MAX }),
    tags: [], on: false } : null;
  // profiling('marks'): no dispatch timed, only the marks (mark(enc)): the GPU's span of a step
  // as it runs unprofiled (one pass a stretch of dispatches).
  function profiling(on) {
    if (!prof) throw new Error('plumb-webgpu: profiling() without options.profile');
    prof.on = on === 'marks' ? false : !!on;
    prof.marks = on === 'marks';
  }
  // whether dispatches are being timed or marks taken (a step recorded ahead would put its
  // timestamps before the current step's were read)
  function profilingOn() { return !!prof && (prof.on || !!prof.marks); }
  // A GPU timestamp pair in an empty pass of its own, tagged 'mark', while profiling('marks'):
  // the forward pass marks a step's start and end (profileRead gives its span: the first mark's
  // end to the second's start). A no-op otherwise.
  function mark(enc) {
    if (!prof || !prof.marks) return;
    profiledPass(enc, 'mark').end();
  }
  function profiledPass(enc, tag) {
    flush(enc);
    const k = prof.tags.length;
    if (k >= PROFILE_MAX) throw new Error(`plumb-webgpu: more than ${PROFILE_MAX} profiled dispatches before profileRead()`);
    prof.tags.push(tag);
    counts.pass++;
    return enc.beginComputePass({ timestampWrites: { querySet: prof.qs, beginningOfPassWriteIndex: 2 * k,
      endOfPassWriteIndex: 2 * k + 1 } });
  }
  // [{ tag, us, t0, t1 }] for each dispatch (or mark) recorded (and submitted) since the last
  // read, in order: t0 and t1 its timestamps in us from the first one read.
  async function profileRead() {
    if (!prof) throw new Error('plumb-webgpu: profileRead() without options.profile');
    const n = prof.tags.length, tags = prof.tags;
    prof.tags = [];
    if (!n) return [];
    const res = device.createBuffer({ size: 16 * n, usage: U().QUERY_RESOLVE | U().COPY_SRC });
    const enc = device.createCommandEncoder();
    enc.resolveQuerySet(prof.qs, 0, 2 * n, res, 0);
    const done = readAfter(enc, res, 16 * n);
    device.queue.submit([enc.finish()]);
    const ts = new BigUint64Array(await done());
    res.destroy();
    return tags.map((tag, k) => ({ tag, us: Number(ts[2 * k + 1] - ts[2 * k]) / 1e3, t0: Number(ts[2 * k] - ts[0]) / 1e3,
      t1: Number(ts[2 * k + 1] - ts[0]) / 1e3 }));
  }
  function passOf(enc) {
    let p = open.get(enc);
    if (!p) {
      p = enc.beginComputePass();
      open.set(enc, p);
      counts.pass++;
    }
    return p;
  }

  // enc.copyBufferToBuffer after ending the open pass, counted.
  function copy(enc, src, srcOff, dst, dstOff, bytes) {
    flush(enc);
    enc.copyBufferToBuffer(src, srcOff, dst, dstOff, bytes);
    counts.copy++;
  }

  // buffers: the kernel's storage buffers in binding order; words (a Uint32Array): its uniform,
  // bound after the first uAt of them (default: last).
  function dispatch(enc, pipe, buffers, words, x, y = 1, z = 1, tag = pipe.label, uAt = buffers.length) {
    let bind;
    if (!frame) {
      bind = bindGroup(pipe, withUniform(buffers, uniform(words), uAt));
    } else {
      const k = frame.i++;
      let slot = frame.slots[k];
      if (slot && slot.pipe === pipe && same(slot.buffers, buffers) && slot.words.length === words.length) {
        if (!same(slot.words, words)) {
          frameUniform(k, words);
          slot.words = words.slice();
        }
      } else {
        const { page, off } = frameUniform(k, words);
        slot = frame.slots[k] = { pipe, buffers: buffers.slice(), words: words.slice(),
          bind: bindGroup(pipe, withUniform(buffers, { buffer: page.ub, offset: off, size: words.byteLength }, uAt)) };
      }
      slot.x = x;
      slot.y = y;
      slot.z = z;
      bind = slot.bind;
    }
    const timedPass = prof && prof.on;
    const pass = timedPass ? profiledPass(enc, tag) : passOf(enc);
    counts.dispatch++;
    pass.setPipeline(pipe);
    pass.setBindGroup(0, bind);
    pass.dispatchWorkgroups(x, y, z);
    if (timedPass) pass.end();
  }

  // y[yOff + t ldy + r] = W[r] . X[t] (r < R, t < T). W: rows of K elements of `type` (ggml's
  // blocks), wRow bytes apart from byte wOff; X: T rows of the type's dot type (Q8_0 blocks for
  // Q8_0 and Q4_0, Q8_K blocks for Q4_K and Q6_K, f32 for F16), xRow bytes apart from byte xOff.
  // a.rope ({ cs, q, kc, vc, H, Hkv, D, half, slot }: a decode step's q | k | v rows, T 1, where
  // hasRopeFold(type)): rope_kv folded in (matmul_rope.wgsl) — y's rows [q | k | v] as without,
  // and q's, k's and v's rows as ropeKV would write them (no bias, no head norm, adjacent pairs:
  // the caller's to know), the angles ropeTable's of the token's position.
  function matmul(enc, type, a) {
    const useTiled = MATMUL_TILED[type] && a.T >= tileMinT;
    const r = a.rope;
    if (r && (useTiled || a.T !== 1 || !pipes['matmulR_' + type] || (a.yOff || 0) % 2 || r.D % 2))
      throw new Error(`plumb-webgpu: matmul ${type}: RoPE folded in only at T 1 on the v2 driver (T ${a.T}, column ${a.yOff || 0}, D ${r.D})`);
    const pipe = need((useTiled ? 'matmulT_' : r ? 'matmulR_' : 'matmul_') + type);
    // tiles of 64 rows x 64 tokens, or NR rows x 1 token
    const [gx, gy] = grid(Math.ceil(a.R / (useTiled ? 64 : type === 'F16' ? MATMUL_NR.F16 : decodeRows(type))));
    // MM (matmul_io.wgsl): 12 words, then RoPE's 5 for the fold (0 otherwise), 3 of padding
    const words = new Uint32Array(20);
    words.set([a.K, a.R, a.T, a.wOff || 0, a.wRow, a.xOff || 0, a.xRow, a.yOff || 0, a.ldy ?? a.R, gx]);
    if (r) words.set([r.H, r.Hkv, r.D, r.half, r.slot], 12);
    dispatch(enc, pipe, r ? [a.w, a.x, a.y, r.cs, r.q, r.kc, r.vc] : [a.w, a.x, a.y], words, gx, gy,
      useTiled ? Math.ceil(a.T / 64) : a.T,
      prof?.on && `matmul ${type} ${a.R}x${a.K} T${a.T}${useTiled ? ' tiled' : type === 'F16' ? '' : ' ' + driverOf(type)}${r ? ' + rope' : ''}`, 3);
  }
  // a frame's matmul with RoPE folded in (dispatch k, patchFrame), its token now at cache slot
  function patchMatmulRope(k, type, slot) { patchWord(k, patchSlot(k, 'matmulR_' + type), 16, slot); }
  const hasRopeFold = (type) => !!pipes['matmulR_' + type];

  // The quantized rows' layout (quantize.wgsl): yOff and yRow multiples of 4, yRow at least the
  // blocks' bytes (default quantRowBytes: the blocks rounded up to a word).
  function qLayout(type, n, yRow, yOff, what) {
    const [bs, bb] = QBLOCK[type] || [];
    if (!bs) throw new Error(`plumb-webgpu: ${what}: no dot type ${type}`);
    if (n % bs) throw new Error(`plumb-webgpu: ${what}: rows of ${n} are not whole ${type} blocks`);
    const r = yRow ?? quantRowBytes(type, n), o = yOff || 0;
    if (o % 4 || r % 4 || r < (n / bs) * bb)
      throw new Error(`plumb-webgpu: ${what}: rows ${r} bytes apart from byte ${o} (the rule: multiples of 4, at least ${(n / bs) * bb})`);
    return [r, o, Math.ceil(n / 256)]; // chunks a row (quantize.wgsl: 256 floats, whole blocks)
  }

  // Activation rows to the dot type `type` (Q8_0 or Q8_K), ref's bytes: rows of n floats (x,
  // from float xOff) to rows yRow bytes apart (qLayout) from byte yOff, a workgroup a chunk of a
  // row. No clear: each workgroup writes whole words (quantize.wgsl), so the compute pass goes on.
  function quantize(enc, type, a) {
    const pipe = need('quantize_' + type);
    const [yRow, yOff, nc] = qLayout(type, a.n, a.yRow, a.yOff, 'quantize');
    const [gx, gy] = grid(nc * a.rows);
    dispatch(enc, pipe, [a.x, a.y], new Uint32Array([a.n, a.rows, a.xOff || 0, yOff, yRow, 0, 0, 0]), gx, gy);
  }

  // The residual add, the RMSNorm and the quantize of a forward pass's norm in one dispatch
  // (rmsnorm_q.wgsl: a workgroup a chunk of 256 floats of a row, each summing the row's squares
  // itself): when a.r is given, x[row] + r[row] (add.wgsl's add) into a.xo (x is not written: a
  // buffer other than x, r, y and q), and the norm over that sum; then y[row] = rmsnorm(x[row]) *
  // w (rmsnorm.wgsl's operations, in its order), then, when type is a dot type (Q8_0, Q8_K; null:
  // none, the next matmul takes f32), y's rows quantized into q (as quantize: rows qRow bytes
  // apart from byte qOff). Each the bits of the separate kernels.
  function rmsnormQ(enc, type, a) {
    const [qRow, qOff] = type ? qLayout(type, a.n, a.qRow, a.qOff, 'rmsnormQ') : [0, 0];
    if (a.r && (!a.xo || [a.x, a.r, a.y, a.q].includes(a.xo)))
      throw new Error('plumb-webgpu: rmsnormQ: a residual add needs its own output buffer xo (not x, r, y or q)');
    const p = new ArrayBuffer(48);
    new Uint32Array(p).set([a.n, a.rows]);
    new Float32Array(p, 8, 1)[0] = a.eps;
    new Uint32Array(p, 12, 8).set([a.xOff || 0, a.rOff || 0, a.yOff || 0, qOff, qRow, (a.r ? 1 : 0) | (type ? 2 : 0), 0, 0]);
    const [gx, gy] = grid(Math.ceil(a.n / 256) * a.rows);
    dispatch(enc, need('rmsnorm_q_' + (type || 'Q8_0')), [a.x, a.r || dummy[0], a.w, a.y, type ? a.q : dummy[1],
      a.r ? a.xo : dummy[2]], new Uint32Array(p), gx, gy);
  }

  // SwiGLU and the quantize of its rows in one dispatch (swiglu_q.wgsl: a workgroup a chunk of 256
  // floats of a row, the quantizer's chunk): y[t][i] = silu(gate[t][i]) up[t][i] (swiglu.wgsl's
  // operations), i < n, t < rows, gate and up rows gateLd and upLd floats apart (default n), y
  // tight; then y's rows quantized to `type` into q (qLayout); type null: the products only (no q).
  function swigluQ(enc, type, a) {
    const [qRow, qOff] = type ? qLayout(type, a.n, a.qRow, a.qOff, 'swigluQ') : [0, 0];
    const [gx, gy] = grid(Math.ceil(a.n / 256) * a.rows); // chunks a row (swiglu_q.wgsl)
    dispatch(enc, need('swiglu_q_' + (type || 'Q8_0')), [a.gate, a.up, a.y, type ? a.q : dummy[1]], new Uint32Array([a.n,
      a.rows, a.gateOff || 0, a.gateLd ?? a.n, a.upOff || 0, a.upLd ?? a.n, a.yOff || 0, qOff, qRow, 0, type ? 1 : 0, 0]),
    gx, gy);
  }

  // y = x / sqrt(mean(x^2) + eps) * w (from float wOff), `rows` rows of n (x and y distinct buffers).
  function rmsnorm(enc, a) {
    const p = new ArrayBuffer(32);
    new Uint32Array(p).set([a.n, a.rows]);
    new Float32Array(p, 8, 1)[0] = a.eps;
    new Uint32Array(p, 12, 3).set([a.xOff || 0, a.yOff || 0, a.wOff || 0]);
    const [gx, gy] = grid(a.rows);
    dispatch(enc, need('rmsnorm'), [a.x, a.w, a.y], new Uint32Array(p), gx, gy);
  }

  function softmax(enc, a) {
    const [gx, gy] = grid(a.rows);
    dispatch(enc, need('softmax'), [a.x, a.y], new Uint32Array([a.n, a.rows, a.xOff || 0, a.yOff || 0]), gx, gy);
  }

  function swiglu(enc, a) {
    const [gx, gy] = grid(Math.ceil(a.n / 256));
    dispatch(enc, need('swiglu'), [a.gate, a.up, a.y],
      new Uint32Array([a.n, a.gateOff || 0, a.upOff || 0, a.yOff || 0]), gx, gy);
  }

  // x[xOff + i] += y[yOff + i], i < n (the residual add); a.ym: y[yOff + i % ym] (a bias on
  // every row of ym).
  function add(enc, a) {
    const [gx, gy] = grid(Math.ceil(a.n / 256));
    dispatch(enc, need('add'), [a.x, a.y], new Uint32Array([a.n, a.xOff || 0, a.yOff || 0, a.ym || 0]), gx, gy);
  }

  // Embedding rows by ids the GPU holds (embed.wgsl: greedy decoding's next input): x[t][0, E) =
  // row ids[idOff + t] of the matrix a.w (a.type, rows of a.E elements a.rowBytes apart from byte
  // a.wOff, a.V rows), dequantized as ref (and llama.mjs's embedRow) does, for t < a.rows.
  function embed(enc, a) {
    const ty = EMBED_TYPES.indexOf(a.type);
    if (ty < 0) throw new Error(`plumb-webgpu: embed: rows of ${a.type} (the set takes ${EMBED_TYPES.join(', ')})`);
    const [bs, bb] = EMBED_BLOCK[a.type];
    if (a.E % bs || a.rowBytes < (a.E / bs) * bb || (a.type === 'F32' && (a.rowBytes % 4 || (a.wOff || 0) % 4)))
      throw new Error(`plumb-webgpu: embed: rows of ${a.E} ${a.type} elements ${a.rowBytes} bytes apart`);
    const rows = a.rows ?? 1;
    const [gx, gy] = grid(Math.ceil(a.E / 256) * rows);
    dispatch(enc, need('embed'), [a.w, a.ids, a.x],
      new Uint32Array([a.E, rows, a.wOff || 0, a.rowBytes, a.V, a.idOff || 0, ty, 0]), gx, gy);
  }

  // The engine's greedy pick over a row of n floats (x from float xOff) into ids[idOff] (a u32):
  // argmax.wgsl's two dispatches, partial pairs in a.part (argmaxPartWords(n) words).
  function argmax(enc, a) {
    const nparts = Math.ceil(a.n / 4096);
    if (!(a.n >= 1)) throw new Error(`plumb-webgpu: argmax over ${a.n} values`);
    const [gx, gy] = grid(nparts);
    dispatch(enc, need('argmax'), [a.x, a.part, a.ids], new Uint32Array([a.n, a.xOff || 0, a.idOff || 0, 0, nparts, 0, 0, 0]),
      gx, gy, 1, 'argmax partials');
    dispatch(enc, need('argmax'), [a.x, a.part, a.ids], new Uint32Array([a.n, a.xOff || 0, a.idOff || 0, 1, nparts, 0, 0, 0]),
      1, 1, 1, 'argmax');
  }
  const argmaxPartWords = (n) => 2 * Math.ceil(n / 4096);

  // In place over `tokens` rows of H heads of D at positions pos[] (an array of numbers), the
  // angles made here in double (ropeTable); or a.cs, a buffer holding ropeTable(a.rope,
  // ropePlan(a.rope, a.D), a.pos) already (a forward pass makes it once for q, k and every layer).
  function rope(enc, a) {
    const plan = ropePlan(a.rope, a.D);
    if (plan.half === 0 || a.tokens === 0) return;
    const cs = a.cs || upload(ropeTable(a.rope, plan, a.pos));
    const n = a.tokens * a.H * plan.half;
    const [gx, gy] = grid(Math.ceil(n / 64));
    dispatch(enc, need('rope'), [a.x, cs], new Uint32Array([a.tokens, a.H, a.D, plan.half,
      a.rope.neox ? 1 : 0, a.xOff || 0, 0, 0]), gx, gy);
  }

  // The attention's inputs of a step in one dispatch (rope_kv.wgsl): from x's rows [T][q | k | v]
  // (from float xOff, ld floats apart; q H heads of D, k and v Hkv), each head's bias (a.bias, a
  // buffer, with the float offsets bq, bk, bv of q's, k's, v's; null: none), per-head RMSNorm of q
  // and k (a.norm with offsets nq, nk of the D weights; null: none; eps), RoPE by a.cs (ropeTable
  // of the T positions p0 ...) into a.q [T][H][D] and the caches a.kc, a.vc ([slot][Hkv][D]) at
  // each position's slot (p < sinks or ring 0: p; else sinks + (p - sinks) mod ring). The bits of
  // the separate adds, rmsnorms, ropes and copies.
  function ropeKV(enc, a) {
    const plan = ropePlan(a.rope, a.D);
    if (a.D > 1024) throw new Error(`plumb-webgpu: ropeKV: heads of ${a.D} (at most 1024)`);
    const on = (v) => v !== null && v !== undefined;
    const flags = (a.bias && on(a.bq) ? 1 : 0) | (a.bias && on(a.bk) ? 2 : 0) | (a.bias && on(a.bv) ? 4 : 0) |
      (a.norm && on(a.nq) ? 8 : 0) | (a.norm && on(a.nk) ? 16 : 0);
    const p = new ArrayBuffer(80);
    new Uint32Array(p).set([a.T, a.H, a.Hkv, a.D, plan.half, a.rope.neox ? 1 : 0, a.ld, a.xOff || 0,
      flags, a.bq || 0, a.bk || 0, a.bv || 0, a.nq || 0, a.nk || 0]);
    new Float32Array(p, 56, 1)[0] = a.eps || 0;
    new Uint32Array(p, 60, 5).set([a.p0, a.sinks || 0, a.ring || 0, 0, 0]);
    dispatch(enc, need('rope_kv'), [a.x, a.bias || dummy[0], a.norm || dummy[1], a.cs, a.q, a.kc, a.vc],
      new Uint32Array(p), a.H + a.Hkv, a.T);
  }
  // a frame's ropeKV (dispatch k, patchFrame; no ring), its first token now at position p0
  function patchRopeKV(k, p0) {
    const s = patchSlot(k, 'rope_kv');
    if (s.words[17]) throw new Error('plumb-webgpu: patchRopeKV of a ring\'s rope_kv (its slots move)');
    patchWord(k, s, 15, p0);
  }

  // out[t][h][d] over the KV cache (pl_attn_args): q [T][H][D] f32, k and v [N][Hkv][D] (f32, or
  // f16 when kvF16; D at most 256), qPos [T] and kvPos [N] i32 buffers; scratch holds
  // attnScratchFloats(T, H, N, D) floats from scratchOff. Two ways, the same bits (attention.wgsl):
  // one dispatch of T H workgroups (mode 0), or two (mode 1, then attn_combine.wgsl) that spread
  // a head's entries over workgroups, a chunk of 64 each (for a decode step mode 0 would run H
  // workgroups through all N entries; a prefill's T H workgroups each walk theirs in series).
  // a.quant ({ type: 'Q8_0' or 'Q8_K', y, yRow, yOff }, optional): out's rows (H D floats) also
  // quantized into y as quantize() would (qLayout), for the next matmul: the split's last
  // dispatch does it; after mode 0, a quantize dispatch. The same bytes either way.
  // options.attnSplit: 'auto' (the default: the two from ATTN_SPLIT_MIN_N entries, where a
  // prefill's sums fit ATTN_SPLIT_MAX_BYTES), 'always' or 'never' (the conformance run takes
  // every case both ways).
  const attnSplit = options.attnSplit ?? 'auto';
  if (!['auto', 'always', 'never'].includes(attnSplit))
    throw new Error(`plumb-webgpu: attnSplit must be 'auto', 'always' or 'never', not ${attnSplit}`);
  const splitFor = (T, H, N, D) => attnSplit === 'always' || (attnSplit === 'auto' && N >= ATTN_SPLIT_MIN_N &&
    (T === 1 || 4 * T * H * Math.ceil(N / 64) * (3 + D) <= ATTN_SPLIT_MAX_BYTES));
  // whether an attention of T queries over N entries takes the split (two dispatches)
  const attnSplits = (T, H, N, D) => splitFor(T, H, N, D);
  // The scratch floats an attention of T queries over N entries takes (mode 0: the scores and
  // weights, then the chunks' maxes and counts; the split: those, the weights' sums and O_c), and
  // the most over every N' <= N (upTo: a decode step's buffers serve each position below the
  // cache's size, which may take the other way). Each way's need grows with N, so the most is
  // at N or at the last N' of the other way: below ATTN_SPLIT_MIN_N, or the last that fits.
  function attnScratchFloats(T, H, N, D, upTo = false) {
    const need = (n) => {
      const th = T * H, nc = Math.ceil(n / 64);
      return splitFor(T, H, n, D) ? th * nc * (3 + D) : th * n + 2 * th * nc;
    };
    if (!upTo) return need(N);
    const ncFit = Math.floor(ATTN_SPLIT_MAX_BYTES / (4 * T * H * (3 + D)));
    return Math.max(need(N), need(Math.min(N, ATTN_SPLIT_MIN_N - 1)), need(Math.min(N, 64 * ncFit)));
  }
  function attention(enc, a) {
    if (!(Number.isInteger(a.D) && a.D >= 1 && a.D <= 256))
      throw new Error(`plumb-webgpu: attention: a head of ${a.D} dims (the webgpu set takes 1 to 256)`);
    const nq = a.H * a.D;
    const qz = a.quant ? qLayout(a.quant.type, nq, a.quant.yRow, a.quant.yOff, 'attention') : null;
    const clampW = (w) => (w <= 0 ? [0, 0] : [1, Math.min(w, 2 ** 32) - 1]);
    const [won, wm1] = clampW(a.window || 0), [lon, lwm1] = clampW(a.layerWindow || 0);
    const words = (mode) => {
      const p = new ArrayBuffer(64);
      new Uint32Array(p).set([a.T, a.H, a.Hkv, a.D, a.N, a.kvF16 ? 1 : 0, won, wm1,
        Math.min(a.nSinks || 0, 2 ** 32 - 1), lon, lwm1]);
      new Float32Array(p, 44, 1)[0] = a.scale;
      new Uint32Array(p, 48, 2).set([a.scratchOff || 0, mode]);
      return new Uint32Array(p);
    };
    const bufs = [a.q, a.k, a.v, a.qPos, a.kvPos, a.scratch, a.out];
    if (!splitFor(a.T, a.H, a.N, a.D)) {
      dispatch(enc, need('attention'), bufs, words(0), a.H, a.T);
      if (qz) quantize(enc, a.quant.type, { x: a.out, y: a.quant.y, n: nq, rows: a.T, yRow: qz[0], yOff: qz[1] });
      return;
    }
    const nc = Math.ceil(a.N / 64);
    if (nc > 65535) throw new Error(`plumb-webgpu: attention: ${a.N} entries (at most ${65535 * 64} split)`);
    dispatch(enc, need('attention'), bufs, words(1), a.H, a.T, nc, 'attention chunks');
    const [gx, gy] = grid(Math.ceil(nq / 256) * a.T);
    dispatch(enc, need('attn_combine_' + (qz ? a.quant.type : 'Q8_0')), [a.scratch, a.out, qz ? a.quant.y : dummy[1]],
      new Uint32Array([a.T, a.H, a.D, a.N, a.scratchOff || 0, qz ? qz[1] : 0, qz ? qz[0] : 0, qz ? 1 : 0, 0, 0, 0, 0]),
      gx, gy, 1, 'attention combine');
  }
  // a frame's attention (dispatch k, and k + 1 for the split's combine, patchFrame) over N
  // entries now, the way it was recorded (the caller's to know that N takes the same way: the
  // mode in its parameters says which): N, and the split's chunks
  function patchAttention(k, N) {
    const s = patchSlot(k, 'attention');
    patchWord(k, s, 4, N);
    if (s.words[13] !== 1) return;
    const nc = Math.ceil(N / 64);
    if (nc > 65535) throw new Error(`plumb-webgpu: attention: ${N} entries (at most ${65535 * 64} split)`);
    s.z = nc;
    const c = frame.slots[k + 1];
    if (!(k + 1 < frame.n) || !c.pipe.label.startsWith('attn_combine_'))
      throw new Error(`plumb-webgpu: no attention combine after dispatch ${k} in the frame being patched`);
    patchWord(k + 1, c, 3, N);
  }

  // Readback buffers kept by size for the next read of that size (a decode step reads the same
  // logits row every token); one in use is never handed out twice.
  const readPool = new Map();
  // Records into enc (its open pass ended) the copy of bytes of buf from offset (a multiple of 4)
  // into a mappable buffer; returns the function to call once enc's commands are submitted, whose
  // promise gives the bytes (an ArrayBuffer). A forward pass copies its logits in its own command
  // buffer, so a token costs one submission and one wait, not two.
  function readAfter(enc, buf, bytes, offset = 0) {
    const size = Math.ceil(bytes / 4) * 4;
    const free = readPool.get(size) || [];
    readPool.set(size, free);
    const rb = free.pop() || device.createBuffer({ size, usage: U().MAP_READ | U().COPY_DST });
    flush(enc);
    enc.copyBufferToBuffer(buf, offset, rb, 0, size);
    const giveBack = () => {
      if (free.length < 2) free.push(rb);
      else rb.destroy();
    };
    const fetch = async () => {
      try {
        await rb.mapAsync(globalThis.GPUMapMode.READ);
      } catch (e) {
        rb.destroy();
        throw e;
      }
      const out = rb.getMappedRange().slice(0, bytes);
      rb.unmap();
      giveBack();
      return out;
    };
    // enc's commands never submitted (a step recorded ahead and dropped): the buffer back, unread
    fetch.cancel = giveBack;
    return fetch;
  }
  async function read(buf, bytes, offset = 0) {
    const enc = device.createCommandEncoder();
    const done = readAfter(enc, buf, bytes, offset);
    device.queue.submit([enc.finish()]);
    return done();
  }

  return { device, packedDot, decodeDriver, flush, copy, counts, upload, buffer, uniform, matmul, quantize, rmsnormQ, swigluQ,
    rmsnorm, softmax, swiglu, rope, ropeKV, attention, attnScratchFloats, add, embed, argmax, argmaxPartWords, hasRopeFold, read, readAfter, beginFrame, endFrame, dropFrame, frameAt, patchFrame,
    patchAttention, patchMatmulRope, patchRopeKV, replayFrame, attnSplits, profiling, profilingOn, profileRead, mark };
}

// ---- RoPE's angles, in double, as kernels/rope_angle.h makes them ----
// r: { n_rot, freq_base, freq_scale, factors (array or null), ext_factor, attn_factor, beta_fast,
// beta_slow, n_ctx_orig, neox, yarn_no_truncate }; the float fields hold float32 values.
export function ropePlan(r, D) {
  const nRot = r.n_rot > D ? D : r.n_rot;
  const p = { nRot, half: Math.floor(nRot / 2), lo: 0, hi: 0, mscale: r.attn_factor };
  if (r.ext_factor !== 0) {
    const twoPi = 6.283185307179586476925286766559;
    const den = 2 * Math.log(r.freq_base);
    const cFast = nRot * Math.log(r.n_ctx_orig / (twoPi * r.beta_fast)) / den;
    const cSlow = nRot * Math.log(r.n_ctx_orig / (twoPi * r.beta_slow)) / den;
    p.lo = Math.max(0, r.yarn_no_truncate ? cFast : Math.floor(cFast));
    p.hi = Math.min(nRot - 1, r.yarn_no_truncate ? cSlow : Math.ceil(cSlow));
    p.mscale *= 1 + 0.1 * Math.log(1 / r.freq_scale);
  }
  return p;
}

// (cos, sin) times mscale per (token, pair), as f32 pairs: tokens x half x 2 floats.
export function ropeTable(r, plan, pos) {
  const out = new Float32Array(pos.length * plan.half * 2);
  for (let t = 0; t < pos.length; t++)
    for (let i = 0; i < plan.half; i++) {
      let theta = pos[t] * Math.pow(r.freq_base, -2 * i / plan.nRot);
      if (r.factors) theta /= r.factors[i];
      const interp = r.freq_scale * theta;
      if (r.ext_factor !== 0) {
        const y = (i - plan.lo) / Math.max(0.001, plan.hi - plan.lo);
        const mix = (1 - Math.min(1, Math.max(0, y))) * r.ext_factor;
        theta = interp * (1 - mix) + theta * mix;
      } else {
        theta = interp;
      }
      out[2 * (t * plan.half + i)] = Math.cos(theta) * plan.mscale;
      out[2 * (t * plan.half + i) + 1] = Math.sin(theta) * plan.mscale;
    }
  return out;
}
