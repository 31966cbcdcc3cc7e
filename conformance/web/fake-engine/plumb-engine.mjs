// plumb-engine.mjs (FAKE) — a test double of the wasm engine module's contract (web/README.md),
// for the page's own tests while no wasm build is at hand: the Worker protocol, the ring, the
// progress bar, stop while the worker is busy, the postMessage fallback. Not the engine: its
// "tokens" are words from a seeded generator, each after a few ms of busy work.
export async function createEngine({ variant = 'simd', threads = 1 } = {}) {
  let heap = null;
  let model = null;
  let peak = 0;
  const info = () => ({ variant, threads, kernelSets: ['ref', 'wasm128'], crossOriginIsolated: globalThis.crossOriginIsolated === true });
  const words = ['the', 'cat', 'found', 'a', 'small', 'garden', 'and', 'sat', 'in', 'sun', 'then', 'slept', 'é', 'ü'];
  return {
    info,
    allocModel(size) { heap = new Uint8Array(size); peak = Math.max(peak, size); return heap; },
    loadModel(buf, { kernels } = {}) {
      if (buf.length < 4 || buf[0] !== 0x47 || buf[1] !== 0x47 || buf[2] !== 0x55 || buf[3] !== 0x46)
        throw new Error('not a GGUF file: bad magic');
      model = { arch: 'llama', nParams: 8e6, nCtxTrain: 512, vocab: 8192, chatTemplate: 'ok', kernels: kernels || 'wasm128', bytes: buf.length };
      return model;
    },
    freeModel() { model = null; heap = null; },
    memory: () => ({ heapBytes: heap ? heap.length : 0, peakHeapBytes: peak }),
    newChat({ nCtx = 0, window = 0, sinks = 0, sampler = {} } = {}) {
      if (!model) throw new Error('no model');
      if ((nCtx > 0) === (window > 0)) throw new Error('exactly one of context_window and sliding_window must be positive');
      if (window > 0 && (sinks < 0 || sinks >= window)) throw new Error('attention_sinks must be >= 0 and < sliding_window');
      if (window === 0 && sinks !== 0) throw new Error('attention_sinks needs a sliding_window');
      let held = 0;
      let s = (sampler.seed >>> 0) || 1;
      const rnd = () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 4294967296; };
      return {
        turn(text, { maxTokens = 16, onText = () => {}, shouldStop = () => false } = {}) {
          const t0 = performance.now();
          const prompt = text.split(/\s+/).filter(Boolean).length + 4;
          if (nCtx > 0 && held + prompt > nCtx)
            return { path: held ? 'fast' : 'slow', reused: held, prefilled: 0, generated: 0, ttftMs: 0, prefillTokS: 0, decodeTokS: 0, finish: 'context_full', text: '' };
          const path = held ? 'fast' : 'slow';
          const reused = held;
          held += prompt;
          let out = '', n = 0, finish = 'length', ttft = 0;
          while (n < maxTokens) {
            if (shouldStop()) { finish = 'cancel'; break; }
            if (nCtx > 0 && held >= nCtx) { finish = 'context_full'; break; }
            const end = performance.now() + 4;
            while (performance.now() < end) { /* a token's work */ }
            const piece = (n ? ' ' : '') + words[Math.floor(rnd() * words.length)];
            if (!n) ttft = performance.now() - t0;
            out += piece; n++; held++;
            onText(piece);
          }
          const ms = performance.now() - t0;
          return { path, reused, prefilled: prompt, generated: n, ttftMs: ttft, prefillTokS: prompt / (ttft / 1e3 || 1),
                   decodeTokS: n > 1 ? (n - 1) / ((ms - ttft) / 1e3) : 0, finish, text: out };
        },
        reset() { held = 0; },
        free() {},
      };
    },
  };
}
