// plumb-engine.mjs — the engine module: plumb compiled to wasm (plumb-<variant>.mjs + .wasm),
// wrapped in the calls the page's Worker and the node tests use (web/README.md, "The engine
// module"). Synchronous after createEngine(); not a Worker of its own: run it inside one.

import { channelClient, OP, N, POS0, ROWS, ARG, OP_EVAL, OP_TRUNCATE, GREEDY, SPEC_HITS } from './gpu-channel.mjs';

const VARIANTS = ['simd-relaxed-threads', 'simd-relaxed', 'simd-threads', 'simd', 'scalar-threads',
  'scalar'];
const isNode = typeof process === 'object' && process.versions && process.versions.node;

// WebAssembly SIMD128: a module whose one function returns an i8x16.splat (v128).
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1,
  0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);

// Relaxed SIMD, detected as CPUID would be, and then run once: a module whose function f stores
// i32x4.relaxed_dot_i8x16_i7x16_add_s (0xfd 0x113) of the vectors at 16, 32, 48 at 0, compared
// with the exact sums (the second operand in [0, 127], the only way plumb uses it). An engine
// that validates it but computes otherwise (node 20's flagged V8 11.3 returns twice the sums on
// an AVX-VNNI CPU) gets the simd variant. Chromium has relaxed SIMD on; node 20 needs
// --experimental-wasm-relaxed-simd. app.js carries the same check for the page.
const LOAD = (at) => [65, at, 253, 0, 0, 0]; // i32.const at; v128.load align=1 offset=0
const RELAXED_BODY = [0, 65, 0, ...LOAD(16), ...LOAD(32), ...LOAD(48), 253, 147, 2, 253, 11, 0, 0, 11];
const RELAXED_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0,
  5, 3, 1, 0, 1, 7, 9, 2, 1, 109, 2, 0, 1, 102, 0, 0,
  10, RELAXED_BODY.length + 2, 1, RELAXED_BODY.length, ...RELAXED_BODY]);

const validates = (bytes) => { try { return WebAssembly.validate(bytes); } catch { return false; } };

export function relaxedDotExact() {
  if (!validates(RELAXED_PROBE)) return false;
  try {
    const { exports } = new WebAssembly.Instance(new WebAssembly.Module(RELAXED_PROBE));
    const mem = new DataView(exports.m.buffer);
    for (let round = 0; round < 3; round++) {
      const a = [], b = [], want = [];
      for (let i = 0; i < 16; i++) {
        a.push(i === 0 ? -128 : i === 1 ? 127 : ((i * 73 + 41 * round + 17) & 255) - 128);
        b.push(i < 2 ? 127 : (i * 29 + 53 * round + 5) & 127);
        mem.setInt8(16 + i, a[i]);
        mem.setUint8(32 + i, b[i]);
      }
      for (let l = 0; l < 4; l++) {
        const c = (l * 1000003 + round * 7919) | 0;
        mem.setInt32(48 + 4 * l, c, true);
        let s = c;
        for (let j = 0; j < 4; j++) s += a[4 * l + j] * b[4 * l + j];
        want.push(s | 0);
      }
      exports.f();
      for (let l = 0; l < 4; l++) if (mem.getInt32(4 * l, true) !== want[l]) return false;
    }
    return true;
  } catch { return false; }
}

// The best variant this engine runs: relaxed SIMD, else SIMD128, else scalar; threads where
// SharedArrayBuffer is there (node, or a cross-origin isolated page). opts.variant overrides.
export function detectVariant() {
  const simd = validates(SIMD_PROBE);
  const relaxed = simd && relaxedDotExact();
  const threads = typeof SharedArrayBuffer === 'function' &&
    (isNode || globalThis.crossOriginIsolated === true);
  return (relaxed ? 'simd-relaxed' : simd ? 'simd' : 'scalar') + (threads ? '-threads' : '');
}

async function nodeShims(dir) {
  // emscripten 3.1.6's ES6 output still reaches for require/__dirname under node.
  const { createRequire } = await import('module');
  globalThis.require ??= createRequire(import.meta.url);
  globalThis.__dirname ??= dir;
}

export async function createEngine(opts = {}) {
  const variant = opts.variant ?? detectVariant();
  if (!VARIANTS.includes(variant))
    throw new Error(`unknown variant '${variant}' (${VARIANTS.join(', ')})`);
  const threaded = variant.endsWith('-threads');
  // The one-thread variants run one thread whatever is asked (info().threads says so).
  const threads = threaded ? Math.max(1, Math.floor(opts.threads ?? 2)) : 1;
  let locateFile = opts.locateFile;
  if (isNode && !locateFile) {
    const { fileURLToPath } = await import('url');
    const path = await import('path');
    const dir = path.dirname(fileURLToPath(import.meta.url));
    await nodeShims(dir);
    locateFile = (p) => path.join(dir, p);
  }
  const url = opts.moduleUrl ?? new URL(`./plumb-${variant}.mjs`, import.meta.url).href;
  const factory = (await import(url)).default;
  const chats = new Map();
  let peak = 0;
  const M = await factory({
    locateFile,
    // Workers the threads variant starts with the module: a session's pool takes threads - 1,
    // and eng.logits runs a second session beside a chat (opts.workers for more sessions).
    plumbWorkers: threaded ? Math.max(1, opts.workers ?? 2 * (threads - 1)) : 0,
    plumbOnText: (id, ptr, len) => {
      const c = chats.get(id);
      if (!c) return 0;
      const str = new TextDecoder().decode(heapU8().slice(ptr, ptr + len));
      return c.onPiece(str) ? 1 : 0;
    },
    // The webgpu backend's forward hook (plumb_web.c's gpu_eval, gpu_truncate): a request on the
    // chat's GPU channel, this thread blocked until the GPU Worker answers.
    plumbGpuEval: (id, ids, n, pos0, logits, out0, msg, cap) => gpuCall(id, msg, cap, (v) => {
      views();
      v.ids.set(i32.subarray(ids >>> 2, (ids >>> 2) + n));
      v.ctl[OP] = OP_EVAL; v.ctl[N] = n; v.ctl[POS0] = pos0; v.ctl[ROWS] = logits ? n - out0 : 0;
    }, (v) => {
      if (!logits) return;
      views();
      f32.set(v.logits.subarray(0, (n - out0) * v.nVocab), logits >>> 2);
    }),
    plumbGpuTruncate: (id, n, msg, cap) => gpuCall(id, msg, cap, (v) => {
      v.ctl[OP] = OP_TRUNCATE; v.ctl[ARG] = n;
    }, () => {}),
    print: opts.print ?? (() => {}),
    printErr: opts.printErr ?? ((s) => console.warn(s)),
  });
  // Views of the current heap: memory grows (and with threads may grow in another thread, which
  // leaves emscripten's own views stale here), so every access goes through these.
  let viewBuf = null, u8, u32, i32, f32;
  const views = () => {
    const b = M.wasmMemory ? M.wasmMemory.buffer : M.HEAPU8.buffer;
    if (b !== viewBuf) {
      viewBuf = b;
      u8 = new Uint8Array(b); u32 = new Uint32Array(b); i32 = new Int32Array(b);
      f32 = new Float32Array(b);
    }
  };
  // A request on chat id's GPU channel: 0, or a pl_status with its message written at msg.
  // Never throws: an exception would unwind through the engine's C frames mid-call.
  function gpuCall(id, msg, cap, fill, done) {
    const c = chats.get(id);
    let r;
    try {
      r = c && c.gpu ? c.gpu.call(fill) : { status: -1, message: `chat ${id} has no GPU channel` };
      if (r.status === 0) done(c.gpu.views);
    } catch (e) {
      r = { status: -3, message: `webgpu: ${e && e.message ? e.message : String(e)}` };
    }
    if (r.status !== 0) M.stringToUTF8(r.message || 'webgpu: failed with no message', msg, cap);
    return r.status;
  }
  const heapU8 = () => (views(), u8);
  const heapU32 = () => (views(), u32);
  const notePeak = () => { peak = Math.max(peak, heapU8().buffer.byteLength); };
  notePeak();

  const errPtr = M._malloc(M._pw_error_size()) >>> 0;
  const check = (st) => {
    if (st !== 0) throw new Error(M.UTF8ToString(M._pw_error_msg(errPtr)));
  };
  const withStrings = (strs, fn) => {
    const ptrs = strs.map((s) => {
      if (s == null) return 0;
      const n = M.lengthBytesUTF8(s) + 1, p = M._malloc(n);
      M.stringToUTF8(s, p, n);
      return p;
    });
    try { return fn(...ptrs); } finally { ptrs.forEach((p) => p && M._free(p)); }
  };
  const takeJSON = (p) => {
    if (!p) return null;
    try { return JSON.parse(M.UTF8ToString(p)); } finally { M._free(p); }
  };
  const kernelSets = takeJSON(M._pw_kernel_sets_json());

  let model = 0, modelBuf = 0, modelSize = 0, nextChat = 1;

  const eng = {
    info() {
      return {
        variant, threads,
        kernelSets: kernelSets.filter((k) => k.supported).map((k) => k.name),
        crossOriginIsolated: globalThis.crossOriginIsolated === true,
      };
    },
    // A view into the heap: write the file there (no second copy), before any other call
    // (a call may grow the heap, which detaches this view in the single-thread variants).
    allocModel(size) {
      eng.freeModel();
      if (!(size > 0)) throw new Error(`allocModel: size ${size} is not positive`);
      modelBuf = M._malloc(size) >>> 0;
      if (!modelBuf) throw new Error(`allocModel: cannot allocate ${size} bytes in the wasm heap`);
      modelSize = size;
      notePeak();
      return heapU8().subarray(modelBuf, modelBuf + size);
    },
    loadModel(buf, o = {}) {
      if (!modelBuf || !buf || buf.byteOffset !== modelBuf)
        throw new Error('loadModel: pass the view allocModel returned');
      if (model) { M._pw_model_free(model); model = 0; }
      const out = M._malloc(4) >>> 0;
      try {
        withStrings([o.kernels], (k) => check(M._pw_model_load(out, modelBuf, modelSize, k, errPtr)));
        model = heapU32()[out >>> 2];
      } finally { M._free(out); notePeak(); }
      const info = takeJSON(M._pw_model_info_json(model, modelSize, errPtr));
      if (!info) check(1);
      return info;
    },
    freeModel() {
      for (const c of [...chats.values()]) c.chat.free();
      if (model) M._pw_model_free(model);
      if (modelBuf) M._free(modelBuf);
      model = modelBuf = modelSize = 0;
    },
    // o.gpu = { channel (gpu-channel.mjs's createChannel), kick() (tells the GPU Worker) }: the
    // webgpu backend, the session's forward in the GPU Worker (a threads variant only).
    newChat(o = {}) {
      if (!model) throw new Error('newChat: no model loaded');
      if (o.gpu && !threaded) throw new Error('newChat: the webgpu backend needs a threads variant (a cross-origin isolated page)');
      const s = o.sampler ?? {};
      const id = nextChat++;
      const out = M._malloc(4) >>> 0;
      let handle = 0;
      const rec = { onPiece: () => 0, gpu: o.gpu ? channelClient(o.gpu.channel, o.gpu.kick, o.gpu.timeoutMs) : null };
      if (rec.gpu) {
        rec.gpu.views.nVocab = o.gpu.channel.nVocab;
        // a greedy sampler (temperature 0: the engine's first maximum, no penalties in the page's
        // sampler): the GPU runs each next decode step on its own pick before the engine asks
        rec.gpu.views.ctl[GREEDY] = (s.temp ?? 0.8) === 0 ? 1 : 0;
      }
      chats.set(id, rec);
      try {
        withStrings([o.system, o.kernels], (sys, k) => check(M._pw_chat_new(out, model, id, sys,
          o.nCtx ?? 0, o.window ?? 0, o.sinks ?? 0, threads, k, s.temp ?? 0.8, s.topK ?? 40,
          s.topP ?? 0.95, s.minP ?? 0.05, s.seed ?? -1, 1, o.gpu ? o.gpu.channel.idsCap : 0,
          o.gpu ? o.gpu.channel.rows : 0, errPtr)));
        handle = heapU32()[out >>> 2];
      } catch (e) {
        chats.delete(id);
        throw e;
      } finally { M._free(out); notePeak(); }
      const chat = {
        turn(userText, t = {}) {
          if (!handle) throw new Error('turn: the chat was freed');
          const onText = t.onText, shouldStop = t.shouldStop;
          let stopped = false;
          rec.onPiece = (str) => {
            if (onText) onText(str);
            if (shouldStop && shouldStop()) stopped = true;
            return stopped;
          };
          const out = M._malloc(4) >>> 0;
          try {
            withStrings([userText], (u) =>
              check(M._pw_chat_turn(handle, u, t.maxTokens ?? 256, t.ignoreEos ? 1 : 0, out, errPtr)));
            const st = takeJSON(heapU32()[out >>> 2]);
            // The reply's bytes, decoded as the streamed pieces are (U+FFFD for bytes that
            // are not UTF-8: a reply may end inside a character).
            const p = M._pw_chat_reply(handle) >>> 0, n = M._pw_chat_reply_len(handle);
            st.text = new TextDecoder().decode(heapU8().slice(p, p + n));
            // the GPU backend: the chat's decode steps the GPU Worker ran ahead so far (a greedy chat)
            if (rec.gpu) st.gpuSpecHits = rec.gpu.views.ctl[SPEC_HITS];
            return st;
          } finally { M._free(out); rec.onPiece = () => 0; notePeak(); }
        },
        reset() { if (handle) M._pw_chat_reset(handle); },
        // The session's kernel set ('webgpu' for the GPU backend) and context (KV capacity).
        info() {
          if (!handle) throw new Error('info: the chat was freed');
          const r = takeJSON(M._pw_chat_info_json(handle, errPtr));
          if (!r) check(1);
          return r;
        },
        free() {
          if (handle) M._pw_chat_free(handle);
          handle = 0;
          chats.delete(id);
        },
      };
      rec.chat = chat;
      return chat;
    },
    memory() {
      notePeak();
      return { heapBytes: M._pw_heap_in_use(), memoryBytes: heapU8().buffer.byteLength,
        peakHeapBytes: peak };
    },
    // The last position's logits of a prompt (tokenized with BOS, as `plumb logits -p`) or of
    // token ids, from a fresh session: a Float32Array copy.
    logits(input, o = {}) {
      if (!model) throw new Error('logits: no model loaded');
      const info = takeJSON(M._pw_model_info_json(model, modelSize, errPtr));
      const nv = info.vocab;
      const out = M._malloc(nv * 4) >>> 0;
      let toks = 0;
      try {
        if (typeof input === 'string') {
          withStrings([input, o.kernels], (p, k) =>
            check(M._pw_logits(model, p, 0, 0, k, threads, out, errPtr)));
        } else {
          const ids = Int32Array.from(input);
          toks = M._malloc(ids.length * 4 || 4) >>> 0;
          views(); i32.set(ids, toks >>> 2);
          withStrings([o.kernels], (k) =>
            check(M._pw_logits(model, 0, toks, ids.length, k, threads, out, errPtr)));
        }
        notePeak();
        views();
        return f32.slice(out >>> 2, (out >>> 2) + nv);
      } finally { M._free(out); if (toks) M._free(toks); }
    },
  };
  return eng;
}
