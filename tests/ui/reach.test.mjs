// Open from the internet, on the Guest Board in Debian's Chromium against a real emulated
// home: a port forwarded on the device's panel is reached from the emulated internet and
// listed as open; the "may open ports" tick lets the device's own natpmpc open a port,
// which the panel and the Open ports page list with its expiry; Close ends it; a pending
// device's tick is refused with the reason; Remove closes the forward.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { label, login, screenshot, useBoard } from './lib.mjs';

let home, browser, page;

useBoard({
  controller: { components: ['dhcp', 'routing', 'schedules', 'reach'] },
  reach: { check_interval: 1 },
  public_wan: true,
}, (h, b, p) => { home = h; browser = b; page = p; });

async function eventually(fn, what, ms = 15000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const answer = async (port) => (await home.call({ op: 'internet_hello', port })).answer;

test('forward a port and let a device open ports, from its panel', { timeout: 300000 }, async () => {
  await login(page, home.info.url, home.info.password);
  const dev = await home.call({ op: 'add_device', name: 'console' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  await home.call({ op: 'cli', args: ['permit', dev.mac] });
  await home.call({ op: 'serve', dev: dev.name, port: 8080 });

  await label(page, dev.mac).click();
  const box = page.locator('#panel .open-ports');
  await box.waitFor({ state: 'visible' });
  await box.locator('.forwards li.none').waitFor();
  assert.equal(await answer(9000), '');

  const form = box.locator('form.forward-form');
  await form.locator('input[name=ports]').fill('9000');
  await form.locator('input[name=to_port]').fill('8080');
  await form.locator('input[name=description]').fill('game server');
  await form.locator('button[type=submit]').click();
  await box.locator('.forwards li').filter({ hasText: 'TCP 9000 → its port 8080 · game server' })
    .filter({ hasText: 'open' }).waitFor();
  await eventually(async () => (await answer(9000)) === 'console', 'the internet reaches the console');

  // a bad range is refused with the router's sentence, nothing added
  await form.locator('input[name=ports]').fill('9500-9400');
  await form.locator('input[name=to_port]').fill('');
  await form.locator('button[type=submit]').click();
  await box.locator('.reach-error').filter({ hasText: 'ends before it starts' }).waitFor();
  assert.equal(await box.locator('.forwards li').count(), 1);

  // may open ports: the device's own NAT-PMP request now succeeds and shows up
  const refused = await home.call({ op: 'natpmp', dev: dev.name, public: 9300, private: 8080 });
  assert.match(refused.output, /Connection refused/);
  await box.locator('input[name=may_open_ports]').check();
  await eventually(async () => (await home.call({ op: 'cli', args: ['--json', 'status', dev.mac] })).stdout
    .includes('"may_open_ports": true'), 'the tick is stored');
  const mapped = await home.call({ op: 'natpmp', dev: dev.name, public: 9300, private: 8080 });
  assert.match(mapped.output, /Mapped public port 9300 protocol TCP to local port 8080/);
  await eventually(async () => (await answer(9300)) === 'console', 'the mapping is reachable');
  await page.locator('#panel .close').click();
  await label(page, dev.mac).click();
  await box.locator('.mappings li').filter({ hasText: /It opened TCP 9300 → its port 8080 · NAT-PMP .* until \d\d:\d\d/ })
    .waitFor();
  await box.scrollIntoViewIfNeeded();
  await screenshot(page, 'reach-01-panel');

  // the Open ports page lists both, per device (the same session)
  await page.goto(new URL('openports.html', home.info.url).href);
  const section = page.locator(`.device[data-mac="${dev.mac}"]`);
  await section.locator('li').filter({ hasText: 'Forward: TCP 9000' }).waitFor();
  await section.locator('li').filter({ hasText: 'Opened itself: TCP 9300' }).waitFor();
  assert.match(await section.locator('h3').innerText(), /console · may open ports itself/);
  await screenshot(page, 'reach-02-open-ports');
  // Close on the page ends the mapping
  await section.locator('li').filter({ hasText: 'Opened itself: TCP 9300' }).locator('button.close-mapping').click();
  await section.locator('li').filter({ hasText: 'Opened itself' }).waitFor({ state: 'detached' });
  await eventually(async () => (await answer(9300)) === '', 'the closed mapping is unreachable');
  await page.goto(home.info.url);
  await page.locator('#live.on').waitFor();
  await label(page, dev.mac).click();

  // Remove on the panel closes the forward
  await box.locator('.forwards li button.remove').click();
  await box.locator('.forwards li.none').waitFor();
  await eventually(async () => (await answer(9000)) === '', 'the removed forward is closed');
});

test('a device waiting for approval cannot be ticked', { timeout: 120000 }, async () => {
  if (await page.locator('#panel[open]').count()) await page.locator('#panel .close').click();
  const dev = await home.call({ op: 'add_device', name: 'stranger' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  await label(page, dev.mac).click();
  const box = page.locator('#panel .open-ports');
  await box.waitFor({ state: 'visible' });
  await box.locator('.may-open-note').filter({ hasText: 'Only a device let into the home may open ports.' }).waitFor();
  assert.equal(await box.locator('input[name=may_open_ports]').isDisabled(), true);
  await page.locator('#panel .close').click();
});
