// bench_page.mjs — window.bench for perf/perf_web.mjs: load/turn/free for plumb (engine module in
// a Worker, variant simd-threads) and wllama (its own Worker; multi-thread when n_threads > 1 and
// the page is cross-origin isolated, which the harness's server makes it). Timing is each
// engine's own: plumb's stats (prefillTokS, decodeTokS), wllama's llama.cpp timings
// (prompt_per_second, predicted_per_second).
import { Wllama } from '/wllama/index.js';

const plumbs = new Map();
const wllamas = new Map();

function call(w, msg) {
  return new Promise((resolve, reject) => {
    w.onmessage = (e) => (e.data.ok ? resolve(e.data.r) : reject(new Error(e.data.error)));
    w.onerror = (e) => reject(new Error(e.message || 'worker error'));
    w.postMessage(msg);
  });
}

window.bench = {
  isolated: () => globalThis.crossOriginIsolated === true,
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
    await wl.loadModel([new File([blob], 'model.gguf')], { n_threads: threads, n_ctx: nCtx, n_gpu_layers: 0, n_batch: 512 });
    wllamas.set(id, wl);
    return { multithread: wl.isMultithread(), threads: wl.getNumThreads() };
  },
  async wllamaTurn(id, o) {
    const wl = wllamas.get(id);
    const messages = [{ role: 'system', content: o.system }, { role: 'user', content: o.user }];
    const r = await wl.createChatCompletion({ messages, max_tokens: o.maxTokens, temperature: 0,
      ignore_eos: true, cache_prompt: false });
    return { timings: r.timings, usage: r.usage, finish: r.choices[0].finish_reason };
  },
  async wllamaFree(id) { await wllamas.get(id).exit(); wllamas.delete(id); },
};
document.body.dataset.ready = '1';
