// The board a household uses on the 1024x600 wall panel, in Debian's Chromium against a real
// emulated home with the whole DNS path, schedules, priorities and usage: a device asking to
// join is let in or refused with its label's buttons, by keyboard; the device panel shows
// Pause, Priority and the bedtimes without scrolling, switches Pause to Resume, shows and
// removes website rules (the device then resolves the name again), sets, shows and removes an
// allowance (typed by keyboard; a bad amount refused in the router's words), and writes every byte
// figure from one source (the panel's Today is the router's count of the day; an idle chart
// has no repeated ticks). axe-core finds no serious or critical accessibility problem on the
// board, the open panel and every other page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { axeViolations, cliOf, label, login, permittedDevice, screenshot, useBoard } from './lib.mjs';

let home, browser, page;

useBoard({
  dns_lab: true,
  controller: { components: ['dhcp', 'routing', 'dns', 'schedules', 'qos', 'usage'] },
  routing: { flow_stats_interval: 1 },
  usage: { flush_interval: 1 },
}, (h, b, p) => { home = h; browser = b; page = p; });

const cli = cliOf(() => home);

async function asking(name) {
  const dev = await home.call({ op: 'add_device', name });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  await page.locator(`#zone-asking .label[data-mac="${dev.mac}"]`).waitFor();
  return dev;
}

/** Wait until the device's lookup of `name` gets its real address (true) or not (false). */
async function resolves(dev, name, want) {
  let answer;
  for (let i = 0; i < 40; i++) {
    answer = await home.call({ op: 'dig', dev: dev.name, name });
    const real = answer.status === 'NOERROR' && answer.answers.some((a) => a.startsWith('203.0.113.'));
    if (real === want) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  assert.fail(`${name} from ${dev.name}: ${JSON.stringify(answer)} (wanted it ${want ? '' : 'not '}to resolve)`);
}

function stateOf(mac) {
  return cli('--json', 'status', mac).then((out) => JSON.parse(out).state);
}

async function noSeriousViolations(where, include) {
  const found = await axeViolations(page, include);
  assert.deepEqual(found, [], `${where}: ${JSON.stringify(found, null, 1)}`);
}

/** Fully inside the 1024x600 viewport, without scrolling anything. */
async function inView(locator, what) {
  const box = await locator.boundingBox();
  assert.ok(box, `${what} is not shown`);
  assert.ok(box.y >= 0 && box.y + box.height <= 600 && box.x >= 0 && box.x + box.width <= 1024,
            `${what} is outside the 1024x600 screen: ${JSON.stringify(box)}`);
}

test('a device asking to join is let in or refused with its label\'s buttons, by keyboard', { timeout: 300000 }, async () => {
  await login(page, home.info.url, home.info.password);
  const phone = await asking('phone5');
  const tv = await asking('tv5');
  const row = label(page, phone.mac);
  const letIn = row.locator('.decide button.let-in');
  assert.equal(await letIn.getAttribute('aria-label'), `Let ${await row.locator('.name').innerText()} in`);
  assert.match(await row.locator('.decide button.refuse').getAttribute('aria-label'), /^Refuse /);
  await noSeriousViolations('the board with devices asking');
  await screenshot(page, 'panel-01-asking');

  // Tab from the label's own button reaches its Let in button; Enter lets the device in.
  await row.locator('button.open').focus();
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.className), 'let-in');
  await page.keyboard.press('Enter');
  await page.locator(`#zone-permitted .label[data-mac="${phone.mac}"]`).waitFor();
  assert.equal(await stateOf(phone.mac), 'permitted');
  await home.call({ op: 'wait_fetch', dev: phone.name, expect: true, timeout: 30 });
  await page.locator('#meta-dialog').waitFor({ state: 'visible' });      // first permit: whose is it?
  await page.keyboard.press('Escape');

  // Refuse, by keyboard too: the label goes to "In range" and the device stays off.
  await label(page, tv.mac).locator('.decide button.refuse').focus();
  await page.keyboard.press('Space');
  await page.locator(`#zone-outside .label[data-mac="${tv.mac}"]`).waitFor();
  assert.equal(await stateOf(tv.mac), 'denied');
  assert.equal(await label(page, tv.mac).locator('.decide').isVisible(), false);
});

test('the panel at 1024x600: everything in view, Pause switches to Resume, rules shown and removed', { timeout: 300000 }, async () => {
  const dev = await permittedDevice(home, 'laptop5');
  await label(page, dev.mac).click();
  const panel = page.locator('#panel');
  await panel.locator('.schedules').waitFor({ state: 'visible' });
  await panel.locator('.priority').waitFor({ state: 'visible' });
  await inView(panel.locator('button.pause-1h'), 'Pause 1 h');
  await inView(panel.locator('.priority select'), 'Priority');
  await inView(panel.locator('form.schedule-form button[type=submit]'), 'the bedtime form');
  await inView(panel.locator('form.rule-form'), 'the website form');
  await noSeriousViolations('the open panel', '#panel');
  await screenshot(page, 'panel-02-open');

  await panel.locator('button.pause-1h').click();
  await panel.locator('button.resume').waitFor({ state: 'visible' });
  assert.equal(await panel.locator('button.pause-1h').isVisible(), false);
  assert.match(await panel.locator('.pause-note').innerText(), /paused until \d\d:\d\d/);
  await inView(panel.locator('button.resume'), 'Resume');
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: false, timeout: 10 });
  await screenshot(page, 'panel-03-paused');
  await panel.locator('button.resume').click();
  await panel.locator('button.pause-1h').waitFor({ state: 'visible' });
  assert.equal(await panel.locator('button.resume').isVisible(), false);
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: true, timeout: 10 });

  // A rule set elsewhere (the CLI) is listed with its verdict, and no "every website" claim.
  await cli('deny-dns', dev.mac, 'kids.test');
  await panel.locator('button.close').click();
  await label(page, dev.mac).click();
  const rule = panel.locator('.rules li[data-domain="kids.test"]');
  await rule.waitFor();
  assert.match(await rule.locator('.action').innerText(), /blocked/);
  assert.doesNotMatch(await panel.locator('.rules-note').innerText(), /every website/);
  assert.match(await panel.locator('.rules-mode').innerText(), /unless blocked/);
  await resolves(dev, 'kids.test', false);

  // One added here shows too; Remove takes each away, and the name resolves again.
  await panel.locator('form.rule-form input[name=domain]').fill('games.test');
  await panel.locator('form.rule-form button[value=deny]').click();
  await panel.locator('.rules li[data-domain="games.test"]').waitFor();
  await rule.locator('button.remove').click();
  await rule.waitFor({ state: 'detached' });
  await panel.locator('.rules li[data-domain="games.test"] button.remove').click();
  await panel.locator('.rules li').first().waitFor({ state: 'detached' });
  assert.match(await panel.locator('.rules-note').innerText(), /No rules of its own/);
  const rules = JSON.parse(await cli('--json', 'dns-rules', dev.mac)).rules;
  assert.deepEqual(rules, []);
  await resolves(dev, 'kids.test', true);
  await panel.locator('button.close').click();
});

test('an allowance from the panel, by keyboard: refused with the router\'s words, set, used up and slowed, removed', { timeout: 300000 }, async () => {
  const dev = await permittedDevice(home, 'console5');
  await home.call({ op: 'download', dev: dev.name, bytes: 2000000 });
  const counted = async () => JSON.parse(await cli('--json', 'usage', 'day', 'device')).rows
    .filter((r) => r.who === dev.mac).reduce((n, r) => n + r.total, 0);
  for (let i = 0; (await counted()) < 1500000; i++) {        // the router has counted the download
    assert.ok(i < 120, `the router counted only ${await counted()} bytes of a 2 MB download`);
    await new Promise((r) => setTimeout(r, 500));
  }
  await label(page, dev.mac).click();
  const panel = page.locator('#panel');
  const box = panel.locator('.allowance');
  await box.waitFor({ state: 'visible' });
  await box.locator('.allowance-note', { hasText: 'No allowance: it may use as much as it likes.' }).waitFor();
  assert.equal(await box.locator('button.allowance-off').isVisible(), false, 'nothing to remove yet');
  const form = box.locator('form.allowance-form');
  const amount = form.locator('input[name=allowance]');
  assert.equal(await amount.getAttribute('aria-label'), 'Allowance, e.g. 500M or 2G');

  // typed, not clicked: the amount, Tab to the period, Tab to what happens, Enter to set
  await amount.focus();
  await page.keyboard.type('lots');
  await page.keyboard.press('Enter');
  await box.locator('.allowance-error', { hasText: 'the allowance must be a size such as 500M or 2G' }).waitFor();
  assert.deepEqual(JSON.parse(await cli('--json', 'usage-limits')), [], 'a refused allowance changes nothing');

  await amount.fill('');
  await amount.focus();
  await page.keyboard.type('1M');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Per');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'When it is used up');
  assert.equal(await form.locator('select[name=action]').inputValue(), 'slow');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('name')), 'rate');
  await page.keyboard.press('Control+A');
  await page.keyboard.type('512kbit');
  await page.keyboard.press('Enter');
  // it used 2 MB today already: used up at once, and the panel and its label say so
  const note = box.locator('.allowance-note');
  await note.filter({ hasText: 'Used up: it is slowed down.' }).waitFor({ timeout: 60000 });
  assert.equal(await note.innerText(), 'Allowance: 1 MB a day; once it is used up, slowed to 512 kbit/s until the ' +
                                       'day is over. Used up: it is slowed down.');
  assert.equal(await box.locator('.allowance-error').innerText(), '');
  const limits = JSON.parse(await cli('--json', 'usage-limits'));
  assert.deepEqual(limits.map((l) => [l.target, l.allowance, l.period, l.action, l.rate]),
                   [[dev.mac, 1000000, 'day', 'slow', 512]]);
  await label(page, dev.mac).filter({ hasText: 'slowed: usage limit' }).waitFor({ timeout: 30000 });
  await noSeriousViolations('the panel with an allowance', '#panel');
  await screenshot(page, 'panel-04-allowance');

  // "no internet" has no rate to type: its field goes
  await form.locator('select[name=action]').selectOption('block');
  assert.equal(await form.locator('input[name=rate]').isVisible(), false);
  await form.locator('select[name=action]').selectOption('slow');
  assert.equal(await form.locator('input[name=rate]').isVisible(), true);

  await box.locator('button.allowance-off').focus();
  await page.keyboard.press('Enter');
  await note.filter({ hasText: 'No allowance' }).waitFor();
  assert.deepEqual(JSON.parse(await cli('--json', 'usage-limits')), []);
  await label(page, dev.mac).filter({ hasText: 'console5' }).filter({ hasNotText: 'usage limit' }).waitFor({ timeout: 30000 });
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: true, timeout: 10 });
  await panel.locator('button.close').click();
});

test('one source of numbers: Today is the router\'s day count; an idle chart has no repeated ticks', { timeout: 300000 }, async () => {
  const idle = await permittedDevice(home, 'idle5');
  const busy = await permittedDevice(home, 'busy5');
  await home.call({ op: 'download', dev: busy.name, bytes: 3000000 });

  // The household usage of the router's local day, per device, as the usage page reads it.
  const today = async (mac) => page.evaluate(async (m) => {
    const r = await fetch('/ws.v1/usage?period=day&by=device');
    const u = await r.json();
    return u.rows.filter((row) => row.who === m).reduce((n, row) => n + row.total, 0);
  }, mac);
  const panel = page.locator('#panel');
  let counted = 0, shown = '';
  for (let i = 0; i < 60; i++) {
    counted = await today(busy.mac);
    await label(page, busy.mac).click();
    await panel.locator('.usage-chart canvas[data-loaded]').waitFor();
    shown = await panel.locator('.traffic-today').innerText();
    const expected = await page.evaluate((n) => HW.labels.bytes(n), counted);
    if (counted > 3000000 && shown === expected) break;
    await panel.locator('button.close').click();
    await page.waitForTimeout(500);
  }
  assert.ok(counted > 3000000, `the router counted ${counted} bytes of a 3 MB download`);
  assert.equal(shown, await page.evaluate((n) => HW.labels.bytes(n), counted));
  // The chart says the same number for the last day (everything here happened today).
  const note = await panel.locator('.chart-note').innerText();
  assert.ok(note.startsWith(shown) || Number.parseFloat(note) >= Number.parseFloat(shown), `${note} vs ${shown}`);
  await panel.locator('button.close').click();

  await label(page, idle.mac).click();
  await panel.locator('.usage-chart canvas[data-loaded]').waitFor();
  const ticks = await page.evaluate(() => {
    const chart = window.Chart.getChart(document.querySelector('#panel .usage-chart canvas'));
    return chart.scales.y.ticks.map((t) => t.label);
  });
  assert.ok(ticks.length >= 2, JSON.stringify(ticks));
  assert.equal(new Set(ticks).size, ticks.length, `repeated ticks: ${JSON.stringify(ticks)}`);
  await screenshot(page, 'panel-04-idle-chart');
  await panel.locator('button.close').click();
});

test('one Settings entry, sections a household can find, and every page passes axe-core', { timeout: 300000 }, async () => {
  const settings = page.locator('header nav a#settings-link');
  assert.equal(await settings.innerText(), 'Settings');
  assert.equal(await page.locator('header nav a').count(), 6);
  await noSeriousViolations('the board');
  await settings.click();
  await page.locator('#settings').waitFor({ state: 'visible' });
  assert.equal(await page.title(), 'Homework · Settings');
  const index = await page.locator('.section-index a').allInnerTexts();
  assert.deepEqual(index, ['Wi-Fi', 'Admin password', 'Time zone', 'Software update', 'Backup and restore',
                           'Notifications', 'Filters', 'Internet connection', 'Name lookups (DNS)',
                           'About this router', 'Panels', 'Hardware', 'Factory reset']);
  for (const name of ['Admin password', 'Name lookups (DNS)', 'Factory reset', 'Wi-Fi']) {
    await page.locator('.section-index a', { hasText: name }).click();
    const target = page.locator(await page.locator('.section-index a', { hasText: name }).getAttribute('href'));
    await target.locator('h2').first().waitFor({ state: 'visible' });
    const box = await target.boundingBox();
    assert.ok(box.y >= 0 && box.y < 600, `${name}: its section is not brought into view (${JSON.stringify(box)})`);
  }
  await noSeriousViolations('the settings page');
  await screenshot(page, 'panel-05-settings');
  for (const [link, main] of [['#usage-link', '#usage'], ['#priorities-link', '#priorities'],
                              ['#querylog-link', '#querylog'], ['#open-ports-link', '#open-ports']]) {
    await page.locator(link).click();
    await page.locator(main).waitFor({ state: 'visible' });
    assert.equal(await page.locator(`header nav a[aria-current=page]`).getAttribute('id'), link.slice(1));
    await noSeriousViolations(link.slice(1, -5) + ' page');
  }
});
