// app.js — the chat page's logic on the main thread: the backend switch, loading a model into
// the Worker, the conversation, settings, stats, stop and reset. Never runs the engine and never
// blocks (no Atomics.wait here). Not the engine's host (worker.js) nor the ring (ring.js).
import { REC_TEXT, REC_JSON, ringSupported, createRingBuffer, RingReader } from './ring.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const dec = new TextDecoder();

// Everything the tests read back (window.plumb): one entry per turn, as the page saw it.
const state = {
  backend: null,
  isolated: ringSupported(),
  // gpu: the engine Worker's webgpu conditions ({ ok, why, adapter }); backend: what the chat
  // runs on ({ name: 'webgpu' or the wasm kernel set, why: the reason it is not webgpu }).
  wasm: { available: false, why: '', worker: null, reader: null, variant: null, info: null,
          model: null, source: null, chatReady: false, loading: false, gpu: null, backend: null },
  server: { available: false, model: null, file: null }, // file: { bytes } when /model.gguf is offered
  messages: [], // server mode: the conversation sent with each request
  turns: [],
  busy: false,
  current: null, // the turn being streamed
};
window.plumb = state;

// ---- small helpers --------------------------------------------------------------------------
const num = (id) => Number($(id).value);
function fmtBytes(n) {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(2)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} B`;
}
const fmtRate = (x) => (Number.isFinite(x) && x > 0 ? x.toFixed(x >= 100 ? 0 : 1) : '–');
function setBusy(b) {
  state.busy = b;
  $('send').disabled = b;
  $('stop').disabled = !b;
  $('apply').disabled = b;
  document.body.dataset.busy = b ? '1' : '0';
}
function notice(text) {
  $('notice-text').textContent = text;
  $('notice').hidden = !text;
}
function settingsError(text) { $('settings-error').textContent = text || ''; }
// A message the page did not take: said beside the input, which keeps the text.
function inputError(text) { $('input-error').textContent = text || ''; }

// The line under the title: which backend the next message goes to, and which model it runs.
function showOn() {
  const w = state.wasm;
  let text, model = '';
  if (state.backend === 'server') {
    model = state.server.model || '';
    text = `On the server (plumb serve): ${model ? `model ${model}` : 'its model id needs the API key (Server, left)'}`;
  } else if (w.model && w.backend && w.backend.name === 'webgpu') {
    model = w.name || '';
    const a = w.backend.adapter || {};
    const gpuName = [a.vendor, a.architecture, a.description].filter(Boolean).join(' ') || 'an adapter';
    text = `In this browser (WebGPU on ${gpuName}; tokenizer and sampler in WebAssembly, ${w.info ? w.info.variant : ''}): ` +
      `model ${model}, kernels webgpu`;
  } else if (w.model) {
    model = w.name || '';
    text = `In this browser (WebAssembly${w.info ? `, ${w.info.variant}, ${w.info.threads} thread${w.info.threads > 1 ? 's' : ''}` : ''}): ` +
      `model ${model}, kernels ${w.model.kernels}`;
  } else {
    text = `In this browser (WebAssembly): ${w.loading ? 'loading a model…' : 'no model loaded yet'}`;
  }
  $('on').textContent = text;
  // The backend the chat runs and, when it is not the GPU, why (e.g. "wasm128r: the webgpu set
  // has no matmul for Q6_K (...)").
  const b = state.backend === 'wasm' && w.model ? w.backend : null;
  $('engine-backend').textContent = b ? `backend ${b.name}${b.why ? ` — not on the GPU: ${b.why}` : ''}` : '';
  document.body.dataset.engine = b ? b.name : '';
  document.body.dataset.on = state.backend || '';
  document.body.dataset.onModel = model;
}
function samplerSettings() {
  return { temp: num('temp'), topK: num('top-k'), topP: num('top-p'), minP: num('min-p'), seed: num('seed') };
}

// ---- the conversation view --------------------------------------------------------------------
function addMessage(role, text) {
  const el = document.createElement('div');
  el.className = `msg ${role}`;
  const t = document.createElement('div');
  t.className = 'text';
  t.textContent = text;
  el.append(t);
  $('log').append(el);
  $('log').scrollTop = $('log').scrollHeight;
  return el;
}

function beginTurn(user) {
  addMessage('user', user);
  const el = addMessage('assistant', '');
  el.classList.add('streaming');
  const turn = { backend: state.backend, user, streamed: '', text: null, stats: null, error: null,
                 finish: null, done: false, el, decoder: new TextDecoder(), frame: 0 };
  state.current = turn;
  state.turns.push(turn);
  setBusy(true);
  notice('');
  return turn;
}

// Pieces are drawn once per frame: a fast model streams far more pieces than frames, and each
// draw re-lays out the reply; input events (Stop) must never wait behind that.
function appendText(turn, s) {
  if (!s) return;
  turn.streamed += s;
  if (!turn.frame) turn.frame = requestAnimationFrame(() => drawText(turn));
}
function drawText(turn) {
  if (turn.frame) cancelAnimationFrame(turn.frame);
  turn.frame = 0;
  turn.el.querySelector('.text').textContent = turn.streamed;
  $('log').scrollTop = $('log').scrollHeight;
}

// What each number means: web/README.md, "The page".
function statsLine(s) {
  return `path <b>${s.path}</b> · reused <b>${s.reused}</b> · prefilled <b>${s.prefilled}</b> · ` +
    `generated <b>${s.generated}</b> · first token <b>${Math.round(s.ttftMs)} ms</b> · ` +
    `prefill <b>${fmtRate(s.prefillTokS)}</b> tok/s · decode <b>${fmtRate(s.decodeTokS)}</b> tok/s · ` +
    `<b>${s.finish}</b>`;
}

function endTurn(turn, { stats = null, text = null, error = null, finish = null } = {}) {
  if (turn.done) return;
  turn.done = true;
  drawText(turn);
  turn.stats = stats;
  turn.text = text !== null ? text : turn.streamed;
  turn.error = error;
  turn.finish = finish || (stats && stats.finish) || (error ? 'error' : null);
  turn.el.classList.remove('streaming');
  turn.el.dataset.done = '1';
  turn.el.dataset.finish = turn.finish || '';
  if (stats) {
    const d = document.createElement('div');
    d.className = 'stats';
    d.innerHTML = statsLine(stats); // numbers and fixed words only
    d.dataset.stats = JSON.stringify(stats);
    turn.el.append(d);
  }
  if (error) {
    const d = document.createElement('div');
    d.className = 'err';
    d.textContent = error;
    turn.el.append(d);
  }
  if (turn.finish === 'context_full')
    notice('The context is full: the engine\'s cache is intact (never half-written), but this conversation ' +
           'cannot go on in this context. Reset to start over, or raise the context or use a sliding window (Apply).');
  if (state.current === turn) state.current = null;
  setBusy(false);
  refreshMemory();
}

// ---- backend: the wasm engine in a Worker --------------------------------------------------
function simdSupported() {
  // (module (func (result v128) i32.const 0 i8x16.splat i8x16.popcnt))
  const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0,
    10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);
  try { return WebAssembly.validate(bytes); } catch { return false; }
}

// plumb-engine.mjs's relaxedDotExact(), which this page cannot import (the engine folder may be
// absent or a test double): relaxed SIMD validates AND computes the dot exactly.
function relaxedSupported() {
  const load = (at) => [65, at, 253, 0, 0, 0];
  const body = [0, 65, 0, ...load(16), ...load(32), ...load(48), 253, 147, 2, 253, 11, 0, 0, 11];
  const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0,
    5, 3, 1, 0, 1, 7, 9, 2, 1, 109, 2, 0, 1, 102, 0, 0, 10, body.length + 2, 1, body.length, ...body]);
  try {
    if (!WebAssembly.validate(bytes)) return false;
    const { exports } = new WebAssembly.Instance(new WebAssembly.Module(bytes));
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
        let sum = c;
        for (let j = 0; j < 4; j++) sum += a[4 * l + j] * b[4 * l + j];
        want.push(sum | 0);
      }
      exports.f();
      for (let l = 0; l < 4; l++) if (mem.getInt32(4 * l, true) !== want[l]) return false;
    }
    return true;
  } catch { return false; }
}

function pickVariant() {
  const want = $('variant').value; // ?variant= was copied into the select
  if (want && want !== 'auto') return want;
  // What plumb-engine.mjs's detectVariant picks: threads need isolation (SharedArrayBuffer).
  const simd = simdSupported();
  return (simd && relaxedSupported() ? 'simd-relaxed' : simd ? 'simd' : 'scalar') +
    (state.isolated ? '-threads' : '');
}

function onRecord(kind, bytes) {
  const turn = state.current;
  if (kind === REC_TEXT) {
    if (turn) appendText(turn, turn.decoder.decode(bytes, { stream: true }));
    return;
  }
  if (kind !== REC_JSON) return;
  const ev = JSON.parse(dec.decode(bytes));
  if (!turn) return;
  if (ev.type === 'done') {
    appendText(turn, turn.decoder.decode());
    state.wasm.memory = ev.memory;
    endTurn(turn, { stats: ev.stats, text: ev.stats.text });
    // A prompt that did not fit: the engine kept nothing of it, so the user gets it back.
    if (ev.stats.path === 'none') giveBack(turn.user, 'the message does not fit in the context');
  } else if (ev.type === 'error') {
    const full = /context/i.test(ev.message) && /full|fit|exceed/i.test(ev.message);
    endTurn(turn, { error: ev.message, finish: full ? 'context_full' : 'error' });
    if (full) notice(`${ev.message} — reset to start a new conversation.`);
  }
}

async function pump(reader) {
  while (state.wasm.reader === reader) {
    for (const r of reader.drain()) onRecord(r.kind, r.bytes);
    await reader.wait();
  }
}

// Requests to the worker that answer with one message; turns answer through the ring.
let pending = null;
function ask(msg, transfer) {
  return new Promise((resolve, reject) => {
    pending = { resolve, reject, op: msg.type };
    state.wasm.worker.postMessage(msg, transfer || []);
  });
}

function onWorkerMessage(ev) {
  const m = ev.data;
  if (m.ring) return onRecord(m.ring[0], m.ring[1]);
  if (m.type === 'progress') {
    const p = $('progress');
    p.hidden = false;
    if (m.total) { p.max = m.total; p.value = m.loaded; } else p.removeAttribute('value');
    $('model-info').textContent = `read ${fmtBytes(m.loaded)}${m.total ? ` of ${fmtBytes(m.total)}` : ''}`;
    return;
  }
  const p = pending;
  pending = null;
  if (!p) return;
  if (m.type === 'error') p.reject(new Error(m.message));
  else p.resolve(m);
}

async function startWorker() {
  const w = state.wasm;
  const variant = pickVariant();
  const threads = variant.endsWith('-threads') ? Math.max(1, Math.min(4, navigator.hardwareConcurrency || 2)) : 1;
  const sab = state.isolated ? createRingBuffer() : null;
  w.worker = new Worker('worker.js', { type: 'module' });
  w.worker.onmessage = onWorkerMessage;
  w.worker.onerror = (e) => {
    const msg = `the engine's worker failed: ${e.message || 'could not start (see the console)'}`;
    if (pending) { pending.reject(new Error(msg)); pending = null; }
    if (state.current) endTurn(state.current, { error: msg });
  };
  w.reader = sab ? new RingReader(sab) : null;
  if (w.reader) pump(w.reader);
  let r;
  try {
    r = await ask({ type: 'init', variant, threads, sab, gpu: $('gpu').value });
  } catch (e) {
    // A worker whose engine did not start is no use: the next load starts a fresh one.
    w.worker.terminate();
    w.worker = null;
    w.reader = null;
    throw e;
  }
  w.variant = variant;
  w.info = r.info;
  w.gpu = r.gpu;
  w.memory = r.memory;
  $('env').textContent = `engine ${r.info.variant}, ${r.info.threads} thread${r.info.threads > 1 ? 's' : ''}, ` +
    `${state.isolated ? 'cross-origin isolated (SharedArrayBuffer ring)' : 'not isolated (postMessage)'}`;
}

async function loadModel(source) {
  const w = state.wasm;
  if (state.busy || w.loading) return;
  w.loading = true;
  settingsError('');
  showOn();
  $('model-info').textContent = 'starting the engine…';
  try {
    if (!w.worker) await startWorker();
    const kernels = $('kernels').value; // ?kernels= was copied into the select
    const r = source.file
      ? await ask({ type: 'loadFile', file: source.file, kernels })
      : await ask({ type: 'loadUrl', url: source.url, kernels, headers: source.headers });
    w.source = source;
    w.model = r.model;
    w.gpuModel = r.gpu || null; // whether the GPU Worker runs this file ({ ok, why })
    w.name = source.name || r.name;
    w.memory = r.memory;
    $('progress').hidden = true;
    const md = r.model;
    $('model-info').textContent = `${w.name}: ${md.arch}, ${(md.nParams / 1e6).toFixed(1)} M params, ` +
      `vocab ${md.vocab}, trained context ${md.nCtxTrain}, kernels ${md.kernels}, ${fmtBytes(md.bytes)}` +
      (md.chatTemplate === 'ok' ? '' : ` — chat template: ${md.chatTemplate}`);
    document.body.dataset.model = '1';
    await newChat();
  } catch (e) {
    $('progress').hidden = true;
    $('model-info').textContent = '';
    settingsError(e.message);
  } finally {
    w.loading = false;
    showOn();
    refreshMemory();
  }
}

// A new chat with the settings as they are; the engine's own validation message is shown as is.
async function newChat() {
  const w = state.wasm;
  w.chatReady = false;
  settingsError('');
  const p = { system: $('system').value, nCtx: num('n-ctx'), window: num('window'), sinks: num('sinks'),
              sampler: samplerSettings() };
  try {
    const r = await ask({ type: 'newChat', params: p });
    w.backend = r.backend || null;
    w.chatReady = true;
    document.body.dataset.chat = '1';
    w.chats = (w.chats || 0) + 1;
  } catch (e) {
    document.body.dataset.chat = '0';
    settingsError(e.message);
    w.chatErrors = (w.chatErrors || 0) + 1;
  }
}

// Why the in-browser engine cannot take a message now ('' when it can).
function wasmRefusal() {
  const w = state.wasm;
  if (!w.available) return `the in-browser engine is off here: ${w.why}`;
  if (w.loading) return 'the model is still loading: send once it has loaded';
  if (!w.model) {
    const srv = state.server.model ? ` (it runs ${state.server.model})` : '';
    return 'no model is loaded in this browser: choose a GGUF (Model, left)' +
      (state.server.file ? `, run the server's model here${srv}` : '') +
      (state.server.available ? `, or switch to the server${state.server.file ? '' : srv}` : '');
  }
  if (!w.chatReady) return 'the engine refused the settings (under Settings): fix them and Apply';
  return '';
}

function wasmTurn(text) {
  const w = state.wasm;
  beginTurn(text);
  if (w.reader) w.reader.clearStop();
  w.worker.postMessage({ type: 'turn', text, maxTokens: num('max-tokens') });
}

// Ends the worker (and the engine in it) and, when a model was loaded, starts a new one on the
// same file or URL: a new variant or kernel set, or Stop without shared memory.
async function restartEngine() {
  const w = state.wasm;
  if (w.worker) w.worker.terminate();
  w.worker = null;
  w.reader = null;
  w.chatReady = false;
  w.model = null;
  document.body.dataset.chat = '0';
  if (pending) { pending.reject(new Error('the engine was restarted')); pending = null; }
  if (w.source) await loadModel(w.source);
}

// Without shared memory a busy worker reads no message until its turn ends, so Stop ends the
// worker itself, then starts a new one on the same model; the engine's conversation (its
// prefix cache and history lived in that worker) starts over, and the page says so.
async function wasmStopByRestart() {
  const turn = state.current;
  if (turn) endTurn(turn, { finish: 'cancel', error: 'stopped: without cross-origin isolation the engine is restarted to stop it, so the conversation starts over' });
  await restartEngine();
}

// ---- backend: the server's streaming API ------------------------------------------------------
let abort = null;
function authHeaders() {
  const h = { 'Content-Type': 'application/json' };
  const key = $('api-key').value.trim();
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

async function probeServer() {
  try {
    const r = await fetch('/health');
    if (!r.ok) return false;
    const h = await r.json();
    if (!('slots_total' in h)) return false;
    state.server.available = true;
    const m = await fetch('/v1/models', { headers: authHeaders() });
    const mj = m.ok ? await m.json() : null;
    state.server.model = mj && mj.data && mj.data[0] ? mj.data[0].id : null;
    // The server's file for the in-browser engine (GET /model.gguf; 404 with --no-model-file).
    const f = await fetch('/model.gguf', { method: 'HEAD', headers: authHeaders() }).catch(() => null);
    state.server.file = f && f.ok ? { bytes: Number(f.headers.get('Content-Length')) || 0 } : null;
    $('server-info').textContent = `plumb serve at ${location.host}: ${h.slots_total} slot(s)` +
      (state.server.model ? `, model ${state.server.model}` : m.status === 401 ? ', an API key is needed' : '') +
      '. Context and window are the server\'s (-c, --sliding-window).';
    return true;
  } catch { return false; }
}

// The offer to run the server's own file in this browser (when it serves one and wasm is here).
function showServerModel() {
  const b = $('load-server-model');
  const f = state.server.file;
  b.hidden = !(state.wasm.available && f);
  if (f) b.textContent = `Run the server's model${state.server.model ? ` (${state.server.model})` : ''} in this browser` +
    (f.bytes ? `, ${fmtBytes(f.bytes)}` : '');
}

function serverStats(plumb, usage, totalMs) {
  const gen = usage ? usage.completion_tokens : 0;
  const decodeMs = (plumb.total_ms ?? totalMs) - plumb.ttft_ms;
  return { path: plumb.cache_path, reused: plumb.reused_tokens, prefilled: plumb.prefilled_tokens,
           generated: gen, ttftMs: plumb.ttft_ms,
           prefillTokS: plumb.ttft_ms > 0 ? plumb.prefilled_tokens / (plumb.ttft_ms / 1e3) : 0,
           decodeTokS: gen > 1 && decodeMs > 0 ? (gen - 1) / (decodeMs / 1e3) : 0 };
}

async function serverTurn(text) {
  const turn = beginTurn(text);
  state.messages.push({ role: 'user', content: text });
  const sys = $('system').value;
  const s = samplerSettings();
  const body = {
    messages: [...(sys ? [{ role: 'system', content: sys }] : []), ...state.messages],
    stream: true, stream_options: { include_usage: true }, max_tokens: num('max-tokens'),
    temperature: s.temp, top_k: s.topK, top_p: s.topP, min_p: s.minP, seed: s.seed,
  };
  // llama.cpp's ignore_eos, for timing runs and tests (?ignore_eos=1): replies run to max tokens.
  if (state.ignoreEos || params.get('ignore_eos') === '1') body.ignore_eos = true;
  abort = new AbortController();
  const t0 = performance.now();
  let plumb = null, usage = null, finish = null;
  try {
    const r = await fetch('/v1/chat/completions', { method: 'POST', headers: authHeaders(),
      body: JSON.stringify(body), signal: abort.signal });
    if (!r.ok) {
      let msg = `HTTP ${r.status}`;
      let code = null;
      try { const j = await r.json(); msg = j.error.message; code = j.error.code; } catch { /* not JSON */ }
      state.messages.pop(); // the server kept nothing of it
      endTurn(turn, { error: msg, finish: code === 'context_length_exceeded' ? 'context_full' : 'error' });
      giveBack(text, msg);
      if (code === 'context_length_exceeded') notice(`${msg} — reset to start a new conversation.`);
      return;
    }
    const reader = r.body.getReader();
    const td = new TextDecoder();
    let buf = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += td.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        for (const line of ev.split('\n')) {
          if (!line.startsWith('data: ')) continue;
          const data = line.slice(6);
          if (data === '[DONE]') continue;
          const c = JSON.parse(data);
          if (c.error) throw Object.assign(new Error(c.error.message), { server: true });
          if (c.usage) usage = c.usage;
          if (c.plumb) plumb = c.plumb;
          const ch = c.choices && c.choices[0];
          if (ch && ch.delta && ch.delta.content) appendText(turn, ch.delta.content);
          if (ch && ch.finish_reason) finish = ch.finish_reason;
        }
      }
    }
    state.messages.push({ role: 'assistant', content: turn.streamed });
    const stats = plumb ? { ...serverStats(plumb, usage, performance.now() - t0), finish } : null;
    endTurn(turn, { stats, finish });
  } catch (e) {
    // A stop (abort) keeps the reply so far: the server's slot holds it too, so the next turn
    // extends it on the fast path.
    if (turn.streamed) state.messages.push({ role: 'assistant', content: turn.streamed });
    else state.messages.pop();
    if (e.name === 'AbortError') endTurn(turn, { finish: 'cancel' });
    else endTurn(turn, { error: e.message });
  } finally {
    abort = null;
  }
}

// ---- the controls -----------------------------------------------------------------------------
// A message leaves the input only once a backend has taken it; a refusal is said beside the
// input, which keeps the text.
function send() {
  const text = $('input').value;
  if (state.busy) return;
  if (!text.trim()) { inputError('type a message first'); return; }
  // Before main() has asked the server and looked for the engine, no backend is chosen yet.
  const why = !state.backend ? 'the page is still starting: send again in a moment'
    : state.backend === 'server'
    ? (state.server.available ? '' : 'no plumb serve behind this page: the server backend is off')
    : wasmRefusal();
  if (why) {
    inputError(why);
    $('input').focus();
    return;
  }
  inputError('');
  $('input').value = '';
  if (state.backend === 'server') serverTurn(text);
  else wasmTurn(text);
}

// A message the backend refused after all (the server's error, a prompt over the context):
// back into the input unless the user has typed something else since.
function giveBack(text, why) {
  if (!$('input').value) $('input').value = text;
  inputError(why);
}

function stop() {
  if (!state.busy) return;
  if (state.backend === 'server') { if (abort) abort.abort(); return; }
  if (state.wasm.reader) state.wasm.reader.requestStop();
  else wasmStopByRestart();
}

function clearConversation() {
  $('log').textContent = '';
  notice('');
  state.messages = [];
  state.turns.length = 0;
}

async function reset() {
  // A busy worker without shared memory is restarted by stop(): its new chat is already empty.
  const restarting = state.busy && state.backend === 'wasm' && !state.wasm.reader;
  if (state.busy) stop();
  clearConversation();
  if (!restarting && state.backend === 'wasm' && state.wasm.worker && state.wasm.chatReady) {
    try { await ask({ type: 'reset' }); } catch (e) { settingsError(e.message); }
  }
}

function setBackend(b) {
  state.backend = b;
  $(`backend-${b}`).checked = true;
  document.body.classList.toggle('backend-server', b === 'server');
  document.body.classList.toggle('backend-wasm', b === 'wasm');
  document.body.dataset.backend = b;
  inputError('');
  showOn();
  $('log').textContent = '';
  notice('');
  state.messages = [];
}

async function refreshMemory() {
  const m = state.wasm.memory;
  $('memory').textContent = m && state.backend === 'wasm'
    ? `wasm heap: ${fmtBytes(m.heapBytes)} in use` +
      (m.memoryBytes ? `, memory ${fmtBytes(m.memoryBytes)}` : '') + ` (peak ${fmtBytes(m.peakHeapBytes)})` : '';
}

function wire() {
  $('composer').addEventListener('submit', (e) => { e.preventDefault(); send(); });
  $('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); send(); }
  });
  $('stop').addEventListener('click', stop);
  $('reset').addEventListener('click', reset);
  $('notice-reset').addEventListener('click', reset);
  $('apply').addEventListener('click', async () => {
    await reset();
    if (state.backend === 'wasm' && state.wasm.model) await newChat();
  });
  $('file').addEventListener('change', () => { if ($('file').files[0]) loadModel({ file: $('file').files[0] }); });
  $('load-url').addEventListener('click', () => { if ($('url').value) loadModel({ url: $('url').value }); });
  $('load-server-model').addEventListener('click', () => {
    if (state.busy) return;
    if (state.backend !== 'wasm') setBackend('wasm');
    const h = authHeaders();
    delete h['Content-Type'];
    loadModel({ url: 'model.gguf', name: state.server.model || 'model.gguf', headers: h });
  });
  $('input').addEventListener('input', () => inputError(''));
  // A key typed after the page opened: ask again for the model's id and file.
  $('api-key').addEventListener('change', async () => {
    if (await probeServer()) { showServerModel(); showOn(); }
  });
  // A file dropped anywhere on the page (the drop zone only shows where).
  const body = document.body;
  body.addEventListener('dragover', (e) => { e.preventDefault(); $('drop').classList.add('over'); });
  body.addEventListener('dragleave', () => $('drop').classList.remove('over'));
  body.addEventListener('drop', (e) => {
    e.preventDefault();
    $('drop').classList.remove('over');
    const f = e.dataTransfer && e.dataTransfer.files[0];
    if (f && state.backend === 'wasm') loadModel({ file: f });
  });
  // The variant is chosen when the worker starts, the kernel set when the model loads.
  $('variant').addEventListener('change', () => { if (!state.busy && !state.wasm.loading) { clearConversation(); restartEngine(); } });
  $('gpu').addEventListener('change', () => { if (!state.busy && !state.wasm.loading) { clearConversation(); restartEngine(); } });
  $('kernels').addEventListener('change', () => {
    if (!state.busy && !state.wasm.loading && state.wasm.source) { clearConversation(); loadModel(state.wasm.source); }
  });
  for (const r of document.querySelectorAll('input[name=backend]'))
    r.addEventListener('change', () => { if (!state.busy) setBackend(r.value); });
}

async function main() {
  wire();
  for (const [k, id] of [['temp', 'temp'], ['seed', 'seed'], ['max_tokens', 'max-tokens'], ['n_ctx', 'n-ctx'],
                         ['window', 'window'], ['sinks', 'sinks'], ['top_k', 'top-k'], ['top_p', 'top-p'],
                         ['min_p', 'min-p'], ['kernels', 'kernels'], ['variant', 'variant'], ['gpu', 'gpu']])
    if (params.has(k)) $(id).value = params.get(k);
  if (params.has('system')) $('system').value = params.get('system');
  const [server, engine] = await Promise.all([
    probeServer(),
    fetch('plumb-engine.mjs', { method: 'HEAD' }).then((r) => r.ok).catch(() => false),
  ]);
  const w = state.wasm;
  w.available = engine && typeof WebAssembly === 'object';
  w.why = w.available ? '' : typeof WebAssembly !== 'object' ? 'this browser has no WebAssembly'
    : 'the wasm engine is not served here (build it with `make wasm`; plumb serve --web-dir)';
  if (!w.available) $('backend-wasm').disabled = true;
  if (!server) {
    $('backend-server').disabled = true;
    $('backend-server').parentElement.title = 'no plumb serve behind this page';
  }
  $('backend-why').textContent = w.why || (server ? '' : 'the server backend needs the page served by plumb serve');
  if (!state.isolated) $('env').textContent = 'not cross-origin isolated: tokens come by postMessage';
  // Served by plumb serve with a model, the page starts on it: the server backend, unless the
  // URL asks for the in-browser engine (?backend=wasm, or a ?model= to load).
  const want = params.get('backend');
  const wantWasm = (want === 'wasm' || (!want && params.get('model'))) && w.available;
  setBackend(want === 'server' && server ? 'server' : wantWasm ? 'wasm'
    : server ? 'server' : w.available ? 'wasm' : 'server');
  showServerModel();
  document.body.dataset.ready = '1';
  if (state.backend === 'wasm' && params.get('model')) loadModel({ url: params.get('model') });
  else if (state.backend === 'wasm' && server)
    $('model-info').textContent = 'No model yet: choose a GGUF above, or switch to the server' +
      (state.server.model ? ` (it runs ${state.server.model})` : '') + '.';
}

main();
