// The settings page's Filters section in Debian's Chromium against a real emulated
// home with the whole DNS path (homework-dnsd, dnsmasq, the dns and blocklists components): a
// list served by the emulated internet is added by URL and shows its names; a device's lookup
// of a listed name is then blocked and the blocked count on the page rises; a URL that 404s
// shows the API's error and adds nothing; the safe-search switch makes www.google.com a CNAME
// to the engine's safe host; removing the list un-blocks the name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { login, screenshot, useBoard, cliOf } from './lib.mjs';

let home, browser, page, dev;

useBoard({
  dns_lab: true,
  controller: { components: ['dhcp', 'routing', 'dns', 'blocklists'] },
}, (h, b, p) => { home = h; browser = b; page = p; });

const cli = cliOf(() => home);

async function dig(name) {
  return home.call({ op: 'dig', dev: dev.name, name });
}

async function waitFor(what, fn, timeout = 30000) {
  const end = Date.now() + timeout;
  for (;;) {
    const got = await fn();
    if (got) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('a blocklist added on the page blocks, counts, refuses a 404 and safe-search works', { timeout: 300000 }, async () => {
  dev = await home.call({ op: 'add_device', mac: '00:09:2d:00:17:01' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  await cli('permit', dev.mac);
  assert.equal((await dig('ads.new.test')).status, 'NOERROR');
  const { url } = await home.call({ op: 'serve_file', name: 'ui-hosts.txt',
                                    text: '0.0.0.0 ads.new.test\n0.0.0.0 pixel.new.test\n' });

  await login(page, home.info.url, home.info.password);
  await page.goto(home.info.url + 'settings.html');
  await page.locator('#settings').waitFor({ state: 'visible' });
  await page.locator('#filters td.empty', { hasText: 'No blocklists yet.' }).waitFor();

  // A URL that 404s: the API's message, nothing added.
  await page.locator('#blocklist-add input[name=url]').fill(url.replace('ui-hosts', 'missing'));
  await page.locator('#blocklist-add button[type=submit]').click();
  await page.locator('#filters .error', { hasText: 'answered with an error' }).waitFor();
  assert.equal(await page.locator('#filters tbody tr[data-id]').count(), 0);
  await screenshot(page, 'filters-01-404');

  await page.locator('#blocklist-add input[name=url]').fill(url);
  await page.locator('#blocklist-add button[type=submit]').click();
  const row = page.locator('#filters tbody tr[data-id]', { hasText: 'ui-hosts.txt' });
  await row.waitFor();
  assert.equal(await row.locator('td.rules').innerText(), '2');
  assert.equal(await page.locator('#filters .error').innerText(), '');
  assert.equal((await dig('ads.new.test')).status, 'NXDOMAIN');
  assert.equal((await dig('ok.new.test')).status, 'NOERROR');
  await waitFor('the blocked count on the page', async () => {
    await page.locator('#filters .refresh').click();
    return Number(await row.locator('td.blocked').innerText()) >= 1;
  });
  await screenshot(page, 'filters-02-list');

  // Safe-search: the switch on the page, the device's lookup of www.google.com.
  await page.locator('#filters input[name=safe_search]').check();
  await page.locator('#filters .status', { hasText: 'Safe-search is on.' }).waitFor();
  const google = await dig('www.google.com');
  assert.deepEqual(google.answers, ['forcesafesearch.google.com.', '203.0.113.92']);
  await page.locator('#filters input[name=safe_search]').uncheck();
  await page.locator('#filters .status', { hasText: 'Safe-search is off.' }).waitFor();

  // Remove: the name resolves again.
  page.once('dialog', (d) => d.accept());
  await row.locator('button.remove').click();
  await page.locator('#filters td.empty', { hasText: 'No blocklists yet.' }).waitFor();
  assert.equal((await dig('ads.new.test')).status, 'NOERROR');
});
