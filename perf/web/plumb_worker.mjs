// plumb_worker.mjs — plumb's engine module in a dedicated Worker for perf/web/bench.html (the
// engine's calls are synchronous; the chat page runs it in a Worker too). Messages:
// {cmd:'load', url, threads, kernels, base (the engine module's folder)} -> model info, memory;
// {cmd:'turn', user, maxTokens, sampler, system, nCtx, ignoreEos} -> the turn's stats and the
// memory at its end, the chat still open (a fresh chat each time: no prefix cache across rounds;
// ignoreEos: decode runs to maxTokens, as wllama's ignore_eos). Memory is eng.memory():
// heapBytes (malloc's in use), memoryBytes (the wasm memory's buffer.byteLength, which only
// grows), peakHeapBytes.

let eng = null;
onmessage = async (e) => {
  const m = e.data;
  try {
    if (m.cmd === 'load') {
      const { createEngine } = await import(`${m.base || '/plumb/'}plumb-engine.mjs`);
      eng = await createEngine({ variant: m.variant || 'simd-threads', threads: m.threads });
      const resp = await fetch(m.url);
      const size = Number(resp.headers.get('Content-Length'));
      const buf = eng.allocModel(size);
      const reader = resp.body.getReader();
      let off = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf.set(value, off);
        off += value.length;
      }
      if (off !== size) throw new Error(`read ${off} of ${size} bytes`);
      const model = eng.loadModel(buf, { kernels: m.kernels });
      postMessage({ ok: true, r: { model, info: eng.info(), memory: eng.memory() } });
    } else if (m.cmd === 'turn') {
      let chat;
      try { chat = eng.newChat({ system: m.system, nCtx: m.nCtx, sampler: m.sampler }); } catch (err) {
        throw new Error(`${err.message} (memory ${JSON.stringify(eng.memory())})`);
      }
      let st;
      try { st = chat.turn(m.user, { maxTokens: m.maxTokens, ignoreEos: !!m.ignoreEos }); } catch (err) {
        chat.free();
        throw new Error(`${err.message} (memory ${JSON.stringify(eng.memory())})`);
      }
      st.memory = eng.memory(); // with the chat still open: its KV cache and scratch in use
      chat.free();
      delete st.text;
      postMessage({ ok: true, r: st });
    } else if (m.cmd === 'logits') {
      // Without a chat: eng.logits evaluates a token list from a fresh session. P tokens: a
      // prefill; 1 token: one step through every weight (a decode-like step at depth 0).
      const toks = Array.from({ length: m.p }, (_, i) => 100 + i);
      let t0 = performance.now();
      eng.logits(toks);
      const preMs = performance.now() - t0;
      t0 = performance.now();
      for (let i = 0; i < m.steps; i++) eng.logits([100 + i]);
      const stepMs = (performance.now() - t0) / m.steps;
      postMessage({ ok: true, r: { prefillTokS: m.p / (preMs / 1000), decodeTokS: 1000 / stepMs, prefilled: m.p, generated: m.steps } });
    } else if (m.cmd === 'free') {
      eng.freeModel();
      postMessage({ ok: true, r: null });
    }
  } catch (err) {
    postMessage({ ok: false, error: String(err && err.message || err) });
  }
};
