// A device over a `slow` usage limit in Debian's Chromium against a real emulated
// home: once it has downloaded its allowance through the emulated internet, its label on the
// Guest Board says so (a `device` event with the alert, no reload), and the API view agrees.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { label, login, screenshot, useBoard, cliOf } from './lib.mjs';

let home, browser, page;

useBoard({
  controller: { components: ['dhcp', 'routing', 'usage'] },
  routing: { flow_stats_interval: 1 },
  usage: { flush_interval: 1, timezone: 'UTC' },
}, (h, b, p) => { home = h; browser = b; page = p; });

const cli = cliOf(() => home);

test('a slowed device is marked on its label', { timeout: 180000 }, async () => {
  await login(page, home.info.url, home.info.password);
  const dev = await home.call({ op: 'add_device', name: 'console7' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  await cli('permit', dev.mac);
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: true, timeout: 30 });
  await cli('usage-limit', dev.mac, '500K', 'day', 'slow', '1mbit');
  const mark = label(page, dev.mac).filter({ hasText: 'slowed: usage limit' });
  assert.equal(await mark.count(), 0);
  await home.call({ op: 'download', dev: dev.name, bytes: 1000000 });
  await mark.waitFor({ timeout: 30000 });
  const view = JSON.parse(await cli('--json', 'status', dev.mac));
  assert.equal(view.usage_slowed, true);
  assert.equal(view.usage_slow_kbps, 1000);
  await screenshot(page, 'usage-label-01-slowed');
});
