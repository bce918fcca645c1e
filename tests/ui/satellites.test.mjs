// Satellite switches on the Guest Board, in Debian's Chromium against a real
// emulated home: a satellite (its own OVS bridge and datapath, cabled to the router, driven
// by the controller) with a device on it, and a device on the router itself. Each device's
// panel says where it is plugged in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drag, label, login, screenshot, useBoard } from './lib.mjs';

let home, page;
// Satellite.spec_for(1, 0xa1): its datapath id, its uplink and the router port of its cable.
// Satellite 1 shares the router's OVS (plain tcp, hence require_tls = false); satellite 2 is
// a box of its own that asks to pair through the API.
useBoard({ satellites: { switches: ['00000000000000a1:sat1up:sat1cable', '00000000000000a2:sat2up:sat2cable'],
                         require_tls: false, tls_listen: '::', radio_ports: ['wlan0'] },
             controller: { components: ['dhcp', 'routing', 'radio', 'satlink'] } },
           (h, b, p) => { home = h; page = p; });

async function panelSays(mac) {
  await label(page, mac).click();
  const panel = page.locator('#panel');
  await panel.waitFor({ state: 'visible' });
  const row = panel.locator('.attached-row');
  await row.waitFor({ state: 'visible' });
  const text = await panel.locator('.attached').innerText();
  await panel.locator('.close').click();
  await panel.waitFor({ state: 'hidden' });
  return text;
}

test('a device on a satellite and one on the router: each panel says which switch and port', { timeout: 180000 }, async () => {
  await login(page, home.info.url, home.info.password);
  await home.call({ op: 'add_satellite', index: 1, dpid: 0xa1 });
  const far = await home.call({ op: 'add_device', name: 'attic-tv', satellite: 1 });
  const near = await home.call({ op: 'add_device', name: 'desk-pc' });
  for (const dev of [far, near]) {
    await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
    await home.call({ op: 'wait_ipv4', dev: dev.name });
    await label(page, dev.mac).waitFor({ timeout: 15000 });
  }
  assert.equal(await panelSays(far.mac), 'satellite 1, port 1');
  assert.match(await panelSays(near.mac), /^the router, port hw[0-9a-f]+-\d+$/);
  await label(page, far.mac).click();
  await screenshot(page, 'satellites-panel');
  await page.locator('#panel .close').click();
});

test('a satellite asking to pair is an access point in the centre; dragged to permitted, it gets its certificate',
  { timeout: 120000 }, async () => {
    const asked = await home.call({ op: 'ask_satellite', index: 2, dpid: 0xa2 });
    const ap = label(page, `ap-${asked.dpid}`);
    await ap.waitFor({ timeout: 15000 });
    assert.equal(await ap.getAttribute('data-zone'), 'asking');
    assert.match(await ap.innerText(), new RegExp(`Access point: satellite 2 · code ${asked.code}`));
    await screenshot(page, 'satellites-asking');
    assert.equal((await home.call({ op: 'poll_satellite', index: 2 })).state, 'pending');
    await drag(page, `ap-${asked.dpid}`, 'permitted');
    await page.locator(`.label[data-mac="ap-${asked.dpid}"][data-zone="permitted"]`).waitFor({ timeout: 10000 });
    assert.equal((await home.call({ op: 'poll_satellite', index: 2 })).state, 'permitted');
    await screenshot(page, 'satellites-permitted');
  });

test("a station on the permitted satellite's access point: its panel names the access point and its signal there",
  { timeout: 120000 }, async () => {
    const sta = await home.call({ op: 'satellite_station', index: 2, name: 'tablet', rssi: -61 });
    await home.call({ op: 'start_dhcp', dev: sta.name, client: 'udhcpc' });
    await home.call({ op: 'wait_ipv4', dev: sta.name });
    await label(page, sta.mac).waitFor({ timeout: 15000 });
    await label(page, sta.mac).click();
    const panel = page.locator('#panel');
    await panel.waitFor({ state: 'visible' });
    try {
      await page.waitForFunction(() => /-61 dBm/.test(document.querySelector('#panel .signal').textContent),
        null, { timeout: 30000 });
    } catch (e) {
      console.error('agent log:', (await home.call({ op: 'agent_log', index: 2 })).log);
      console.error('controller log:', (await home.call({ op: 'controller_log' })).log.slice(-3000));
      throw e;
    }
    assert.equal(await panel.locator('.signal').innerText(), '-61 dBm · Wi-Fi 5 GHz (wlan0 on satellite 2)');
    assert.equal(await panel.locator('.attached').innerText(), 'satellite 2, Wi-Fi wlan0');
    await screenshot(page, 'satellites-station');
    await panel.locator('.close').click();
  });
