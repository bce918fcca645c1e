// Priorities on the Guest Board in Debian's Chromium against a real emulated home
// with the qos component shaping the router's WAN (HTB in the router namespace): the
// Priorities page sets the line's rates, a 0 rate shows the API's own error and changes
// nothing; a device set to "First" from its panel is high in GET /ws.v1/qos and its label
// carries the mark; an application preset is added and deleted in one click each, one of
// its own with a time window from the form (a bad port shows the API's error); the rate
// chart draws the polled stats, the device's download shows in its class, and the page
// marks the capped class's drops.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { label, login, screenshot, useBoard, cliOf } from './lib.mjs';

let home, browser, page, laptop;

useBoard({
  controller: { components: ['dhcp', 'routing', 'qos'] },
}, (h, b, p) => { home = h; browser = b; page = p; });

const cli = cliOf(() => home);

/** A ws.v1 call with the page's session and CSRF token, as the page's own calls are made:
    {status, body}. */
function api(method, path, body) {
  return page.evaluate(([m, p, b]) => new Promise((resolve) => {
    HW.api.call(m, p, b === null ? undefined : b)
      .done((data) => resolve({ status: 200, body: data }))
      .fail((xhr) => resolve({ status: xhr.status, body: xhr.responseJSON || xhr.responseText }));
  }), [method, path, body === undefined ? null : body]);
}

async function qos() {
  const res = await api('GET', 'qos');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

async function until(check, what, timeout = 15000) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    last = await check();
    if (last) return last;
    await page.waitForTimeout(250);
  }
  throw new Error(`${what}: not within ${timeout} ms`);
}

/** Open the Priorities page from the board's header and wait for its first load. */
async function openPage() {
  await page.locator('#priorities-link').click();
  await page.waitForURL(/priorities\.html$/);
  await page.locator('#priorities[data-loaded]').waitFor({ timeout: 15000 });
}

/** Do `action` and wait for the page's reload after it; a failure says what the page shows. */
async function reloaded(action) {
  const before = await page.locator('#priorities').getAttribute('data-loaded');
  await action();
  await page.locator(`#priorities:not([data-loaded="${before}"])`).waitFor({ timeout: 15000 }).catch(async (err) => {
    const errors = await page.$$eval('#priorities .error', (els) => els.map((e) => e.textContent).filter((t) => t));
    throw new Error(`${err.message.split('\n')[0]}; the page's errors: ${JSON.stringify(errors)}`);
  });
}

test('the line: rates and sharing set on the page; a 0 rate shows the API error, changes nothing',
  { timeout: 180000 }, async () => {
    await login(page, home.info.url, home.info.password)
      .catch(() => login(page, home.info.url, home.info.password));
    laptop = await home.call({ op: 'add_device', name: 'worklaptop' });
    await home.call({ op: 'start_dhcp', dev: laptop.name, client: 'udhcpc' });
    await home.call({ op: 'wait_ipv4', dev: laptop.name });
    await cli('permit', laptop.mac);
    await home.call({ op: 'wait_fetch', dev: laptop.name, expect: true, timeout: 30 });

    await openPage();
    const form = page.locator('#link-form');
    await form.locator('input[name=enabled]').check();
    await form.locator('input[name=down_mbit]').fill('18');
    await form.locator('input[name=up_mbit]').fill('4.5');
    await reloaded(() => form.locator('button[type=submit]').click());
    let q = await qos();
    assert.equal(q.enabled, true);
    assert.equal(q.down_kbit, 18000);
    assert.equal(q.up_kbit, 4500);
    assert.equal(await form.locator('.error').innerText(), '');
    await page.locator('#priorities .shaping-state', { hasText: 'sharing is on' }).waitFor();

    // the same bad body straight to the API: the page must show exactly its message
    const bad = await api('POST', 'qos/link', { enabled: true, down_kbit: 0, up_kbit: 4500 });
    assert.equal(bad.status, 400);
    assert.ok(bad.body.error, JSON.stringify(bad.body));
    await form.locator('input[name=down_mbit]').fill('0');
    await form.locator('button[type=submit]').click();
    await form.locator('.error').filter({ hasText: bad.body.error }).waitFor({ timeout: 10000 });
    q = await qos();
    assert.equal(q.down_kbit, 18000, 'a rejected rate changes nothing');
    assert.equal(q.up_kbit, 4500);
    await screenshot(page, 'priorities-01-bad-rate');
  });

test("a device set to First from its panel: high in the API, marked on its label", { timeout: 90000 }, async () => {
  await page.goto(home.info.url);
  await page.locator('#live.on').waitFor({ timeout: 30000 });
  assert.equal(await label(page, laptop.mac).filter({ hasText: '★ first' }).count(), 0);
  await label(page, laptop.mac).click();
  const panel = page.locator('#panel');
  const select = panel.locator('.priority select');
  await select.waitFor({ state: 'visible' });
  assert.equal(await select.inputValue(), 'default');
  await select.selectOption('high');
  await until(async () => (await qos()).devices[laptop.mac]?.class === 'high', 'GET qos shows the device high');
  await label(page, laptop.mac).filter({ hasText: '★ first' }).waitFor({ timeout: 10000 });
  const view = (await api('GET', `devices/${encodeURIComponent(laptop.mac)}`)).body;
  assert.equal(view.priority, 'high');
  assert.equal(await panel.locator('.priority-error').innerText(), '');
  await screenshot(page, 'priorities-02-panel');
  await panel.locator('.close').click();
});

test('an application preset is added and deleted in one click each', { timeout: 90000 }, async () => {
  await openPage();
  // the device set from the panel shows as First on the page too
  assert.equal(await page.locator(`#device-classes tr[data-mac="${laptop.mac}"] select`).inputValue(), 'high');
  const row = page.locator('#app-classes tr[data-name="video calls"]');
  assert.equal(await row.count(), 0);
  await reloaded(() => page.locator('.presets button[data-name="video calls"]').click());
  await row.waitFor();
  const app = (await qos()).apps.find((a) => a.name === 'video calls');
  assert.ok(app, 'GET qos lists the preset');
  assert.equal(app.class, 'high');
  assert.deepEqual(app.ports, ['udp/3478-3481', 'udp/19302-19309']);
  assert.deepEqual(app.domains, ['zoom.us', 'teams.microsoft.com', 'meet.google.com']);
  assert.equal(await row.locator('.class').innerText(), 'First');
  assert.ok(await page.locator('.presets button[data-name="video calls"]').isDisabled());
  await screenshot(page, 'priorities-03-preset');

  await reloaded(() => row.locator('button.delete').click());
  await row.waitFor({ state: 'detached' });
  assert.equal((await qos()).apps.find((a) => a.name === 'video calls'), undefined);
  assert.equal(await page.locator('#priorities .apps-error').innerText(), '');
  assert.ok(await page.locator('.presets button[data-name="video calls"]').isEnabled());
});

test('an application of its own, with a time window, from the form; a bad port shows the API error',
  { timeout: 90000 }, async () => {
    const form = page.locator('#app-form');
    await form.locator('input[name=name]').fill('work vpn');
    await form.locator('select[name=class]').selectOption('medium');
    await form.locator('input[name=ports]').fill('udp/1194, udp/70000');
    const bad = await api('POST', 'qos/apps', { name: 'work vpn', class: 'medium', ports: ['udp/1194', 'udp/70000'],
                                                domains: [], window: null });
    assert.equal(bad.status, 400);
    await form.locator('button[type=submit]').click();
    await form.locator('.error').filter({ hasText: bad.body.error }).waitFor({ timeout: 10000 });
    assert.equal((await qos()).apps.length, 0, 'a rejected application is not stored');

    await form.locator('input[name=ports]').fill('udp/1194, tcp/1194');
    await form.locator('input[name=domains]').fill('vpn.example.com');
    for (const day of ['mon', 'tue', 'wed', 'thu', 'fri']) await form.locator(`.days input[value=${day}]`).check();
    await form.locator('input[name=start]').fill('09:00');
    await form.locator('input[name=end]').fill('17:00');
    await reloaded(() => form.locator('button[type=submit]').click());
    assert.deepEqual((await qos()).apps, [{ name: 'work vpn', class: 'medium', ports: ['udp/1194', 'tcp/1194'],
      domains: ['vpn.example.com'], window: { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00' } }]);
    const row = page.locator('#app-classes tr[data-name="work vpn"]');
    assert.equal(await row.locator('.class').innerText(), 'Preferred');
    assert.match(await row.locator('.when').innerText(), /mon,tue,wed,thu,fri 09:00.17:00/);
    assert.equal(await form.locator('.error').innerText(), '');
    assert.equal(await form.locator('input[name=name]').inputValue(), '', 'the form is cleared after adding');
    await reloaded(() => row.locator('button.delete').click());
    assert.deepEqual((await qos()).apps, []);
  });

test("the chart draws the polled stats; the First device's download shows in its class", { timeout: 120000 },
  async () => {
    const canvas = '#rates-chart';
    await page.waitForFunction((sel) => Number(document.querySelector(sel).dataset.samples) >= 2, canvas);
    const chart = () => page.evaluate((sel) => {
      const c = window.Chart.getChart(document.querySelector(sel));
      return { labels: c.data.labels.length,
               sets: c.data.datasets.map((d) => ({ label: d.label, data: d.data.slice() })) };
    }, canvas);
    assert.ok(await page.locator('#priorities .drop-marker').isHidden(), 'no drops yet: no marker');
    const first = await chart();
    assert.deepEqual(first.sets.map((d) => d.label),
      ['First ↓', 'Preferred ↓', 'Normal ↓', 'First ↑', 'Preferred ↑', 'Normal ↑']);
    for (const d of first.sets) assert.equal(d.data.length, first.labels);

    // 8 MB from the emulated internet to the laptop (now "First", which may use the whole
    // 18 Mbit/s line when nobody else does: a few seconds): the high class's download rate
    // in the chart rises above zero while the other classes stay near idle
    await home.call({ op: 'download', dev: laptop.name, bytes: 8000000 });
    const after = await until(async () => {
      const c = await chart();
      return Math.max(...c.sets[0].data) > 0 ? c : null;
    }, 'the First class rate in the chart', 20000);
    const highDown = Math.max(...after.sets[0].data);
    const normalDown = Math.max(...after.sets[2].data);
    assert.ok(highDown > normalDown, `First ↓ ${highDown} vs Normal ↓ ${normalDown}`);
    // a burst the line cannot take (300 full-size datagrams up at once, against a queue of
    // 100 ms at 4.3 Mbit/s): the high class drops packets, and the page marks it (the stats'
    // drop counter went up between two polls)
    await home.call({ op: 'udp_flood', dev: laptop.name, count: 300, size: 1200 });
    await until(async () => {
      const stats = (await api('GET', 'qos/stats')).body;
      return stats.classes.filter((r) => r.class === 'high').reduce((n, r) => n + r.drops, 0) > 0 || null;
    }, 'the First class to drop packets', 10000);
    await page.locator('#priorities .drop-marker').waitFor({ state: 'visible', timeout: 10000 });
    await page.locator(canvas).scrollIntoViewIfNeeded();
    await screenshot(page, 'priorities-04-chart');

    // the same window per device: the laptop's download is its own series
    await page.selectOption('#chart-view', 'device');
    const byDevice = await until(async () => {
      const c = await chart();
      return c.sets.length >= 2 ? c : null;
    }, 'the per-device series', 10000);
    const down = byDevice.sets.filter((d) => d.label.endsWith('↓'));
    assert.ok(down.length >= 1 && byDevice.sets.length === 2 * down.length, JSON.stringify(byDevice.sets.map((d) => d.label)));
    assert.ok(Math.max(...down[0].data) > 0, `the busiest device's download: ${down[0].label}`);
    assert.ok(!byDevice.sets.some((d) => d.label.startsWith('First')), 'no class series in the device view');
    await page.selectOption('#chart-view', 'class');
  });
