// The first hour in Debian's Chromium on the household's laptop, a wired LAN device of a
// router nobody has set up: any page it opens is the waiting page, which offers "This is
// my router: set it up"; it chooses the password (two different ones are refused by the
// page), the page opens the Guest Board logged in by its one-time ticket, and from there
// the household drags the next device in. That device's own waiting page offers nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drag, label, screenshot, setUpRouter, useBoard } from './lib.mjs';

let home, browser, page;
const PASSWORD = 'the household chose this';

useBoard({ controller: { components: ['dhcp', 'routing'] }, laptop_set_up: false },
  (h, b, p) => { home = h; browser = b; page = p; });

test('a new router is set up from the waiting page and lets the next device in', { timeout: 300000 }, async () => {
  const gateway = new URL(home.info.url).hostname;
  await page.goto(`http://${gateway}/some/page`);            // any page: the waiting page
  await page.locator('h1').filter({ hasText: 'Waiting for approval' }).waitFor();
  await page.locator('#setup-start').filter({ hasText: 'This is my router: set it up' }).waitFor();
  assert.equal(await page.locator('#setup-proof').isHidden(), true, 'a wired device needs no secret');
  await screenshot(page, 'first-hour-01-offer');
  await page.locator('#setup-start').click();
  await page.locator('#setup-form input[name=password]').fill(PASSWORD);
  await page.locator('#setup-form input[name=again]').fill(PASSWORD + ' typo');
  await page.locator('#setup-form button[type=submit]').click();
  await page.locator('#setup-message.error').filter({ hasText: 'differ' }).waitFor();
  const state = JSON.parse((await home.call({ op: 'cli', args: ['--json', 'status', home.info.laptop_mac] })).stdout);
  assert.equal(state.state, 'pending');                      // nothing was sent

  await setUpRouter(page, home.info.url, PASSWORD);          // logged in by the ticket: no login form
  assert.equal(new URL(page.url()).hash, '', 'the ticket is taken out of the address');
  assert.equal(await page.locator('#login').isHidden(), true);
  await page.locator(`#zone-permitted .label[data-mac="${home.info.laptop_mac}"]`).waitFor();
  await screenshot(page, 'first-hour-02-board');

  const dev = await home.call({ op: 'add_device', name: 'tablet' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  const own = (await home.call({ op: 'wait_ipv4', dev: dev.name })).gateway;    // its own /30's
  const got = await home.call({ op: 'get', dev: dev.name, url: `http://${own}/ws.v1/setup` });
  assert.equal(got.code, '200');
  const seen = JSON.parse(got.body);
  assert.equal(seen.open, false, 'the next device finds the router set up');
  await label(page, dev.mac).waitFor();
  await drag(page, dev.mac, 'permitted');
  await page.locator('#meta-dialog').waitFor({ state: 'visible' });
  await page.locator('#meta-skip').click();
  await home.call({ op: 'wait_fetch', dev: dev.name, expect: true, timeout: 20 });
  await screenshot(page, 'first-hour-03-let-in');
});
