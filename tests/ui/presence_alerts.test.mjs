// A presence alert set on the device panel in Debian's Chromium against a real emulated
// home: "Tell me when it comes home or leaves" ticked, the router keeps it (the CLI says
// so); the device's DHCP client gives its lease back as it leaves and the household's
// notification list says so, naming the device; unticked, the router keeps that too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { label, login, permittedDevice, screenshot, useBoard } from './lib.mjs';

let home, browser, page;

useBoard({
  controller: { components: ['dhcp', 'routing', 'notify'] },
  dhcp: { permitted_lease: 60 },        // a RELEASE lost on a loaded datapath: the lease still ends soon
}, (h, b, p) => { home = h; browser = b; page = p; });

async function presence(mac) {
  return JSON.parse((await home.call({ op: 'cli', args: ['--json', 'presence-alert', mac] })).stdout);
}

test('a presence alert from the panel, told in the notifications, turned off', { timeout: 300000 }, async () => {
  await login(page, home.info.url, home.info.password);
  const dev = await permittedDevice(home, 'phone6');

  await label(page, dev.mac).click();
  const box = page.locator('#panel .presence');
  await box.waitFor({ state: 'visible' });
  await box.locator('.presence-note', { hasText: 'You are not told when' }).waitFor();
  const tick = box.getByLabel('Tell me when it comes home or leaves');
  assert.equal(await tick.isChecked(), false);
  await tick.check();
  await box.locator('.presence-note', { hasText: 'You are told when Phone6 comes home or leaves.' }).waitFor();
  assert.equal(await box.locator('.presence-error').innerText(), '');
  assert.equal((await presence(dev.mac)).on, true);
  await screenshot(page, 'presence-01-on');
  await page.locator('#panel .close').click();

  await home.call({ op: 'leave', dev: dev.name });
  await page.locator('#notifications-button').click();
  // the list is read when it opens: reopen until the router has told the household
  const item = page.locator('#notifications li.unread', { hasText: 'Phone6 has left.' });
  for (let i = 0; !(await item.count()); i++) {
    assert.ok(i < 90, 'no notification that the device left');
    await new Promise((r) => setTimeout(r, 2000));
    await page.locator('#notifications .close').click();
    await page.locator('#notifications-button').click();
  }
  await screenshot(page, 'presence-02-left');
  await page.locator('#notifications .close').click();

  await label(page, dev.mac).click();
  await tick.uncheck();
  await box.locator('.presence-note', { hasText: 'You are not told when Phone6' }).waitFor();
  assert.equal((await presence(dev.mac)).on, false);
});
