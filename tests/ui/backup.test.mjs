// The settings page's Backup section in Debian's Chromium against a real
// emulated home: "Download backup" saves a homework-backup-DATE.hwbak holding the
// settings (a pre-approved, named device) with the secrets encrypted; restoring it with a
// wrong passphrase shows the API's reason; with the right one the page says what was
// restored and that the controller restarts by itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cliOf, openSettings as openSettingsPage, screenshot, useBoard } from './lib.mjs';

let home, browser, page;
const cli = cliOf(() => home);
const MAC = '02:00:00:00:0b:01';
const PASSPHRASE = 'a passphrase for the test';

useBoard({ controller: { components: ['dhcp', 'routing', 'notify', 'backup'] } },
  (h, b, p) => { home = h; browser = b; page = p; });

function openSettings() {
  return openSettingsPage(page, home.info.url, home.info.password);
}

/** Choose the file, type the passphrase, press Restore: {error, status} the page shows.
    A request Chromium aborted (ERR_NETWORK_CHANGED while other homes on this machine add
    interfaces: "error 0") is the bench, not the page, and is tried again. */
async function submitRestore(file, passphrase) {
  const restore = page.locator('#backup-restore');
  for (let i = 1; ; i++) {
    await restore.locator('input[name=file]').setInputFiles(file);
    await restore.locator('input[name=passphrase]').fill(passphrase);
    await restore.locator('button').click();
    await page.waitForFunction(() => {
      const error = document.querySelector('#backup-restore .error').textContent;
      const status = document.querySelector('#backup-restore .status').textContent;
      return error || /^Restored/.test(status);
    });
    const got = { error: await restore.locator('.error').innerText(), status: await restore.locator('.status').innerText() };
    if (got.error !== 'error 0' || i >= 3) return got;
    console.error('retrying a restore Chromium aborted');
  }
}

/** Type the passphrase, press Download: the download. No download within 30 s is tried
    again (up to three times), each time saying what the form showed, so a failure says why. */
async function downloadBackup(form) {
  for (let i = 1; ; i++) {
    await form.locator('input[name=passphrase]').fill(PASSPHRASE);
    const download = page.waitForEvent('download', { timeout: 30000 }).catch(() => null);
    await form.locator('button').click();
    const got = await download;
    if (got) return got;
    const shown = { error: await form.locator('.error').innerText(), status: await form.locator('.status').innerText() };
    if (i >= 3) throw new Error(`no backup download after ${i} tries; the form shows ${JSON.stringify(shown)}`);
    console.error(`no backup download within 30 s (the form shows ${JSON.stringify(shown)}); again`);
  }
}

test('download a backup, a wrong passphrase is refused, the right one restores', { timeout: 300000 }, async () => {
  await cli('permit', MAC);
  await cli('name', MAC, '--name', 'Console', '--owner', 'Ben');
  await openSettings();

  const form = page.locator('#backup-download');
  const download = await downloadBackup(form);
  assert.match(download.suggestedFilename(), /^homework-backup-\d{4}-\d{2}-\d{2}\.hwbak$/);
  const file = await download.path();
  const doc = JSON.parse(readFileSync(file, 'utf-8'));
  assert.equal(doc.format, 'homework-backup');
  const device = doc.settings.devices.find((d) => d.mac === MAC);
  assert.deepEqual([device.state, device.name, device.owner], ['permitted', 'Console', 'Ben']);
  assert.ok(!JSON.stringify(doc).includes('password_hash'));       // the secrets are encrypted
  await form.locator('.status', { hasText: 'Backup downloaded' }).waitFor();
  await screenshot(page, 'backup-01-downloaded');

  await cli('forget', MAC);
  page.on('dialog', (dialog) => dialog.accept());
  let got = await submitRestore(file, 'not the passphrase');
  assert.match(got.error, /wrong passphrase/);
  assert.equal(got.status, '');
  await screenshot(page, 'backup-02-wrong-passphrase');

  // the page says the router restarts and when it expects it back (a banner that counts
  // down), and only then, once the restarted router has every setting in force
  // (GET /ws.v1/restore/status), that it restored
  const banner = page.locator('#restart-banner')
    .filter({ hasText: /restarting \(settings restored\) and should be back in about \d+ s/ }).waitFor({ timeout: 120000 }).then(() => null, (err) => err);
  got = await submitRestore(file, PASSPHRASE);
  assert.equal(await banner, null);
  assert.equal(got.error, '');
  assert.match(got.status, /^Restored the backup/);
  assert.match(got.status, /devices: 2/);                  // the console and the browser's own laptop
  assert.match(got.status, /every setting is in force/);
  await screenshot(page, 'backup-03-restored');
  await page.locator('#restart-banner').waitFor({ state: 'detached', timeout: 120000 });   // gone once back
});
