// The Guest Board's notification list in Debian's Chromium against a real
// emulated home: a device asking to join shows up unread, "Mark all read" and "Send a test
// notification" work through the API with the board's session.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { login, screenshot, useBoard } from './lib.mjs';

let home, browser, page;

useBoard({ controller: { components: ['dhcp', 'routing', 'notify'] } }, (h, b, p) => { home = h; browser = b; page = p; });

test('a device asking to join is an unread notification; mark read; send a test', { timeout: 90000 }, async () => {
  await login(page, home.info.url, home.info.password);
  const dev = await home.call({ op: 'add_device', name: 'tablet9' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  const button = page.locator('#notifications-button');
  // two unread: the household's laptop the browser runs on asked to join first
  await page.locator('#notifications-button', { hasText: 'Notifications (2)' }).waitFor({ timeout: 30000 });
  await button.click();
  const item = page.locator('#notifications li.unread', { hasText: 'asks to join the home network' }).filter({ hasText: 'Tablet9' });
  await item.waitFor();
  assert.match(await item.innerText(), /Tablet9 asks to join the home network\./);
  await screenshot(page, 'notifications-01-unread');
  await page.locator('#notifications .mark-read').click();
  await page.locator('#notifications li.read', { hasText: 'tablet9' }).waitFor();
  assert.equal((await button.innerText()).trim(), 'Notifications');
  await page.locator('#notifications .send-test').click();
  await page.locator('#notifications li.unread', { hasText: 'This is a test notification' }).waitFor();
  await page.locator('#notifications .status', { hasText: 'Test notification sent.' }).waitFor();
  await screenshot(page, 'notifications-02-test');
});
