// serve_utf8.mjs — text pieces of a stream are valid UTF-8 on their own (a multi-byte character
// is never split across chunks) and reassemble to the non-streamed text, on prompts that make the
// demo model write non-ASCII (accents, Arabic, Greek, byte-fallback tokens). Not a tokenizer test.
// Each event's bytes are decoded strictly (TextDecoder fatal) before JSON.parse; each piece must
// be a well-formed string (no lone surrogate from an escaped half character).
import { check, finish, startServer, stopAndCheck, post, checkSettled } from './serve_lib.mjs';

const PROMPT = 'Café naïve 日本語 🙂 — «résumé» ñ';
const SEEDS = 24;
const server = await startServer(['-t', '1', '--slots', '2']);
const strict = new TextDecoder('utf-8', { fatal: true });

// A streamed request's events from the raw bytes, each decoded strictly; throws on invalid UTF-8.
async function rawStream(path, body) {
  const res = await fetch(server.base + path, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }),
  });
  const buf = Buffer.from(await res.arrayBuffer());
  const events = [];
  let at = 0;
  for (;;) {
    const end = buf.indexOf('\n\n', at);
    if (end < 0) break;
    events.push(strict.decode(buf.subarray(at, end))); // 0x0a never occurs inside a UTF-8 sequence
    at = end + 2;
  }
  if (at !== buf.length) throw new Error('bytes after the last event');
  return events.filter((e) => e !== 'data: [DONE]').map((e) => JSON.parse(e.replace(/^data: /, '')));
}

let nonAscii = 0;
const bad = [];
for (let seed = 1; seed <= SEEDS; seed++) {
  for (const ep of ['chat', 'completion']) {
    const path = ep === 'chat' ? '/v1/chat/completions' : '/v1/completions';
    const body = ep === 'chat'
      ? { messages: [{ role: 'user', content: PROMPT }], max_tokens: 40, temperature: 1.5, seed }
      : { prompt: PROMPT, max_tokens: 40, temperature: 1.5, seed };
    const whole = await post(server.base, path, body);
    const want = ep === 'chat' ? whole.json?.choices?.[0]?.message?.content : whole.json?.choices?.[0]?.text;
    let pieces;
    try {
      pieces = (await rawStream(path, body)).filter((c) => c.choices.length)
        .map((c) => (ep === 'chat' ? c.choices[0].delta.content ?? '' : c.choices[0].text ?? ''));
    } catch (e) {
      bad.push({ seed, ep, error: e.message });
      continue;
    }
    if (/[^\x00-\x7f]/.test(want ?? '')) nonAscii++;
    const malformed = pieces.filter((p) => !p.isWellFormed());
    if (typeof want !== 'string' || !want.isWellFormed() || malformed.length || pieces.join('') !== want) {
      bad.push({ seed, ep, want, got: pieces.join(''), malformed });
    }
  }
}
check(bad.length === 0, `${2 * SEEDS} streams: every event valid UTF-8, every piece well formed, ` +
  'reassembled = the non-streamed text', bad.slice(0, 4));
check(nonAscii >= 4, `the prompts made the model write non-ASCII (${nonAscii} of ${2 * SEEDS} replies)`);
await checkSettled(server.base, 'utf8');
await stopAndCheck(server);
finish('serve_utf8');
