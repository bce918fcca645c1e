// "Add a device by MAC" on the Guest Board in Debian's Chromium against a real
// emulated home: a MAC let in from the form before it exists is listed as "known, not yet
// seen"; when a device with that MAC then joins it reaches the emulated internet with no
// approval step and leaves the list. A bad or multicast MAC gets the API's reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { label, login, screenshot, useBoard } from './lib.mjs';

let home, browser, page;

useBoard({ controller: { components: ['dhcp', 'routing'] } }, (h, b, p) => { home = h; browser = b; page = p; });

const MAC = '02:68:77:17:0a:01';     // outside the homelab's own 02:68:77:01:xx:xx range

test('a MAC added before it is seen joins without approval', { timeout: 240000 }, async () => {
  await login(page, home.info.url, home.info.password);
  const form = page.locator('#preapprove');
  await form.waitFor({ state: 'visible' });

  // the form says what a pre-approval trusts: the address alone, then the first port
  assert.match(await form.locator('.hint').innerText(), /trusts the address alone/);
  assert.match(await form.locator('.hint').innerText(), /port it first joins from/);
  await form.locator('input[name=mac]').fill('not-a-mac');
  await form.locator('button[type=submit]').click();
  await form.locator('.status.error').filter({ hasText: 'not a MAC address' }).waitFor();
  await form.locator('input[name=mac]').fill('01:00:5e:00:00:01');
  await form.locator('button[type=submit]').click();
  await form.locator('.status.error').filter({ hasText: 'multicast' }).waitFor();

  await form.locator('input[name=mac]').fill(MAC.toUpperCase());
  await form.locator('select[name=decision]').selectOption('permit');
  await form.locator('button[type=submit]').click();
  await form.locator('.status').filter({ hasText: 'pre-approved: not seen yet' }).waitFor();
  const entry = form.locator(`ul.expected li[data-mac="${MAC}"]`);
  await entry.filter({ hasText: 'known, not yet seen' }).waitFor();
  assert.equal(await entry.locator('.state').textContent(), 'permitted');
  await label(page, MAC).waitFor();                           // on the board, in "On the network"
  assert.equal(await page.locator(`#zone-permitted .label[data-mac="${MAC}"]`).count(), 1);
  await screenshot(page, 'preapprove-01-expected');

  const dev = await home.call({ op: 'add_device', name: 'console1', mac: MAC });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: true, timeout: 10 });   // no permit step
  await entry.waitFor({ state: 'detached', timeout: 15000 });
  const view = JSON.parse((await home.call({ op: 'cli', args: ['--json', 'status', MAC] })).stdout);
  assert.equal(view.state, 'permitted');
  assert.ok(view.last_seen > 0);
  await screenshot(page, 'preapprove-02-joined');
});
