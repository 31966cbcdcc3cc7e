// ring.js — how the Worker's tokens and events reach the page: a single-producer single-consumer
// byte ring over a SharedArrayBuffer (Atomics), or postMessage when the page is not isolated.
// Not the protocol's meaning (worker.js, app.js): only records of (kind, bytes) in order.
//
// Layout of the SharedArrayBuffer: an Int32Array header of 4 slots, then CAP data bytes.
//   [0] HEAD: bytes written so far (mod 2^32), published after each whole record
//   [1] TAIL: bytes read so far (mod 2^32), published after each drain
//   [2] STOP: 1 when the page asked the running turn to stop (the worker polls it per token)
//   [3] unused
// A record is kind (1 byte), length (4 bytes, little-endian), payload. CAP is a power of two,
// so positions mod 2^32 stay consistent mod CAP. The worker (producer) blocks with Atomics.wait
// when the ring is full; the page (consumer) never blocks: it waits with Atomics.waitAsync where
// the browser has it, else polls on a timer.

export const REC_TEXT = 1; // UTF-8 bytes of a text piece
export const REC_JSON = 2; // UTF-8 JSON of an event ({type: 'done' | 'error', ...})
const HEAD = 0, TAIL = 1, STOP = 2;
const HDR_BYTES = 16;
export const RING_CAP = 1 << 16;

export function ringSupported() {
  return typeof SharedArrayBuffer === 'function' && globalThis.crossOriginIsolated === true;
}

export function createRingBuffer(cap = RING_CAP) {
  if (cap & (cap - 1)) throw new Error('ring capacity must be a power of two');
  return new SharedArrayBuffer(HDR_BYTES + cap);
}

const enc = new TextEncoder();

// The worker's end. write() copies a record in, waiting (Atomics.wait: allowed in a Worker)
// while the page has not read enough.
export class RingWriter {
  constructor(sab) {
    this.hdr = new Int32Array(sab, 0, 4);
    this.data = new Uint8Array(sab, HDR_BYTES);
    this.cap = this.data.length;
  }
  stopRequested() { return Atomics.load(this.hdr, STOP) !== 0; }
  text(str) {
    const b = enc.encode(str);
    // A piece larger than half the ring goes in parts; the page decodes with stream: true.
    const max = this.cap >> 1;
    let o = 0;
    do {
      this.write(REC_TEXT, b.subarray(o, o + max));
      o += max;
    } while (o < b.length);
  }
  json(obj) {
    const b = enc.encode(JSON.stringify(obj));
    if (b.length + 5 > this.cap) throw new Error('event larger than the ring');
    this.write(REC_JSON, b);
  }
  write(kind, bytes) {
    const need = bytes.length + 5;
    let head = Atomics.load(this.hdr, HEAD);
    for (;;) {
      const tail = Atomics.load(this.hdr, TAIL);
      if (this.cap - ((head - tail) >>> 0) >= need) break;
      Atomics.wait(this.hdr, TAIL, tail, 1000);
    }
    const hdr = new Uint8Array(5);
    hdr[0] = kind;
    new DataView(hdr.buffer).setUint32(1, bytes.length, true);
    this.put(head, hdr);
    this.put((head + 5) | 0, bytes);
    Atomics.store(this.hdr, HEAD, (head + need) | 0);
    Atomics.notify(this.hdr, HEAD);
  }
  put(pos, bytes) {
    const at = (pos >>> 0) & (this.cap - 1);
    const first = Math.min(bytes.length, this.cap - at);
    this.data.set(bytes.subarray(0, first), at);
    if (first < bytes.length) this.data.set(bytes.subarray(first), 0);
  }
}

// The page's end: drain() returns the whole records published since the last drain (copied out
// of shared memory: TextDecoder refuses shared views); wait() resolves when more may be there.
export class RingReader {
  constructor(sab) {
    this.hdr = new Int32Array(sab, 0, 4);
    this.data = new Uint8Array(sab, HDR_BYTES);
    this.cap = this.data.length;
  }
  requestStop() { Atomics.store(this.hdr, STOP, 1); }
  clearStop() { Atomics.store(this.hdr, STOP, 0); }
  drain() {
    const out = [];
    let tail = Atomics.load(this.hdr, TAIL);
    const head = Atomics.load(this.hdr, HEAD);
    while (tail !== head) {
      const h = this.get(tail, 5);
      const len = new DataView(h.buffer).getUint32(1, true);
      out.push({ kind: h[0], bytes: this.get((tail + 5) | 0, len) });
      tail = (tail + 5 + len) | 0;
    }
    if (out.length) {
      Atomics.store(this.hdr, TAIL, tail);
      Atomics.notify(this.hdr, TAIL);
    }
    return out;
  }
  get(pos, n) {
    const b = new Uint8Array(n);
    const at = (pos >>> 0) & (this.cap - 1);
    const first = Math.min(n, this.cap - at);
    b.set(this.data.subarray(at, at + first), 0);
    if (first < n) b.set(this.data.subarray(0, n - first), first);
    return b;
  }
  // Never Atomics.wait here: this runs on the main thread.
  async wait(timeoutMs = 250) {
    const tail = Atomics.load(this.hdr, TAIL);
    if (Atomics.load(this.hdr, HEAD) !== tail) return;
    if (typeof Atomics.waitAsync === 'function') {
      const r = Atomics.waitAsync(this.hdr, HEAD, tail, timeoutMs);
      if (r.async) await r.value;
      return;
    }
    await new Promise((res) => setTimeout(res, 8));
  }
}

// The fallback, same records over postMessage: the worker posts {ring: [kind, bytes]} and the
// page hands each to the same record handler. Stop cannot reach a busy worker this way (no
// shared memory): app.js stops it with terminate() (web/README.md, "The fallback").
export class PostWriter {
  constructor(port) { this.port = port; }
  stopRequested() { return false; }
  text(str) { const b = enc.encode(str); this.port.postMessage({ ring: [REC_TEXT, b] }, [b.buffer]); }
  json(obj) { const b = enc.encode(JSON.stringify(obj)); this.port.postMessage({ ring: [REC_JSON, b] }, [b.buffer]); }
}
