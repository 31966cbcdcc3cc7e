// gpu_channel_test.mjs — web/gpu-channel.mjs under Node: the main thread is the engine (it blocks
// in Atomics.wait, as the wasm Worker's forward hook does), a worker_threads thread plays the GPU
// Worker. Requests and answers cross intact (ids, position, rows of logits, statuses), a long
// multi-byte error message is cut to the channel and still decodes, a GPU side that never answers
// ends the call after the timeout and breaks the channel for good, and channels are sized to the
// vocabulary. Not the GPU forward (webgpu_page.mjs) nor the page.
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { check, finish } from '../serve/serve_lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const chUrl = pathToFileURL(path.join(here, '..', '..', 'web', 'gpu-channel.mjs')).href;
const C = await import(chUrl);

// The GPU side: answers each 'run' by the request: eval -> row r of logits is id * 1000 + r +
// pos0 (rows: the last ones); truncate 7 -> an error with a long message; truncate 9 -> silence.
const src = `
  import { workerData, parentPort } from 'node:worker_threads';
  const C = await import(workerData.chUrl);
  const v = C.channelViews(workerData.ch);
  parentPort.on('message', () => {
    const c = v.ctl;
    if (c[C.OP] === C.OP_TRUNCATE && c[C.ARG] === 9) return; // never answers
    if (c[C.OP] === C.OP_TRUNCATE && c[C.ARG] === 7)
      return C.answer(v, C.PL_ERR_IO, 'webgpu: ' + 'é漢'.repeat(400) + ' the end');
    if (c[C.OP] === C.OP_TRUNCATE) return C.answer(v, 0);
    const n = c[C.N], pos0 = c[C.POS0], rows = c[C.ROWS], V = workerData.ch.nVocab;
    for (let r = 0; r < rows; r++)
      for (let j = 0; j < V; j++) v.logits[r * V + j] = v.ids[n - rows + r] * 1000 + j + pos0;
    C.answer(v, 0);
  });
  parentPort.postMessage('ready');
`;

const V = 320;
const ch = C.createChannel(V);
check(ch.rows === 64 && ch.idsCap === 512, 'a 320-token vocabulary: 64 rows and 512 ids a call', ch);
const big = C.createChannel(152064);
check(big.rows === 27 && big.sab.byteLength < 17 << 20, 'a 152064-token vocabulary: 27 rows (16 MiB)', { rows: big.rows, bytes: big.sab.byteLength });
check(C.createChannel(1 << 24).rows === 1, 'a vocabulary past 4 Mi floats still gets one row');

const w = new Worker(src, { eval: true, type: 'module', workerData: { chUrl, ch } });
await new Promise((r) => w.once('message', r));
const client = C.channelClient(ch, () => w.postMessage('run'), 2000);

const ids = [11, 22, 33, 44];
let r = client.call((v) => {
  v.ids.set(ids);
  v.ctl[C.OP] = C.OP_EVAL; v.ctl[C.N] = ids.length; v.ctl[C.POS0] = 5; v.ctl[C.ROWS] = 2;
});
const lv = client.views.logits;
const rowsOk = [0, 1].every((k) => lv[k * V] === ids[2 + k] * 1000 + 5 && lv[k * V + V - 1] === ids[2 + k] * 1000 + V - 1 + 5);
check(r.status === 0 && r.message === '' && rowsOk, 'eval: ids and position cross, the last 2 rows of logits come back', r);
r = client.call((v) => { v.ctl[C.OP] = C.OP_TRUNCATE; v.ctl[C.ARG] = 3; });
check(r.status === 0, 'truncate: answered', r);
r = client.call((v) => { v.ctl[C.OP] = C.OP_TRUNCATE; v.ctl[C.ARG] = 7; });
check(r.status === C.PL_ERR_IO && r.message.startsWith('webgpu: é漢') && Buffer.byteLength(r.message) <= 1024 + 3,
  'an error: its status, and its message cut to the channel (1024 bytes) and decoded', { status: r.status, bytes: Buffer.byteLength(r.message) });
const t0 = Date.now();
r = client.call((v) => { v.ctl[C.OP] = C.OP_TRUNCATE; v.ctl[C.ARG] = 9; });
const ms = Date.now() - t0;
check(r.status === C.PL_ERR_IO && /did not answer in 2 s/.test(r.message) && ms >= 1900 && ms < 10000,
  'a GPU side that never answers: PL_ERR_IO after the timeout', { ...r, ms });
let kicked = 0;
r = client.call(() => { kicked++; });
check(r.status === C.PL_ERR_IO && /did not answer/.test(r.message) && kicked === 0,
  'then the channel stays broken: later calls fail at once, asking nothing', { ...r, kicked });
await w.terminate();
finish('gpu_channel');
