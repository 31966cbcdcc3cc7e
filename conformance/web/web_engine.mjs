// web_engine.mjs — the chat page with its engine in a Worker, in headless chromium. Run against
// the real wasm build (web_wasm: PLUMB_WEB_ENGINE=build-wasm/web) or the module's test double
// (web_fake_engine: conformance/web/fake-engine). Checks: a GGUF through the file picker with
// the progress bar; three turns (2 and 3 fast, from the page's stats), streamed text = the final
// text; with the real engine and kernels=ref, the greedy text of native `plumb chat --kernels
// ref` for the same conversation; a window-config error shown verbatim; a full context: message
// and reset; stop mid-stream through the SharedArrayBuffer flag; then the single-thread variant
// without isolation (postMessage; stop restarts the worker). Not the server backend (web_server).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { finish, startServer, stopAndCheck, env } from '../serve/serve_lib.mjs';
import { launch, openPage, say, sendAndStop, setField, check, skip } from './web_lib.mjs';
import { startStatic } from './static_server.mjs';

const engineDir = process.env.PLUMB_WEB_ENGINE;
const fake = process.env.PLUMB_WEB_FAKE === '1';
if (!engineDir || !existsSync(path.join(engineDir, 'plumb-engine.mjs'))) {
  // A missing wasm build skips, unless PLUMB_NO_SKIP=1 (CI), where the wasm_build fixture has
  // run `make wasm` before this test and a missing engine is a failure.
  const why = `no wasm engine in ${engineDir} (run \`make wasm\`)`;
  if (process.env.PLUMB_NO_SKIP === '1') { console.log(`FAIL: ${why} (PLUMB_NO_SKIP=1 forbids skipping)`); process.exit(1); }
  console.log(`SKIP: ${why}`);
  process.exit(77);
}
const { cli, model } = env();
// The variants built (plumb-<variant>.mjs beside plumb-engine.mjs): a threads one for the
// isolated page, a single-thread one for the page without isolation.
const has = (v) => fake || existsSync(path.join(engineDir, `plumb-${v}.mjs`));
const threaded = ['simd-threads', 'scalar-threads'].find(has);
const single = ['simd', 'scalar'].find(has);
check(threaded && single, 'the build has a threads variant and a single-thread one', { threaded, single });
const SYSTEM = 'You are a helpful assistant.';
const N = 24;
const SEED = 7;
const USER = ['Hello! Who are you?', 'Tell me a story about a small cat.', 'What did the cat find?'];

// Native greedy text for the same conversation: plumb chat --kernels ref, one line per message,
// /save for the replies as the engine kept them.
function nativeReplies() {
  const dir = mkdtempSync(path.join(tmpdir(), 'web_engine.'));
  try {
    const save = path.join(dir, 'conv.json');
    execFileSync(cli, ['chat', '-m', model, '--kernels', 'ref', '--system', SYSTEM, '-n', String(N),
      '--temp', '0', '--seed', String(SEED), '-c', '2048', '-t', '1'],
    { input: `${USER.join('\n')}\n/save ${save}\n`, stdio: ['pipe', 'ignore', 'ignore'] });
    const conv = JSON.parse(readFileSync(save, 'utf8'));
    const msgs = conv.messages || conv;
    return msgs.filter((m) => m.role === 'assistant').map((m) => m.content);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function loadByPicker(page) {
  const input = await page.$('#file');
  await input.uploadFile(model);
  await page.waitForFunction(() => document.body.dataset.chat === '1' || document.getElementById('settings-error').textContent,
    { timeout: 120000 });
  return page.evaluate(() => ({
    err: document.getElementById('settings-error').textContent,
    info: document.getElementById('model-info').textContent,
    progressMax: Number(document.getElementById('progress').max),
    env: document.getElementById('env').textContent,
    memory: document.getElementById('memory').textContent,
  }));
}

// Apply: a new chat with the settings; resolves once the engine answered (a chat or an error).
async function apply(page) {
  const before = await page.evaluate(() => (window.plumb.wasm.chats || 0) + (window.plumb.wasm.chatErrors || 0));
  await page.click('#apply');
  await page.waitForFunction((n) => (window.plumb.wasm.chats || 0) + (window.plumb.wasm.chatErrors || 0) > n,
    { timeout: 60000 }, before);
  return page.$eval('#settings-error', (el) => el.textContent);
}

// A reply long enough to stop: greedy replies of this model end within a few tokens, so the
// stop turn samples (temperature 1.5, no truncation, seed 38: 290 tokens natively with ref).
async function stopMidStream(page, what) {
  for (const [id, v] of [['temp', 1.5], ['top-k', 0], ['top-p', 1], ['min-p', 0], ['seed', 38]])
    await setField(page, id, v);
  check(!(await apply(page)), `${what}: a new chat for the stop test`);
  await setField(page, 'max-tokens', 4000);
  const { s, ms } = await sendAndStop(page, 'Tell me a very long story.');
  check(s.finish === 'cancel', `${what}: stop ends the turn as cancelled`, s.finish);
  check(ms < 5000, `${what}: stop takes effect while the worker is busy`, ms);
  await setField(page, 'max-tokens', N);
  return s;
}

const server = await startServer(['--slots', '1', '-t', '1', '--web-dir', engineDir]);
const browser = await launch();
let stat = null;
try {
  // ---- isolated (plumb serve's COOP/COEP): the ring, threads variant ----------------------
  const page = await openPage(browser, `${server.base}/?backend=wasm&variant=${threaded || single}&temp=0&seed=${SEED}&max_tokens=${N}&n_ctx=2048&kernels=ref`);
  check(await page.evaluate(() => window.crossOriginIsolated === true && window.plumb.isolated), 'isolated: crossOriginIsolated');
  const ld = await loadByPicker(page);
  check(!ld.err, 'the model loads from the file picker', ld.err);
  check(ld.progressMax === readFileSync(model).length, 'the progress bar counted the file\'s bytes', ld.progressMax);
  check(/SharedArrayBuffer ring/.test(ld.env), 'isolated: tokens come through the SharedArrayBuffer ring', ld.env);
  check(/wasm heap/.test(ld.memory), 'the wasm heap size is shown', ld.memory);

  const turns = [];
  for (let k = 0; k < 3; k++) {
    const t = await say(page, USER[k]);
    turns.push(t);
    check(t.done && !t.error && t.stats, `turn ${k + 1} ends with stats`, t.error);
    if (k > 0) check(t.stats && t.stats.path === 'fast', `turn ${k + 1} takes the fast path (page's stats)`, t.stats);
    check(t.stats && t.streamed === t.stats.text && t.shownText === t.streamed, `turn ${k + 1}: streamed text = the final text`,
      { streamed: t.streamed, final: t.stats && t.stats.text });
    check(t.shownStats && /prefilled/.test(t.shownStats), `turn ${k + 1}: stats shown`, t.shownStats);
  }
  if (!fake) {
    const native = nativeReplies();
    for (let k = 0; k < 3; k++)
      check(turns[k].streamed === native[k], `turn ${k + 1}: greedy text with kernels=ref = native plumb chat --kernels ref`,
        { page: turns[k].streamed, native: native[k] });
  }
  await page.screenshot({ path: path.join(process.cwd(), fake ? 'web_fake_engine.png' : 'web_wasm.png') });

  // A window configuration the engine refuses: its message, shown as it is.
  await setField(page, 'window', 64);
  const werr = await apply(page);
  check(/window/i.test(werr), 'a window-config error is shown (the engine\'s message)', werr);
  await setField(page, 'window', 0);

  // A full context: a small one, a long message; the message and the reset offer.
  await setField(page, 'n-ctx', 64);
  check(!(await apply(page)), 'a context of 64 is accepted');
  const o = await say(page, 'word '.repeat(200));
  const notice = await page.evaluate(() => ({ hidden: document.getElementById('notice').hidden, text: document.getElementById('notice-text').textContent }));
  check(o.finish === 'context_full', 'a full context ends the turn as context_full', o);
  check(!notice.hidden && /context/i.test(notice.text), 'a full context: a clear message and a reset offer', notice);
  await page.click('#notice-reset');
  await page.waitForFunction(() => document.getElementById('notice').hidden);
  const again = await say(page, 'Hello again.');
  check(again.done && !again.error && again.stats && again.stats.reused === 0, 'after the reset the chat starts over', again);

  await setField(page, 'n-ctx', 2048);
  await stopMidStream(page, 'isolated');
  const after = await say(page, 'Go on.');
  check(after.done && !after.error && after.stats && after.stats.path === 'fast', 'after a stop the next turn is fast (the cache kept what was generated)', after.stats);
  await page.close();

  // ---- not isolated (no COOP/COEP): single thread, postMessage, stop restarts the worker -----
  // The engine folder first: web/ holds the real plumb-engine.mjs too, and the fake must win.
  stat = await startStatic([engineDir, process.env.PLUMB_WEB_SRC], { '/model.gguf': model });
  const p2 = await openPage(browser, `${stat.base}/?backend=wasm&variant=${single}&kernels=ref&temp=0&seed=${SEED}&max_tokens=${N}&model=/model.gguf`);
  const iso = await p2.evaluate(() => ({ coi: window.crossOriginIsolated, sab: typeof SharedArrayBuffer }));
  check(iso.coi === false, 'plain server: not cross-origin isolated', iso);
  await p2.waitForFunction(() => document.body.dataset.chat === '1' || document.getElementById('settings-error').textContent, { timeout: 120000 });
  const env2 = await p2.evaluate(() => ({ env: document.getElementById('env').textContent, err: document.getElementById('settings-error').textContent,
    variant: window.plumb.wasm.info && window.plumb.wasm.info.variant, threads: window.plumb.wasm.info && window.plumb.wasm.info.threads }));
  check(!env2.err && env2.variant === single && env2.threads === 1, 'the single-thread variant loads from a URL', env2);
  check(/postMessage/.test(env2.env), 'not isolated: tokens come by postMessage', env2.env);
  const u = await say(p2, USER[0]);
  check(u.done && !u.error && u.stats && u.streamed === u.stats.text, 'fallback: a turn streams, streamed = final', u);
  if (!fake) check(u.streamed === turns[0].streamed, 'fallback: the same greedy text as the isolated page', { a: u.streamed, b: turns[0].streamed });
  const s2 = await stopMidStream(p2, 'fallback');
  check(/restart/.test(s2.shownError || ''), 'fallback: the page says the engine was restarted', s2.shownError);
  await p2.waitForFunction(() => document.body.dataset.chat === '1' && window.plumb.wasm.chatReady, { timeout: 120000 });
  const u2 = await say(p2, USER[0]);
  check(u2.done && !u2.error && u2.stats && u2.stats.path === 'slow', 'fallback: after the restart the conversation starts over', u2.stats);

  // Drag and drop: a GGUF dropped on the drop zone loads (a File built in the page, as a drop
  // from the desktop hands one over).
  const before = await p2.evaluate(() => window.plumb.wasm.chats || 0);
  await p2.evaluate(async () => {
    const f = new File([await (await fetch('/model.gguf')).blob()], 'dropped.gguf');
    const dt = new DataTransfer();
    dt.items.add(f);
    document.getElementById('drop').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  await p2.waitForFunction((n) => (window.plumb.wasm.chats || 0) > n || document.getElementById('settings-error').textContent, { timeout: 120000 }, before);
  const dropped = await p2.$eval('#model-info', (el) => el.textContent);
  check(/^dropped\.gguf:/.test(dropped), 'a dropped GGUF loads', dropped);
} finally {
  await browser.close();
  if (stat) await stat.close();
}
await stopAndCheck(server);
finish(fake ? 'web_fake_engine' : 'web_wasm');
