// serve_multiconv.mjs — interleaved conversations keep their prefix cache (issue 16): 4
// conversations × 6 turns, every turn sending the whole conversation so far (with the replies
// it got), temperature 0.9 and a fixed seed per (conversation, turn), all with one system prompt.
// Not a latency test: it asserts cache paths, texts and counters, never times.
//
// What LRU + longest-prefix choice can promise, and so what is asserted:
//  A. --slots 2, 4 conversations run as two interleaved pairs (c1 c2 c1 c2 … then c3 c4 c3 c4 …):
//     each live conversation has a slot of its own, so every turn after a conversation's first
//     is served from the slot holding it: cache_path "fast", cached_tokens > 0,
//     reused + prefilled = prompt_tokens, and the same slot as its previous turn.
//  B. --slots 4, all 4 conversations round-robin (c1t1 c2t1 c3t1 c4t1 c1t2 …): the same claim.
//  C. --slots 2, the 4-way round robin: 4 live conversations cannot all keep a slot of 2, so no
//     path is promised; the texts must still be exactly the reference (any slot, any path).
// Reference: each conversation alone on a fresh `--slots 1` server, same seeds. Every case's
// texts equal it turn for turn, and /metrics deltas equal the sums over the responses.
import {
  check, finish, startServer, stopAndCheck, post, metrics, metric, metricSum, checkSettled,
} from './serve_lib.mjs';

const SYSTEM = 'You are a helpful assistant.';
const N_TURNS = 6;
const MAX_TOKENS = 16;
const TEMPERATURE = 0.9;
const TOPICS = [
  ['Tell me about the sea.', 'What lives in it?', 'Is it cold?', 'Why is it salty?',
    'Who sails on it?', 'Thank you, goodbye.'],
  ['What is a good breakfast?', 'And for lunch?', 'Do you like tea?', 'How do I make bread?',
    'What about cake?', 'Thanks for the recipes.'],
  ['Describe a small town.', 'Who lives there?', 'What is the old church like?',
    'Is there a market?', 'What happens at night?', 'I would like to visit.'],
  ['Tell me a story about a dog.', 'What was its name?', 'Where did it go?',
    'Did it find a friend?', 'How did it end?', 'That was a nice story.'],
];
const seedOf = (c, t) => 1000 * (c + 1) + t; // fixed per (conversation, turn)

// One turn: the whole conversation so far + the new user line. Returns the response JSON.
async function turn(base, conv, c, t) {
  const messages = [{ role: 'system', content: SYSTEM }];
  for (let i = 0; i < t; i++) {
    messages.push({ role: 'user', content: TOPICS[c][i] });
    messages.push({ role: 'assistant', content: conv.replies[i] });
  }
  messages.push({ role: 'user', content: TOPICS[c][t] });
  const r = await post(base, '/v1/chat/completions', {
    model: 'plumb', messages, temperature: TEMPERATURE, max_tokens: MAX_TOKENS, seed: seedOf(c, t),
  });
  if (r.status !== 200 || !r.json?.choices) throw new Error(`c${c + 1}t${t + 1}: HTTP ${r.status} ${r.text}`);
  conv.replies.push(r.json.choices[0].message.content);
  conv.responses.push(r.json);
  return r.json;
}

// Runs `schedule` ([conversation index…], one entry per turn in order) on a fresh server.
async function runCase(name, serverArgs, schedule) {
  const server = await startServer(serverArgs);
  const convs = TOPICS.map(() => ({ replies: [], responses: [] }));
  const before = await metrics(server.base);
  for (const c of schedule) await turn(server.base, convs[c], c, convs[c].replies.length);
  const after = await metrics(server.base);
  await checkSettled(server.base, name);
  await stopAndCheck(server, `${name} server`);
  return { convs, before, after };
}

// /metrics deltas against the sums over what the responses reported.
function checkMetrics(name, { convs, before, after }) {
  const all = convs.flatMap((cv) => cv.responses);
  const sum = (f) => all.reduce((s, r) => s + f(r), 0);
  const d = (key) => metric(after, key) - metric(before, key);
  for (const path of ['fast', 'partial', 'slow']) {
    const n = all.filter((r) => r.plumb.cache_path === path).length;
    check(d(`plumb_cache_path_total{path="${path}"}`) === n,
      `${name}: plumb_cache_path_total{path="${path}"} rose by the ${n} responses reporting it`,
      { delta: d(`plumb_cache_path_total{path="${path}"}`) });
  }
  check(d('plumb_cached_tokens_total') === sum((r) => r.usage.prompt_tokens_details.cached_tokens),
    `${name}: plumb_cached_tokens_total delta = sum of cached_tokens`,
    { delta: d('plumb_cached_tokens_total'), sum: sum((r) => r.usage.prompt_tokens_details.cached_tokens) });
  check(d('plumb_prompt_tokens_total') === sum((r) => r.usage.prompt_tokens),
    `${name}: plumb_prompt_tokens_total delta = sum of prompt_tokens`);
  check(d('plumb_completion_tokens_total') === sum((r) => r.usage.completion_tokens),
    `${name}: plumb_completion_tokens_total delta = sum of completion_tokens`);
  const okDelta = metricSum(after, 'plumb_requests_total', { endpoint: '/v1/chat/completions', status: '200' }) -
    metricSum(before, 'plumb_requests_total', { endpoint: '/v1/chat/completions', status: '200' });
  check(okDelta === all.length, `${name}: plumb_requests_total{chat,200} rose by ${all.length}`, { delta: okDelta });
}

// Every turn after a conversation's first: fast path from the slot that holds it.
function checkFastPaths(name, { convs }) {
  let bad = [];
  let n = 0;
  convs.forEach((cv, c) => cv.responses.forEach((r, t) => {
    if (t === 0) return;
    n++;
    const u = r.usage;
    const p = r.plumb;
    const cached = u.prompt_tokens_details?.cached_tokens;
    const ok = p.cache_path === 'fast' && cached > 0 && p.reused_tokens === cached &&
      p.reused_tokens + p.prefilled_tokens === u.prompt_tokens && p.slot === cv.responses[t - 1].plumb.slot;
    if (!ok) bad.push({ turn: `c${c + 1}t${t + 1}`, slot: p.slot, prev_slot: cv.responses[t - 1].plumb.slot,
      cache_path: p.cache_path, cached_tokens: cached, reused: p.reused_tokens, prefilled: p.prefilled_tokens,
      prompt_tokens: u.prompt_tokens });
  }));
  check(bad.length === 0, `${name}: all ${n} turns after a conversation's first are "fast" on the slot ` +
    'that holds it (cached_tokens > 0, reused = cached, reused + prefilled = prompt)', bad.slice(0, 6));
}

function checkTexts(name, { convs }, reference) {
  convs.forEach((cv, c) => {
    const t = cv.replies.findIndex((x, i) => x !== reference[c].replies[i]);
    check(t < 0 && cv.replies.length === N_TURNS,
      `${name}: conversation ${c + 1}'s ${N_TURNS} replies equal the fresh single-session run`,
      t < 0 ? undefined : { turn: t + 1, got: cv.replies[t], want: reference[c].replies[t] });
  });
}

// ---- the reference: each conversation alone on its own fresh --slots 1 server ----------
const base = ['-t', '1'];
const reference = [];
for (let c = 0; c < TOPICS.length; c++) {
  const r = await runCase(`reference c${c + 1}`, [...base, '--slots', '1'], Array(N_TURNS).fill(c));
  reference.push(r.convs[c]);
  checkFastPaths(`reference c${c + 1}`, { convs: [r.convs[c]] });
}
console.log('reference replies (conversation 1):', JSON.stringify(reference[0].replies));

// A: two interleaved pairs over 2 slots.
const pairs = [];
for (const [a, b] of [[0, 1], [2, 3]]) for (let t = 0; t < N_TURNS; t++) pairs.push(a, b);
const caseA = await runCase('A pairs over 2 slots', [...base, '--slots', '2'], pairs);
checkFastPaths('A pairs over 2 slots', caseA);
checkTexts('A pairs over 2 slots', caseA, reference);
checkMetrics('A pairs over 2 slots', caseA);

// B and C: the 4-way round robin.
const robin = [];
for (let t = 0; t < N_TURNS; t++) robin.push(0, 1, 2, 3);
const caseB = await runCase('B round robin over 4 slots', [...base, '--slots', '4'], robin);
checkFastPaths('B round robin over 4 slots', caseB);
checkTexts('B round robin over 4 slots', caseB, reference);
checkMetrics('B round robin over 4 slots', caseB);

const caseC = await runCase('C round robin over 2 slots', [...base, '--slots', '2'], robin);
checkTexts('C round robin over 2 slots', caseC, reference);
checkMetrics('C round robin over 2 slots', caseC);
const paths = caseC.convs.flatMap((cv) => cv.responses.map((r) => r.plumb.cache_path));
console.log(`C round robin over 2 slots: paths ${paths.join(' ')}`);

finish('serve_multiconv');
