// bench_ttft.mjs — time to first token of turn 2 and turn 10 of multi-turn chats sent through
// HAProxy (serve/deploy/haproxy.cfg as shipped) to several `plumb serve`, with affinity
// (X-Session-Id) and without it (no key: the config balances round robin). A benchmark, not a
// test: it prints a table (and JSON with --json FILE); nothing is asserted.
//
// usage: node serve/deploy/bench_ttft.mjs [--plumb build/tools/plumb] [--model FILE]
//          [--instances 3] [--slots 4] [--threads 1] [--convs 8] [--turns 10] [--reply 48]
//          [--rounds 2] [--modes single,affinity,round-robin] [--json FILE]
// Each mode runs --rounds times on fresh instances (the modes interleaved round by round); each
// round runs --convs conversations of --turns turns, interleaved (every conversation's turn 1,
// then every turn 2, ..., in a new seeded order each time), streaming, temperature 0, exactly
// --reply tokens per reply (ignore_eos), one request at a time, with a shared system prompt (228
// tokens with the demo model's tokenizer) so that a turn's prompt grows as a real chat's does.
// Modes: single (one instance of instances x slots slots, no balancer), affinity (X-Session-Id
// per conversation), round-robin (no key). TTFT is the client's: from sending the request to the
// first content piece, through the balancer. The table gives, per mode, the median over
// conversations and rounds for turns 2 and 10 of that, of the server's own ttft_ms and of the
// prompt tokens it prefilled (not reused from a slot), and the cache paths it reported (all from
// the stream's final chunk).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..', '..');
const args = process.argv.slice(2);
function opt(name, dflt) {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
}
const PLUMB = opt('plumb', path.join(root, 'build', 'tools', 'plumb'));
const MODEL = opt('model', path.join(root, 'models', 'plumb-en-8m-Q8_0.gguf'));
const N_INST = Number(opt('instances', 3));
const SLOTS = Number(opt('slots', 4));
const THREADS = Number(opt('threads', 1));
const CONVS = Number(opt('convs', 8));
const TURNS = Number(opt('turns', 10));
const REPLY = Number(opt('reply', 48));
const ROUNDS = Number(opt('rounds', 2));
const JSON_OUT = opt('json', null);
const HAPROXY = opt('haproxy', 'haproxy');
if (TURNS < 10) throw new Error('--turns must be at least 10 (turn 10 is measured)');

const SYSTEM = 'You are a helpful assistant for a small town library. ' +
  'You answer questions about books, opening hours, events and the history of the town. '.repeat(12) +
  'Be brief, friendly and precise.';
const LINES = ['Hello! Who are you?', 'What books do you have about the sea?', 'Which one is the best?',
  'Is it long?', 'Can I borrow it today?', 'When do you open tomorrow?', 'Are there events this week?',
  'Tell me about the town history.', 'Who founded the library?', 'Thank you, what else should I read?',
  'And for children?', 'Goodbye!'];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const freePort = () => new Promise((resolve, reject) => {
  const s = net.createServer();
  s.on('error', reject);
  s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
});

function startPlumb(slots = SLOTS) {
  const proc = spawn(PLUMB, ['serve', '-m', MODEL, '--port', '0', '--slots', String(slots), '-t', String(THREADS),
    '-c', '4096'], { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stderr.resume();
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/[^\s]+:(\d+)/);
      if (m) resolve({ proc, port: Number(m[1]) });
    });
    proc.on('exit', (c) => reject(new Error(`plumb serve exited ${c}`)));
  });
}

async function startFarm() {
  const inst = await Promise.all(Array.from({ length: N_INST }, () => startPlumb()));
  const lbPort = await freePort();
  const env = { ...process.env, PLUMB_LB_BIND: `127.0.0.1:${lbPort}`, PLUMB_LB_STATS: `127.0.0.1:${await freePort()}` };
  if (N_INST > 3) throw new Error('the shipped config names 3 servers');
  // Unused server lines point at a closed port: HAProxy marks them DOWN and never uses them.
  const dead = await freePort();
  for (let i = 0; i < 3; i++) env[`PLUMB_${i + 1}`] = `127.0.0.1:${i < N_INST ? inst[i].port : dead}`;
  const lb = spawn(HAPROXY, ['-db', '-f', path.join(here, 'haproxy.cfg')], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const base = `http://127.0.0.1:${lbPort}`;
  for (let k = 0; k < 100; k++) { // every instance UP (health checked) before the run
    try {
      const r = await fetch(`http://127.0.0.1:${env.PLUMB_LB_STATS.split(':')[1]}/stats;csv`);
      const up = (await r.text()).split('\n').filter((l) => /^plumb,plumb\d,/.test(l) && l.split(',')[17] === 'UP').length;
      if (up === N_INST) break;
    } catch { /* not listening yet */ }
    await sleep(100);
  }
  return {
    base,
    stop: async () => {
      lb.kill('SIGTERM');
      for (const i of inst) i.proc.kill('SIGTERM');
      await Promise.all(inst.map((i) => new Promise((r) => (i.proc.exitCode !== null ? r() : i.proc.on('exit', r)))));
    },
  };
}

// One instance, no balancer: the baseline the target names ("as on one instance").
async function startSingle() {
  const i = await startPlumb(SLOTS * N_INST);
  return {
    base: `http://127.0.0.1:${i.port}`,
    stop: async () => { i.proc.kill('SIGTERM'); await new Promise((r) => (i.proc.exitCode !== null ? r() : i.proc.on('exit', r))); },
  };
}

// One streamed turn: { ttft (ms, client), path, text }.
async function turn(base, key, messages) {
  const headers = { 'content-type': 'application/json' };
  if (key) headers['x-session-id'] = key;
  const t0 = performance.now();
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers,
    body: JSON.stringify({ model: 'plumb', messages, stream: true, temperature: 0, max_tokens: REPLY, ignore_eos: true }),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  let ttft = null;
  let text = '';
  let pathTaken = null;
  let serverTtft = null;
  let prefilled = null;
  let buf = '';
  const dec = new TextDecoder();
  for await (const chunk of res.body) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      const piece = j.choices?.[0]?.delta?.content;
      if (piece && ttft === null) ttft = performance.now() - t0;
      if (piece) text += piece;
      if (j.plumb) { pathTaken = j.plumb.cache_path; serverTtft = j.plumb.ttft_ms; prefilled = j.plumb.prefilled_tokens; }
    }
  }
  return { ttft, serverTtft, prefilled, path: pathTaken, text };
}

// A seeded shuffle (mulberry32): the conversations take their turns in a new order each round
// of turns, as independent users do (a fixed order would let round robin send a conversation
// to the same instance every time whenever the conversations are a multiple of the instances).
function shuffler(seed) {
  let a = seed >>> 0;
  const rnd = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return (xs) => {
    const o = [...xs];
    for (let i = o.length - 1; i > 0; i--) { const j = Math.floor(rnd() * (i + 1)); [o[i], o[j]] = [o[j], o[i]]; }
    return o;
  };
}

// mode: 'single' (one instance, no balancer), 'affinity' (X-Session-Id), 'round-robin' (no key).
async function runMode(mode, round) {
  const farm = mode === 'single' ? await startSingle() : await startFarm();
  const shuffle = shuffler(1000 + round); // the same orders in every mode
  const convs = Array.from({ length: CONVS }, (_, c) => ({
    name: ['Ann', 'Bob', 'Cleo', 'Dan', 'Eve', 'Finn', 'Gus', 'Hana', 'Ivo', 'Jon', 'Kai', 'Lea'][c % 12] + (c >= 12 ? ` ${c}` : ''),
    key: mode === 'affinity' ? `bench-${round}-${c}` : null, messages: [{ role: 'system', content: SYSTEM }], ttft: [], sttft: [], prefilled: [], path: [],
  }));
  try {
    for (let t = 0; t < TURNS; t++) {
      for (const cv of shuffle(convs)) {
        // Each conversation its own from its first line on (the same lines and greedy replies
        // would make every conversation one text, and any instance's cache would serve it).
        cv.messages.push({ role: 'user', content: t === 0 ? `I am reader ${cv.name}. ${LINES[0]}` : LINES[t % LINES.length] });
        const r = await turn(farm.base, cv.key, cv.messages);
        cv.messages.push({ role: 'assistant', content: r.text });
        cv.ttft[t] = r.ttft;
        cv.sttft[t] = r.serverTtft;
        cv.path[t] = r.path;
        cv.prefilled[t] = r.prefilled;
      }
    }
  } finally {
    await farm.stop();
  }
  return convs;
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const MODES = opt('modes', 'single,affinity,round-robin').split(',');
for (const m of MODES) if (!['single', 'affinity', 'round-robin'].includes(m)) throw new Error(`--modes: unknown mode '${m}'`);
const results = Object.fromEntries(MODES.map((m) => [m, []]));
for (let r = 0; r < ROUNDS; r++) for (const mode of MODES) results[mode].push(...await runMode(mode, r)); // interleaved
const rows = [];
for (const mode of MODES) {
  const cs = results[mode];
  const t2 = median(cs.map((c) => c.ttft[1]));
  const t10 = median(cs.map((c) => c.ttft[9]));
  const s2 = median(cs.map((c) => c.sttft[1]));
  const s10 = median(cs.map((c) => c.sttft[9]));
  const p2 = median(cs.map((c) => c.prefilled[1]));
  const p10 = median(cs.map((c) => c.prefilled[9]));
  const paths = (t) => {
    const n = { fast: 0, partial: 0, slow: 0 };
    for (const c of cs) n[c.path[t]]++;
    return `${n.fast}/${n.partial}/${n.slow}`;
  };
  rows.push({ mode, t2, t10, ratio: t10 / t2, s2, s10, sratio: s10 / s2, p2, p10, paths2: paths(1), paths10: paths(9), n: cs.length });
}
console.log(`${N_INST} instances x ${SLOTS} slots x ${THREADS} thread(s), ${CONVS} conversations x ${TURNS} turns x ${ROUNDS} rounds, ` +
  `${REPLY}-token replies, system prompt ${SYSTEM.length} chars; ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log('| setup | TTFT turn 2, client (ms) | turn 10, client (ms) | turn 10 / turn 2 | server ttft_ms turn 2 | turn 10 | ratio | prefilled tokens turn 2 | turn 10 | paths turn 2 (fast/partial/slow) | paths turn 10 |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(`| ${r.mode} | ${r.t2.toFixed(1)} | ${r.t10.toFixed(1)} | **${r.ratio.toFixed(2)}x** | ${r.s2.toFixed(1)} | ${r.s10.toFixed(1)} | ${r.sratio.toFixed(2)}x | ${r.p2} | ${r.p10} | ${r.paths2} | ${r.paths10} |`);
}
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify({ instances: N_INST, slots: SLOTS, threads: THREADS, convs: CONVS, turns: TURNS, reply: REPLY, rounds: ROUNDS, rows, raw: results }, null, 1));
