// serve_balance.mjs — several `plumb serve` behind HAProxy with serve/deploy/haproxy.cfg as shipped
// (only its addresses and check interval set through its environment variables), driven by the
// official OpenAI SDK through the balancer (issue 51). Not a latency test: it asserts instances,
// cache paths (from each instance's /metrics) and texts, never times.
//
// 3 instances + 1 reference instance; 6 conversations x 4 turns, interleaved (every conversation's
// turn 1, then every turn 2, ...), temperature 0, small max_tokens. Keys: X-Session-Id for most,
// the OpenAI `user` body field for two (the config's fallback). Asserted:
//  1. every request lands on exactly one instance (the /metrics generation counters of exactly one
//     moved) and X-Plumb-Instance names that one; a conversation's turns 2.. land where its turn 1
//     did and take the fast path there;
//  2. every answer equals the reference instance's for the same conversation (each conversation
//     alone on a fresh --slots 1 server);
//  3. SIGTERM to the instance holding the most conversations while one of its streams is in
//     flight: that stream still ends whole ([DONE], reference text), the instance exits 0 after
//     draining, HAProxy marks it DOWN; its conversations' next turns land on another instance
//     (not the fast path there: their cache is gone) and answer the reference text; every other
//     conversation stays on its instance on the fast path; no request fails.
// Exits 77 (skipped) when haproxy or the SDK is missing, unless PLUMB_NO_SKIP=1.
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  check, finish, startServer, stopServer, metrics, metricSum, sleep, skip,
} from './serve_lib.mjs';

const t0 = Date.now();

const here = path.dirname(fileURLToPath(import.meta.url));
const CFG = process.env.PLUMB_HAPROXY_CFG ?? path.join(here, '..', '..', 'serve', 'deploy', 'haproxy.cfg');
const haproxyBin = ['haproxy', '/usr/sbin/haproxy', '/usr/local/sbin/haproxy'].find((b) => {
  try { execFileSync(b, ['-v'], { stdio: 'ignore' }); return true; } catch { return false; }
});
if (!haproxyBin) skip('haproxy not found (Debian: haproxy; `make deps` installs it)');
const npmDir = process.env.PLUMB_SERVE_NPM;
if (!npmDir || !existsSync(path.join(npmDir, 'node_modules', 'openai', 'package.json'))) {
  skip(`npm package openai not installed in '${npmDir}' (the serve_npm_setup fixture skipped or failed)`);
}
const require = createRequire(path.join(npmDir, 'package.json'));
const mod = require('openai');
const OpenAI = mod.OpenAI ?? mod.default ?? mod;

const SYSTEM = 'You are a helpful assistant.';
const MAX_TOKENS = 8;
const LONG_TOKENS = 600; // the turn streamed while its instance drains
const LINES = [
  ['Tell me about the sea.', 'What lives in it?', 'Is it cold?', 'Who sails on it?'],
  ['What is a good breakfast?', 'And for lunch?', 'Do you like tea?', 'How do I make bread?'],
  ['Describe a small town.', 'Who lives there?', 'Is there a market?', 'What happens at night?'],
  ['Tell me a story about a dog.', 'What was its name?', 'Where did it go?', 'How did it end?'],
  ['Where do birds go in winter?', 'How do they know the way?', 'Do they come back?', 'Thanks.'],
  ['What is a river?', 'Where does it start?', 'Where does it end?', 'Can I swim in it?'],
];
const N_TURNS = LINES[0].length;
const BY_USER = new Set([1, 4]); // these send `user` in the body instead of the header
const keyOf = (c) => `conversation-${c}`;

const freePort = () => new Promise((resolve, reject) => {
  const s = net.createServer();
  s.on('error', reject);
  s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
});

function messagesFor(replies, c, t) {
  const m = [{ role: 'system', content: SYSTEM }];
  for (let i = 0; i < t; i++) m.push({ role: 'user', content: LINES[c][i] }, { role: 'assistant', content: replies[i] });
  m.push({ role: 'user', content: LINES[c][t] });
  return m;
}
const maxTokensOf = (c, t, longTurn) => (longTurn && longTurn.c === c && longTurn.t === t ? LONG_TOKENS : MAX_TOKENS);

// ---- processes -----------------------------------------------------------------------------
const procs = [];
let haproxy = null;
let haproxyLog = '';
async function cleanup() {
  for (const s of procs) if (!s.exit) await stopServer(s, { timeoutMs: 5000 });
  if (haproxy && haproxy.exitCode === null) haproxy.kill('SIGTERM');
}

const serverArgs = ['-t', '1', '--slots', '6', '-c', '1024', '--drain-timeout', '10'];
try {
  // Three instances and the reference, started side by side.
  const started = await Promise.all([0, 1, 2, 3].map(() => startServer(serverArgs)));
  procs.push(...started);
  const inst = started.slice(0, 3);
  const ref = started[3];
  const [lbPort, statsPort] = [await freePort(), await freePort()];
  const env = {
    ...process.env,
    PLUMB_LB_BIND: `127.0.0.1:${lbPort}`,
    PLUMB_LB_STATS: `127.0.0.1:${statsPort}`,
    PLUMB_CHECK_INTER: '100ms',
  };
  inst.forEach((s, i) => { env[`PLUMB_${i + 1}`] = `127.0.0.1:${s.port}`; });
  haproxy = spawn(haproxyBin, ['-db', '-f', CFG], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  haproxy.stdout.on('data', (d) => { haproxyLog += d; });
  haproxy.stderr.on('data', (d) => { haproxyLog += d; });
  const statsUrl = `http://127.0.0.1:${statsPort}/stats;csv`;
  // The servers' states as HAProxy sees them: name -> "UP" / "DOWN" / ...
  const lbStates = async () => {
    const r = await fetch(statsUrl);
    const rows = (await r.text()).split('\n').map((l) => l.split(','));
    const col = rows[0].indexOf('status');
    const why = rows[0].indexOf('check_status');
    const out = {};
    for (const row of rows) {
      if (row[0] === 'plumb' && /^plumb\d$/.test(row[1])) {
        out[row[1]] = row[col];
        out[`${row[1]}_check`] = row[why];
      }
    }
    return out;
  };
  const waitStates = async (want, ms = 10000) => {
    const end = Date.now() + ms;
    let st = {};
    while (Date.now() < end) {
      try { st = await lbStates(); } catch { st = {}; }
      if (Object.entries(want).every(([k, v]) => st[k] === v)) return st;
      await sleep(50);
    }
    return st;
  };
  const up = await waitStates({ plumb1: 'UP', plumb2: 'UP', plumb3: 'UP' });
  if (!check(['plumb1', 'plumb2', 'plumb3'].every((k) => up[k] === 'UP'), 'HAProxy runs the shipped config: 3 instances UP by /health', up)) {
    throw new Error(`haproxy: ${haproxyLog.slice(-2000)}`);
  }

  const lb = new OpenAI({ apiKey: 'none', baseURL: `http://127.0.0.1:${lbPort}/v1`, maxRetries: 0, timeout: 30000 });
  const direct = new OpenAI({ apiKey: 'none', baseURL: `${ref.base}/v1`, maxRetries: 0, timeout: 30000 });

  // One request through `client`: whole or streamed; returns { text, instance header }.
  async function ask(client, c, t, replies, { stream = false, longTurn = null, viaLb = true, onFirst } = {}) {
    const body = {
      model: 'plumb', messages: messagesFor(replies, c, t), temperature: 0, max_tokens: maxTokensOf(c, t, longTurn),
    };
    // The long turn runs its whole length (llama.cpp's ignore_eos), so that it is still
    // generating when its instance gets SIGTERM.
    if (longTurn && longTurn.c === c && longTurn.t === t) body.ignore_eos = true;
    const opts = {};
    if (viaLb && BY_USER.has(c)) body.user = keyOf(c);
    else if (viaLb) opts.headers = { 'X-Session-Id': keyOf(c) };
    if (!stream) {
      const { data, response } = await client.chat.completions.create(body, opts).withResponse();
      return { text: data.choices[0].message.content, instance: response.headers.get('x-plumb-instance') };
    }
    const { data, response } = await client.chat.completions.create({ ...body, stream: true }, opts).withResponse();
    let text = '';
    let first = true;
    for await (const chunk of data) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (first && text) { first = false; if (onFirst) await onFirst(); }
    }
    return { text, instance: response.headers.get('x-plumb-instance') };
  }

  // The reference: each conversation on the reference instance alone, turn by turn with its own
  // replies, with the same max_tokens as the balanced run (computed just before that turn).
  // cold: the turn a conversation moves to another instance, which holds none of it and so
  // evaluates the conversation's text re-tokenized (partial or slow path); a reply need not
  // re-tokenize to the ids the model drew (DESIGN.md: the chat prefix cache), so the reference
  // is taken the same way: its one slot is first given another text, then the turn is asked.
  const refHist = LINES.map(() => []);
  async function refTurn(c, t, longTurn = null, { cold = false } = {}) {
    if (cold) await direct.completions.create({ model: 'plumb', prompt: 'Something else entirely.', max_tokens: 1 });
    const r = await ask(direct, c, t, refHist[c], { viaLb: false, longTurn });
    refHist[c].push(r.text);
    return r.text;
  }

  // Which instance served a request, and on which path: the one whose counters moved.
  const snapAll = async () => Promise.all(inst.map((s) => (s.exit ? null : metrics(s.base))));
  const pathsOf = (m) => ({
    fast: metricSum(m, 'plumb_cache_path_total', { path: 'fast' }),
    partial: metricSum(m, 'plumb_cache_path_total', { path: 'partial' }),
    slow: metricSum(m, 'plumb_cache_path_total', { path: 'slow' }),
  });
  function whoServed(before, after) {
    const moved = [];
    for (let i = 0; i < inst.length; i++) {
      if (!before[i] || !after[i]) continue;
      const b = pathsOf(before[i]);
      const a = pathsOf(after[i]);
      for (const p of ['fast', 'partial', 'slow']) if (a[p] !== b[p]) moved.push({ i, path: p, n: a[p] - b[p] });
    }
    return moved;
  }

  const replies = LINES.map(() => []);
  const home = []; // conversation -> instance index
  let failedRequests = 0;
  // One turn through the balancer, checked: instance, path, text.
  async function lbTurn(c, t, { wantHome, stream = false, wantFast = true, refText, what, notFastWhy = 'its cache was on the stopped instance' }) {
    const before = await snapAll();
    let r;
    try {
      r = await ask(lb, c, t, replies[c], { stream });
    } catch (e) {
      failedRequests++;
      check(false, `${what}: answered through the balancer`, e.message);
      return null;
    }
    const after = await snapAll();
    const moved = whoServed(before, after);
    check(moved.length === 1 && moved[0].n === 1, `${what}: exactly one instance generated it`, moved);
    const i = moved[0]?.i;
    check(r.instance === `plumb${i + 1}`, `${what}: X-Plumb-Instance names it (plumb${i + 1})`, r.instance);
    if (wantHome !== undefined) check(i === wantHome, `${what}: on instance ${wantHome}`, { got: i });
    if (wantFast) check(moved[0]?.path === 'fast', `${what}: fast path`, moved[0]);
    else check(moved[0] && moved[0].path !== 'fast', `${what}: not the fast path (${notFastWhy})`, moved[0]);
    check(r.text === refText, `${what}: the reference's answer`, { got: r.text, want: refText });
    replies[c].push(r.text);
    return i;
  }

  // Turns 1 and 2, interleaved; even conversations stream.
  for (let c = 0; c < LINES.length; c++) {
    home[c] = await lbTurn(c, 0, {
      stream: c % 2 === 0, wantFast: false, notFastWhy: 'a first turn', refText: await refTurn(c, 0), what: `c${c} t1`,
    }).catch(() => null);
  }
  for (let c = 0; c < LINES.length; c++) {
    await lbTurn(c, 1, { wantHome: home[c], stream: c % 2 === 1, refText: await refTurn(c, 1), what: `c${c} t2` });
  }
  const count = [0, 0, 0];
  home.forEach((i) => { if (i !== null && i !== undefined) count[i]++; });
  console.log(`conversations per instance: ${count.join(' ')} (homes ${home.join(' ')})`);
  const victim = count.indexOf(Math.max(...count));
  check(count[victim] < LINES.length, 'the keys spread over more than one instance', count);

  // Turn 3 of one of the victim's conversations streams long; SIGTERM once its first piece is in.
  // While it drains, turn 3 of another of its conversations comes in: the victim refuses it
  // (503 "draining") and HAProxy sends it to another instance (retry-on 503, redispatch), or
  // HAProxy has already marked the victim DOWN and sends it elsewhere at once.
  const longC = home.indexOf(victim);
  const midC = home.findIndex((h, c) => h === victim && c !== longC);
  const longTurn = { c: longC, t: 2 };
  const moved = new Set();
  let termAt = 0;
  {
    const want = await refTurn(longC, 2, longTurn);
    const midWant = midC >= 0 ? await refTurn(midC, 2, null, { cold: true }) : null;
    const r = await ask(lb, longC, 2, replies[longC], {
      stream: true,
      longTurn,
      onFirst: async () => {
        termAt = Date.now();
        inst[victim].proc.kill('SIGTERM');
        if (midC < 0) return;
        for (let k = 0; k < 200; k++) {
          const h = await fetch(`${inst[victim].base}/health`).catch(() => null);
          if (!h || h.status === 503) break;
          await sleep(5);
        }
        try {
          const m = await ask(lb, midC, 2, replies[midC]);
          check(m.instance !== `plumb${victim + 1}`, `c${midC} t3 (sent while instance ${victim} drains): served by another instance`, m.instance);
          check(m.text === midWant, `c${midC} t3 (sent while instance ${victim} drains): the reference's answer`, { got: m.text, want: midWant });
          replies[midC].push(m.text);
          home[midC] = Number(m.instance?.slice(5)) - 1;
          moved.add(midC);
        } catch (err) {
          failedRequests++;
          check(false, `c${midC} t3 (sent while instance ${victim} drains): answered`, err.message);
        }
      },
    });
    check(termAt > 0, `c${longC} t3: SIGTERM sent to instance ${victim} mid-stream`);
    check(r.text === want, `c${longC} t3 (streamed across the drain): whole, the reference's answer`,
      { got: r.text, want });
    check(r.instance === `plumb${victim + 1}`, `c${longC} t3: served by the draining instance`, r.instance);
    replies[longC].push(r.text);
  }
  const e = await inst[victim].exited;
  if (!inst[victim].proc.stderr.closed) await once(inst[victim].proc.stderr, 'close'); // its last lines
  check(e.code === 0, `instance ${victim} exits 0 after its drain`, e);
  check(/draining \([^)]*\): 1 request in flight/.test(inst[victim].stderr) && /drained in/.test(inst[victim].stderr),
    `instance ${victim} drained with the stream in flight (its log says so)`,
    inst[victim].stderr.split('\n').filter((l) => l.startsWith('plumb serve:')).join(' | '));
  const refused = inst[victim].stderr.split('\n').filter((l) => / 503 .*draining/.test(l)).length;
  console.log(`note: instance ${victim} refused ${refused} request(s) with 503 draining while it drained (HAProxy sent them elsewhere)`);
  const states = await waitStates({ [`plumb${victim + 1}`]: 'DOWN' });
  check(states[`plumb${victim + 1}`] === 'DOWN', `HAProxy marks instance ${victim} DOWN`, states);

  // Turns 3 (the rest) and 4: the victim's conversations move, the others stay.
  for (let t = 2; t < N_TURNS; t++) {
    for (let c = 0; c < LINES.length; c++) {
      if ((c === longC || c === midC) && t === 2) continue;
      const lost = home[c] === victim;
      const first = lost && !moved.has(c);
      const i = await lbTurn(c, t, {
        wantHome: lost ? (first ? undefined : home[c]) : home[c],
        stream: (c + t) % 2 === 0,
        wantFast: !first,
        refText: await refTurn(c, t, null, { cold: first }),
        what: `c${c} t${t + 1}${lost ? ` (was on stopped instance ${victim})` : ''}`,
      });
      if (first && i !== null) {
        check(i !== victim, `c${c}: moved off the stopped instance`, i);
        moved.add(c);
        home[c] = i;
      }
    }
  }
  check(failedRequests === 0, 'no request through the balancer failed', failedRequests);
  // Nothing else lost: the surviving instances refused and cancelled nothing.
  for (let i = 0; i < inst.length; i++) {
    if (i === victim) continue;
    const m = await metrics(inst[i].base);
    check(metricSum(m, 'plumb_rejected_total') === 0 && metricSum(m, 'plumb_cancelled_total') === 0,
      `instance ${i}: nothing refused or cancelled`, { rejected: metricSum(m, 'plumb_rejected_total'), cancelled: metricSum(m, 'plumb_cancelled_total') });
  }
  // Last (it moves an instance's counters): a stream through the balancer arrives piece by
  // piece, not in bursts (the config's option http-no-delay; without it HAProxy held a
  // 300-token stream back into ~3 writes).
  {
    const res = await fetch(`http://127.0.0.1:${lbPort}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'stream-probe' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'go' }], max_tokens: 300, ignore_eos: true, stream: true }),
    });
    let reads = 0;
    let raw = '';
    for await (const chunk of res.body) { reads++; raw += Buffer.from(chunk).toString(); }
    check(res.status === 200 && raw.endsWith('data: [DONE]\n\n') && reads >= 20,
      'a 300-token stream through the balancer comes in pieces (>= 20 reads), not in bursts', { status: res.status, reads });
  }
} catch (err) {
  check(false, 'the run', err?.stack ?? String(err));
  console.log(`--- haproxy (tail) ---\n${haproxyLog.slice(-3000)}`);
} finally {
  await cleanup();
}
for (const [i, s] of procs.entries()) {
  if (s.exit && s.exit.code !== 0) console.log(`--- instance ${i} stderr (tail) ---\n${s.stderr.slice(-1500)}`);
}
console.log(`wall ${((Date.now() - t0) / 1000).toFixed(1)} s`);
finish('serve_balance');
