// Usage charts in Debian's Chromium against a real emulated home: two permitted
// devices download known amounts through the emulated internet (real OVS, the controller's
// usage accounting); the device panel's chart and the household usage page draw exactly the
// API's numbers (read back from the Chart.js instances), and the page shows the cap and its
// projection set through its own form.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { label, login, screenshot, useBoard, cliOf } from './lib.mjs';

const MB = 1000000;
let home, browser, page, lodger, guest;

useBoard({
  controller: { components: ['dhcp', 'routing', 'usage'] },
  routing: { flow_stats_interval: 1 },
  usage: { flush_interval: 1, timezone: 'UTC' },
}, (h, b, p) => { home = h; browser = b; page = p; });

const cli = cliOf(() => home);

async function permitted(name, owner) {
  const dev = await home.call({ op: 'add_device', name });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  await cli('permit', dev.mac);
  if (owner) await cli('name', dev.mac, '--owner', owner);
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: true, timeout: 30 });
  return dev;
}

/** GET /ws.v1/<path> with the page's session, as the board's own calls are made. */
async function api(path) {
  return page.evaluate(async (p) => {
    const r = await fetch('/ws.v1/' + p, { headers: { Accept: 'application/json' } });
    if (!r.ok) throw new Error(`${p}: ${r.status} ${await r.text()}`);
    return r.json();
  }, path);
}

/** The usage per device once the transfers are fully counted: the same in two reads 3 s apart.
    The browser's own laptop (a permitted device too) keeps counting the board's traffic: left out. */
async function settled() {
  let last = null;
  for (let i = 0; i < 30; i++) {
    const now = JSON.stringify((await api('usage?period=month&by=device')).rows
      .filter((r) => r.who !== home.info.laptop_mac));
    if (now === last) return JSON.parse(now);
    last = now;
    await page.waitForTimeout(3000);
  }
  throw new Error('usage did not settle');
}

function chartData(selector) {
  return page.evaluate((sel) => {
    const chart = window.Chart.getChart(document.querySelector(sel));
    return chart ? JSON.parse(JSON.stringify({ labels: chart.data.labels,
      datasets: chart.data.datasets.map((d) => ({ label: d.label, data: d.data })) })) : null;
  }, selector);
}

test('two devices download known amounts; usage is counted per device', { timeout: 180000 }, async () => {
  // Once more if the first try is lost: Chromium drops requests in flight when the host's
  // interfaces change (ERR_NETWORK_CHANGED), which other emulated homes starting here cause.
  await login(page, home.info.url, home.info.password)
    .catch(() => login(page, home.info.url, home.info.password));
  lodger = await permitted('lodgerlaptop', 'Lodger');
  guest = await permitted('guestphone', '');          // no owner: "unassigned"
  await home.call({ op: 'download', dev: lodger.name, bytes: 3 * MB });
  await home.call({ op: 'download', dev: guest.name, bytes: 1 * MB });
  const rows = await settled();
  const total = (mac) => rows.filter((r) => r.who === mac).reduce((n, r) => n + r.total, 0);
  // What crossed each device's own interface is the truth: the file, headers, ACKs and any
  // retransmissions (a loaded machine drops and resends), less only the little traffic of
  // its time pending (DHCP), which the router does not count as usage.
  for (const [dev, size] of [[lodger, 3 * MB], [guest, 1 * MB]]) {
    const wire = (await home.call({ op: 'link_bytes', dev: dev.name })).bytes;
    const counted = total(dev.mac);
    console.error(`${dev.name}: ${counted} bytes counted, ${wire} on its link`);
    assert.ok(counted >= size, `${dev.name}: ${counted} counted for a ${size}-byte file`);
    assert.ok(counted <= wire && counted > wire - 20000, `${dev.name}: ${counted} counted, ${wire} on its link`);
  }
});

test("the device panel charts the device's traffic over the last hour, day and month", { timeout: 90000 },
  async () => {
    await label(page, lodger.mac).click();
    const panel = page.locator('#panel');
    await panel.waitFor({ state: 'visible' });
    const canvas = '#panel .usage-chart canvas';
    for (const range of ['day', 'hour', 'month']) {
      if (range !== 'day') await panel.locator(`.usage-chart button[data-range="${range}"]`).click();
      await page.locator(`${canvas}[data-loaded="${lodger.mac} ${range}"]`).waitFor({ timeout: 15000 });
      const chart = await chartData(canvas);
      const want = await api(`usage/devices/${encodeURIComponent(lodger.mac)}?range=${range}`);
      assert.deepEqual(chart.labels, want.labels, range);
      assert.deepEqual(chart.datasets, [{ label: 'Down', data: want.down }, { label: 'Up', data: want.up }], range);
      assert.equal(chart.labels.length, { hour: 60, day: 24, month: 30 }[range]);
      assert.ok(want.down.reduce((a, b) => a + b, 0) >= 3 * MB, `${range}: the download is in the chart`);
      await screenshot(page, `usage-panel-${range}`);
    }
    await panel.locator('.close').click();
  });

test('the usage page: cap and projection, per owner, per day; set from its form', { timeout: 90000 }, async () => {
  await page.locator('#usage-link').click();
  await page.waitForURL(/usage\.html$/);
  await page.locator('#usage[data-loaded]').waitFor({ timeout: 15000 });
  // no allowance yet; then one through the page's form
  await page.locator('#usage .cap-text', { hasText: 'no monthly allowance set' }).waitFor();
  const loaded = await page.locator('#usage').getAttribute('data-loaded');
  await page.locator('#cap-form input[name=cap]').fill('10M');
  await page.locator('#cap-form input[name=billing_day]').fill('1');
  await page.locator('#cap-form button[type=submit]').click();
  await page.locator(`#usage:not([data-loaded="${loaded}"])`).waitFor({ timeout: 15000 });

  const cap = await api('usage/cap');
  assert.equal(cap.cap, 10 * MB);
  const owners = await api('usage?period=month&by=owner');
  assert.deepEqual(owners.rows.map((r) => r.who).sort(), ['Lodger', 'unassigned']);

  const capChart = await chartData('#cap-chart');
  const [used, projected, allowance] = capChart.datasets[0].data;
  assert.equal(allowance, cap.cap);
  // the text and the chart come from the page's one read; ours is later (the laptop's own
  // requests in between count), so the page's percentages are checked against its chart
  const capText = await page.locator('#usage .cap-text').innerText();
  const usedPercent = capText.match(/of 10 MB used \((\d+(?:\.\d)?)%\)/);
  assert.ok(usedPercent, capText);
  assert.ok(Math.abs(Number(usedPercent[1]) - used * 100 / cap.cap) <= 0.05 + 1e-9, `${capText} vs ${used} of ${cap.cap}`);
  const projection = await page.locator('#usage .projection').innerText();
  const projectedPercent = projection.match(/^Projected .* \((\d+(?:\.\d)?)%\) by the billing day/);
  assert.ok(projectedPercent, projection);
  assert.ok(Math.abs(Number(projectedPercent[1]) - projected * 100 / cap.cap) <= 0.05 + 1e-9,
    `${projection} vs ${projected} of ${cap.cap}`);
  // the browser runs on the household's laptop, a device of the home: its own requests
  // between the page's read and ours count too (a few kB), never less
  assert.ok(used <= cap.used && cap.used - used <= 64 * 1024, `the chart's ${used} vs the API's ${cap.used}`);
  // the projection moves with the clock between the page's request and ours
  assert.ok(Math.abs(projected - cap.projected) <= cap.projected * 0.001, `${projected} vs ${cap.projected}`);
  assert.ok(cap.used >= 4 * MB);

  const perOwner = await chartData('#owners-chart');
  assert.deepEqual(perOwner.labels, owners.rows.map((r) => r.who));
  // per owner as the API says, give or take the laptop's own requests in between (as above)
  assert.deepEqual(perOwner.datasets.map((d) => d.label), ['Down', 'Up']);
  for (const [i, key] of [[0, 'down'], [1, 'up']]) {
    owners.rows.forEach((r, j) => {
      const shown = perOwner.datasets[i].data[j];
      assert.ok(shown <= r[key] && r[key] - shown <= 64 * 1024, `${r.who} ${key}: the chart's ${shown} vs the API's ${r[key]}`);
    });
  }

  const perDay = await chartData('#days-chart');
  const sums = {};
  for (const r of owners.series) sums[r.period] = (sums[r.period] || 0) + r.total;
  assert.deepEqual(perDay.labels, owners.steps);
  owners.steps.forEach((d, j) => {     // each day as the API says, give or take the laptop's requests in between
    const shown = perDay.datasets[0].data[j], api_ = sums[d] || 0;
    assert.ok(shown <= api_ && api_ - shown <= 64 * 1024, `${d}: the chart's ${shown} vs the API's ${api_}`);
  });
  const shownTotal = perDay.datasets[0].data.reduce((a, b) => a + b, 0);
  assert.ok(shownTotal <= owners.total && owners.total - shownTotal <= 64 * 1024, `${shownTotal} vs ${owners.total}`);
  await screenshot(page, 'usage-page');
});

test('the board warns from 80% of the allowance, in red once it is used up', { timeout: 90000 }, async () => {
  const used = (await api('usage/cap')).used;
  await page.goto(home.info.url);
  await page.locator('#board').waitFor({ state: 'visible' });
  const banner = page.locator('#usage-banner');
  assert.ok(await banner.isHidden());                   // 10 MB allowance: well under 80 %
  await cli('usage-cap', String(Math.ceil(used / 0.9)));   // now about 90 % used
  await page.reload();
  await banner.waitFor({ state: 'visible', timeout: 15000 });
  assert.match(await banner.innerText(), /has used 9\d(\.\d)?% of this month's/);
  assert.equal(await banner.locator('a').getAttribute('href'), 'usage.html');
  await cli('usage-cap', String(Math.floor(used / 2)));     // over it
  await page.reload();
  await banner.filter({ hasText: 'has used its allowance' }).waitFor({ timeout: 15000 });
  await screenshot(page, 'usage-banner');
  await cli('usage-cap', '0');                               // no cap: no banner
  await page.reload();
  await page.locator('#board').waitFor({ state: 'visible' });
  await page.waitForTimeout(1000);
  assert.ok(await banner.isHidden());
});
