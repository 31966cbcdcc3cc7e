// util.mjs — what the wasm tests share: the engine module of build-wasm/web, native plumb, checks.
import { execFileSync } from 'child_process';
import fs from 'fs';
import os from 'os';
import path from 'path';

export const [, , WEB, PLUMB, MODEL] = process.argv;
export const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'plumb-wasm-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

let failures = 0;
export function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
}
export function done() {
  console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
  process.exit(failures ? 1 : 0);
}

export async function engine(variant, threads) {
  const { createEngine } = await import(path.join(WEB, 'plumb-engine.mjs'));
  return createEngine({ variant, threads });
}

// The model file straight into the wasm heap (allocModel's view), then loaded.
export function load(eng, file, kernels) {
  const fd = fs.openSync(file, 'r');
  const size = fs.fstatSync(fd).size;
  const buf = eng.allocModel(size);
  for (let off = 0; off < size;) off += fs.readSync(fd, buf, off, size - off, off);
  fs.closeSync(fd);
  return eng.loadModel(buf, { kernels });
}

export function plumb(args, input) {
  return execFileSync(PLUMB, args, { input, maxBuffer: 1 << 28, stdio: ['pipe', 'pipe', 'pipe'] });
}

// The last row of a .logits file (plumb.h, "logit files"): header, name, ids, rows of floats.
export function readLogits(file) {
  const b = fs.readFileSync(file);
  const nVocab = Number(b.readBigUInt64LE(16)), nTokens = Number(b.readBigUInt64LE(24));
  const nRows = Number(b.readBigUInt64LE(40)), nameLen = b.readUInt32LE(56);
  const rows = 64 + nameLen + 4 * nTokens;
  const start = rows + 4 * nVocab * (nRows - 1);
  const u8 = new Uint8Array(b.buffer.slice(b.byteOffset + start, b.byteOffset + start + 4 * nVocab));
  return new Float32Array(u8.buffer);
}
