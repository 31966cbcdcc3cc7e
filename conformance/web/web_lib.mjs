// web_lib.mjs — what the browser tests of the chat page share: puppeteer-core (installed into
// the build tree by the web_npm fixture) driving Debian's chromium headless, and the page's
// test surface (window.plumb, data-* attributes). Not a test itself; no knowledge of the engine.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { check, SKIP_CODE } from '../serve/serve_lib.mjs';

export function skip(why) {
  if (process.env.PLUMB_NO_SKIP === '1') {
    console.log(`FAIL: ${why} (PLUMB_NO_SKIP=1 forbids skipping)`);
    process.exit(1);
  }
  console.log(`SKIP: ${why}`);
  process.exit(SKIP_CODE);
}

export function chromiumPath() {
  const c = process.env.PLUMB_CHROMIUM || '/usr/bin/chromium';
  return existsSync(c) ? c : null;
}

// Headless chromium through puppeteer-core (skips, 77, without either); args: its flags (by
// default: no sandbox, as root in containers needs; no GPU).
export async function launch(args = ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage']) {
  const npm = process.env.PLUMB_WEB_NPM;
  const pkg = npm && path.resolve(npm, 'node_modules', 'puppeteer-core', 'package.json');
  if (!pkg || !existsSync(pkg)) skip(`puppeteer-core is not in ${npm} (the web_npm fixture installs it)`);
  const exe = chromiumPath();
  if (!exe) skip('chromium not found (Debian: chromium; or PLUMB_CHROMIUM=PATH)');
  const puppeteer = createRequire(pkg)('puppeteer-core');
  return puppeteer.launch({
    executablePath: exe,
    headless: true,
    args,
  });
}

// A page that prints its console errors and failed requests (what a failure needs to be read).
export async function openPage(browser, url) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 820 });
  page.on('console', (m) => { if (m.type() === 'error' || process.env.PLUMB_WEB_VERBOSE) console.log(`  [page ${m.type()}] ${m.text()}`); });
  page.on('pageerror', (e) => console.log(`  [page error] ${e.message}`));
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  return page;
}

// The page's record of turn i, without its DOM handles.
export function turnOf(page, i) {
  return page.evaluate((i) => {
    const t = window.plumb.turns[i];
    if (!t) return null;
    const el = t.el;
    return { backend: t.backend, user: t.user, streamed: t.streamed, text: t.text, stats: t.stats,
             error: t.error, finish: t.finish, done: t.done,
             shownText: el.querySelector('.text').textContent,
             shownStats: el.querySelector('.stats') ? el.querySelector('.stats').textContent : null,
             shownError: el.querySelector('.err') ? el.querySelector('.err').textContent : null };
  }, i);
}

// Types a message, sends it, waits for its turn to end; returns turnOf.
export async function say(page, text, { timeoutMs = 120000 } = {}) {
  const i = await page.evaluate(() => window.plumb.turns.length);
  await page.$eval('#input', (el, v) => { el.value = v; }, text);
  await page.click('#send');
  await page.waitForFunction((i) => window.plumb.turns[i] && window.plumb.turns[i].done, { timeout: timeoutMs }, i);
  return turnOf(page, i);
}

// Sends a message, presses Stop once its first piece has streamed, waits for the turn to end;
// returns { s: turnOf, ms: from the click to the end }.
export async function sendAndStop(page, text, { doneMs = 15000 } = {}) {
  const i = await page.evaluate(() => window.plumb.turns.length);
  await page.$eval('#input', (el, v) => { el.value = v; }, text);
  await page.click('#send');
  await page.waitForFunction((i) => window.plumb.turns[i] && window.plumb.turns[i].streamed.length > 0, { timeout: 60000 }, i);
  const t0 = Date.now();
  await page.click('#stop');
  await page.waitForFunction((i) => window.plumb.turns[i].done, { timeout: doneMs }, i);
  const ms = Date.now() - t0;
  return { s: await turnOf(page, i), ms };
}

export async function setField(page, id, value) {
  await page.$eval(`#${id}`, (el, v) => { el.value = v; }, String(value));
}

export { check };
