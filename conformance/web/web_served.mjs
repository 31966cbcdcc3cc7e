// web_served.mjs — the chat page as `plumb serve -m FILE` serves it, in headless chromium: it
// starts on the server's model (the server backend, the model named), a message is never cleared
// before a backend has taken it (a refusal is said beside the input, which keeps the text), and
// the server's own file runs in the browser engine on request (GET /model.gguf, the API key when
// one is set). The engine is the module's test double (fake-engine/). Not the turns' contents
// (web_server, web_engine).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { finish, startServer, stopAndCheck, env, request } from '../serve/serve_lib.mjs';
import { launch, openPage, say, setField, check } from './web_lib.mjs';

const engineDir = path.join(path.dirname(new URL(import.meta.url).pathname), 'fake-engine');
const { model } = env();
const id = path.basename(model).replace(/\.gguf$/, ''); // plumb serve's default --alias
const bytes = readFileSync(model);

// What the page shows (null-safe: a page without these elements fails the checks, not the script).
const page$ = (page) => page.evaluate(() => {
  const el = (id) => document.getElementById(id);
  return {
    backend: document.body.dataset.backend, on: el('on')?.textContent ?? '',
    onModel: document.body.dataset.onModel, input: el('input').value,
    inputError: el('input-error')?.textContent ?? '',
    errorBesideInput: !!document.querySelector('#composer #input-error'),
    turns: window.plumb.turns.length, logMessages: document.querySelectorAll('#log .msg').length,
    serverButton: !!el('load-server-model') && !el('load-server-model').hidden,
    wasmDisabled: el('backend-wasm').disabled,
  };
});

// Types into the input as a user does and presses Enter.
async function typeAndEnter(page, text) {
  await page.$eval('#input', (el) => { el.value = ''; });
  await page.focus('#input');
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
}

const server = await startServer(['--slots', '1', '-t', '1', '--web-dir', engineDir]);
const keyed = await startServer(['--slots', '1', '-t', '1', '--web-dir', engineDir, '--api-key', 'sekrit']);
const closed = await startServer(['--slots', '1', '-t', '1', '--web-dir', engineDir, '--no-model-file']);
const browser = await launch();
try {
  // The model file over HTTP: the same bytes; the API key when one is set; off with the flag.
  const f = await fetch(`${server.base}/model.gguf`);
  const got = Buffer.from(await f.arrayBuffer());
  check(f.status === 200 && got.equals(bytes), 'GET /model.gguf answers the served file byte for byte', { status: f.status, len: got.length });
  check(f.headers.get('cross-origin-resource-policy') === 'same-origin' && f.headers.get('content-type') === 'application/octet-stream',
    '/model.gguf: octet-stream with the page\'s isolation headers', Object.fromEntries(f.headers));
  const k1 = await request(keyed.base, 'GET', '/model.gguf');
  check(k1.status === 401 && /key/.test(k1.json?.error?.message || ''), 'with --api-key, /model.gguf needs the key', k1.status);
  const k2 = await fetch(`${keyed.base}/model.gguf`, { headers: { Authorization: 'Bearer sekrit' } });
  check(k2.status === 200 && Number(k2.headers.get('content-length')) === bytes.length, 'with the key it answers the file', k2.status);
  await k2.arrayBuffer();
  const c1 = await request(closed.base, 'GET', '/model.gguf');
  check(c1.status === 404 && /--no-model-file/.test(c1.json?.error?.message || ''), '--no-model-file: 404 saying why', c1.text);

  // Opened at / as a user does: the server backend, its model named.
  const page = await openPage(browser, `${server.base}/?temp=0&seed=7&max_tokens=8`);
  let s = await page$(page);
  check(s.backend === 'server', 'served with a model, the page starts on the server backend', s);
  check(/server/i.test(s.on) && s.on.includes(id) && s.onModel === id, 'the page says it is on the server and names the model', s.on);
  check(!s.wasmDisabled && s.serverButton, 'the in-browser engine stays available, with the server\'s file offered', s);

  // A message on the server backend: taken, and only then cleared.
  await typeAndEnter(page, 'Hello! Who are you?');
  await page.waitForFunction(() => window.plumb.turns[0] && window.plumb.turns[0].done, { timeout: 60000 }).catch(() => {});
  s = await page$(page);
  const t0 = await page.evaluate(() => {
    const t = window.plumb.turns[0];
    return t ? { error: t.error, backend: t.backend, user: t.user, text: t.text, finish: t.finish, stats: t.stats } : null;
  });
  check(t0 && t0.backend === 'server' && !t0.error && s.input === '' && !s.inputError, 'Enter on the server backend: a turn, the input cleared', { t0, s });
  check(t0 && t0.user === 'Hello! Who are you?' && t0.text && t0.text.length > 0 && t0.stats && t0.stats.generated > 0 &&
    ['length', 'stop'].includes(t0.finish) && s.logMessages === 2, 'the server\'s model replied (greedy, up to 8 tokens), shown in the conversation', { t0, s });
  // (The old page started on the in-browser engine: it cleared the input and showed nothing.)
  check(t0 || s.input === 'Hello! Who are you?', 'a message no backend took is still in the input', s);

  // The server refuses (temperature out of range): the text comes back to the input, the
  // server's message beside it.
  await setField(page, 'temp', 5);
  await typeAndEnter(page, 'Too hot.');
  await page.waitForFunction((i) => window.plumb.turns[i] && window.plumb.turns[i].done, { timeout: 30000 }, s.turns).catch(() => {});
  s = await page$(page);
  check(s.input === 'Too hot.' && /temperature/.test(s.inputError), 'a message the server refuses is given back, its error beside the input', s);
  await setField(page, 'temp', 0);

  // The in-browser engine with no model: Enter keeps the text and says why beside the input.
  await page.click('#backend-wasm');
  await page.waitForFunction(() => document.body.dataset.backend === 'wasm');
  await setField(page, 'input', '');
  s = await page$(page);
  check(/browser/i.test(s.on) && /no model/i.test(s.on), 'switched: the page says it is in the browser with no model', s.on);
  const n0 = s.turns; // the page's record of the server turns stays; the log starts empty
  await typeAndEnter(page, 'Is anybody there?');
  await page.waitForFunction(() => document.getElementById('input-error')?.textContent, { timeout: 5000 }).catch(() => {});
  s = await page$(page);
  check(s.input === 'Is anybody there?', 'no model in the browser: Enter keeps the text in the input', s.input);
  check(/no model/i.test(s.inputError) && s.errorBesideInput, 'no model in the browser: the refusal is shown beside the input', s.inputError);
  check(s.turns === n0 && s.logMessages === 0, 'no model in the browser: nothing enters the conversation', s);

  // The server's file in the browser: the same model, named; then the kept text goes out.
  if (s.serverButton) {
    await page.click('#load-server-model');
    await page.waitForFunction(() => document.body.dataset.chat === '1' || document.getElementById('settings-error').textContent, { timeout: 60000 });
  }
  s = await page$(page);
  const info = await page.$eval('#model-info', (el) => el.textContent);
  const err = await page.$eval('#settings-error', (el) => el.textContent);
  check(!err && info.startsWith(`${id}:`), 'the server\'s model loads into the browser engine', { err, info });
  check(/browser/i.test(s.on) && s.onModel === id, 'the page says it runs the server\'s model in the browser', s.on);
  check(s.input === 'Is anybody there?', 'the refused text is still there after loading', s.input);
  await page.focus('#input');
  await page.keyboard.press('Enter');
  await page.waitForFunction((i) => window.plumb.turns[i] && window.plumb.turns[i].done, { timeout: 20000 }, n0).catch(() => {});
  s = await page$(page);
  const t1 = await page.evaluate((i) => { const t = window.plumb.turns[i]; return t ? { user: t.user, error: t.error, backend: t.backend } : null; }, n0);
  check(t1 && t1.backend === 'wasm' && t1.user === 'Is anybody there?' && !t1.error && s.input === '' && !s.inputError,
    'once a model is loaded the same message is taken and the input cleared', { t1, s });
  const again = await say(page, 'And now?');
  check(again.done && !again.error, 'the chat goes on in the browser', again.error);
  await page.close();

  // Enter before the page has asked the server (its /health held back): no backend yet, so the
  // text stays and the page says why beside the input; once it has started, the same text goes.
  {
    const p = await browser.newPage();
    p.on('pageerror', (e) => console.log(`  [page error] ${e.message}`));
    await p.setRequestInterception(true);
    let release;
    const held = new Promise((r) => { release = r; });
    p.on('request', (req) => {
      if (new URL(req.url()).pathname === '/health') held.then(() => req.continue());
      else req.continue();
    });
    await p.goto(`${server.base}/?temp=0&max_tokens=4`, { waitUntil: 'domcontentloaded' });
    await p.waitForSelector('#input');
    await typeAndEnter(p, 'Too early?');
    s = await page$(p);
    check(s.input === 'Too early?' && /starting/.test(s.inputError) && s.turns === 0,
      'Enter before the page has started: the text stays, the reason beside the input', s);
    release();
    await p.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
    await p.focus('#input');
    await p.keyboard.press('Enter');
    await p.waitForFunction(() => window.plumb.turns[0] && window.plumb.turns[0].done, { timeout: 60000 }).catch(() => {});
    const t = await p.evaluate(() => { const t = window.plumb.turns[0]; return t ? { user: t.user, backend: t.backend, error: t.error } : null; });
    check(t && t.user === 'Too early?' && t.backend === 'server' && !t.error, 'once started, the kept text goes to the server', t);
    await p.close();
  }

  // Behind --api-key: the page needs the key for the model id and the file.
  const p2 = await openPage(browser, `${keyed.base}/`);
  s = await page$(p2);
  check(s.backend === 'server' && /API key/.test(s.on) && !s.serverButton, 'with --api-key and no key typed: the server backend, the page says the key is needed', s);
  await p2.close();

  // --no-model-file: no offer of the server's file; the server backend with its model.
  const p3 = await openPage(browser, `${closed.base}/`);
  s = await page$(p3);
  check(s.backend === 'server' && s.onModel === id && !s.serverButton, '--no-model-file: the server backend, no in-browser offer of its file', s);
  await p3.close();
} finally {
  await browser.close();
}
await stopAndCheck(server);
await stopAndCheck(keyed, 'server with --api-key');
await stopAndCheck(closed, 'server with --no-model-file');
finish('web_served');
