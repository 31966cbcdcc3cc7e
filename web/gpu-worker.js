// gpu-worker.js — the webgpu backend's GPU Worker: owns a GPUDevice, loads the model's GGUF bytes
// with kernels/webgpu/llama.mjs (weights uploaded once, the KV cache on the GPU) and serves the
// engine Worker's forward steps through gpu-channel.mjs. Not the chat (the engine's session keeps
// the prefix cache plan, the sampler, the stops: worker.js, plumb_web.c) nor the page.
import { createKernels } from './plumb-webgpu.mjs';
import { readGGUF, gpuSupport, loadModel, forward, truncate, freeModel } from './llama.mjs';
import { channelViews, answer, OP, N, POS0, ROWS, ARG, OP_EVAL, OP_TRUNCATE, GREEDY, SPEC_HITS,
  PL_ERR_INVALID_ARG, PL_ERR_IO } from './gpu-channel.mjs';

let device = null, ks = null, gguf = null, model = null, v = null, vocab = 0;
let lost = '';

const errText = (e) => (e && e.message ? e.message : String(e));

// Why this Worker cannot run the GPU backend ('' when it can): navigator.gpu, an adapter, a
// device. { ok, why, adapter: {vendor, architecture, description} }.
async function init() {
  const gpu = globalThis.navigator && navigator.gpu;
  if (!gpu) return { ok: false, why: 'no navigator.gpu (this browser has no WebGPU here)' };
  const a = await gpu.requestAdapter();
  if (!a) return { ok: false, why: 'navigator.gpu.requestAdapter() gave no adapter' };
  // The adapter's buffer limits, not the defaults (128/256 MiB): an embedding table is larger.
  const lim = a.limits;
  try {
    device = await a.requestDevice({ requiredLimits: {
      maxStorageBufferBindingSize: lim.maxStorageBufferBindingSize, maxBufferSize: lim.maxBufferSize } });
  } catch (e) {
    return { ok: false, why: `requestDevice() failed: ${errText(e)}` };
  }
  if (!device) return { ok: false, why: 'requestDevice() gave no device' };
  device.lost.then((info) => { lost = `the GPU device was lost: ${info.message || info.reason}`; });
  const i = a.info || {};
  return { ok: true, why: '', adapter: { vendor: i.vendor || '', architecture: i.architecture || '',
    description: i.description || '' } };
}

// The file: whether the forward pass runs it exactly as the engine would (gpuSupport), then the
// kernels compiled. { ok, why, vocab, arch }.
async function load(bytes) {
  if (model) { freeModel(model); model = null; }
  gguf = readGGUF(bytes);
  const sup = gpuSupport(gguf);
  if (!sup.ok) { gguf = null; return { ok: false, why: sup.why }; }
  if (!ks) ks = await createKernels(device);
  vocab = gguf.tensors['token_embd.weight'].dims[1];
  return { ok: true, why: '', vocab, arch: sup.arch };
}

// A new chat: the model on the device with a cache of nCtx positions (the session's context), or
// the ring of its sliding window with sinks (window > 0: llama.mjs's loadModel), uploaded again
// only when that changes, holding nothing; requests come on the channel.
function chat(channel, nCtx, window = 0, sinks = 0) {
  if (!gguf) throw new Error('no model loaded in the GPU worker');
  if (channel.nVocab !== vocab) throw new Error(`the channel carries ${channel.nVocab} logits a row, the model has ${vocab}`);
  if (!model || model.window !== window || model.sinks !== sinks || (!window && model.nCtx !== nCtx)) {
    if (model) freeModel(model);
    model = null;
    model = loadModel(ks, gguf, nCtx, { window, sinks });
  }
  truncate(model, 0);
  v = channelViews(channel);
  v.ctl[SPEC_HITS] = 0;
  return { ok: true };
}

// One request from the engine: eval (ids at pos0, the last ROWS rows of logits back) or truncate.
async function run() {
  if (!v) return;
  const c = v.ctl;
  try {
    if (lost) throw new Error(lost);
    if (!model) throw new Error('no model on the GPU');
    if (c[OP] === OP_TRUNCATE) {
      const n = c[ARG];
      if (!(n >= 0 && n <= model.nPast))
        return answer(v, PL_ERR_INVALID_ARG, `truncate to ${n}: the GPU cache holds ${model.nPast} positions`);
      try {
        truncate(model, n);
      } catch (e) { // a sliding window that already evicted what the next query needs
        return answer(v, PL_ERR_INVALID_ARG, errText(e));
      }
      return answer(v, 0);
    }
    if (c[OP] !== OP_EVAL) return answer(v, PL_ERR_INVALID_ARG, `unknown request ${c[OP]}`);
    const n = c[N], pos0 = c[POS0], rows = c[ROWS];
    // The session says where the ids go; the GPU cache must hold exactly what precedes them.
    if (pos0 !== model.nPast)
      return answer(v, PL_ERR_INVALID_ARG, `asked to evaluate at position ${pos0}, the GPU cache holds ${model.nPast}`);
    if (pos0 + n > model.nCtx)
      return answer(v, PL_ERR_INVALID_ARG, `${n} ids at ${pos0}: past the GPU cache's ${model.nCtx} positions`);
    // only the rows the session wants come back from the GPU (none: the last, not passed on)
    // a greedy chat: each decode step speculates on the next (forward's speculate: the same logits)
    const timing = {};
    const out = await forward(model, Array.from(v.ids.subarray(0, n)), { rows: Math.max(rows, 1), speculate: c[GREEDY] === 1, timing });
    if (timing.spec === 'hit') c[SPEC_HITS]++;
    if (rows > 0) v.logits.set(out.subarray(0, rows * vocab));
    answer(v, 0);
  } catch (e) {
    answer(v, PL_ERR_IO, `webgpu: ${errText(e)}`);
  }
}

// Requests from worker.js, one at a time: 'run' answers on the channel, the others by message.
self.onmessage = async (ev) => {
  const m = ev.data;
  if (m.type === 'run') return run();
  try {
    if (m.type === 'init') postMessage({ type: 'init', ...(await init()) });
    else if (m.type === 'load') postMessage({ type: 'load', ...(await load(m.bytes)) });
    else if (m.type === 'chat') postMessage({ type: 'chat', ...chat(m.channel, m.nCtx, m.window, m.sinks) });
    else throw new Error(`unknown message ${m.type}`);
  } catch (e) {
    postMessage({ type: m.type, ok: false, why: errText(e) });
  }
};
