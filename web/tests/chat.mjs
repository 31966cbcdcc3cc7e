// chat.mjs — the engine module's chat in node on the demo model (the simd variant, kernels ref):
// a three-turn greedy conversation equals native `plumb chat --kernels ref` byte for byte, turns 2
// and 3 take the prefix cache's fast path, the streamed text is the reply; a window the engine
// refuses throws its own message; a full context is finish 'context_full' and the chat works
// after reset(); shouldStop() mid-stream is finish 'cancel'; ignoreEos runs a reply that ended
// to maxTokens. Usage: node chat.mjs WEB PLUMB MODEL
import path from 'node:path';
import { MODEL, check, done, engine, load, plumb, tmp } from './util.mjs';

const variant = process.argv[5] ?? 'simd';
const system = 'You are a helpful assistant.';
const lines = ['Hello! Who are you?', 'Tell me a story about a small cat.', 'Thank you. Goodbye!'];
const N = 24;

const eng = await engine(variant, variant.endsWith('-threads') ? 2 : 1);
const info = load(eng, MODEL, 'ref');
check(info.arch === 'llama' && info.chatTemplate === 'ok' && info.kernels === 'ref',
  `model info: ${JSON.stringify(info)}`);

// 1. Three turns, greedy, against the native CLI.
const chat = eng.newChat({ system, sampler: { temp: 0 } });
const replies = [];
lines.forEach((line, i) => {
  let streamed = '';
  const st = chat.turn(line, { maxTokens: N, onText: (s) => { streamed += s; } });
  replies.push(st.text);
  check(streamed === st.text, `turn ${i + 1}: streamed text equals stats.text (${JSON.stringify(st.text)})`);
  check(i === 0 ? st.path === 'slow' : st.path === 'fast',
    `turn ${i + 1}: path ${st.path}, reused ${st.reused}, prefilled ${st.prefilled}, finish ${st.finish}`);
});
const native = plumb(['chat', '-m', MODEL, '--system', system, '--temp', '0', '-n', String(N),
  '--kernels', 'ref', '-t', '1'], lines.join('\n') + '\n').toString();
check(native === replies.map((r) => r + '\n').join(''),
  `greedy replies equal native plumb chat --kernels ref (${JSON.stringify(native)})`);
chat.free();

// 1b. ignoreEos (llama.cpp's ignore_eos, for timing runs): the reply that ended on an
// end-of-generation token runs to maxTokens instead.
const eos = eng.newChat({ system, sampler: { temp: 0 } });
const plain = eos.turn(lines[2], { maxTokens: 64 });
eos.reset();
const forced = eos.turn(lines[2], { maxTokens: 64, ignoreEos: true });
check(plain.finish === 'stop' && plain.generated < 64 && forced.finish === 'length' && forced.generated === 64 &&
  forced.text.startsWith(plain.text),
  `ignoreEos: ${plain.generated} tokens (${plain.finish}) without, ${forced.generated} (${forced.finish}) with, same start`);
eos.free();

// 2. A window the engine refuses: its own message.
for (const cfg of [{ window: 8, sinks: 8 }, { window: 16, sinks: -1 }]) {
  let msg = '';
  try { eng.newChat({ system, ...cfg }).free(); } catch (e) { msg = e.message; }
  check(msg.length > 0 && /sink/i.test(msg), `window ${JSON.stringify(cfg)} refused: "${msg}"`);
}

// 3. A full context window: finish 'context_full', the chat still usable, reset() clears it.
// (the first turn's prompt is 34 tokens and its greedy reply runs past 24 without an end of turn)
const small = eng.newChat({ system, nCtx: 40, sampler: { temp: 0 } });
const a = small.turn(lines[0], { maxTokens: 1000 });
check(a.finish === 'context_full', `generation into a full context: finish ${a.finish} after ${a.generated} tokens`);
const b = small.turn('And another one, please, a much longer one than before.', { maxTokens: 8 });
check(b.finish === 'context_full' && b.text === '', `a prompt past the window: finish ${b.finish}, path ${b.path}`);
small.reset();
const c = small.turn('Hello!', { maxTokens: 4 });
check(c.finish !== 'context_full' && c.path === 'slow' && c.generated > 0,
  `after reset: path ${c.path}, finish ${c.finish}, ${c.generated} tokens`);
small.free();

// 4. shouldStop() between tokens: finish 'cancel', the delivered text kept; the next turn works.
const stop = eng.newChat({ system, sampler: { temp: 0 } });
let pieces = 0, got = '';
const d = stop.turn('Tell me a story.', {
  maxTokens: 64, onText: (s) => { got += s; pieces++; }, shouldStop: () => pieces >= 3,
});
check(d.finish === 'cancel' && d.text === got && pieces === 3,
  `shouldStop after 3 pieces: finish ${d.finish}, ${pieces} pieces, text ${JSON.stringify(d.text)}`);
const e = stop.turn('Go on.', { maxTokens: 4 });
check(e.path === 'fast', `the turn after a cancel: path ${e.path}`);
stop.free();

console.log('memory', JSON.stringify(eng.memory()));
eng.freeModel();

// 5. Replies that are not UTF-8: a random-weight model (plumb mkmodel) writes byte tokens that
// need not form characters. The conversation keeps the reply's bytes (pl_chat_messages_with), so
// the turn works, the next one re-renders the same bytes and takes the fast path, and the text
// equals native plumb chat's bytes decoded the same way. (This failed as "chat: out of memory"
// while the conversation went through JSON, which cannot hold such bytes.)
const rnd = path.join(tmp, 'tiny-random.gguf');
plumb(['mkmodel', rnd, '--preset', 'tiny']);
const eng2 = await engine(variant, variant.endsWith('-threads') ? 2 : 1);
load(eng2, rnd, 'ref');
const junk = eng2.newChat({ system, sampler: { temp: 0 } });
const jr = [];
lines.forEach((line, i) => {
  let streamed = '';
  const st = junk.turn(line, { maxTokens: 16, onText: (t) => { streamed += t; } });
  jr.push(st.text);
  check(st.generated > 0 && (i === 0 || st.path === 'fast'),
    `random model, turn ${i + 1}: path ${st.path}, ${st.generated} tokens, finish ${st.finish}`);
});
const nativeJunk = new TextDecoder().decode(plumb(['chat', '-m', rnd, '--system', system,
  '--temp', '0', '-n', '16', '--kernels', 'ref', '-t', '1'], lines.join('\n') + '\n'));
check(nativeJunk === jr.map((r) => r + '\n').join(''),
  `random model: the replies equal native plumb chat's (${JSON.stringify(nativeJunk)})`);
junk.free();
eng2.freeModel();
done();
