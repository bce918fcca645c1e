// Pause and bedtime on the Guest Board in Debian's Chromium against a real
// emulated home: the panel's "Pause 1 h" cuts the device off the emulated internet and its
// label says "paused until HH:MM"; Resume gives it back; a schedule added in the panel whose
// window holds now makes the label say "bedtime" and cuts it; removing it ends both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { label, login, screenshot, useBoard } from './lib.mjs';

let home, browser, page;

useBoard({
  controller: { components: ['dhcp', 'routing', 'schedules'] },
  router: { timezone: 'UTC' },
}, (h, b, p) => { home = h; browser = b; page = p; });

const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];   // Date.getUTCDay() order
const hhmm = (t) => t.toISOString().slice(11, 16);

test('pause, resume and a bedtime window from the panel', { timeout: 240000 }, async () => {
  await login(page, home.info.url, home.info.password);
  const dev = await home.call({ op: 'add_device', name: 'tablet9' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  await home.call({ op: 'cli', args: ['permit', dev.mac] });
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: true, timeout: 30 });

  await label(page, dev.mac).click();
  const panel = page.locator('#panel');
  const box = panel.locator('.schedules');
  await box.waitFor({ state: 'visible' });
  await box.locator('.schedule-list li.none').waitFor();

  await box.locator('button.pause-1h').click();
  await label(page, dev.mac).filter({ hasText: /paused until \d\d:\d\d/ }).waitFor({ timeout: 10000 });
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: false, timeout: 5 });
  await box.locator('button.resume').waitFor({ state: 'visible' });
  await screenshot(page, 'schedules-01-paused');
  await box.locator('button.resume').click();
  await label(page, dev.mac).filter({ hasNotText: /paused until/ }).waitFor({ timeout: 10000 });
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: true, timeout: 5 });

  // a window from 30 minutes ago to 30 minutes ahead (the router's zone is UTC here)
  const start = new Date(Date.now() - 30 * 60000), end = new Date(Date.now() + 30 * 60000);
  const form = box.locator('form.schedule-form');
  await form.locator('input[name=days]').fill(DAYS[start.getUTCDay()]);
  await form.locator('input[name=from]').fill(hhmm(start));
  await form.locator('input[name=to]').fill(hhmm(end));
  await form.locator('select[name=action]').selectOption('pause');
  await form.locator('button[type=submit]').click();
  await box.locator('.schedule-list li .window').filter({ hasText: `${hhmm(start)}-${hhmm(end)}` }).waitFor();
  await label(page, dev.mac).filter({ hasText: 'bedtime' }).waitFor({ timeout: 10000 });
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: false, timeout: 5 });
  const view = JSON.parse((await home.call({ op: 'cli', args: ['--json', 'status', dev.mac] })).stdout);
  assert.equal(view.paused_by, 'schedule');
  assert.equal(view.in_schedule, 'pause');
  await screenshot(page, 'schedules-02-bedtime');

  // the same window again overlaps: the panel shows the reason, nothing is added
  await form.locator('button[type=submit]').click();
  await panel.locator('.error').filter({ hasText: 'overlaps' }).waitFor();
  assert.equal(await box.locator('.schedule-list li .window').count(), 1);

  await box.locator('.schedule-list li button.remove').click();
  await box.locator('.schedule-list li.none').waitFor();
  await label(page, dev.mac).filter({ hasNotText: 'bedtime' }).waitFor({ timeout: 10000 });
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: true, timeout: 5 });
});
