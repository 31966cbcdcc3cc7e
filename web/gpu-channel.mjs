// gpu-channel.mjs — the shared memory between the engine's Worker, whose chat session has the GPU
// as its forward (plumb_web.c's pl_forward_hook blocks on it), and the GPU Worker (gpu-worker.js)
// that runs the forward pass and answers. Not the forward pass (llama.mjs) nor the text ring.
//
// One request at a time: the engine writes it, sets STATE to ASKED, posts 'run' to the GPU Worker
// and waits (Atomics.wait: allowed in a Worker; a SharedArrayBuffer needs a cross-origin isolated
// page, so only the threads variants' pages have it). The GPU Worker reads it, writes the status,
// the message or the logits, sets STATE to ANSWERED and notifies.

export const STATE = 0, OP = 1, N = 2, POS0 = 3, ROWS = 4, STATUS = 5, MSG_LEN = 6, ARG = 7;
// GREEDY: the chat's sampler picks greedily (temperature 0): the GPU Worker speculates on the next
// decode step (llama.mjs's forward, opts.speculate); set once by the engine's side for the chat
export const GREEDY = 8;
// SPEC_HITS: the chat's decode steps so far that the GPU Worker had run ahead (its speculation's
// hits), written with each answer: the turn's stats carry it (plumb-engine.mjs's turn)
export const SPEC_HITS = 9;
export const IDLE = 0, ASKED = 1, ANSWERED = 2;
export const OP_EVAL = 1, OP_TRUNCATE = 2;
// pl_status values the GPU Worker answers with (plumb.h)
export const PL_ERR_INVALID_ARG = -1, PL_ERR_IO = -3;
const CTL_INTS = 16, IDS_CAP = 512, MSG_CAP = 1024, MAX_ROWS = 64;

// A channel for a model of nVocab logits a row: ids up to IDS_CAP a call, rows of logits up to
// MAX_ROWS and about 16 MiB (the engine cuts its steps to fit: plumb_web.c's gpu_eval).
export function createChannel(nVocab) {
  const rows = Math.max(1, Math.min(MAX_ROWS, Math.floor((4 << 20) / nVocab)));
  const bytes = 4 * CTL_INTS + 4 * IDS_CAP + MSG_CAP + 4 * rows * nVocab;
  return { sab: new SharedArrayBuffer(bytes), nVocab, rows, idsCap: IDS_CAP };
}

export function channelViews(ch) {
  let o = 0;
  const ctl = new Int32Array(ch.sab, o, CTL_INTS); o += 4 * CTL_INTS;
  const ids = new Int32Array(ch.sab, o, ch.idsCap); o += 4 * ch.idsCap;
  const msg = new Uint8Array(ch.sab, o, MSG_CAP); o += MSG_CAP;
  const logits = new Float32Array(ch.sab, o, ch.rows * ch.nVocab);
  return { ctl, ids, msg, logits };
}

// The GPU Worker's answer: status 0, or a pl_status and its message.
export function answer(v, status, message = '') {
  const b = new TextEncoder().encode(message).slice(0, v.msg.length);
  v.msg.set(b);
  v.ctl[MSG_LEN] = b.length;
  v.ctl[STATUS] = status;
  Atomics.store(v.ctl, STATE, ANSWERED);
  Atomics.notify(v.ctl, STATE);
}

// The engine's side: fill(v) writes the request; kick() tells the GPU Worker. Blocks until the
// answer (or timeoutMs: then the channel is broken for good, its late answer unread). Returns
// { status, message }.
export function channelClient(ch, kick, timeoutMs = 300000) {
  const v = channelViews(ch);
  let broken = '';
  return {
    views: v,
    call(fill) {
      if (broken) return { status: PL_ERR_IO, message: broken };
      fill(v);
      v.ctl[STATUS] = 0;
      Atomics.store(v.ctl, STATE, ASKED);
      kick();
      if (Atomics.wait(v.ctl, STATE, ASKED, timeoutMs) === 'timed-out' &&
          Atomics.load(v.ctl, STATE) === ASKED) {
        broken = `the GPU worker did not answer in ${timeoutMs / 1000} s`;
        return { status: PL_ERR_IO, message: broken };
      }
      const status = v.ctl[STATUS];
      const message = status ? new TextDecoder().decode(v.msg.slice(0, v.ctl[MSG_LEN])) : '';
      Atomics.store(v.ctl, STATE, IDLE);
      return { status, message };
    },
  };
}
