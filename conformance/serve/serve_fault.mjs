// serve_fault.mjs — `plumb serve` against misbehaving clients on raw sockets (node:net), with
// --timeout 2: disconnects at random points (seeded: PLUMB_SEED replays), slow loris, cut
// bodies, oversized headers, garbage bytes, pipelined requests. Not a fuzzer (fuzz_http is).
// After every phase: /health ok, every slot idle and consistent (the chat invariant), and a
// normal request still answers the same text as before the faults. Mid-stream and
// mid-generation disconnects must raise plumb_cancelled_total and stop their generation.
import net from 'node:net';
import {
  check, finish, startServer, stopAndCheck, post, get, metrics, metric, checkSettled, slots, rng, sleep,
} from './serve_lib.mjs';

const TIMEOUT_S = 2;
const CLOSE_SLACK_MS = 8000; // generous: the machine is shared; closing must happen, not be fast
const seed = Number(process.env.PLUMB_SEED ?? 16016);
console.log(`serve_fault: seed ${seed} (PLUMB_SEED=${seed} replays)`);
const random = rng(seed);
const randInt = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1)); // [lo, hi]

const server = await startServer(['-t', '1', '--slots', '2', '--queue', '16', '--timeout', String(TIMEOUT_S),
  '-c', '4096']);
const { base, port } = server;

// ---- raw connections -------------------------------------------------------------------
// A socket that records what the server sent and when it closed its side.
function open() {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    const c = { sock, data: Buffer.alloc(0), closedAt: null, openedAt: Date.now(), error: null };
    c.closed = new Promise((res) => {
      const done = () => { if (c.closedAt === null) c.closedAt = Date.now(); res(); };
      sock.on('end', done);
      sock.on('close', done);
    });
    sock.on('data', (d) => { c.data = Buffer.concat([c.data, d]); });
    sock.on('error', (e) => { c.error = e.code; });
    sock.once('connect', () => resolve(c));
    sock.once('error', reject);
  });
}
const write = (c, bytes) => new Promise((res) => c.sock.write(bytes, () => res()));
// Waits until the server closes c or ms pass; true when it closed.
async function closedWithin(c, ms) {
  let timer;
  const t = new Promise((res) => { timer = setTimeout(() => res(false), ms); });
  const r = await Promise.race([c.closed.then(() => true), t]);
  clearTimeout(timer);
  return r;
}
const statusOf = (buf) => {
  const m = buf.toString('latin1').match(/^HTTP\/1\.[01] (\d{3})/);
  return m ? Number(m[1]) : null;
};

function httpRequest(method, path, body, extra = '') {
  const b = body === undefined ? '' : JSON.stringify(body);
  const head = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${extra}` +
    (body === undefined ? '' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(b)}\r\n`) + '\r\n';
  return { head: Buffer.from(head, 'latin1'), body: Buffer.from(b), all: Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(b)]) };
}

// Sequential HTTP/1.1 responses in buf: [{status, headers, body}], with Content-Length or chunked.
function parseResponses(buf) {
  const out = [];
  let at = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const lines = buf.subarray(at, end).toString('latin1').split('\r\n');
    const status = Number((lines[0].match(/^HTTP\/1\.[01] (\d{3})/) ?? [])[1]);
    const headers = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    let p = end + 4;
    let body;
    if (headers['content-length'] !== undefined) {
      const n = Number(headers['content-length']);
      if (buf.length < p + n) break;
      body = buf.subarray(p, p + n);
      p += n;
    } else if ((headers['transfer-encoding'] ?? '').toLowerCase() === 'chunked') {
      const parts = [];
      let complete = false;
      for (;;) {
        const le = buf.indexOf('\r\n', p);
        if (le < 0) break;
        const n = parseInt(buf.subarray(p, le).toString('latin1'), 16);
        if (buf.length < le + 2 + n + 2) break;
        parts.push(buf.subarray(le + 2, le + 2 + n));
        p = le + 2 + n + 2;
        if (n === 0) { complete = true; break; }
      }
      if (!complete) break;
      body = Buffer.concat(parts);
    } else {
      body = buf.subarray(p);
      p = buf.length;
    }
    out.push({ status, headers, body: body.toString('utf8') });
    at = p;
  }
  return out;
}

// ---- the normal request and the checks after each phase ----------------------------------
const NORMAL = { messages: [{ role: 'user', content: 'Tell me about the sea.' }], temperature: 0.5, seed: 1, max_tokens: 8 };
const normalText = (await post(base, '/v1/chat/completions', NORMAL)).json?.choices?.[0]?.message?.content;
check(typeof normalText === 'string', 'a normal request before the faults', normalText);

async function after(phase) {
  await checkSettled(base, `after ${phase}`);
  const r = await post(base, '/v1/chat/completions', NORMAL);
  check(r.status === 200 && r.json?.choices?.[0]?.message?.content === normalText,
    `after ${phase}: a normal request → 200 and the same text as before`, { status: r.status, text: r.text.slice(0, 200) });
}

// A long generation: greedy on "1, 2, 3, 4," does not end by itself for thousands of tokens.
const LONG_TOKENS = 3500;
const longBody = (k, stream) => ({ prompt: `1, 2, 3, 4,${' '.repeat(k % 3)}`, temperature: 0, max_tokens: LONG_TOKENS, stream });

// Every slot's n_past after a cancelled long generation: far below the prompt + LONG_TOKENS
// a generation run to its end would leave (the bound is generous: it allows seconds of delay).
async function checkStopped(phase) {
  const s = await slots(base);
  check(Array.isArray(s) && s.every((x) => x.n_past < LONG_TOKENS - 500),
    `${phase}: the cancelled generations stopped early (every slot's n_past < ${LONG_TOKENS - 500})`,
    s?.map((x) => x.n_past));
}

// ---- phase 1: disconnect mid-headers ------------------------------------------------------
{
  const req = httpRequest('POST', '/v1/chat/completions', NORMAL);
  for (let k = 0; k < 24; k++) {
    const c = await open();
    await write(c, req.head.subarray(0, randInt(1, req.head.length - 1)));
    await sleep(randInt(0, 20));
    c.sock.destroy();
  }
  check(true, 'phase 1: 24 clients sent part of their headers and disconnected');
  await after('disconnects mid-headers');
}

// ---- phase 2: disconnect mid-body ---------------------------------------------------------
{
  const req = httpRequest('POST', '/v1/chat/completions', { ...NORMAL, messages: [{ role: 'user', content: 'x'.repeat(2000) }] });
  for (let k = 0; k < 24; k++) {
    const c = await open();
    await write(c, req.all.subarray(0, req.head.length + randInt(1, req.body.length - 1)));
    await sleep(randInt(0, 20));
    c.sock.destroy();
  }
  check(true, 'phase 2: 24 clients sent part of their body and disconnected');
  await after('disconnects mid-body');
}

// ---- phase 3: a body shorter than Content-Length, then the client's side closed (FIN) ------
{
  const req = httpRequest('POST', '/v1/chat/completions', NORMAL);
  const conns = [];
  for (let k = 0; k < 8; k++) {
    const c = await open();
    await write(c, req.all.subarray(0, req.head.length + randInt(0, req.body.length - 1)));
    c.sock.end();
    conns.push(c);
  }
  const closed = await Promise.all(conns.map((c) => closedWithin(c, TIMEOUT_S * 1000 + CLOSE_SLACK_MS)));
  const statuses = conns.map((c) => statusOf(c.data));
  check(closed.every(Boolean), `phase 3: 8 cut bodies + FIN: the server closed each within ${TIMEOUT_S} s + slack`, closed);
  check(statuses.every((s) => s === null || (s >= 400 && s < 500)),
    'phase 3: a cut body is never answered 2xx (no answer, or 4xx)', statuses);
  await after('bodies shorter than Content-Length');
}

// ---- phase 4: disconnect mid-stream after a few chunks -----------------------------------
{
  const m0 = await metrics(base);
  const K = 6;
  for (let round = 0; round < K / 2; round++) {
    await Promise.all([0, 1].map(async (j) => {
      const c = await open();
      await write(c, httpRequest('POST', '/v1/completions', longBody(2 * round + j, true)).all);
      const t0 = Date.now();
      while ((c.data.toString('latin1').match(/data: /g) ?? []).length < 3 && c.closedAt === null && Date.now() - t0 < 30000) {
        await sleep(5);
      }
      check(statusOf(c.data) === 200 && c.closedAt === null,
        `phase 4: stream ${2 * round + j}: 200 and 3 chunks received before disconnecting`, c.data.toString('latin1').slice(0, 200));
      c.sock.destroy();
    }));
  }
  await checkSettled(base, 'phase 4 (the cancelled streams settle)');
  const m1 = await metrics(base);
  const d = metric(m1, 'plumb_cancelled_total') - metric(m0, 'plumb_cancelled_total');
  check(d >= K, `phase 4: plumb_cancelled_total rose by ≥ ${K} for ${K} mid-stream disconnects`, { delta: d });
  await checkStopped('phase 4');
  await after('disconnects mid-stream');
}

// ---- phase 5: disconnect mid-generation (not streaming) ------------------------------------
{
  const m0 = await metrics(base);
  const K = 4;
  for (let round = 0; round < K / 2; round++) {
    const conns = await Promise.all([0, 1].map(async (j) => {
      const c = await open();
      await write(c, httpRequest('POST', '/v1/completions', longBody(2 * round + j, false)).all);
      return c;
    }));
    for (let i = 0; i < 400; i++) { // until both generations run (bounded)
      const h = (await get(base, '/health')).json;
      if (h?.slots_idle === 0) break;
      await sleep(10);
    }
    conns.forEach((c) => c.sock.destroy());
    await checkSettled(base, `phase 5 round ${round + 1} (the cancelled generations settle)`);
  }
  const m1 = await metrics(base);
  const d = metric(m1, 'plumb_cancelled_total') - metric(m0, 'plumb_cancelled_total');
  check(d >= K, `phase 5: plumb_cancelled_total rose by ≥ ${K} for ${K} disconnects mid-generation (not streaming)`, { delta: d });
  await checkStopped('phase 5');
  await after('disconnects mid-generation');
}

// ---- phase 6: slow loris ----------------------------------------------------------------
{
  const bound = TIMEOUT_S * 1000 + CLOSE_SLACK_MS;
  const timedOut = async () => metric(await metrics(base), 'plumb_rejected_total{reason="timeout"}');
  const timedOut0 = await timedOut();
  const req = httpRequest('POST', '/v1/chat/completions', NORMAL);
  const stalledHead = [];
  const stalledBody = [];
  const idle = [];
  const trickle = [];
  for (let k = 0; k < 6; k++) {
    const a = await open();
    await write(a, req.head.subarray(0, randInt(5, req.head.length - 3)));
    stalledHead.push(a);
    const b = await open();
    await write(b, req.all.subarray(0, req.head.length + randInt(1, req.body.length - 1)));
    stalledBody.push(b);
    trickle.push(await open());
  }
  for (let k = 0; k < 2; k++) {
    const c = await open();
    await write(c, httpRequest('GET', '/health').all);
    idle.push(c);
  }
  const sentAt = Date.now();
  // Slow loris proper: one byte a second to each of 6 connections, never finishing the request
  // (an idle timeout alone never fires). The timeout must close them while they trickle: within
  // 2·S + slack of their start. Meanwhile the server serves others.
  const trickleBound = 2 * TIMEOUT_S * 1000 + CLOSE_SLACK_MS;
  let served = true;
  for (let s = 0; trickle.some((c) => c.closedAt === null) && Date.now() - sentAt < trickleBound; s++) {
    await Promise.all(trickle.map((c) => (c.closedAt === null ? write(c, req.all.subarray(s, s + 1)) : null)));
    if (s === 1) {
      const h = await get(base, '/health');
      const r = await post(base, '/v1/chat/completions', NORMAL);
      served = h.status === 200 && r.status === 200 && r.json?.choices?.[0]?.message?.content === normalText;
    }
    await sleep(1000);
  }
  check(served, 'phase 6: while 26 slow connections are held, /health and a normal request are answered');
  const ok = async (cs, what, from, bound) => {
    const closed = await Promise.all(cs.map((c) => closedWithin(c, Math.max(0, from + bound - Date.now()))));
    check(closed.every(Boolean), `phase 6: ${what}: the server closed each within ${bound / 1000} s`,
      cs.map((c) => (c.closedAt === null ? 'open' : `${c.closedAt - from} ms`)));
  };
  await ok(stalledHead, 'partial headers, then silence', sentAt, bound);
  await ok(stalledBody, 'partial body, then silence', sentAt, bound);
  await ok(idle, 'keep-alive connection idle after a request', sentAt, bound);
  await ok(trickle, `a request trickled at 1 byte/s (slow loris; 2 x --timeout ${TIMEOUT_S} + slack)`, sentAt, trickleBound);
  check(idle.every((c) => statusOf(c.data) === 200), 'phase 6: the idle keep-alive connections got their 200 first');
  // The idle timeout is announced, so that a pooling client (fetch here) retires a connection
  // before the server closes it rather than sending its next request into the close.
  const hint = `timeout=${TIMEOUT_S}`;
  const errAnswer = await get(base, '/no-such-endpoint');
  check(idle.every((c) => new RegExp(`^keep-alive: ${hint}\\r$`, 'im').test(c.data.toString('latin1'))) &&
        errAnswer.status === 404 && errAnswer.headers.get('keep-alive') === hint,
    `phase 6: answers and errors name the idle timeout (Keep-Alive: ${hint})`,
    { idle: idle.map((c) => c.data.toString('latin1').split('\r\n\r\n')[0]), error: errAnswer.headers.get('keep-alive') });
  const cut = (await timedOut()) - timedOut0;
  check(cut >= trickle.length, `phase 6: /metrics counts the trickled requests cut at their deadline (rejected{reason="timeout"} +${cut}, at least ${trickle.length})`);
  [...stalledHead, ...stalledBody, ...idle, ...trickle].forEach((c) => c.sock.destroy());
  await after('slow loris');
}

// ---- phase 7: oversized headers and URL ---------------------------------------------------
{
  const cases = [
    ['a 64 KiB header line', `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(65536)}\r\n\r\n`],
    ['2000 header lines (80 KB)', `GET /health HTTP/1.1\r\nHost: x\r\n${'X-Many: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n'.repeat(2000)}\r\n`],
    ['a 64 KiB URL', `GET /${'a'.repeat(65536)} HTTP/1.1\r\nHost: x\r\n\r\n`],
    ['a 64 KiB Authorization header', `GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'k'.repeat(65536)}\r\n\r\n`],
  ];
  for (const [what, text] of cases) {
    const c = await open();
    await write(c, Buffer.from(text, 'latin1'));
    const closed = await closedWithin(c, TIMEOUT_S * 1000 + CLOSE_SLACK_MS);
    const st = statusOf(c.data);
    check((st !== null && st >= 400 && st < 500) || (st === null && closed),
      `phase 7: ${what} → 4xx or closed (never 2xx, never hangs)`, { status: st, closed, error: c.error });
    c.sock.destroy();
  }
  // A body over --max-body (default 1 MiB) is answered 413 without reading the rest: the client
  // announces 100 MB, sends 1 KiB and waits.
  {
    const c = await open();
    await write(c, Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `Content-Length: 104857600\r\n\r\n{"messages":[{"role":"user","content":"${'a'.repeat(1000)}`, 'latin1'));
    const t0 = Date.now();
    while (statusOf(c.data) === null && c.closedAt === null && Date.now() - t0 < TIMEOUT_S * 1000 + CLOSE_SLACK_MS) await sleep(20);
    const r = parseResponses(c.data)[0];
    let code = null;
    try { code = JSON.parse(r.body).error.code; } catch { /* checked below */ }
    check(r?.status === 413 && code === 'request_too_large',
      'phase 7: Content-Length 100 MB with 1 KiB sent → 413 request_too_large before the rest is sent',
      { status: statusOf(c.data), code, closed: c.closedAt !== null });
    c.sock.destroy();
  }
  // The same with a chunked upload that passes 1 MiB.
  {
    const c = await open();
    await write(c, Buffer.from('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      'Transfer-Encoding: chunked\r\n\r\n', 'latin1'));
    const chunk = Buffer.concat([Buffer.from('10000\r\n'), Buffer.alloc(0x10000, 'a'), Buffer.from('\r\n')]);
    for (let k = 0; k < 32 && statusOf(c.data) === null && c.closedAt === null && !c.error; k++) await write(c, chunk);
    if (statusOf(c.data) === null && c.closedAt === null && !c.error) await write(c, Buffer.from('0\r\n\r\n'));
    await closedWithin(c, TIMEOUT_S * 1000 + CLOSE_SLACK_MS);
    check(statusOf(c.data) === 413, 'phase 7: a chunked upload past 1 MiB → 413', { status: statusOf(c.data), error: c.error });
    c.sock.destroy();
  }
  await after('oversized headers and bodies');
}

// ---- phase 8: garbage bytes ----------------------------------------------------------------
{
  const statuses = [];
  let hung = 0;
  for (let k = 0; k < 16; k++) {
    const bytes = Buffer.alloc(randInt(1, 4096));
    for (let i = 0; i < bytes.length; i++) bytes[i] = randInt(0, 255);
    if (k % 4 === 0) bytes.write('GET / HTTP/9.9\r\n\x00\x01\r\n\r\n'); // half-plausible
    const c = await open();
    await write(c, bytes);
    if (k % 2) { // then close at once
      c.sock.destroy();
      continue;
    }
    c.sock.end(); // then wait for the answer
    if (!(await closedWithin(c, TIMEOUT_S * 1000 + CLOSE_SLACK_MS))) hung++;
    statuses.push(statusOf(c.data));
    c.sock.destroy();
  }
  check(hung === 0, 'phase 8: each garbage connection ended by the server (answered or closed)', { hung });
  check(statuses.every((s) => s === null || (s >= 400 && s < 600 && s !== 500)),
    'phase 8: garbage is never answered 2xx or 500 (4xx or nothing)', statuses);
  await after('garbage bytes');
}

// ---- phase 9: pipelined requests ------------------------------------------------------------
{
  const c = await open();
  const reqs = [httpRequest('GET', '/health'), httpRequest('POST', '/v1/chat/completions', NORMAL),
    httpRequest('GET', '/v1/models'), httpRequest('GET', '/health', undefined, 'Connection: close\r\n')];
  await write(c, Buffer.concat(reqs.map((r) => r.all)));
  const closed = await closedWithin(c, 30000);
  const rs = parseResponses(c.data);
  const parsed = rs.map((r) => { try { return JSON.parse(r.body); } catch { return null; } });
  check(rs.length === 4 && rs.every((r) => r.status === 200), 'phase 9: 4 pipelined requests → 4 responses, all 200',
    rs.map((r) => r.status));
  check(parsed[0]?.status === 'ok' && parsed[1]?.choices?.[0]?.message?.content === normalText &&
    parsed[2]?.object === 'list' && parsed[3]?.status === 'ok',
    'phase 9: in order: health, the chat answer (the same text), the model list, health', parsed);
  check(closed, 'phase 9: the server closed after the Connection: close request');
  c.sock.destroy();
  await after('pipelined requests');
}

await stopAndCheck(server);
finish('serve_fault');
