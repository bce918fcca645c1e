// A usage alert set on the device panel in Debian's Chromium against a real emulated home:
// "more than 2 MB in 2 minutes" is refused with the API's words when the amount is not a
// size, then set; the device downloads 6 MB from the emulated internet and the household's
// notification list says so, naming the device; "Turn off" removes the alert.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { label, login, permittedDevice, screenshot, useBoard } from './lib.mjs';

let home, browser, page;

useBoard({
  controller: { components: ['dhcp', 'routing', 'usage', 'notify'] },
  routing: { flow_stats_interval: 1 },
}, (h, b, p) => { home = h; browser = b; page = p; });

test('a usage alert from the panel, told in the notifications, turned off', { timeout: 240000 }, async () => {
  await login(page, home.info.url, home.info.password);
  const dev = await permittedDevice(home, 'console5');

  await label(page, dev.mac).click();
  const box = page.locator('#panel .burst');
  await box.waitFor({ state: 'visible' });
  await box.locator('.burst-note', { hasText: 'No usage alert' }).waitFor();
  const form = box.locator('form.burst-form');
  await form.locator('input[name=size]').fill('lots');
  await form.locator('input[name=minutes]').fill('2');
  await form.locator('button[type=submit]').click();
  await box.locator('.burst-error', { hasText: 'must be a size such as 500M' }).waitFor();

  await form.locator('input[name=size]').fill('2M');
  await form.locator('button[type=submit]').click();
  await box.locator('.burst-note', { hasText: 'You are told when it uses more than 2 MB in 2 minutes.' }).waitFor();
  assert.equal(await box.locator('.burst-error').innerText(), '');
  await screenshot(page, 'usage-bursts-01-set');
  const view = JSON.parse((await home.call({ op: 'cli', args: ['--json', 'status', dev.mac] })).stdout);
  assert.deepEqual([view.usage_burst.bytes, view.usage_burst.minutes], [2000000, 2]);

  await home.call({ op: 'download', dev: dev.name, bytes: 6000000 });
  // the router's record first (the list is read when it opens)
  const told = async () => JSON.parse((await home.call({ op: 'cli', args: ['--json', 'notifications'] })).stdout)
    .notifications.some((n) => n.kind === 'alert-usage-burst' && n.mac === dev.mac);
  for (let i = 0; !(await told()); i++) {
    assert.ok(i < 120, 'no usage-burst notification');
    await new Promise((r) => setTimeout(r, 500));
  }
  await page.locator('#panel .close').click();
  await page.locator('#notifications-button').click();
  const item = page.locator('#notifications li.unread', { hasText: 'used a lot of data in a short time' });
  await item.waitFor({ timeout: 60000 });
  assert.match(await item.innerText(), /moved \d+(\.\d)? MB in the last 2 minutes/);
  await screenshot(page, 'usage-bursts-02-told');
  await page.locator('#notifications .close').click();

  await label(page, dev.mac).click();
  await box.locator('button.burst-off').click();
  await box.locator('.burst-note', { hasText: 'No usage alert' }).waitFor();
  const after = JSON.parse((await home.call({ op: 'cli', args: ['--json', 'status', dev.mac] })).stdout);
  assert.equal(after.usage_burst, null);
});
