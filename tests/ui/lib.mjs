// Shared by the browser tests and the UI benchmark: an emulated home driven through
// tests/ui/home_driver.py, and Debian's Chromium driven by playwright-core.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdirSync, readFileSync } from 'node:fs';
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
    try {
      await checkAnswers(call);
    } finally {          // the home goes whatever the answers were: a failing check leaks nothing
      child.stdin.write(JSON.stringify({ op: 'quit' }) + '\n');
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGTERM'), 30000);
      await exited;
      clearTimeout(timer);
    }
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
  recordAnswers(context);
  const page = await context.newPage();
  if (process.env.UI_VERBOSE) {       // the page's own console and errors, for a failing test
    page.on('console', (m) => console.error(`[page ${m.type()}] ${m.text()}`));
    page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  }
  return page;
}

/* Every ws.v1 answer a page of this test file received (the event stream's excepted: it
   never ends), checked against the checked-in OpenAPI document when the home closes
   (tests/contract.py through the driver): a field the board reads that the server renamed
   or dropped fails the file, whatever the test looked at. */
const answers = [];
export function recordAnswers(context) {
  context.on('response', (response) => {
    const url = response.url();
    if (!new URL(url).pathname.startsWith('/ws.v1/')) return;
    const type = response.headers()['content-type'] || '';
    if (type.startsWith('text/event-stream')) return;
    const request = response.request();
    answers.push(response.text().catch(() => null).then((body) => (
      { method: request.method(), url, status: response.status(), type, body })));
  });
}

async function checkAnswers(call) {
  const got = (await Promise.all(answers.splice(0))).filter((a) => a.body !== null);
  if (!got.length) return;
  const res = await call({ op: 'contract', answers: got });
  console.log(`${res.checked} API answers checked against openapi.json`);
  if (res.problems.length) {
    throw new Error(`API answers outside openapi.json (${res.problems.length} of ${res.checked}):\n` +
                    res.problems.join('\n'));
  }
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
      // bounds against a hang: just after a factory reset, on a loaded machine, the restarted
      // controller has taken over 30 s to open the board and its live stream
      await page.locator('#board').waitFor({ state: 'visible', timeout: 90000 });
      await page.locator('#live.on').waitFor({ timeout: 90000 });
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

/* Accessibility with axe-core (npm, in tests/node_modules): the serious and critical
   violations on the page as it is now (or within `include`, a CSS selector). axe runs
   through the DevTools protocol, which the page's Content-Security-Policy does not bind.
   One exception, by design: a label faded for its weak signal or its absence (the board's
   encoding of them) is left out of the contrast rule; at full opacity it is checked like
   everything else, and focusing it (keyboard) brings it back to full opacity. */
const AXE = path.join(HERE, '..', 'node_modules', 'axe-core', 'axe.min.js');
export async function axeViolations(page, include) {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) {
    await page.evaluate(readFileSync(AXE, 'utf8'));
  }
  const found = await page.evaluate(async (where) => {
    const root = where || 'html';
    const faded = Array.from(document.querySelectorAll('.label'))
      .filter((el) => Number(getComputedStyle(el).opacity) < 1 && el.dataset.mac)
      .map((el) => [`.label[data-mac="${el.dataset.mac}"]`]);
    const brief = (v) => ({ id: v.id, impact: v.impact, help: v.help,
                            nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) });
    const all = await window.axe.run({ include: [[root]] },
                                     { resultTypes: ['violations'], rules: { 'color-contrast': { enabled: false } } });
    const contrast = await window.axe.run({ include: [[root]], exclude: faded },
                                          { resultTypes: ['violations'], runOnly: ['color-contrast'] });
    return all.violations.concat(contrast.violations).map(brief);
  }, include || null);
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** The first hour in the browser: on a router nobody has set up (a new one, or after a
    factory reset) a pending device's page is the waiting page, which offers "This is my
    router: set it up"; choose `password` (and give `proof` where the page asks for it: a
    device not on a wired port); the page then opens the board at `boardUrl`, logged in by
    its one-time ticket. Resolves once the board is live. */
export async function setUpRouter(page, boardUrl, password, proof) {
  const gateway = new URL(boardUrl).hostname;
  // Until the offer is on the page, trying again is the household reloading the waiting
  // page: after a factory reset the laptop's DHCP client may be between two leases a while
  // (its renewal NAKed, its DISCOVER answered with its old block: ERR_INTERNET_DISCONNECTED
  // meanwhile). Once the form is sent the offer is used up, so a later failure is the test's.
  const offerBy = Date.now() + 120000;
  for (let attempt = 1; ; attempt++) {
    try {
      await page.goto(`http://${gateway}/`, { timeout: 30000 });
      await page.locator('#setup-start').click({ timeout: 30000 });
      break;
    } catch (err) {
      if (Date.now() > offerBy) throw await withWhatWasShown(page, 'setup-offer', err);
      console.error(`the waiting page's set-up offer, attempt ${attempt}: ${String(err.message || err).split('\n')[0]}; again`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  try {
    const form = page.locator('#setup-form');
    await form.locator('input[name=password]').fill(password);
    await form.locator('input[name=again]').fill(password);
    if (proof !== undefined) await form.locator('input[name=proof]').fill(proof);
    await form.locator('button[type=submit]').click();
    await page.waitForURL((url) => url.protocol === 'https:', { timeout: 60000 });
    // bounds against a hang: just after a factory reset, on a loaded machine, the restarted
    // controller has taken over 30 s to open the board and its live stream
    await page.locator('#board').waitFor({ state: 'visible', timeout: 90000 });
    await page.locator('#live.on').waitFor({ timeout: 90000 });
  } catch (err) {
    throw await withWhatWasShown(page, 'setup', err);
  }
}

/** `err` with the page's address and first words, and a screenshot, for a failing run. */
async function withWhatWasShown(page, name, err) {
  const shown = await page.evaluate(() => document.body.innerText.slice(0, 300)).catch(() => '');
  await screenshot(page, `${name}-failed`).catch(() => null);
  err.message = `${err.message}\n(at ${page.url()}, showing ${JSON.stringify(shown)})`;
  return err;
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

/** Drag a label into a zone with a finger's touch events alone (press, move in steps,
    release), as the WebKit of the router's own screen sends them: no pointer or mouse events
    come with them. True when the page took the release for itself (a drag is no tap). */
export async function touchDrag(page, mac, zone) {
  const from = await label(page, mac).boundingBox();
  const to = await page.locator(`#zone-${zone}`).boundingBox();
  return page.evaluate(([m, x1, y1, x2, y2]) => {
    const el = document.querySelector(`.label:not(.ghost)[data-mac="${m}"] .name`);
    const fire = (type, x, y) => {
      const finger = new Touch({ identifier: 7, target: el, clientX: x, clientY: y });
      const ev = new TouchEvent(type, { bubbles: true, cancelable: true, changedTouches: [finger],
                                        touches: type === 'touchend' ? [] : [finger] });
      el.dispatchEvent(ev);
      return ev.defaultPrevented;
    };
    fire('touchstart', x1, y1);
    for (let i = 1; i <= 8; i++) fire('touchmove', x1 + (x2 - x1) * i / 8, y1 + (y2 - y1) * i / 8);
    return fire('touchend', x2, y2);
  }, [mac, from.x + from.width / 2, from.y + from.height / 2, to.x + to.width / 2, to.y + to.height / 2]);
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

/** A device of the home with a lease (udhcpc), let in from the CLI and reaching the
    emulated internet: {name, mac, ns}. */
export async function permittedDevice(home, name) {
  const dev = await home.call({ op: 'add_device', name });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  const permit = await home.call({ op: 'cli', args: ['permit', dev.mac] });
  if (permit.rc !== 0) throw new Error(`homework permit ${dev.mac}: ${permit.stderr}${permit.stdout}`);
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: true, timeout: 30 });
  return dev;
}

/** `homework ARGS...` in the home `getHome()` returns; fails the test on a non-zero exit. */
export function cliOf(getHome) {
  return async (...args) => {
    const res = await getHome().call({ op: 'cli', args });
    if (res.rc !== 0) throw new Error(`homework ${args.join(' ')}: ${res.stderr}${res.stdout}`);
    return res.stdout;
  };
}
