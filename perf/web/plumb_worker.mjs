// plumb_worker.mjs — plumb's engine module in a dedicated Worker for perf/web/bench.html (the
// engine's calls are synchronous; the chat page runs it in a Worker too). Messages:
// {cmd:'load', url, threads, kernels} -> model info; {cmd:'turn', user, maxTokens, sampler,
// system, nCtx} -> the turn's stats (a fresh chat each time: no prefix cache across rounds).
import { createEngine } from '/plumb/plumb-engine.mjs';

let eng = null;
onmessage = async (e) => {
  const m = e.data;
  try {
    if (m.cmd === 'load') {
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
      postMessage({ ok: true, r: { model, info: eng.info() } });
    } else if (m.cmd === 'turn') {
      const chat = eng.newChat({ system: m.system, nCtx: m.nCtx, sampler: m.sampler });
      const st = chat.turn(m.user, { maxTokens: m.maxTokens });
      chat.free();
      delete st.text;
      postMessage({ ok: true, r: st });
    } else if (m.cmd === 'free') {
      eng.freeModel();
      postMessage({ ok: true, r: null });
    }
  } catch (err) {
    postMessage({ ok: false, error: String(err && err.message || err) });
  }
};
