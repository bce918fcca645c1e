// The settings page's Software section in Debian's Chromium against a real
// emulated home whose [update] section points at a fake A/B disk in a directory
// (tests/update_lab.py, with a signing key made for this run): a file signed with another
// key shows the refusal reason and changes nothing; a good one shows progress up to
// "Ready to reboot", the Reboot button appears and the other slot holds the new image.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO, openSettings as openSettingsPage, screenshot, useBoard } from './lib.mjs';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'hw-update-ui-'));
const py = process.env.HOMEWORK_PYTHON || path.join(REPO, '.venv', 'bin', 'python');
const lab = JSON.parse(execFileSync(py, [path.join(REPO, 'tests', 'update_lab.py'), path.join(tmp, 'disk')], {
  env: { ...process.env, PYTHONPATH: [path.join(REPO, 'nox-modules'), path.join(REPO, 'tests')].join(':') },
}).toString().trim().split('\n').pop());
after(() => rmSync(tmp, { recursive: true, force: true }));

let home, browser, page;
useBoard({ controller: { components: ['dhcp', 'routing'] }, update: lab.config },
  (h, b, p) => { home = h; browser = b; page = p; });

function openSettings() {
  return openSettingsPage(page, home.info.url, home.info.password);
}

/** Choose the file and press the button: {error, status} once the page has an answer.
    A request Chromium aborted under a busy bench (the page says so) is tried again. */
async function upload(file, done) {
  const form = page.locator('#update-upload');
  for (let i = 1; ; i++) {
    await form.locator('input[name=file]').setInputFiles(file);
    await form.locator('button').click();
    await page.waitForFunction((pattern) => {
      const error = document.querySelector('#update-upload .error').textContent;
      const status = document.querySelector('#update-upload .status').textContent;
      return error || new RegExp(pattern).test(status);
    }, done.source, { timeout: 60000 });
    const got = { error: await form.locator('.error').innerText(), status: await form.locator('.status').innerText() };
    if (!/connection lost|error 0/.test(got.error) || i >= 3) return got;
    console.error('retrying an upload Chromium aborted');
  }
}

const slotB = () => readFileSync(path.join(lab.dir, 'hw-root-b'));
const entries = () => readdirSync(path.join(lab.dir, 'esp', 'loader', 'entries')).sort();

test('a refused update shows why; a good one reaches ready to reboot', { timeout: 300000 }, async () => {
  await openSettings();
  const software = page.locator('#software');
  await software.locator('.running', { hasText: 'v1 (build 100), slot A' }).waitFor();
  assert.match(await software.locator('.other').innerText(), /^B: empty/);
  assert.equal(await page.locator('#update-reboot').isVisible(), false);

  const before = slotB();
  let got = await upload(lab.bad, /^Ready to reboot/);
  assert.match(got.error, /^update refused: bad signature/);
  assert.deepEqual(slotB(), before);
  assert.deepEqual(entries(), ['homework-a.conf']);
  await screenshot(page, 'update-01-refused');

  got = await upload(lab.good, /^Ready to reboot/);
  assert.equal(got.error, '');
  assert.match(got.status, /^Ready to reboot: v2 is written/);
  await page.locator('#update-reboot').waitFor({ state: 'visible' });
  assert.equal(await page.$eval('#update-upload progress', (p) => p.value), 100);
  assert.match(await software.locator('.other').innerText(), /^B: v2, to be tried at the next boot/);
  assert.notDeepEqual(slotB(), before);
  assert.deepEqual(entries(), ['homework-a.conf', 'homework-b+1.conf']);
  await screenshot(page, 'update-02-ready');
});
