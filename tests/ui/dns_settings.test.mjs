// The settings page's "Name lookups (DNS)" section in Debian's Chromium against a real emulated
// home with the whole DNS path (homework-dnsd, the validating resolver, the emulated internet's
// signed zones and its resolver over TLS): the page says plain DNS is readable on the way; an
// encrypted resolver whose certificate is for another name is refused, with the reason on the
// page, and with no fallback a device's lookups fail; the right name makes them work, over TLS;
// a forged answer is refused until the household lets that domain through unchecked, or turns
// DNSSEC checking off, and checked again once undone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { login, screenshot, useBoard, cliOf } from './lib.mjs';

let home, page, dev;

useBoard({
  dns_lab: true,
  controller: { components: ['dhcp', 'routing', 'dns'] },
}, (h, b, p) => { home = h; page = p; });

const cli = cliOf(() => home);
let serial = 0;
const newName = () => `ui${serial++}-${Date.now()}.new.test`;
const FORGED = 'forged.signed.dnssec.test';

async function dig(name) {
  return home.call({ op: 'dig', dev: dev.name, name });
}

test('choosing an encrypted resolver, its status, the fallback, and DNSSEC on the page', { timeout: 300000 }, async () => {
  dev = await home.call({ op: 'add_device', mac: '00:09:2d:00:45:01' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  await cli('permit', dev.mac);
  const { server } = await home.call({ op: 'start_dot_upstream' });

  await login(page, home.info.url, home.info.password);
  await page.goto(home.info.url + 'settings.html');
  const section = page.locator('#dns-privacy');
  await section.locator('.upstream-status', { hasText: 'anyone on the way can read' }).waitFor();
  await screenshot(page, 'dns-01-plain');

  // An encrypted resolver presenting a certificate for another name, no fallback.
  await section.locator('select[name=provider]').selectOption('custom');
  await section.locator('textarea[name=servers]').fill(server.replace('#', '#wrong.'));
  await section.locator('input[name=fallback][value=none]').check();
  await section.locator('#dns-upstream button[type=submit]').click();
  await section.locator('.upstream-status[data-state=unreachable]', { hasText: 'not for wrong.' }).waitFor();
  assert.match(await section.locator('.upstream-status').innerText(), /Names do not resolve until it can/);
  assert.equal((await dig(newName())).status, 'SERVFAIL');
  await screenshot(page, 'dns-02-wrong-name');

  // The right name: names resolve, over TLS.
  await section.locator('textarea[name=servers]').fill(server);
  await section.locator('#dns-upstream button[type=submit]').click();
  await section.locator('.upstream-status[data-state=encrypted]', { hasText: 'nobody on the way can read' }).waitFor();
  assert.equal((await dig(newName())).status, 'NOERROR');
  assert.match(await section.locator('.upstream-servers li.ok').innerText(), /answers/);

  // DNSSEC: forged answers refused; one domain let through unchecked, then checked again.
  assert.equal(await section.locator('input[name=dnssec]').isChecked(), true);
  assert.equal((await dig(FORGED)).status, 'SERVFAIL');
  await section.locator('#dnssec-insecure input[name=domain]').fill('signed.dnssec.test');
  await section.locator('#dnssec-insecure button[type=submit]').click();
  const entry = section.locator('ul.insecure li[data-domain="signed.dnssec.test"]');
  await entry.waitFor();
  assert.equal((await dig(FORGED)).status, 'NOERROR');
  await screenshot(page, 'dns-03-unchecked-domain');
  await entry.locator('button.remove').click();
  await section.locator('ul.insecure li.empty').waitFor();
  assert.equal((await dig(FORGED)).status, 'SERVFAIL');
  await section.locator('#dnssec-insecure input[name=domain]').fill('not a domain');
  await section.locator('#dnssec-insecure button[type=submit]').click();
  await section.locator('.error', { hasText: 'is not a domain name' }).waitFor();

  // Checking off altogether, and on again.
  await section.locator('input[name=dnssec]').uncheck();
  await section.locator('.status', { hasText: 'are not checked' }).waitFor();
  assert.equal((await dig(FORGED)).status, 'NOERROR');
  await section.locator('input[name=dnssec]').check();
  await section.locator('.status', { hasText: 'signatures are checked' }).waitFor();
  assert.equal((await dig(FORGED)).status, 'SERVFAIL');
});
