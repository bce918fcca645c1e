// Shared by the browser tests and the UI benchmark: an emulated home driven through
// tests/ui/home_driver.py, and Debian's Chromium driven by playwright-core.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { before, after } from 'node:test';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '..', '..');
export const ARTIFACTS = path.join(REPO, 'test-artifacts', 'ui');
export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Start an emulated home with the Guest Board; resolves to {info, call, close}.
 *  `config`: overrides of the controller's TOML sections, e.g. {devices: {max_pending: 5000}}. */
export async function startHome({ config } = {}) {
  const py = process.env.HOMEWORK_PYTHON || path.join(REPO, '.venv', 'bin', 'python');
  const env = { ...process.env,
    PYTHONPATH: [path.join(REPO, 'nox-modules'), path.join(REPO, 'hwdb', 'python'), path.join(REPO, 'tests'),
                 process.env.PYTHONPATH || ''].join(':'),
    PYTHONUNBUFFERED: '1', HOMEWORK_UI_CONFIG: JSON.stringify(config || {}) };
  const child = spawn(py, [path.join(HERE, 'home_driver.py')], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const stderr = [];
  child.stderr.on('data', (b) => { stderr.push(b.toString()); if (process.env.UI_VERBOSE) process.stderr.write(b); });
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  lines.on('line', (line) => { const w = waiting.shift(); if (w) w(JSON.parse(line)); });
  const next = () => new Promise((resolve) => waiting.push(resolve));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const info = await Promise.race([next(), exited.then((code) => ({ ready: false, error: `driver exited ${code}` }))]);
  if (!info.ready) throw new Error(`emulated home did not start: ${info.error}\n${stderr.join('').slice(-3000)}`);
  let queue = Promise.resolve();
  async function call(req) {
    const run = queue.then(async () => {
      child.stdin.write(JSON.stringify(req) + '\n');
      const res = await next();
      if (!res.ok) throw new Error(`${req.op}: ${res.error}`);
      return res;
    });
    queue = run.catch(() => {});
    return run;
  }
  async function close() {
    if (child.exitCode !== null) return;
    child.stdin.write(JSON.stringify({ op: 'quit' }) + '\n');
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGTERM'), 30000);
    await exited;
    clearTimeout(timer);
  }
  return { info, call, close, stderr };
}

/** Debian's Chromium; with `netns` (info.view_ns: the household's laptop, a LAN device of
    the home that set the router up through its waiting page, home_driver.py), inside it,
    where the network never changes while the test runs (Chromium aborts requests in flight
    when its namespace's addresses change, and the host's do whenever an emulated home
    comes or goes, or a finished one's links are cleaned up). */
export async function launch(netns) {
  return chromium.launch({
    executablePath: netns ? path.join(HERE, 'chromium-netns.sh') : (process.env.CHROMIUM || '/usr/bin/chromium'),
    env: netns ? { ...process.env, HOMEWORK_VIEW_NS: netns } : process.env,
    args: CHROMIUM_FLAGS, headless: true });
}

export async function newPage(browser, viewport = { width: 1024, height: 600 }) {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport, hasTouch: true });
  // 60 s, not Playwright's 30: on a busy 2-core machine Chromium's first paint of the board
  // alone has taken most of 30 s (the board itself then answers in milliseconds).
  context.setDefaultTimeout(60000);
  return context.newPage();
}

export async function login(page, url, password) {
  // Chromium aborts loads in flight with ERR_NETWORK_CHANGED when any interface of the
  // host comes or goes, which the emulated home's devices do: a failed attempt starts
  // again from a fresh load (logged out), up to three times.
  for (let attempt = 1; ; attempt++) {
    try {
      await page.goto(url);
      await page.locator('#login input[name=password]').fill(password, { timeout: 30000 });
      await page.locator('#login button[type=submit]').click();
      await page.locator('#board').waitFor({ state: 'visible', timeout: 30000 });
      await page.locator('#live.on').waitFor({ timeout: 30000 });
      return;
    } catch (err) {
      if (attempt >= 3) throw err;
      const where = await page.evaluate(() => ({
        login: !document.querySelector('#login')?.hidden, board: !document.querySelector('#board')?.hidden,
        live: document.querySelector('#live')?.textContent })).catch(() => ({}));
      console.error(`login attempt ${attempt} failed (${String(err.message || err).split('\n')[0]}; ` +
                    `page ${JSON.stringify(where)}); again`);
      await page.context().clearCookies();
    }
  }
}

/** Log in and open the settings page; `ready()` waits for what the test needs on it. A load
    Chromium aborted (ERR_NETWORK_CHANGED) starts again from a fresh login, up to three times. */
export async function openSettings(page, url, password, ready = async () => {}) {
  for (let i = 1; ; i++) {
    try {
      await page.context().clearCookies();
      await login(page, url, password);
      await page.goto(new URL('settings.html', url).href);
      await page.locator('#settings').waitFor({ state: 'visible' });
      await ready();
      return;
    } catch (e) {
      if (i >= 3) throw e;
    }
  }
}

/** The first hour in the browser: on a router nobody has set up (a new one, or after a
    factory reset) a pending device's page is the waiting page, which offers "This is my
    router: set it up"; choose `password` (and give `proof` where the page asks for it: a
    device not on a wired port); the page then opens the board at `boardUrl`, logged in by
    its one-time ticket. Resolves once the board is live. */
export async function setUpRouter(page, boardUrl, password, proof) {
  const gateway = new URL(boardUrl).hostname;
  for (let attempt = 1; ; attempt++) {
    try {
      await page.goto(`http://${gateway}/`);
      await page.locator('#setup-start').click({ timeout: 30000 });
      const form = page.locator('#setup-form');
      await form.locator('input[name=password]').fill(password);
      await form.locator('input[name=again]').fill(password);
      if (proof !== undefined) await form.locator('input[name=proof]').fill(proof);
      await form.locator('button[type=submit]').click();
      await page.waitForURL((url) => url.protocol === 'https:', { timeout: 60000 });
      await page.locator('#board').waitFor({ state: 'visible', timeout: 30000 });
      await page.locator('#live.on').waitFor({ timeout: 30000 });
      return;
    } catch (err) {
      if (attempt >= 3) throw err;
      console.error(`set-up attempt ${attempt} failed (${String(err.message || err).split('\n')[0]}); again`);
    }
  }
}

export function label(page, mac) {
  return page.locator(`.label:not(.ghost)[data-mac="${mac}"]`);
}

/** Drag a label into a zone with real pointer events (press, move in steps, release). */
export async function drag(page, mac, zone) {
  const from = await label(page, mac).boundingBox();
  const to = await page.locator(`#zone-${zone}`).boundingBox();
  await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
  await page.mouse.down();
  await page.mouse.move(to.x + to.width / 2, to.y + to.height / 2, { steps: 8 });
  await page.mouse.up();
}

export async function screenshot(page, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** The set-up every board test file shares: one emulated home (with these config
    overrides), one Chromium and one page, made before the file's tests and closed after
    them. `assign(home, browser, page)` hands them to the file's own variables. */
export function useBoard(config, assign) {
  let home, browser;
  before(async () => {
    home = await startHome({ config });
    browser = await launch(home.info.view_ns);
    assign(home, browser, await newPage(browser));
  }, { timeout: 120000 });
  after(async () => {
    if (browser) await browser.close();
    if (home) await home.close();
  }, { timeout: 60000 });
}

/** `homework ARGS...` in the home `getHome()` returns; fails the test on a non-zero exit. */
export function cliOf(getHome) {
  return async (...args) => {
    const res = await getHome().call({ op: 'cli', args });
    if (res.rc !== 0) throw new Error(`homework ${args.join(' ')}: ${res.stderr}${res.stdout}`);
    return res.stdout;
  };
}
