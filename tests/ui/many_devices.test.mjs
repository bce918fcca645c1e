// The Guest Board after a DHCP flood: 1,000 remembered devices, most of them
// never approved. Real emulated home and controller; the devices are rows in the
// controller's own state database, loaded when it starts (home_driver.py seed_devices).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHome, launch, login, label, drag, screenshot } from './lib.mjs';

const PENDING = 900, PERMITTED = 50, DENIED = 50;
const SHOW_NEWEST = 6;                    // board.js: undecided labels kept outside the group

let home, browser, context, page, seeded;

before(async () => {
  // The registry's cap on pending devices would otherwise forget most of the flood
  // as soon as one new device arrives; here the board has to cope with all of them.
  // A low flow limit and frequent flow stats: the flow-limit mark shows within seconds.
  home = await startHome({ config: { devices: { max_pending: 5000 },
                                     routing: { flow_stats_interval: 2, per_host_flow_limit: 50 } } });
  seeded = await home.call({ op: 'seed_devices', pending: PENDING, permitted: PERMITTED, denied: DENIED });
  browser = await launch(home.info.view_ns);
  context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1024, height: 600 }, hasTouch: true });
  const first = await context.newPage();
  await login(first, home.info.url, home.info.password);    // the session cookie for the next page
  await first.close();
  page = await context.newPage();
}, { timeout: 180000 });

after(async () => {
  if (browser) await browser.close();
  if (home) await home.close();
}, { timeout: 60000 });

const newest = (i = 0) => seeded.pending[seeded.pending.length - 1 - i];
const groupToggle = () => page.locator('#zone-outside .group-toggle');

async function status(mac) {
  const res = await home.call({ op: 'cli', args: ['--json', 'status', mac] });
  return res.rc === 0 ? JSON.parse(res.stdout).state : null;
}

test('with 1,000 devices a label can be tapped and its panel opens', { timeout: 60000 }, async (t) => {
  const mac = newest();
  const started = Date.now();
  await page.goto(home.info.url);
  await label(page, mac).waitFor({ state: 'visible' });
  await label(page, mac).click();                  // a tap opens the device's panel
  await page.locator('#panel .title', { hasText: 'flood-' }).waitFor({ state: 'visible' });
  const elapsed = Date.now() - started;
  t.diagnostic(`navigation -> label tapped and panel open: ${elapsed} ms`);
  await page.locator('#panel .close').click();
  await screenshot(page, '20-thousand-devices');
});

test('a flood of unknown devices folds into one group with its count', { timeout: 60000 }, async () => {
  await groupToggle().waitFor({ state: 'visible' });
  assert.match(await groupToggle().innerText(), new RegExp(`^${PENDING - SHOW_NEWEST} unknown devices`));
  // Outside the group: the newest few of the flood, plus every decided device.
  assert.equal(await page.locator('#zone-outside .labels > .label[data-state="pending"]').count(), SHOW_NEWEST);
  assert.equal(await page.locator('#zone-outside .labels > .label[data-state="denied"]').count(), DENIED);
  // and the household's laptop the browser runs on
  assert.equal(await page.locator('#zone-permitted .labels > .label').count(), PERMITTED + 1);
  for (let i = 0; i < SHOW_NEWEST; i++) await label(page, newest(i)).waitFor({ state: 'visible' });
  assert.equal(await label(page, seeded.pending[0]).count(), 0, 'the oldest pending device should be folded away');
});

test('drag right still permits a device of the flood', { timeout: 60000 }, async () => {
  const mac = newest(1);
  await drag(page, mac, 'permitted');
  const dialog = page.locator('#meta-dialog');
  await dialog.waitFor({ state: 'visible' });
  await page.locator('#meta-skip').click();
  await page.locator(`#zone-permitted .label[data-mac="${mac}"]`).waitFor();
  assert.equal(await status(mac), 'permitted');
  // One fewer unknown device: the next newest leaves the group.
  await page.locator('#zone-outside .group-toggle', { hasText: `${PENDING - 1 - SHOW_NEWEST} unknown devices` }).waitFor();
  await label(page, newest(SHOW_NEWEST)).waitFor({ state: 'visible' });
});

test('the group opens into a scrollable list whose devices can be tapped', { timeout: 60000 }, async () => {
  await groupToggle().click();
  const list = page.locator('#zone-outside .group-list');
  await list.waitFor({ state: 'visible' });
  const members = PENDING - 1 - SHOW_NEWEST;
  await list.locator('.label').nth(members - 1).waitFor({ state: 'attached' });   // drawn at the next frame
  assert.equal(await list.locator('.label').count(), members);
  assert.ok(await list.evaluate((el) => el.scrollHeight > el.clientHeight * 10), 'the list should scroll');
  await screenshot(page, '21-group-open');
  const oldest = seeded.pending[0];
  await label(page, oldest).scrollIntoViewIfNeeded();
  await label(page, oldest).click();
  await page.locator('#panel .ident', { hasText: oldest }).waitFor({ state: 'visible' });
  await page.locator('#panel .close').click();
  // Dragging works from inside the list too.
  const second = seeded.pending[1];
  await label(page, second).scrollIntoViewIfNeeded();
  await drag(page, second, 'permitted');
  await page.locator('#meta-dialog').waitFor({ state: 'visible' });
  await page.locator('#meta-skip').click();
  await page.locator(`#zone-permitted .label[data-mac="${second}"]`).waitFor();
  assert.equal(await status(second), 'permitted');
  await groupToggle().click();
  await list.waitFor({ state: 'hidden' });
  assert.equal(await label(page, oldest).count(), 0);
});

test('Forget in the panel removes the device and its label', { timeout: 60000 }, async () => {
  const mac = newest(0);
  await label(page, mac).click();
  const panel = page.locator('#panel');
  await panel.waitFor({ state: 'visible' });
  const forget = panel.locator('button.forget');
  await forget.click();                                  // first tap only arms it
  await panel.locator('button.forget.armed').waitFor();
  assert.equal(await label(page, mac).count(), 1);
  await screenshot(page, '22-forget-armed');
  await forget.click();
  await panel.waitFor({ state: 'hidden' });
  await label(page, mac).waitFor({ state: 'detached' });
  assert.equal(await status(mac), null, 'the controller should no longer know the device');
});

test('a device forgotten elsewhere disappears from the board (stream event)', { timeout: 60000 }, async () => {
  const mac = seeded.permitted[0];
  await label(page, mac).waitFor({ state: 'visible' });
  const res = await home.call({ op: 'cli', args: ['forget', mac] });
  assert.equal(res.rc, 0, res.stderr);
  await label(page, mac).waitFor({ state: 'detached', timeout: 10000 });
  await screenshot(page, '23-after-forget');
});

test('a device over the per-host flow limit is marked on its label and in its panel', { timeout: 120000 }, async () => {
  const dev = await home.call({ op: 'add_device', name: 'flows7' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  assert.equal((await home.call({ op: 'cli', args: ['permit', dev.mac] })).rc, 0);
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: true, timeout: 30 });
  const mark = page.locator(`.label:not(.ghost)[data-mac="${dev.mac}"] .flow-mark`);
  await page.locator(`#zone-permitted .label[data-mac="${dev.mac}"]`).waitFor();
  assert.equal(await mark.count(), 0, 'no mark before the flood');
  await home.call({ op: 'udp_flood', dev: dev.name, count: 3000 });
  await mark.waitFor({ timeout: 30000 });
  await label(page, dev.mac).click();
  await page.locator('#panel .flow-note').waitFor({ state: 'visible' });
  await screenshot(page, '24-flow-limited-panel');
  await page.locator('#panel .close').click();
  await label(page, dev.mac).scrollIntoViewIfNeeded();
  await screenshot(page, '25-flow-limited-label');
});
