// web_server.mjs — the chat page against `plumb serve` as its backend (the server's streaming
// API), in headless chromium: three turns (2 and 3 on the fast path, as the page's stats say),
// streamed text = the server's non-streamed text for the same conversation, the server's error
// shown as it is, a conversation over the context (message + reset), stop mid-stream (the slot
// stays consistent), and the wasm switch saying why it is off. Not the wasm engine (web_wasm.mjs).
import { mkdtempSync, rmSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { finish, startServer, stopAndCheck, post, get } from '../serve/serve_lib.mjs';
import { launch, openPage, say, sendAndStop, setField, check } from './web_lib.mjs';

const empty = mkdtempSync(path.join(tmpdir(), 'web_server.'));
const SYSTEM = 'You are a helpful assistant.';
const MAX = 24;
const server = await startServer(['--slots', '1', '-t', '1', '-c', '4096', '--web-dir', empty]);
const browser = await launch();
try {
  const page = await openPage(browser, `${server.base}/?temp=0&seed=7&max_tokens=${MAX}`);
  const env = await page.evaluate(() => ({
    isolated: window.crossOriginIsolated, backend: window.plumb.backend,
    wasmDisabled: document.getElementById('backend-wasm').disabled,
    why: document.getElementById('backend-why').textContent,
  }));
  check(env.isolated === true, 'the page is cross-origin isolated (COOP/COEP from plumb serve)', env);
  check(env.backend === 'server', 'without wasm engine files the server is the backend', env);
  check(env.wasmDisabled && /make wasm/.test(env.why), 'the wasm switch is off and says why', env.why);

  // Three turns: the page's stats, and the text the server gives for the same conversation.
  const user = ['Hello! Who are you?', 'Tell me a story about a small cat.', 'What did the cat find?'];
  const messages = [{ role: 'system', content: SYSTEM }];
  for (let k = 0; k < 3; k++) {
    const t = await say(page, user[k]);
    check(t.done && !t.error, `turn ${k + 1} ends without error`, t.error);
    check(t.stats && t.shownStats && /path/.test(t.shownStats), `turn ${k + 1}: stats shown`, t.shownStats);
    if (k > 0) check(t.stats && t.stats.path === 'fast', `turn ${k + 1} takes the fast path`, t.stats);
    check(t.stats && t.stats.reused >= 0 && t.stats.prefilled > 0 && t.stats.generated >= 0 &&
          t.stats.ttftMs > 0, `turn ${k + 1}: reused, prefilled, generated, ttft`, t.stats);
    check(t.shownText === t.streamed && t.text === t.streamed, `turn ${k + 1}: the text shown is the text streamed`);
    messages.push({ role: 'user', content: user[k] });
    const r = await post(server.base, '/v1/chat/completions',
      { messages, temperature: 0, seed: 7, max_tokens: MAX, top_k: 40, top_p: 0.95, min_p: 0.05 });
    const want = r.json && r.json.choices ? r.json.choices[0].message.content : null;
    check(t.streamed === want, `turn ${k + 1}: streamed text = the server's whole reply for the same conversation`,
      { streamed: t.streamed, want });
    messages.push({ role: 'assistant', content: t.streamed });
  }
  await page.screenshot({ path: path.join(process.cwd(), 'web_server.png') });

  // The server's own error, shown as it is (a temperature out of range: 400 naming it).
  await setField(page, 'temp', 5);
  const e = await say(page, 'Too hot.');
  check(e.error && /temperature/.test(e.error) && e.shownError === e.error,
    'a 400 from the server is shown with its message', e.shownError);
  await setField(page, 'temp', 0);

  // Over the context (-c 4096): the server's 413 message, a notice and a reset that clears it.
  const long = 'word '.repeat(5000);
  const o = await say(page, long);
  const notice = await page.evaluate(() => ({ hidden: document.getElementById('notice').hidden,
    text: document.getElementById('notice-text').textContent }));
  check(o.finish === 'context_full' && /context/.test(o.error), 'over the context: the server\'s message', o.error);
  check(!notice.hidden && /reset/i.test(notice.text), 'over the context: a notice offers a reset', notice);
  await page.click('#notice-reset');
  await page.waitForFunction(() => document.getElementById('notice').hidden && !document.querySelector('#log .msg'));
  check(true, 'reset clears the notice and the conversation');
  const slots = await get(server.base, '/slots');
  check(slots.json && slots.json[0] && slots.json[0].consistent === true, 'the slot is consistent after the overflow', slots.json);

  // Stop mid-stream: a long reply, stopped after its first pieces.
  await setField(page, 'max-tokens', 3800);
  await page.evaluate(() => { window.plumb.ignoreEos = true; });
  const { s, ms } = await sendAndStop(page, 'Tell me a very long story.', { doneMs: 10000 });
  check(s.finish === 'cancel' && !s.error, 'stop ends the turn as cancelled', s);
  check(ms < 5000, 'stop takes effect at once', ms);
  const after = await say(page, 'Go on.');
  check(after.done && !after.error && after.stats, 'the conversation goes on after a stop', after.error);
  const slots2 = await get(server.base, '/slots');
  check(slots2.json && slots2.json[0].consistent === true, 'the slot is consistent after the stop', slots2.json);
} finally {
  await browser.close();
  rmSync(empty, { recursive: true, force: true });
}
await stopAndCheck(server);
finish('web_server');
