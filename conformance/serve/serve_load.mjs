// serve_load.mjs — a bounded load test of `plumb serve` on loopback: 64 concurrent clients, 480
// requests (chat and completions, streaming and not, 4–12 tokens each), 503s retried after
// their Retry-After. Not a benchmark: latency and throughput are printed, never asserted.
// Asserts: every request ends in exactly one well-formed 200 (a 503 must carry Retry-After and
// code overloaded; nothing else is allowed); ids unique; /metrics counted exactly the 200s and
// 503s the clients saw and the tokens they were given; a sample replayed alone gives the same
// text (no response went to the wrong client); server RSS after the run within RSS_BOUND_MIB of
// RSS after the warm-up; afterwards /health ok and every slot idle and consistent; exit 0.
import {
  check, finish, startServer, stopAndCheck, post, metrics, metricSum, metric, checkSettled,
  parseSSE, assembleStream, rssKiB, rng, sleep,
} from './serve_lib.mjs';

const CLIENTS = 64;
const REQUESTS = 480;
const WARMUP = 128;
const DEADLINE_MS = 200000; // the whole run stops by itself
const RSS_BOUND_MIB = 16;
const sanitized = process.env.PLUMB_SERVE_SANITIZED === '1';

const server = await startServer(['-t', '1', '--slots', '2', '--queue', '16', '--timeout', '30']);
const base = server.base;
const tag = `${process.pid}`;
const random = rng(20251124);

// Request i: its kind, its body (a unique marker in the user message, a unique seed).
function spec(i, phase) {
  const kind = ['chat', 'chat-stream', 'completion', 'completion-stream'][i % 4];
  const marker = `${phase}-${tag}-${i}`;
  const common = { temperature: 0.8, max_tokens: 4 + (i % 9), seed: 100000 + i + (phase === 'warm' ? 50000 : 0) };
  const chat = kind.startsWith('chat');
  const body = chat
    ? { ...common, messages: [{ role: 'user', content: `Request ${marker}: tell me something short.` }] }
    : { ...common, prompt: `Request ${marker}: once upon a time` };
  return { i, kind, marker, chat, stream: kind.endsWith('stream'), path: chat ? '/v1/chat/completions' : '/v1/completions', body };
}

// One well-formed 200 → { id, text, usage } or throws with what was wrong.
function parseOk(s, status, headers, raw) {
  if (!s.stream) {
    const j = JSON.parse(raw);
    const ch = j.choices?.[0];
    const text = s.chat ? ch?.message?.content : ch?.text;
    if (j.object !== (s.chat ? 'chat.completion' : 'text_completion') || typeof text !== 'string' ||
        !['stop', 'length'].includes(ch.finish_reason) || typeof j.usage?.completion_tokens !== 'number' ||
        j.usage.completion_tokens > s.body.max_tokens) throw new Error(`bad body ${raw.slice(0, 300)}`);
    return { id: j.id, text, usage: j.usage };
  }
  if (!(headers.get('content-type') ?? '').startsWith('text/event-stream')) throw new Error('stream without text/event-stream');
  const { events, bad } = parseSSE(raw);
  if (bad.length) throw new Error(`SSE framing: ${JSON.stringify(bad.slice(0, 2))}`);
  const a = assembleStream(s.chat ? 'chat' : 'completion', events);
  const ids = new Set(a.chunks.map((c) => c.id));
  // stream_options.include_usage: usage once, in the last chunk (choices []).
  if (!a.done || a.afterDone || ids.size !== 1 || !a.final || !a.usageChunk?.usage ||
      a.chunks.filter((c) => c.usage).length !== 1 || a.chunks[a.chunks.length - 1] !== a.usageChunk ||
      events.filter((e) => e === '[DONE]').length !== 1) throw new Error(`bad stream ${raw.slice(-300)}`);
  return { id: [...ids][0], text: a.text, usage: a.usageChunk.usage };
}

const stopAt = Date.now() + DEADLINE_MS;
// Runs one request to its 200 (retrying 503s after Retry-After). Never throws.
async function runOne(s) {
  const t0 = performance.now();
  const out = { s, attempts: 0, rejected: 0, errors: [] };
  for (;;) {
    if (Date.now() > stopAt) { out.errors.push('deadline'); return out; }
    out.attempts++;
    const ta = performance.now();
    let res;
    let raw;
    try {
      res = await fetch(base + s.path, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify(s.stream ? { ...s.body, stream: true, stream_options: { include_usage: true } } : s.body),
      });
      raw = await res.text();
    } catch (e) {
      out.errors.push(`network: ${e.message}`);
      return out;
    }
    if (res.status === 503) {
      out.rejected++;
      const ra = res.headers.get('retry-after');
      let code = null;
      try { code = JSON.parse(raw).error.code; } catch { /* checked below */ }
      if (ra !== '1' || code !== 'overloaded') out.errors.push(`503 without Retry-After 1 / code overloaded: ${ra} ${raw}`);
      await sleep(Number(ra || 1) * 1000 + Math.floor(random() * 250));
      continue;
    }
    if (res.status !== 200) {
      out.errors.push(`HTTP ${res.status}: ${raw.slice(0, 300)}`);
      return out;
    }
    try {
      Object.assign(out, parseOk(s, res.status, res.headers, raw));
      out.ok = true;
    } catch (e) {
      out.errors.push(e.message);
    }
    out.attemptMs = performance.now() - ta;
    out.totalMs = performance.now() - t0;
    return out;
  }
}

// `n` requests over CLIENTS workers; request i goes to worker i % CLIENTS, in order.
async function runLoad(n, phase) {
  const results = new Array(n);
  const workers = [];
  for (let w = 0; w < CLIENTS; w++) {
    workers.push((async () => {
      for (let i = w; i < n; i += CLIENTS) results[i] = await runOne(spec(i, phase));
    })());
  }
  await Promise.all(workers);
  return results;
}

const pct = (a, p) => a[Math.min(a.length - 1, Math.ceil((p / 100) * a.length) - 1)];

const rss0 = rssKiB(server.pid);
const warm = await runLoad(WARMUP, 'warm');
check(warm.every((r) => r.ok), `warm-up: ${WARMUP} requests over ${CLIENTS} clients all 200`,
  warm.filter((r) => !r.ok).slice(0, 3).map((r) => r.errors));
await checkSettled(base, 'after the warm-up');
const rss1 = rssKiB(server.pid);
const m0 = await metrics(base);

const t0 = performance.now();
const results = await runLoad(REQUESTS, 'load');
const wallS = (performance.now() - t0) / 1000;
const m1 = await metrics(base);
await checkSettled(base, 'after the load');
const rss2 = rssKiB(server.pid);

// ---- exactly one well-formed 200 per request ----
const bad = results.filter((r) => !r || !r.ok || r.errors.length);
check(bad.length === 0, `all ${REQUESTS} requests ended in exactly one well-formed 200 (503s retried)`,
  bad.slice(0, 5).map((r) => ({ i: r?.s.i, kind: r?.s.kind, errors: r?.errors })));
const ids = new Set(results.filter((r) => r?.ok).map((r) => r.id));
check(ids.size === REQUESTS, `${REQUESTS} distinct response ids`, { distinct: ids.size });
const n503 = results.reduce((s, r) => s + (r?.rejected ?? 0), 0);
const tokens = results.reduce((s, r) => s + (r?.usage?.completion_tokens ?? 0), 0);

// ---- the server counted what the clients saw: nothing lost, nothing twice ----
const d = (name, labels) => metricSum(m1, name, labels) - metricSum(m0, name, labels);
const ok200 = d('plumb_requests_total', { endpoint: '/v1/chat/completions', status: '200' }) +
  d('plumb_requests_total', { endpoint: '/v1/completions', status: '200' });
check(ok200 === REQUESTS, `/metrics: 200s on the two endpoints rose by ${REQUESTS}`, { delta: ok200 });
const rej = metric(m1, 'plumb_rejected_total{reason="overload"}') - metric(m0, 'plumb_rejected_total{reason="overload"}');
check(rej === n503, `/metrics: rejected{overload} rose by the ${n503} 503s the clients got`, { delta: rej });
const d503 = d('plumb_requests_total', { status: '503' });
check(d503 === n503, `/metrics: requests_total{status=503} rose by ${n503}`, { delta: d503 });
check(d('plumb_completion_tokens_total') === tokens,
  `/metrics: completion tokens rose by the ${tokens} the clients were given`, { delta: d('plumb_completion_tokens_total') });

// ---- no response went to another client: a sample replayed alone gives the same text ----
const sample = [];
for (let k = 0; k < 16; k++) sample.push(Math.floor(random() * REQUESTS));
const mismatches = [];
for (const i of sample) {
  const s = spec(i, 'load');
  const r = results[i];
  if (!r?.ok) continue;
  const again = await post(base, s.path, s.body);
  const text = s.chat ? again.json?.choices?.[0]?.message?.content : again.json?.choices?.[0]?.text;
  if (text !== r.text) mismatches.push({ i, kind: s.kind, load: r.text, alone: text });
}
check(mismatches.length === 0, `16 sampled requests replayed alone (same marker, seed) give the text their client got`,
  mismatches.slice(0, 4));

// ---- memory ----
const growMiB = (rss2 - rss1) / 1024;
const rssLine = `RSS: start ${(rss0 / 1024).toFixed(1)} MiB, after ${WARMUP}-request warm-up ` +
  `${(rss1 / 1024).toFixed(1)} MiB, after ${REQUESTS} requests ${(rss2 / 1024).toFixed(1)} MiB ` +
  `(${growMiB >= 0 ? '+' : ''}${growMiB.toFixed(1)} MiB)`;
if (sanitized) console.log(`${rssLine} — sanitizer build: not bounded (LSan checks leaks at exit)`);
else check(growMiB <= RSS_BOUND_MIB, `memory flat: ${rssLine}, bound +${RSS_BOUND_MIB} MiB`);

// ---- figures ----
const okr = results.filter((r) => r?.ok);
const e2e = okr.map((r) => r.totalMs).sort((a, b) => a - b);
const att = okr.map((r) => r.attemptMs).sort((a, b) => a - b);
console.log(`load: ${REQUESTS} requests, ${CLIENTS} concurrent clients, 2 slots, queue 16, -t 1; ` +
  `${n503} 503s retried; ${wallS.toFixed(2)} s wall`);
console.log(`latency end to end (with retries): p50 ${pct(e2e, 50).toFixed(1)} ms, p99 ${pct(e2e, 99).toFixed(1)} ms, ` +
  `max ${e2e[e2e.length - 1].toFixed(1)} ms`);
console.log(`latency of the answered attempt:   p50 ${pct(att, 50).toFixed(1)} ms, p99 ${pct(att, 99).toFixed(1)} ms`);
console.log(`throughput: ${(REQUESTS / wallS).toFixed(1)} requests/s, ${(tokens / wallS).toFixed(1)} completion tokens/s`);

await stopAndCheck(server);
finish('serve_load');
