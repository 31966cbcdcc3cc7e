// worker.js — the dedicated Worker that owns the wasm engine (plumb-engine.mjs): loads the
// model into the wasm heap, runs each chat turn synchronously and streams it to the page
// through ring.js. With the webgpu backend the chat's forward runs in a GPU Worker of its own
// (gpu-worker.js), started here, and the turn blocks on their channel (gpu-channel.mjs) at each
// step. Not the page (app.js); the main thread never runs the engine.
import { RingWriter, PostWriter } from './ring.js';

let eng = null; // the engine module instance
let model = null; // what loadModel returned
let chat = null;
let sink = null; // RingWriter (shared memory) or PostWriter (postMessage)
// The webgpu backend: the GPU Worker and what it said at init ({ ok, why, adapter }); whether it
// runs the loaded model ({ ok, why }); what the chat runs on ({ name: 'webgpu' or the wasm
// kernel set, why: the reason it is not webgpu, adapter }).
let gpuWorker = null, gpu = { ok: false, why: 'not started' }, gpuModel = { ok: false, why: '' };
let backend = null;
let gpuPending = null;

const reply = (msg) => postMessage(msg);
const errText = (e) => (e && e.message ? e.message : String(e));

async function init({ variant, threads, sab, gpu: want }) {
  const { createEngine } = await import('./plumb-engine.mjs');
  eng = await createEngine({ variant, threads });
  sink = sab ? new RingWriter(sab) : new PostWriter(self);
  gpu = await startGpu(want, variant);
  return { info: eng.info(), memory: eng.memory(), gpu };
}

// The GPU backend's conditions here, each failure with its reason: not turned off, a cross-origin
// isolated page (the channel is a SharedArrayBuffer) and a threads variant (its turn may block
// while the GPU works), navigator.gpu, an adapter and a device (the GPU Worker's init).
async function startGpu(want, variant) {
  if (want === 'off') return { ok: false, why: 'the GPU backend is off (gpu=off)' };
  if (globalThis.crossOriginIsolated !== true)
    return { ok: false, why: 'the page is not cross-origin isolated (the GPU channel needs SharedArrayBuffer)' };
  if (!variant.endsWith('-threads'))
    return { ok: false, why: `the ${variant} variant cannot wait for the GPU (a threads variant can)` };
  if (!globalThis.navigator || !navigator.gpu) return { ok: false, why: 'no navigator.gpu (this browser has no WebGPU here)' };
  gpuWorker = new Worker(new URL('./gpu-worker.js', import.meta.url), { type: 'module' });
  gpuWorker.onmessage = (ev) => { const p = gpuPending; gpuPending = null; if (p) p(ev.data); };
  gpuWorker.onerror = (e) => {
    const p = gpuPending;
    gpuPending = null;
    if (p) p({ ok: false, why: `the GPU worker failed: ${e.message || 'it could not start (see the console)'}` });
  };
  const r = await gpuAsk({ type: 'init' });
  if (!r.ok) { gpuWorker.terminate(); gpuWorker = null; }
  return r;
}

// A request to the GPU Worker, answered by one message ({ ok, why, ... }).
function gpuAsk(msg, transfer) {
  return new Promise((resolve) => {
    gpuPending = resolve;
    gpuWorker.postMessage(msg, transfer || []);
  });
}

// Copies the File into the heap slice by slice: the bytes land in the wasm heap once; each
// slice's ArrayBuffer is garbage as soon as it is copied.
async function loadFile(file, kernels) {
  const size = file.size;
  const buf = allocFor(size);
  const step = 8 << 20;
  for (let off = 0; off < size; off += step) {
    const chunk = new Uint8Array(await file.slice(off, Math.min(size, off + step)).arrayBuffer());
    buf.set(chunk, off);
    reply({ type: 'progress', loaded: off + chunk.length, total: size });
  }
  return await bind(buf, kernels, file.name);
}

// From a URL: a ReadableStream, each chunk copied into the heap at once. Without a
// Content-Length (compressed or chunked answers) the size is unknown up front: the chunks are
// held until the end, then copied (the one case with a transient second copy).
async function loadUrl(url, kernels, headers) {
  const res = await fetch(url, { headers: headers || {} });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${res.statusText}`);
  const total = Number(res.headers.get('Content-Length')) || 0;
  const enc = res.headers.get('Content-Encoding');
  const reader = res.body.getReader();
  let loaded = 0;
  if (total && !enc) {
    const buf = allocFor(total);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (loaded + value.length > total) throw new Error(`${url}: more bytes than its Content-Length (${total})`);
      buf.set(value, loaded);
      loaded += value.length;
      reply({ type: 'progress', loaded, total });
    }
    if (loaded !== total) throw new Error(`${url}: ${loaded} bytes of ${total} arrived`);
    return bind(buf, kernels, url);
  }
  const parts = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    loaded += value.length;
    reply({ type: 'progress', loaded, total: 0 });
  }
  const buf = allocFor(loaded);
  let off = 0;
  for (const p of parts) { buf.set(p, off); off += p.length; }
  return bind(buf, kernels, url);
}

function allocFor(size) {
  if (chat) { chat.free(); chat = null; }
  if (model) { eng.freeModel(); model = null; }
  return eng.allocModel(size);
}

async function bind(buf, kernels, name) {
  model = eng.loadModel(buf, { kernels: kernels || undefined });
  gpuModel = { ok: false, why: gpu.why };
  if (gpu.ok) {
    // A copy for the GPU Worker (its own heap: the forward reads its embedding rows there).
    const bytes = buf.slice().buffer;
    gpuModel = await gpuAsk({ type: 'load', bytes }, [bytes]);
  }
  return { model, name, memory: eng.memory(), gpu: gpuModel };
}

// A chat on the GPU when the model runs there, else (or when that chat cannot be made: the GPU's
// memory) on the wasm kernels, saying why. The GPU cache keeps the session's slots: its context
// window, or its sliding window and sinks.
async function newChat(p) {
  if (gpuModel.ok) {
    let c = null, why = '';
    try {
      const { createChannel } = await import('./gpu-channel.mjs'); // beside plumb-engine.mjs
      const channel = createChannel(model.vocab);
      c = eng.newChat({ ...p, gpu: { channel, kick: () => gpuWorker.postMessage({ type: 'run' }) } });
      const ci = c.info();
      const r = await gpuAsk({ type: 'chat', channel, nCtx: ci.capacity, window: ci.window || 0, sinks: ci.sinks || 0 });
      if (r.ok) {
        backend = { name: 'webgpu', why: '', adapter: gpu.adapter };
        return c;
      }
      why = r.why;
    } catch (e) {
      why = errText(e);
    }
    if (c) c.free();
    const plain = eng.newChat(p); // settings it refuses too are the settings' error
    backend = { name: model.kernels, why: `webgpu: ${why}` };
    return plain;
  }
  const plain = eng.newChat(p);
  backend = { name: model.kernels, why: gpuModel.why };
  return plain;
}

// The page's messages: each answered with one reply (or, for a turn, ring records).
self.onmessage = async (ev) => {
  const m = ev.data;
  try {
    switch (m.type) {
    case 'init':
      reply({ type: 'ready', ...(await init(m)) });
      break;
    case 'loadFile':
      reply({ type: 'loaded', ...(await loadFile(m.file, m.kernels)) });
      break;
    case 'loadUrl':
      reply({ type: 'loaded', ...(await loadUrl(m.url, m.kernels, m.headers)) });
      break;
    case 'newChat':
      if (!model) throw new Error('no model loaded');
      if (chat) { chat.free(); chat = null; }
      chat = await newChat(m.params);
      reply({ type: 'chat', backend });
      break;
    case 'reset':
      if (chat) chat.reset();
      reply({ type: 'reset', memory: eng ? eng.memory() : null });
      break;
    case 'turn':
      runTurn(m);
      break;
    default:
      throw new Error(`unknown message ${m.type}`);
    }
  } catch (e) {
    reply({ type: 'error', op: m.type, message: errText(e) });
  }
};

// One turn, synchronously: pieces to the sink as they come, then a 'done' (stats) or an
// 'error' record. shouldStop reads the shared STOP flag between tokens.
function runTurn(m) {
  if (!chat) {
    sink.json({ type: 'error', message: 'no chat: load a model first' });
    return;
  }
  let stats;
  try {
    stats = chat.turn(m.text, {
      maxTokens: m.maxTokens,
      onText: (s) => sink.text(s),
      shouldStop: () => sink.stopRequested(),
    });
  } catch (e) {
    sink.json({ type: 'error', message: errText(e) });
    return;
  }
  sink.json({ type: 'done', stats, memory: eng.memory() });
}
