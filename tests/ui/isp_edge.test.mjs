// The ISP edge on the Priorities page, in Debian's Chromium against a real emulated home
// whose WAN line runs through a real ispedge bridge (tests/homelab/isp_edge.py): a device
// set to First downloads; the page's "At your internet provider" card says the provider
// honours the household's priorities with that connection placed, and that its fast lane
// lost no packets. (A home without an edge shows no such card: priorities.test.mjs.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { login, screenshot, useBoard, cliOf } from './lib.mjs';

let home, page;

useBoard({
  controller: { components: ['dhcp', 'routing', 'qos'] },
  isp_edge: true,
}, (h, b, p) => { home = h; page = p; });

const cli = cliOf(() => home);

test('a First device\'s connection is shown placed at the provider, its fast lane without losses',
  { timeout: 240000 }, async () => {
    await login(page, home.info.url, home.info.password)
      .catch(() => login(page, home.info.url, home.info.password));
    const laptop = await home.call({ op: 'add_device', name: 'worklaptop' });
    await home.call({ op: 'start_dhcp', dev: laptop.name, client: 'udhcpc' });
    await home.call({ op: 'wait_ipv4', dev: laptop.name });
    await cli('permit', laptop.mac);
    await home.call({ op: 'wait_fetch', dev: laptop.name, expect: true, timeout: 30 });
    await cli('qos', 'device', laptop.mac, 'high');
    await home.call({ op: 'download', dev: laptop.name, bytes: 2000000 });

    await page.locator('#priorities-link').click();
    await page.waitForURL(/priorities\.html$/);
    const card = page.locator('#priorities .card.edge');
    await card.waitFor({ state: 'visible', timeout: 30000 });
    const state = card.locator('.edge-state');
    const end = Date.now() + 60000;
    let text = '';
    while (Date.now() < end) {
      text = await state.textContent();
      if (/honours your priorities: [1-9]\d* connections? of [1-9]/.test(text)) break;
      await page.waitForTimeout(500);
    }
    await screenshot(page, 'isp-edge');
    assert.match(text, /Your provider honours your priorities: [1-9]\d* connections? of [1-9]\d* placed in its queues/);
    assert.match(await card.locator('.edge-drops').textContent(),
      /Its fast lane for this home \(1\.0 Mbit\/s guaranteed\) has lost no packets\./);
  });

test('a computer\'s agent is added on the page; its application, set First there, is placed at the provider',
  { timeout: 420000 }, async () => {
    const study = await home.call({ op: 'add_device', name: 'studypc' });
    await home.call({ op: 'start_dhcp', dev: study.name, client: 'udhcpc' });
    await home.call({ op: 'wait_ipv4', dev: study.name });
    await cli('permit', study.mac);
    await home.call({ op: 'wait_fetch', dev: study.name, expect: true, timeout: 30 });
    await page.reload();
    const row = page.locator(`#device-classes tr[data-mac="${study.mac}"]`);
    await row.locator('button.add-agent').click();
    const shown = page.locator(`#device-classes tr.agent-secret[data-mac="${study.mac}"] code`);
    const secret = (await shown.textContent({ timeout: 60000 })).replace('secret = ', '');
    assert.match(secret, /^hwa_/);
    await home.call({ op: 'agent', dev: study.name, secret, app: 'zoom', sport: 40300 });
    // The page draws a computer's applications once its three requests have answered (qos,
    // devices, then that computer's apps): after each reload, wait until that row is drawn
    // before looking for zoom in it. (Looking as soon as the reload's load event came found
    // the row not drawn yet on a loaded machine, and the next reload threw it away: a minute
    // of that failed the test in CI.)
    const apps = page.locator(`#device-classes tr.host-apps[data-mac="${study.mac}"]`);
    const zoom = apps.locator('li[data-app="zoom"]');
    // The table's own refresh (every 30 s) draws the agent's row; the secret, shown once, is
    // still there after it (and once: a row of its own, like the applications').
    await apps.waitFor({ timeout: 60000 });
    assert.equal(await shown.textContent(), `secret = ${secret}`);
    const end = Date.now() + 120000;
    while (!(await zoom.count()) && Date.now() < end) {
      await page.waitForTimeout(1000);
      await page.reload();
      await apps.waitFor({ timeout: 60000 });
    }
    assert.equal(await zoom.count(), 1, `zoom offered by name for that computer: ${await apps.textContent()}`);
    await zoom.locator('select.host-app').selectOption('high');
    // a bound, not a measure: the edge is told on the qos component's next round
    const until = Date.now() + 120000;
    let placedAt = {};
    while (Date.now() < until) {
      placedAt = await page.evaluate(() => new Promise((resolve) => {
        HW.api.call('GET', 'qos/edge').done((e) => resolve(e.placed_at || {})).fail(() => resolve({}));
      }));
      if (Object.entries(placedAt).some(([flow, q]) => flow.includes(':40300 ') && q === 'high')) break;
      await page.waitForTimeout(500);
    }
    assert.ok(Object.entries(placedAt).some(([flow, q]) => flow.includes(':40300 ') && q === 'high'),
      JSON.stringify(placedAt));
    await screenshot(page, 'isp-edge-agent');
  });
