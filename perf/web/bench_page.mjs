// bench_page.mjs — window.bench for perf/perf_web.mjs: load/turn/free for plumb (engine module in
// a Worker, variant simd-threads) and wllama (its own Worker; multi-thread when n_threads > 1 and
// the page is cross-origin isolated, which the harness's server makes it). Timing is each
// engine's own: plumb's stats (prefillTokS, decodeTokS), wllama's llama.cpp timings
// (prompt_per_second, predicted_n, predicted_ms), from which perf_web.mjs derives one rule for both.
// Memory: plumb's eng.memory(); wllama's wasm memories' buffer.byteLength, read in its Worker by
// a prelude this page puts before wllama's worker code (wllama exposes no memory figure).
import { Wllama } from '/wllama/index.js';

// wllama starts its engine in a module Worker made from a Blob of its code. Each such Worker is
// made instead from a module that first imports a prelude (recording every WebAssembly.Memory
// made or exported in that Worker), then wllama's code unchanged. A {plumbMemProbe} message is
// answered by the prelude and never reaches wllama's own handlers, on either side.
const PRELUDE = `const mems = [];
const M = WebAssembly.Memory;
const Memory = function Memory(d) { const m = new M(d); mems.push(m); return m; };
Memory.prototype = M.prototype;
WebAssembly.Memory = Memory;
for (const k of ['instantiate', 'instantiateStreaming']) {
  const f = WebAssembly[k];
  WebAssembly[k] = async function (...a) {
    const r = await f.apply(this, a);
    const inst = r && r.instance ? r.instance : r;
    for (const v of Object.values((inst && inst.exports) || {})) if (v instanceof M && !mems.includes(v)) mems.push(v);
    return r;
  };
}
self.addEventListener('message', (e) => {
  if (!e.data || !e.data.plumbMemProbe) return;
  e.stopImmediatePropagation();
  postMessage({ plumbMemProbe: true, bytes: mems.map((m) => m.buffer.byteLength) });
});`;
const preludeUrl = URL.createObjectURL(new Blob([PRELUDE], { type: 'text/javascript' }));
const probed = []; // wllama's Workers, in the order they were made
const NativeWorker = globalThis.Worker;
globalThis.Worker = class extends NativeWorker {
  constructor(url, opts) {
    const s = String(url);
    if (!s.startsWith('blob:') || !opts || opts.type !== 'module') { super(url, opts); return; }
    const code = `import ${JSON.stringify(preludeUrl)};\nimport ${JSON.stringify(s)};\n`;
    super(URL.createObjectURL(new Blob([code], { type: 'text/javascript' })), opts);
    this.plumbProbe = null;
    this.addEventListener('message', (e) => {
      if (!e.data || !e.data.plumbMemProbe) return;
      e.stopImmediatePropagation();
      if (this.plumbProbe) this.plumbProbe(e.data.bytes);
      this.plumbProbe = null;
    });
    probed.push(this);
  }
};
// The sum of a Worker's wasm memories (bytes), or null when it does not answer within 5 s.
function probe(w) {
  return new Promise((resolve) => {
    const t = setTimeout(() => { w.plumbProbe = null; resolve(null); }, 5000);
    w.plumbProbe = (bytes) => { clearTimeout(t); resolve(bytes.reduce((a, b) => a + b, 0)); };
    w.postMessage({ plumbMemProbe: true });
  });
}
const wllamaWorkers = new Map();

const plumbs = new Map();
const wllamas = new Map();

function call(w, msg) {
  return new Promise((resolve, reject) => {
    w.onmessage = (e) => (e.data.ok ? resolve(e.data.r) : reject(new Error(e.data.error)));
    w.onerror = (e) => reject(new Error(e.message || 'worker error'));
    w.postMessage(msg);
  });
}

// memory64 (wasm64) in this browser, hand-made (no toolchain here builds a wasm64 engine):
// (module (memory (export "m") i64 1 131072)            ;; i64 addresses, at most 8 GiB
//   (func (export "grow") (param i64) (result i64) local.get 0 memory.grow)
//   (func (export "poke") (param i64 i32) local.get 0 local.get 1 i32.store8)
//   (func (export "peek") (param i64) (result i32) local.get 0 i32.load8_u))
const MEMORY64 = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0,
  1, 16, 3, 0x60, 1, 0x7e, 1, 0x7e, 0x60, 2, 0x7e, 0x7f, 0, 0x60, 1, 0x7e, 1, 0x7f, // types
  3, 4, 3, 0, 1, 2, // functions
  5, 6, 1, 5, 1, 0x80, 0x80, 8, // memory: flags 5 (i64, a maximum), 1 page, 131072 pages
  7, 26, 4, 1, 0x6d, 2, 0, 4, 0x67, 0x72, 0x6f, 0x77, 0, 0, 4, 0x70, 0x6f, 0x6b, 0x65, 0, 1,
  4, 0x70, 0x65, 0x65, 0x6b, 0, 2, // exports m, grow, poke, peek
  10, 26, 3, 6, 0, 0x20, 0, 0x40, 0, 0x0b, 9, 0, 0x20, 0, 0x20, 1, 0x3a, 0, 0, 0x0b,
  7, 0, 0x20, 0, 0x2d, 0, 0, 0x0b]); // code
// What this browser does with memory64 and how far a wasm32 memory grows: { validates,
// instantiates, grewTo (bytes; past 4 GiB means wasm64 would hold what wasm32 cannot), beyond4GiB
// (a byte stored at 4 GiB + 4097 reads back), wasm32Max (bytes a wasm32 memory reached), error }.
function memory64Probe(grow) {
  const r = { validates: false, instantiates: false, grewTo: 0, beyond4GiB: false, wasm32Max: 0, error: null };
  try {
    r.validates = WebAssembly.validate(MEMORY64);
    const { exports: x } = new WebAssembly.Instance(new WebAssembly.Module(MEMORY64));
    r.instantiates = true;
    x.poke(7n, 42);
    if (x.peek(7n) !== 42) throw new Error('a byte stored at address 7 did not read back');
    if (grow) {
      // 4 GiB + 64 KiB: one page past what a wasm32 memory can address.
      const old = x.grow(65536n);
      r.grewTo = x.m.buffer.byteLength;
      if (old < 0n) throw new Error('memory.grow past 4 GiB failed');
      const at = 4n * 1024n ** 3n + 4097n;
      x.poke(at, 99);
      r.beyond4GiB = x.peek(at) === 99 && x.peek(7n) === 42;
    }
  } catch (e) { r.error = String(e.message || e); }
  if (grow) {
    try {
      const m = new WebAssembly.Memory({ initial: 1, maximum: 65536 });
      for (const step of [32768, 16384, 8192, 4096, 2048, 1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1])
        try { m.grow(step); } catch { /* smaller */ }
      r.wasm32Max = m.buffer.byteLength;
    } catch (e) { r.error = r.error || `wasm32: ${e.message}`; }
  }
  return r;
}

// The int8 dot rate of one core in this browser: wasm's relaxed dot
// (i32x4.relaxed_dot_i8x16_i7x16_add_s, 16 multiply-adds, what wasm128r's matmuls are built on)
// in ACC independent chains, as `plumb bench`'s native probe runs vpdpbusd (tools/bench_probe_x86.c).
// A hand-made module (bytes built here), per iteration:
//   acc_i = relaxed_dot(a, b, acc_i) for i < ACC; then iters -= 1, loop while nonzero;
// returns lane 0 of the chains' sum. a's bytes are 1 and b's 2 (i7), so each dot adds 8 to every
// lane and the answer must be ACC * 8 * iters (mod 2^32): a wrong lowering or a folded loop fails.
const DOT_ACC = 10; // > latency x throughput of one dot (4-5 cycles x 2 a cycle), 12 xmm in use
function dotModule() {
  const leb = (n) => { const o = []; do { let b = n & 0x7f; n >>>= 7; if (n) b |= 0x80; o.push(b); } while (n); return o; };
  const sec = (id, bytes) => [id, ...leb(bytes.length), ...bytes];
  const v128const = (byte) => [0xfd, 0x0c, ...new Array(16).fill(byte)];
  const body = [1, DOT_ACC + 2, 0x7b, // locals 1.. : a, b, the chains (v128, zero)
    ...v128const(1), 0x21, 1, ...v128const(2), 0x21, 2,
    0x03, 0x40]; // loop
  for (let i = 0; i < DOT_ACC; i++) body.push(0x20, 1, 0x20, 2, 0x20, 3 + i, 0xfd, 0x93, 0x02, 0x21, 3 + i);
  body.push(0x20, 0, 0x41, 1, 0x6b, 0x22, 0, 0x0d, 0, 0x0b); // iters -= 1; br_if loop; end
  body.push(0x20, 3);
  for (let i = 1; i < DOT_ACC; i++) body.push(0x20, 3 + i, 0xfd, 0xae, 0x01); // i32x4.add
  body.push(0xfd, 0x1b, 0, 0x0b); // i32x4.extract_lane 0; end
  return new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0,
    ...sec(1, [1, 0x60, 1, 0x7f, 1, 0x7f]), ...sec(3, [1, 0]), ...sec(7, [1, 3, 0x64, 0x6f, 0x74, 0, 0]),
    ...sec(10, [1, ...leb(body.length), ...body])]);
}
// { gmacs (median of reps), best, reps, ok, error }: reps timed runs of ~ms each, after a warm-up
// that also checks the answer.
function dotProbe(ms = 200, reps = 7) {
  const r = { kernel: `i32x4.relaxed_dot_i8x16_i7x16_add_s, ${DOT_ACC} chains`, gmacs: NaN, best: NaN, reps: [], ok: false, error: null };
  try {
    const { exports: x } = new WebAssembly.Instance(new WebAssembly.Module(dotModule()));
    const want = (n) => (DOT_ACC * 8 * n) | 0;
    let iters = 1 << 16;
    for (;;) { // warm-up and calibration: iters taking ~ms
      const t0 = performance.now();
      const got = x.dot(iters);
      const dt = performance.now() - t0;
      if (got !== want(iters)) throw new Error(`the relaxed dot gave ${got} after ${iters} iterations, not ${want(iters)}`);
      if (dt > ms / 4 || iters >= 1 << 30) { iters = Math.min(2 ** 31 - 1, Math.max(1, Math.round(iters * ms / dt))); break; }
      iters *= 4;
    }
    for (let i = 0; i < reps; i++) {
      const t0 = performance.now();
      const got = x.dot(iters);
      const dt = (performance.now() - t0) / 1000;
      if (got !== want(iters)) throw new Error(`the relaxed dot gave ${got}, not ${want(iters)}`);
      r.reps.push((iters * DOT_ACC * 16) / dt / 1e9);
    }
    const s = [...r.reps].sort((p, q) => p - q);
    r.gmacs = s[(s.length - 1) >> 1];
    r.best = s[s.length - 1];
    r.ok = true;
  } catch (e) { r.error = String(e.message || e); }
  return r;
}

window.bench = {
  isolated: () => globalThis.crossOriginIsolated === true,
  memory64: (grow) => memory64Probe(grow),
  dotProbe: (ms, reps) => dotProbe(ms, reps),
  // base: where the engine module is served ('/plumb/'; '/plumb-b/' for the second build of an A/B run).
  async plumbLoad(id, url, threads, kernels, variant, base = '/plumb/') {
    const w = new Worker('/bench/plumb_worker.mjs', { type: 'module' });
    plumbs.set(id, w);
    return call(w, { cmd: 'load', url, threads, kernels, variant, base });
  },
  plumbLogits(id, p, steps) { return call(plumbs.get(id), { cmd: 'logits', p, steps }); },
  plumbTurn(id, o) { return call(plumbs.get(id), { cmd: 'turn', ...o }); },
  async plumbFree(id) { const w = plumbs.get(id); await call(w, { cmd: 'free' }); w.terminate(); plumbs.delete(id); },
  async wllamaLoad(id, url, threads, nCtx) {
    const blob = await (await fetch(url)).blob();
    const wl = new Wllama({ default: '/wllama/wasm/wllama.wasm' }, { suppressNativeLog: true });
    const before = probed.length;
    await wl.loadModel([new File([blob], 'model.gguf')], { n_threads: threads, n_ctx: nCtx, n_gpu_layers: 0, n_batch: 512 });
    wllamas.set(id, wl);
    wllamaWorkers.set(id, probed.slice(before));
    return { multithread: wl.isMultithread(), threads: wl.getNumThreads(), memoryBytes: await window.bench.wllamaMemory(id) };
  },
  // wllama's wasm memory (bytes, buffer.byteLength of every memory in its Worker), null if unknown.
  async wllamaMemory(id) {
    const ws = wllamaWorkers.get(id) || [];
    const got = await Promise.all(ws.map(probe));
    return ws.length && got.every((x) => x !== null) ? got.reduce((a, b) => a + b, 0) : null;
  },
  async wllamaTurn(id, o) {
    const wl = wllamas.get(id);
    const messages = [{ role: 'system', content: o.system }, { role: 'user', content: o.user }];
    const r = await wl.createChatCompletion({ messages, max_tokens: o.maxTokens, temperature: 0,
      ignore_eos: true, cache_prompt: false });
    return { timings: r.timings, usage: r.usage, finish: r.choices[0].finish_reason, memoryBytes: await window.bench.wllamaMemory(id) };
  },
  async wllamaFree(id) { await wllamas.get(id).exit(); wllamas.delete(id); wllamaWorkers.delete(id); },
};
document.body.dataset.ready = '1';
