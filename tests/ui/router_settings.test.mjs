// The settings page's Router section in Debian's Chromium against a real
// emulated home: the software version, state schema and update slot are shown; a time
// zone is set (used at once, no restart; the page then shows it as set here),
// an unknown one shows the API's error; a wrong current password is refused and the right
// one changes the password (the new one logs in, the old one not); the factory reset needs
// the typed phrase, shows the set-up code, and erases the devices' decisions: the browser's
// own device (the household's laptop) is a pending stranger again and sets the router up
// again from its waiting page, as on a new router.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { cliOf, openSettings as openSettingsPage, screenshot, setUpRouter, useBoard } from './lib.mjs';

let home, browser, page;
const cli = cliOf(() => home);
const MAC = '02:00:00:00:0c:01';
const NEW_PASSWORD = 'a new household password';

useBoard({ controller: { components: ['dhcp', 'routing', 'notify', 'schedules'] } },
  (h, b, p) => { home = h; browser = b; page = p; });

async function waitFor(what, fn, timeout = 60000) {
  const end = Date.now() + timeout;
  for (;;) {
    const got = await fn().catch(() => null);
    if (got) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function openSettings(password) {
  return openSettingsPage(page, home.info.url, password, () =>
    page.locator('#router .version').filter({ hasText: /./ }).waitFor({ timeout: 30000 }));
}

/** Fill the form's fields, press its button, wait for its status or error: {error, status}.
    A request Chromium aborted (ERR_NETWORK_CHANGED while other homes on this machine add
    interfaces: "error 0") is the bench, not the page, and is tried again. */
async function submit(id, fields) {
  const form = page.locator(id);
  for (let i = 1; ; i++) {
    await page.evaluate((sel) => {
      document.querySelector(sel + ' .error').textContent = '';
      document.querySelector(sel + ' .status').textContent = '';
    }, id);
    for (const [name, value] of Object.entries(fields)) await form.locator(`input[name=${name}]`).fill(value);
    await form.locator('button').click();
    await page.waitForFunction((sel) => document.querySelector(sel + ' .error').textContent ||
      document.querySelector(sel + ' .status').textContent, id);
    const got = { error: await form.locator('.error').innerText(), status: await form.locator('.status').innerText() };
    if (got.error !== 'error 0' || i >= 3) return got;
    console.error(`retrying ${id}: Chromium aborted the request`);
  }
}

/** Where the test is, with the seconds since it began: a run that times out says which step took the time. */
let began = Date.now();
function step(what) {
  console.error(`router settings, ${((Date.now() - began) / 1000).toFixed(1)} s: ${what}`);
}

/** The devices the router knows, but the browser's own laptop: {mac: state}. */
async function devices() {
  return Object.fromEntries(JSON.parse(await cli('--json', 'devices'))
    .filter((d) => d.mac !== home.info.laptop_mac).map((d) => [d.mac, d.state]));
}

test('router facts, time zone, password change and factory reset', { timeout: 300000 }, async () => {
  began = Date.now();
  await cli('permit', MAC);
  step('logging in');
  await openSettings(home.info.password);
  step('the settings page is open');
  const router = page.locator('#router');
  assert.match(await router.locator('.slot').innerText(), /single \(not booted from an A\/B slot\)/);
  assert.match(await router.locator('.schema').innerText(), /^\d+$/);
  assert.match(await router.locator('.timezone').innerText(), /from the configuration file/);

  let got = await submit('#router-timezone', { timezone: 'Mars/Olympus_Mons' });
  assert.match(got.error, /unknown time zone/);
  got = await submit('#router-timezone', { timezone: 'Europe/London' });
  assert.equal(got.error, '');
  assert.match(got.status, /Time zone set to Europe\/London\. schedules, usage periods and website-rule windows use it now/);
  await waitFor('the page to show the zone', async () =>
    /Europe\/London \(set here\)/.test(await router.locator('.timezone').innerText()));
  await screenshot(page, 'router-01-timezone');

  got = await submit('#router-password', { old: 'not the password', new: NEW_PASSWORD });
  assert.match(got.error, /current password is wrong/);
  got = await submit('#router-password', { old: home.info.password, new: NEW_PASSWORD });
  assert.equal(got.error, '');
  assert.match(got.status, /Password changed/);
  step('logging in with the new password');
  await openSettings(NEW_PASSWORD);                      // the new password logs in
  step('factory reset');

  got = await submit('#router-reset', { confirm: 'erase' });
  assert.match(got.error, /Type erase everything exactly/);
  assert.deepEqual(await devices(), { [MAC]: 'permitted' });   // nothing was sent, nothing erased
  // The image keeps the label's password file (homework-firstboot); the harness removed it.
  writeFileSync(home.info.password_file, home.info.password + '\n', { mode: 0o600 });
  got = await submit('#router-reset', { confirm: 'erase everything' });
  assert.equal(got.error, '');
  assert.match(got.status, /Factory reset: restarting/);
  assert.match(got.status, /set-up code .*: [A-Z0-9]{4}-[A-Z0-9]{4}\./);
  assert.match(got.status, /back in about \d+ s/);
  // the page says when the router is back, and that this device will be a stranger too
  await page.locator('#restart-banner').filter({ hasText: /Factory reset: the router is restarting and should be back in about \d+ s/ }).waitFor();
  await screenshot(page, 'router-02-reset');
  step('waiting for the reset controller');
  await waitFor('the reset controller without devices', async () => Object.keys(await devices()).length === 0);
  const laptop = JSON.parse(await cli('--json', 'status', home.info.laptop_mac));
  assert.equal(laptop.state, 'pending');                 // the browser's own device too
  step('setting the router up again from the waiting page');
  await setUpRouter(page, home.info.url, home.info.password);   // its waiting page offers the set-up again
  step('set up; logging in');
  try {
    await openSettings(home.info.password);
  } catch (err) {
    // seen about one run in five on a loaded machine: the laptop cannot reach its gateway
    // (ERR_ADDRESS_UNREACHABLE) a while after the set-up; what the controller said of it
    const said = (await home.call({ op: 'controller_log' }).catch(() => ({ log: '' }))).log;
    console.error(`the controller's log, the laptop's lines:\n${said.split('\n')
      .filter((line) => line.includes(home.info.laptop_mac) || /lease|restart|reset/i.test(line)).join('\n')}`);
    throw err;
  }
  step('done');
  assert.match(await router.locator('.timezone').innerText(), /from the configuration file/);
});
