// The DNS query log page in Debian's Chromium against a real emulated home with the
// whole DNS path (homework-dnsd, dnsmasq, the dns component) and hwdb: a device's digs show up
// with their verdicts, the search box and the device filter narrow the table, counts per device
// and the most blocked names are drawn, and one click blocks or allows a name for the device,
// which the device's next lookup obeys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { label, login, screenshot, useBoard, cliOf } from './lib.mjs';

let home, browser, page, kid;

useBoard({
  dns_lab: true,
  controller: { components: ['dhcp', 'routing', 'dns', 'localnames', 'hwdb_sync'] },
}, (h, b, p) => { home = h; browser = b; page = p; });

const cli = cliOf(() => home);

async function dig(name) {
  return home.call({ op: 'dig', dev: kid.name, name });
}

/** The query table's rows as {name, device, verdict}. */
function rows() {
  return page.$$eval('#queries tbody tr', (trs) => trs.map((tr) => ({
    name: tr.getAttribute('data-name'), device: tr.querySelector('.device').textContent,
    verdict: tr.querySelector('.verdict').textContent })));
}

/** Reload the log (the Refresh button) until `check(rows)` holds. */
async function until(check, what) {
  let last = [];
  for (let i = 0; i < 40; i++) {
    const before = await page.locator('#querylog').getAttribute('data-loaded');
    await page.locator('#filters .refresh').click();
    await page.waitForFunction((b) => document.querySelector('#querylog').getAttribute('data-loaded') !== b, before);
    last = await rows();
    if (check(last)) return last;
    await page.waitForTimeout(500);
  }
  throw new Error(`${what}: table is ${JSON.stringify(last)}`);
}

test('the header links the query log; a device\'s queries appear with verdicts', { timeout: 180000 }, async () => {
  await login(page, home.info.url, home.info.password)
    .catch(() => login(page, home.info.url, home.info.password));
  const dev = await home.call({ op: 'add_device', name: 'kid1' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  await cli('permit', dev.mac);
  await cli('name', dev.mac, '--name', 'Kid tablet');
  kid = dev;
  await cli('deny-dns', kid.mac, 'blocked.test');
  assert.equal((await dig('example.com')).status, 'NOERROR');
  assert.equal((await dig('blocked.test')).status, 'NXDOMAIN');
  assert.equal((await dig('school.test')).status, 'NOERROR');

  await page.locator('#querylog-link').click();
  await page.waitForURL(/querylog\.html$/);
  await page.locator('#querylog[data-loaded]').waitFor();
  const got = await until((r) => ['example.com', 'blocked.test', 'school.test'].every((n) => r.some((x) => x.name === n)),
    'the three names');
  const blocked = got.find((r) => r.name === 'blocked.test');
  assert.equal(blocked.verdict, 'blocked');
  assert.equal(blocked.device, 'Kid tablet');
  assert.equal(got.find((r) => r.name === 'example.com').verdict, 'allowed');
  await screenshot(page, 'querylog');
});

test('search and the device filter narrow the table; counts and top blocked are shown', { timeout: 90000 },
  async () => {
    await page.locator('#filters input[name=search]').fill('blocked');
    await until((r) => r.length > 0 && r.every((x) => x.name === 'blocked.test'), 'search "blocked"');
    await page.locator('#filters input[name=search]').fill('');
    await page.locator('#filters select[name=mac]').selectOption(kid.mac);
    await until((r) => r.length >= 3 && r.every((x) => x.device === 'Kid tablet'), 'device filter');
    const counts = page.locator(`#per-device tr[data-mac="${kid.mac}"]`);
    assert.equal(await counts.locator('.blocked').textContent(), '1');
    assert.ok(Number(await counts.locator('.total').textContent()) >= 3);
    await page.locator('#top-blocked li[data-name="blocked.test"]').waitFor();
  });

test('one click blocks a name for the device, another allows a blocked one', { timeout: 90000 }, async () => {
  const row = (name) => page.locator(`#queries tbody tr[data-name="${name}"]`).first();
  await row('example.com').locator('button[data-target=device][data-action=deny]').click();
  await row('example.com').locator('.done').waitFor();
  assert.equal(await row('example.com').locator('.done').textContent(), 'Blocked for this device');
  assert.equal((await dig('example.com')).status, 'NXDOMAIN');
  await row('blocked.test').locator('button[data-target=device][data-action=permit]').click();
  await row('blocked.test').locator('.done').waitFor();
  assert.equal((await dig('blocked.test')).status, 'NOERROR');
  // the household form is offered on every row too (POST .../household/<name>)
  assert.equal(await row('school.test').locator('button[data-target=household]').getAttribute('data-mac'), 'household');
});

test('the device\'s panel on the board shows the name it answers to in the home', { timeout: 90000 }, async () => {
  await page.goto(home.info.url);
  await label(page, kid.mac).click();
  const row = page.locator('#panel .dns-name-row');
  await row.waitFor({ state: 'visible' });
  assert.equal(await row.locator('.dns-name').textContent(), 'kid-tablet.home.arpa');
  const answer = await dig('kid-tablet.home.arpa');
  assert.equal(answer.status, 'NOERROR');
  assert.ok(answer.answers.includes((await home.call({ op: 'wait_ipv4', dev: kid.name })).ip),
    JSON.stringify(answer));
});
