// The settings page's Wi-Fi section in Debian's Chromium against a real emulated
// home: it shows the current network name (the first boot's wifi.env, written here as the
// image does), a 7-character passphrase gets the API's 400 message and changes nothing,
// different passphrases in the two fields are caught on the page, and a good SSID and
// passphrase are saved (the controller's `homework wifi` shows them, the passphrase only as
// "set") and the configured apply command runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { cliOf, openSettings as openSettingsPage, screenshot, useBoard } from './lib.mjs';

let home, browser, page;
const cli = cliOf(() => home);
const FIRST = { ssid: 'Homework-TEST', passphrase: 'abcd-efgh-ijkl-mnop' };

// `true` stands in for the image's `homework-wifi apply` (which restarts hostapd).
useBoard({ controller: { components: ['dhcp', 'routing'] }, wifi: { apply_command: 'true' } },
  (h, b, p) => { home = h; browser = b; page = p; });

async function wifi() {
  return JSON.parse(await cli('--json', 'wifi'));
}

async function waitFor(what, fn, timeout = 30000) {
  const end = Date.now() + timeout;
  for (;;) {
    const got = await fn().catch(() => null);
    if (got) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function openSettings() {
  return openSettingsPage(page, home.info.url, home.info.password, () =>
    waitFor('the SSID in the form', async () =>
      (await page.locator('#wifi-form [name=ssid]').inputValue()) === FIRST.ssid));
}

/** Fill the form, press Save, wait for its status or error: {error, status}. A request
    Chromium aborted ("error 0", interfaces changing on this machine) is tried again. */
async function save(fields) {
  const form = page.locator('#wifi-form');
  for (let i = 1; ; i++) {
    await page.evaluate(() => {
      document.querySelector('#wifi-form .error').textContent = '';
      document.querySelector('#wifi-form .status').textContent = '';
    });
    for (const [name, value] of Object.entries(fields)) await form.locator(`input[name=${name}]`).fill(value);
    await form.locator('button').click();
    await page.waitForFunction(() => document.querySelector('#wifi-form .error').textContent ||
      document.querySelector('#wifi-form .status').textContent);
    const got = { error: await form.locator('.error').innerText(), status: await form.locator('.status').innerText() };
    if (got.error !== 'error 0' || i >= 3) return got;
    console.error('retrying: Chromium aborted the request');
  }
}

test('Wi-Fi name and passphrase: the API refuses a short passphrase, a good one is saved and applied',
  { timeout: 180000 }, async () => {
    // What homework-firstboot writes on the image, in the controller's state dir.
    const envFile = path.join(home.info.state_dir, 'wifi.env');
    writeFileSync(envFile, `SSID=${FIRST.ssid}\nPASSPHRASE=${FIRST.passphrase}\n`, { mode: 0o600 });
    await openSettings();
    assert.deepEqual((await wifi()).passphrase_set, true);

    let got = await save({ ssid: 'Our home', passphrase: 'short77', again: 'short77' });
    assert.match(got.error, /passphrase: 8-63 characters .*this one has 7/);   // the API's 400 message
    assert.equal(got.status, '');
    assert.equal((await wifi()).ssid, FIRST.ssid);                             // nothing changed

    got = await save({ ssid: 'Our home', passphrase: 'one passphrase', again: 'another one' });
    assert.match(got.error, /two passphrases differ/);

    got = await save({ ssid: 'Our home', passphrase: 'the new family passphrase', again: 'the new family passphrase' });
    assert.equal(got.error, '');
    assert.match(got.status, /Saved: network Our home\. the access point restarts/);
    assert.equal(await page.locator('#wifi-form [name=passphrase]').inputValue(), '');
    await screenshot(page, 'wifi-01-saved');
    const after = await waitFor('the apply command to have run', async () => {
      const w = await wifi();
      return w.last_apply && w.last_apply.ok ? w : null;
    });
    assert.equal(after.ssid, 'Our home');
    assert.equal(after.passphrase_set, true);
    assert.ok(!JSON.stringify(after).includes('the new family passphrase'));
  });
