// ring_test.mjs — web/ring.js under Node: a worker_threads producer writes text pieces (ASCII,
// multi-byte, empty, larger than the ring) and JSON events through a small ring, so it wraps and
// fills many times; the main thread drains with waitAsync only. Every record arrives once, in
// order, byte for byte; the STOP flag reaches the busy producer. Not the page (web_engine.mjs).
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { check, finish } from '../serve/serve_lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ringUrl = pathToFileURL(path.join(here, '..', '..', 'web', 'ring.js')).href;
const { createRingBuffer, RingReader, REC_TEXT, REC_JSON } = await import(ringUrl);

const N = 3000;
// The same pieces on both sides, from the index alone.
const piece = (i) => (i % 97 === 0 ? '' : i % 89 === 0 ? 'x'.repeat(1500 + i) : i % 3 ? `tok${i} é漢🙂` : ' a');

const src = `
  import { workerData, parentPort } from 'node:worker_threads';
  const { RingWriter } = await import(workerData.ringUrl);
  const piece = ${piece.toString()};
  const w = new RingWriter(workerData.sab);
  let i = 0;
  for (; i < workerData.n; i++) { w.text(piece(i)); if (i % 500 === 0) w.json({ type: 'mark', i }); }
  w.json({ type: 'done', n: i });
  // Then a "turn" that runs until the page sets STOP.
  let k = 0;
  while (!w.stopRequested()) { w.text('.'); k++; }
  w.json({ type: 'stopped', k });
`;
const sab = createRingBuffer(1 << 10); // 1 KiB: pieces of 1.5+ KiB go in parts, the ring wraps
const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(src)}`), { workerData: { sab, n: N, ringUrl } });
const reader = new RingReader(sab);
const dec = new TextDecoder();
let text = '', events = [], marks = 0;
const want = Array.from({ length: N }, (_, i) => piece(i)).join('');
let t0 = Date.now();
for (;;) {
  for (const r of reader.drain()) {
    if (r.kind === REC_TEXT) { if (!events.some((e) => e.type === 'done')) text += dec.decode(r.bytes, { stream: true }); }
    else if (r.kind === REC_JSON) { const e = JSON.parse(new TextDecoder().decode(r.bytes)); events.push(e); if (e.type === 'mark') marks++; }
  }
  if (events.some((e) => e.type === 'done')) break;
  if (Date.now() - t0 > 30000) break;
  await reader.wait();
}
check(text === want, `${N} pieces through a 1 KiB ring arrive in order, byte for byte`, { got: text.length, want: want.length });
check(marks === Math.ceil(N / 500) && events.find((e) => e.type === 'done').n === N, 'events arrive in order with the text', events.slice(0, 3));
// STOP while the producer is busy.
await new Promise((r) => setTimeout(r, 50));
reader.requestStop();
t0 = Date.now();
let stopped = null;
while (!stopped && Date.now() - t0 < 10000) {
  for (const r of reader.drain()) if (r.kind === REC_JSON) { const e = JSON.parse(dec.decode(r.bytes)); if (e.type === 'stopped') stopped = e; }
  if (!stopped) await reader.wait();
}
check(stopped && stopped.k > 0, 'the STOP flag reaches the busy producer', stopped);
await worker.terminate();
finish('ring_test');
