// The Guest Board in Debian's Chromium against a real emulated home: real DHCP clients in
// device namespaces, real OVS, the controller, lighttpd over HTTPS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drag, label, login, newPage, screenshot, touchDrag, useBoard } from './lib.mjs';

let home, browser, page;
const HTC_MAC = '40:4e:36:12:34:56';   // a real OUI (HTC Corporation), never asked for DHCP

  // IPv6 on, as a household with an ISP that delegates would have it (the panel shows the /64).
useBoard({ ipv6: { enabled: true, prefix: '2001:db8:100::/48' } }, (h, b, p) => { home = h; browser = b; page = p; });

async function deviceState(mac) {
  const res = await home.call({ op: 'cli', args: ['--json', 'status', mac] });
  return JSON.parse(res.stdout).state;
}

// The first page of the run: a cold Chromium has taken over 20 s to paint it on a busy
// 2-core machine, so this test gets room for login()'s retries.
test('a wrong password is refused, the right one opens the board', { timeout: 180000 }, async () => {
  await page.goto(home.info.url);
  await page.locator('#login').waitFor({ state: 'visible' });
  await page.locator('#login input[name=password]').fill('not the password');
  await page.locator('#login button[type=submit]').click();
  await page.locator('#login .error', { hasText: 'Wrong password' }).waitFor();
  await screenshot(page, '01-login-refused');
  await login(page, home.info.url, home.info.password);
  for (const zone of ['outside', 'asking', 'permitted']) {
    assert.ok(await page.locator(`#zone-${zone}`).isVisible());
  }
  await screenshot(page, '02-empty-board');
});

test('a new device asking for an address appears in the centre', { timeout: 60000 }, async (t) => {
  const dev = await home.call({ op: 'add_device', name: 'laptop1' });
  const started = (await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' })).t;
  await label(page, dev.mac).waitFor({ timeout: 10000 });
  const elapsed = Date.now() / 1000 - started;
  assert.equal(await label(page, dev.mac).getAttribute('data-zone'), 'asking');
  assert.match(await label(page, dev.mac).innerText(), /laptop1/);
  assert.match(await label(page, dev.mac).innerText(), /private address/);   // 02:.. is locally administered
  await screenshot(page, '03-device-asking');
  t.diagnostic(`label visible ${elapsed.toFixed(3)} s after the DHCP client started`);
});

test('drag right permits (dialog names it), the device reaches the internet; drag left cuts it off',
  { timeout: 120000 }, async (t) => {
    const dev = await home.call({ op: 'add_device', name: 'phone2' });
    await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
    await label(page, dev.mac).waitFor({ timeout: 10000 });
    await home.call({ op: 'wait_ipv4', dev: dev.name });
    await home.call({ op: 'wait_fetch', dev: dev.name, expect: false, timeout: 5 });

    await drag(page, dev.mac, 'permitted');
    const dialog = page.locator('#meta-dialog');
    await dialog.waitFor({ state: 'visible' });
    await screenshot(page, '04-permit-dialog');
    await dialog.locator('input[name=name]').fill("Anna's phone");
    await dialog.locator('input[name=owner]').fill('Anna');
    await dialog.locator('select[name=type]').selectOption('phone');
    await dialog.locator('#meta-save').click();
    await dialog.waitFor({ state: 'hidden' });
    await page.locator(`#zone-permitted .label[data-mac="${dev.mac}"]`, { hasText: "Anna's phone" }).waitFor();
    assert.equal(await deviceState(dev.mac), 'permitted');
    const meta = JSON.parse((await home.call({ op: 'cli', args: ['--json', 'status', dev.mac] })).stdout);
    assert.deepEqual([meta.name, meta.owner, meta.type], ["Anna's phone", 'Anna', 'phone']);
    const ok = await home.call({ op: 'wait_fetch', dev: dev.name, expect: true, timeout: 30 });
    t.diagnostic(`first successful fetch ${ok.elapsed.toFixed(2)} s after the drop`);
    await screenshot(page, '05-permitted');

    await drag(page, dev.mac, 'outside');
    await page.locator(`#zone-outside .label[data-mac="${dev.mac}"]`).waitFor();
    assert.equal(await deviceState(dev.mac), 'denied');
    await home.call({ op: 'wait_fetch', dev: dev.name, expect: false, timeout: 30 });
    await screenshot(page, '06-denied');
  });

// The router's own screen runs bookworm's WPE WebKit, which gives a finger touch events but no
// pointer events: the board's drag has to follow the touch events there.
test('a finger with touch events alone (the router\'s screen) drags right to let in, left to keep out',
  { timeout: 120000 }, async () => {
    const dev = await home.call({ op: 'add_device', name: 'tablet6' });
    await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
    await label(page, dev.mac).waitFor({ timeout: 10000 });
    assert.equal(await touchDrag(page, dev.mac, 'permitted'), true, 'the release of a drag is not left to the browser as a tap');
    const dialog = page.locator('#meta-dialog');
    await dialog.waitFor({ state: 'visible' });
    await dialog.locator('#meta-skip').click();
    await page.locator(`#zone-permitted .label[data-mac="${dev.mac}"]`).waitFor();
    assert.equal(await deviceState(dev.mac), 'permitted');
    assert.equal(await touchDrag(page, dev.mac, 'outside'), true);
    await page.locator(`#zone-outside .label[data-mac="${dev.mac}"]`).waitFor();
    assert.equal(await deviceState(dev.mac), 'denied');
    assert.equal(await page.locator('.label.ghost').count(), 0, 'no floating copy is left behind');
  });

test('labels: busy device larger, weak signal more transparent, retries red', { timeout: 120000 }, async () => {
  const busy = await home.call({ op: 'add_device', name: 'busy3' });
  const idle = await home.call({ op: 'add_device', name: 'idle4' });
  for (const d of [busy, idle]) await home.call({ op: 'start_dhcp', dev: d.name, client: 'udhcpc' });
  for (const d of [busy, idle]) await home.call({ op: 'wait_ipv4', dev: d.name });
  await home.call({ op: 'linksim', dev: busy.name, rssi: -45, retry_rate: 0 });
  await home.call({ op: 'linksim', dev: idle.name, rssi: -95, retry_rate: 0.35 });
  await home.call({ op: 'traffic', dev: busy.name, seconds: 20 });
  // Wait until the board shows the traffic and the pinned radios.
  await page.waitForFunction(([b, i]) => {
    const lb = document.querySelector(`.label:not(.ghost)[data-mac="${b}"]`);
    const li = document.querySelector(`.label:not(.ghost)[data-mac="${i}"]`);
    return lb && li && Number(lb.dataset.bps) > 100000 && li.dataset.rssi === '-95' && li.classList.contains('retrans');
  }, [busy.mac, idle.mac], { timeout: 30000 });
  await page.waitForTimeout(500);   // the size transition
  const b = await label(page, busy.mac).boundingBox();
  const i = await label(page, idle.mac).boundingBox();
  assert.ok(b.height > i.height * 1.3, `busy label ${b.width}x${b.height} not larger than idle ${i.width}x${i.height}`);
  const opacity = async (mac) => Number(await label(page, mac).evaluate((el) => getComputedStyle(el).opacity));
  assert.ok(await opacity(idle.mac) < 0.7, 'weak-signal device should be faded');
  assert.ok(await opacity(busy.mac) > 0.95, 'strong-signal device should be opaque');
  assert.ok(await label(page, idle.mac).evaluate((el) => el.classList.contains('retrans')));
  assert.ok(!(await label(page, busy.mac).evaluate((el) => el.classList.contains('retrans'))));
  await screenshot(page, '07-label-mappings');
});

test('vendor name from the IEEE OUI table; panel blacklists', { timeout: 60000 }, async () => {
  // Blacklisting a MAC never seen yet is allowed: it then shows in "in range" by vendor.
  await home.call({ op: 'cli', args: ['blacklist', HTC_MAC] });
  const l = label(page, HTC_MAC);
  await l.waitFor({ timeout: 10000 });
  assert.equal(await l.getAttribute('data-zone'), 'outside');
  assert.match(await l.innerText(), /HTC Corporation device/);
  await home.call({ op: 'cli', args: ['whitelist', HTC_MAC] });
  await page.locator(`.label[data-mac="${HTC_MAC}"][data-state="pending"]`).waitFor();

  const dev = await home.call({ op: 'add_device', name: 'tv5' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await label(page, dev.mac).waitFor({ timeout: 10000 });
  await label(page, dev.mac).click();
  const panel = page.locator('#panel');
  await panel.waitFor({ state: 'visible' });
  await panel.locator('.traffic-today').filter({ hasText: /B|kB|MB/ }).waitFor();
  assert.match(await panel.locator('.ipv6-prefix').innerText(), /^2001:db8:100:[0-9a-f]*::\/64$/);
  await screenshot(page, '08-panel');
  await panel.locator('button.blacklist').click();
  await page.locator(`#zone-outside .label[data-mac="${dev.mac}"][data-state="blacklisted"]`).waitFor();
  assert.equal(await deviceState(dev.mac), 'blacklisted');
  await panel.locator('button.whitelist').waitFor({ state: 'visible' });
  await panel.locator('.close').click();
});

test('fits a phone screen', { timeout: 60000 }, async () => {
  const phone = await newPage(browser, { width: 390, height: 844 });
  await login(phone, home.info.url, home.info.password);
  await phone.locator('.label').first().waitFor();
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `page is ${overflow}px wider than the phone`);
  await screenshot(phone, '09-phone');
  await phone.context().close();
});

test('markup in a device name is shown as text, never run', { timeout: 60000 }, async () => {
  const dev = await home.call({ op: 'add_device', name: 'xss1' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await label(page, dev.mac).waitFor({ timeout: 10000 });
  const markup = '<img src=x onerror="window.__hwxss=1"><b>bold</b>';   // names: 64 characters at most
  await home.call({ op: 'cli', args: ['name', dev.mac, '--name', markup] });
  await label(page, dev.mac).filter({ hasText: '<img src=x' }).waitFor({ timeout: 10000 });
  assert.equal(await label(page, dev.mac).locator('img, b').count(), 0);
  await label(page, dev.mac).click();                   // the panel shows the name too
  await page.locator('#panel').filter({ hasText: '<img src=x' }).waitFor({ timeout: 10000 });
  assert.equal(await page.locator('#panel img[src=x], #panel script').count(), 0);
  assert.equal(await page.evaluate(() => window.__hwxss), undefined);
});
