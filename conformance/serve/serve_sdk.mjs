// serve_sdk.mjs — `plumb serve` through the official OpenAI SDK for Node (npm `openai`, installed
// by npm_setup.sh into PLUMB_SERVE_NPM): what a real client sees. Not a protocol test (serve_curl.sh).
// Asserts: models.list(); chat and completions, non-streaming and streaming (`for await`,
// reassembled text = the non-streaming text for the same seed); stop; seed determinism; each
// error status as the SDK's APIError subclass with status, code and param.
// Exits 77 (skipped) when the package is missing, unless PLUMB_NO_SKIP=1.
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  check, finish, startServer, stopAndCheck, checkSettled, skip,
} from './serve_lib.mjs';

const npmDir = process.env.PLUMB_SERVE_NPM;
if (!npmDir || !existsSync(path.join(npmDir, 'node_modules', 'openai', 'package.json'))) {
  skip(`npm package openai not installed in '${npmDir}' (the serve_npm_setup fixture skipped or failed)`);
}
const require = createRequire(path.join(npmDir, 'package.json'));
const mod = require('openai');
const OpenAI = mod.OpenAI ?? mod.default ?? mod;
const sdkVersion = JSON.parse(readFileSync(path.join(npmDir, 'node_modules', 'openai', 'package.json'), 'utf8')).version;
console.log(`openai SDK ${sdkVersion} from ${npmDir}`);

const KEY = 'sk-sdk-test';
const ALIAS = 'plumb-sdk';
const server = await startServer(['-t', '1', '--slots', '2', '--api-key', KEY, '--alias', ALIAS]);
const client = new OpenAI({ apiKey: KEY, baseURL: `${server.base}/v1`, maxRetries: 0, timeout: 60000 });

// Runs fn, expecting the SDK to throw `Cls` with `status` (and code/param when given).
async function expectError(what, Cls, status, fn, { code, param } = {}) {
  try {
    await fn();
    check(false, `${what} → ${Cls.name} ${status}`, 'no error thrown');
  } catch (e) {
    const ok = e instanceof Cls && e instanceof OpenAI.APIError && e.status === status &&
      (code === undefined || e.code === code) && (param === undefined || e.param === param);
    check(ok, `${what} → ${Cls.name} (status ${status}${code ? `, code ${code}` : ''}${param ? `, param ${param}` : ''})`,
      { name: e?.constructor?.name, status: e?.status, code: e?.code, param: e?.param, message: e?.message });
  }
}

try {
  // ---- models ----
  const models = await client.models.list();
  const ids = [];
  for await (const m of models) ids.push(m);
  check(ids.length === 1 && ids[0].id === ALIAS && ids[0].object === 'model' && ids[0].owned_by === 'plumb',
    'models.list(): one model, the alias', ids);

  // ---- chat: non-streaming, streaming, same seed ----
  const messages = [
    { role: 'system', content: 'You are a helpful assistant.' },
    { role: 'user', content: 'Tell me about the sea.' },
  ];
  const params = { model: ALIAS, messages, temperature: 0.8, top_p: 0.95, max_tokens: 32, seed: 1234 };
  const a = await client.chat.completions.create(params);
  const textA = a.choices[0].message.content;
  check(a.object === 'chat.completion' && a.model === ALIAS && typeof textA === 'string' && textA.length > 0 &&
    ['stop', 'length'].includes(a.choices[0].finish_reason) &&
    a.usage.total_tokens === a.usage.prompt_tokens + a.usage.completion_tokens &&
    typeof a.usage.prompt_tokens_details?.cached_tokens === 'number',
    'chat.completions.create: a completion with text, finish_reason and usage (cached_tokens)', a);
  console.log(`     reply: ${JSON.stringify(textA)}`);
  const b = await client.chat.completions.create(params);
  check(b.choices[0].message.content === textA, 'chat: the same seed → the same text',
    { a: textA, b: b.choices[0].message.content });

  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let streamed = '';
  let finishReason = null;
  let usage = null;
  let nChunks = 0;
  let roleFirst = null;
  const idsSeen = new Set();
  for await (const chunk of stream) {
    nChunks++;
    idsSeen.add(chunk.id);
    if (chunk.object !== 'chat.completion.chunk') check(false, 'chat stream: chunk object', chunk);
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices.length === 0) continue;
    if (roleFirst === null) roleFirst = chunk.choices[0].delta?.role ?? '';
    streamed += chunk.choices[0].delta?.content ?? '';
    if (chunk.choices[0].finish_reason) finishReason = chunk.choices[0].finish_reason;
  }
  check(streamed === textA, 'chat stream (for await): the reassembled text equals the non-streaming text',
    { streamed, textA });
  check(finishReason === a.choices[0].finish_reason && roleFirst === 'assistant' && idsSeen.size === 1 && nChunks >= 3,
    'chat stream: role first, one id, the same finish_reason', { finishReason, roleFirst, ids: [...idsSeen], nChunks });
  check(usage && usage.completion_tokens === a.usage.completion_tokens &&
    usage.prompt_tokens === a.usage.prompt_tokens && typeof usage.prompt_tokens_details?.cached_tokens === 'number',
    'chat stream: include_usage → usage with cached_tokens, the same token counts', usage);

  // Greedy is deterministic; text parts are accepted.
  const g1 = await client.chat.completions.create({ messages, temperature: 0, max_tokens: 24, model: 'any' });
  const g2 = await client.chat.completions.create({
    messages: [messages[0], { role: 'user', content: [{ type: 'text', text: 'Tell me about the sea.' }] }],
    temperature: 0, max_tokens: 24, model: 'any',
  });
  check(g1.choices[0].message.content === g2.choices[0].message.content,
    'chat: greedy twice (string and text-part content) → the same text');

  // ---- stop ----
  const t = g1.choices[0].message.content;
  let stop = null;
  for (let k = Math.floor(t.length / 2); k > 0 && !stop; k--) {
    const s = t.slice(k, k + 3);
    if (s.length === 3 && t.indexOf(s) > 0) stop = s;
  }
  if (check(stop !== null, `stop: a stop string from the greedy text ${JSON.stringify(t)}`)) {
    const want = t.slice(0, t.indexOf(stop));
    const r = await client.chat.completions.create({ messages, temperature: 0, max_tokens: 24, model: 'any', stop: [stop] });
    check(r.choices[0].message.content === want && r.choices[0].finish_reason === 'stop',
      `stop ${JSON.stringify(stop)}: the text ends before it, finish_reason stop`,
      { got: r.choices[0].message.content, want, finish: r.choices[0].finish_reason });
    let s = '';
    let fin = null;
    for await (const c of await client.chat.completions.create({
      messages, temperature: 0, max_tokens: 24, model: 'any', stop, stream: true,
    })) {
      s += c.choices[0]?.delta?.content ?? '';
      fin = c.choices[0]?.finish_reason ?? fin;
    }
    check(s === want && fin === 'stop', 'stop, streamed: the same text, finish_reason stop', { s, want, fin });
  }

  // ---- completions ----
  const cp = { model: ALIAS, prompt: 'Once upon a time', temperature: 1.0, max_tokens: 24, seed: 77 };
  const c1 = await client.completions.create(cp);
  const c2 = await client.completions.create(cp);
  check(c1.object === 'text_completion' && typeof c1.choices[0].text === 'string' &&
    c1.choices[0].text === c2.choices[0].text, 'completions.create: text_completion, the same seed → the same text',
    { c1: c1.choices[0].text, c2: c2.choices[0].text });
  let ct = '';
  for await (const c of await client.completions.create({ ...cp, stream: true })) ct += c.choices[0]?.text ?? '';
  check(ct === c1.choices[0].text, 'completions stream: reassembled text = non-streaming text', { ct });

  // ---- errors ----
  await expectError('temperature 5', OpenAI.BadRequestError, 400,
    () => client.chat.completions.create({ messages, model: 'x', temperature: 5 }), { param: 'temperature' });
  await expectError('messages[1].content a number', OpenAI.BadRequestError, 400,
    () => client.chat.completions.create({ messages: [messages[0], { role: 'user', content: 5 }], model: 'x' }),
    { param: 'messages[1].content' });
  await expectError('n = 2', OpenAI.BadRequestError, 400,
    () => client.chat.completions.create({ messages, model: 'x', n: 2 }), { param: 'n' });
  const wrongKey = new OpenAI({ apiKey: 'not-the-key', baseURL: `${server.base}/v1`, maxRetries: 0 });
  await expectError('a wrong API key', OpenAI.AuthenticationError, 401,
    () => wrongKey.chat.completions.create({ messages, model: 'x', max_tokens: 4 }));
  await expectError('a wrong API key on models.list()', OpenAI.AuthenticationError, 401, () => wrongKey.models.list());
  await expectError('models.retrieve (an unknown path)', OpenAI.NotFoundError, 404, () => client.models.retrieve(ALIAS));
  const long = 'the cat sat on the mat. '.repeat(200);
  await expectError('a conversation over the context (512)', OpenAI.APIError, 413,
    () => client.chat.completions.create({ messages: [{ role: 'user', content: long }], model: 'x', max_tokens: 4 }),
    { code: 'context_length_exceeded' });
  const huge = 'a'.repeat(1100000);
  await expectError('a body over --max-body (1 MiB)', OpenAI.APIError, 413,
    () => client.chat.completions.create({ messages: [{ role: 'user', content: huge }], model: 'x' }),
    { code: 'request_too_large' });

  // 503: a second server with one slot and no queue, one long request in flight (greedy on
  // "1, 2, 3, 4," runs 1500 tokens without ending). Retried when the long one ended first.
  const busy = await startServer(['-t', '1', '--slots', '1', '--queue', '0', '-c', '2048']);
  const bc = new OpenAI({ apiKey: 'none', baseURL: `${busy.base}/v1`, maxRetries: 0 });
  // Starts the long request (its outcome: a completion or the error, never a rejection) and
  // waits (bounded) until /health shows the slot busy.
  const startLong = async (maxTokens = 1500) => {
    const p = bc.completions.create({ model: 'x', prompt: '1, 2, 3, 4,', temperature: 0, max_tokens: maxTokens })
      .catch((e) => e);
    for (let i = 0; i < 1000; i++) {
      const h = await (await fetch(`${busy.base}/health`)).json();
      if (h.slots_idle === 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    return { p }; // wrapped: an async function would wait for p itself
  };
  let got = null;
  for (let attempt = 0; attempt < 5 && !got; attempt++) {
    const { p: longReq } = await startLong();
    let err = null;
    try {
      await bc.chat.completions.create({ messages, model: 'x', max_tokens: 4 });
    } catch (e) {
      err = e;
    }
    const longResult = await longReq;
    if (err && !(longResult instanceof Error)) got = err; // a 503 while the long one held the slot
    else if (err && longResult instanceof Error) {
      check(false, 'the long request and the second one: one of them answered', { err: err.message, long: longResult.message });
    }
  }
  const retryAfter = got?.headers?.get ? got.headers.get('retry-after') : got?.headers?.['retry-after'];
  check(got instanceof OpenAI.InternalServerError && got.status === 503 && got.code === 'overloaded' &&
    retryAfter === '1', 'a request while the only slot is busy (--queue 0) → InternalServerError 503, ' +
    'code overloaded, Retry-After 1', { name: got?.constructor?.name, status: got?.status, code: got?.code, retryAfter });
  // The SDK's own retry (it honours Retry-After) gets through once the slot is free (a shorter
  // long request; retries enough for a slow sanitizer build).
  const retrying = new OpenAI({ apiKey: 'none', baseURL: `${busy.base}/v1`, maxRetries: 30 });
  const { p: longReq } = await startLong(400);
  const r = await retrying.chat.completions.create({ messages, model: 'x', max_tokens: 4 });
  const longResult = await longReq;
  check(typeof r.choices[0].message.content === 'string' && !(longResult instanceof Error),
    'with maxRetries the SDK gets through after the 503s (and the long request completed)',
    longResult instanceof Error ? longResult.message : undefined);
  await stopAndCheck(busy, 'the --queue 0 server');

  // The server is still fine afterwards.
  const after = await client.chat.completions.create(params);
  check(after.choices[0].message.content === textA, 'after the errors: the same seed still gives the same text');
  await checkSettled(server.base, 'sdk', { headers: { authorization: `Bearer ${KEY}` } });
} catch (e) {
  check(false, 'no unexpected exception', `${e?.constructor?.name}: ${e?.message}\n${e?.stack}`);
}
await stopAndCheck(server);
finish('serve_sdk');
