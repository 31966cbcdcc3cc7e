// serve_lib.mjs — what the Node black-box tests of `plumb serve` share: start/stop a server on
// --port 0, JSON and SSE over fetch, /metrics and /slots readers, checks that keep counting.
// Not a client library: it knows only /work/serve-contract.md, nothing of the server's code.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

export const SKIP_CODE = 77; // ctest SKIP_RETURN_CODE of every serve test

// A test whose tools are missing skips (exit 77), unless PLUMB_NO_SKIP=1 (CI) makes that a failure.
export function skip(why) {
  if (process.env.PLUMB_NO_SKIP === '1') {
    console.log(`FAIL: ${why} (PLUMB_NO_SKIP=1 forbids skipping)`);
    process.exit(1);
  }
  console.log(`SKIP: ${why}`);
  process.exit(SKIP_CODE);
}

// The environment ctest gives every serve test (conformance/serve.cmake).
export function env() {
  const cli = process.env.PLUMB_CLI;
  const model = process.env.PLUMB_SERVE_MODEL;
  if (!cli || !model) {
    console.error('serve tests need PLUMB_CLI and PLUMB_SERVE_MODEL (set by conformance/serve.cmake)');
    process.exit(2);
  }
  return { cli, model };
}

// ---- checks: each prints one line; the test exits 1 at the end when any failed ----------
let failures = 0;
export function check(cond, what, detail) {
  if (cond) {
    console.log(`ok   ${what}`);
  } else {
    failures++;
    console.log(`FAIL ${what}${detail !== undefined ? `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}` : ''}`);
  }
  return !!cond;
}
export function failed() { return failures; }
export function finish(name) {
  console.log(failures ? `${name}: ${failures} check(s) failed` : `${name}: all checks passed`);
  process.exit(failures ? 1 : 0);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A small deterministic PRNG (mulberry32) so that random cut points replay from the seed.
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---- the server process --------------------------------------------------------------
// Starts `plumb serve -m MODEL --port 0 ARGS…`, waits for the one stdout line
// "plumb serve: listening on http://HOST:PORT". stderr (the request log) is kept for failures.
export async function startServer(args, { startTimeoutMs = 30000 } = {}) {
  const { cli, model } = env();
  const argv = ['serve', '-m', model, '--port', '0', ...args];
  const proc = spawn(cli, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  const server = { proc, pid: proc.pid, argv, stderr: '', stdout: '', exit: null };
  proc.stderr.on('data', (d) => {
    server.stderr += d;
    if (server.stderr.length > 1 << 20) server.stderr = server.stderr.slice(-(1 << 19));
  });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => {
    server.exit = { code, signal };
    resolve(server.exit);
  }));
  server.exited = exited;
  const line = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within ${startTimeoutMs} ms`)), startTimeoutMs);
    proc.stdout.on('data', (d) => {
      server.stdout += d;
      const m = server.stdout.match(/^plumb serve: listening on (http:\/\/[^\s]+):(\d+)\n/m);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    exited.then((e) => {
      clearTimeout(timer);
      reject(new Error(`server exited before listening (${JSON.stringify(e)}): ${server.stderr}`));
    });
  });
  server.port = Number(line[2]);
  server.base = `${line[1]}:${line[2]}`;
  return server;
}

// SIGTERM and the exit status (the contract: exit 0). Kills with SIGKILL after timeoutMs.
export async function stopServer(server, { timeoutMs = 30000 } = {}) {
  if (server.exit) return server.exit;
  server.proc.kill('SIGTERM');
  const timer = setTimeout(() => server.proc.kill('SIGKILL'), timeoutMs);
  const e = await server.exited;
  clearTimeout(timer);
  return e;
}

export async function stopAndCheck(server, what = 'server') {
  const e = await stopServer(server);
  const ok = check(e.code === 0, `${what} exits 0 on SIGTERM`, e);
  if (!ok) console.log(`--- ${what} stderr (tail) ---\n${server.stderr.slice(-4000)}`);
  return ok;
}

// The server's resident memory (kB) from /proc/PID/status.
export function rssKiB(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+)\s+kB/m);
  return m ? Number(m[1]) : NaN;
}

// ---- HTTP --------------------------------------------------------------------------
export async function request(base, method, path, body, headers = {}) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    init.headers['content-type'] = 'application/json';
  }
  const res = await fetch(base + path, init);
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON: json stays null */ }
  return { status: res.status, headers: res.headers, text, json };
}
export const get = (base, path, headers) => request(base, 'GET', path, undefined, headers);
export const post = (base, path, body, headers) => request(base, 'POST', path, body, headers);

// A streaming POST: the SSE events in order. Each event is the text after "data: ";
// `frames` keeps every raw event block, to check the framing.
export async function postStream(base, path, body, headers = {}) {
  const res = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const raw = await res.text();
  return { status: res.status, headers: res.headers, raw, ...parseSSE(raw) };
}

// "data: X\n\n" blocks → { events: [X…], bad: [blocks that are not one data line] }.
export function parseSSE(raw) {
  const blocks = raw.split('\n\n');
  const tail = blocks.pop(); // after the last "\n\n": must be empty
  const events = [];
  const bad = [];
  for (const b of blocks) {
    if (b.startsWith('data: ') && !b.includes('\n')) events.push(b.slice(6));
    else bad.push(b);
  }
  if (tail !== '') bad.push(tail);
  return { events, bad };
}

// The text, finish chunk and usage chunk of a parsed chat/completions stream.
export function assembleStream(endpoint, events) {
  const chunks = [];
  let done = false;
  let afterDone = 0;
  for (const e of events) {
    if (done) { afterDone++; continue; }
    if (e === '[DONE]') { done = true; continue; }
    chunks.push(JSON.parse(e));
  }
  let text = '';
  let final = null;
  let usageChunk = null;
  for (const c of chunks) {
    if (c.choices.length === 0) { usageChunk = c; continue; }
    const ch = c.choices[0];
    if (endpoint === 'chat') text += ch.delta?.content ?? '';
    else text += ch.text ?? '';
    if (ch.finish_reason) final = c;
  }
  return { chunks, text, final, usageChunk, done, afterDone };
}

// ---- /metrics and /slots -------------------------------------------------------------
// Prometheus text → Map of 'name{labels}' (labels as written) → number.
export async function metrics(base, headers) {
  const r = await get(base, '/metrics', headers);
  const m = new Map();
  for (const line of r.text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    m.set(line.slice(0, sp), Number(line.slice(sp + 1)));
  }
  return m;
}
export const metric = (m, key) => m.get(key) ?? 0;
// Sum of every series of a metric whose labels include all of `want` (e.g. {status:"200"}).
export function metricSum(m, name, want = {}) {
  let s = 0;
  for (const [k, v] of m) {
    const brace = k.indexOf('{');
    const n = brace < 0 ? k : k.slice(0, brace);
    if (n !== name) continue;
    const labels = brace < 0 ? '' : k.slice(brace);
    if (Object.entries(want).every(([lk, lv]) => labels.includes(`${lk}="${lv}"`))) s += v;
  }
  return s;
}

export async function slots(base, headers) {
  const r = await get(base, '/slots', headers);
  return r.json;
}

// Waits (bounded) until no slot is busy and the queue is empty, then checks that every slot
// is consistent and /health is ok. Returns the slots.
export async function checkSettled(base, what, { timeoutMs = 20000, headers } = {}) {
  const deadline = Date.now() + timeoutMs;
  let s = null;
  let h = null;
  for (;;) {
    h = await get(base, '/health');
    s = await slots(base, headers);
    const idle = Array.isArray(s) && s.every((x) => !x.busy) && h.json?.queue === 0 &&
      h.json.slots_idle === h.json.slots_total;
    if (idle || Date.now() > deadline) break;
    await sleep(50);
  }
  check(h.status === 200 && h.json?.status === 'ok' && h.json.slots_idle === h.json.slots_total &&
        h.json.queue === 0, `${what}: /health ok, every slot idle, queue empty`, h.json);
  check(Array.isArray(s) && s.length > 0 && s.every((x) => x.busy === false && x.consistent === true),
        `${what}: /slots all idle and consistent`, s);
  return s;
}
