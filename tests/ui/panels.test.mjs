// A wall tablet as a panel, in Debian's Chromium against a real emulated home: the
// household's board shows a pairing QR code (decoded here with zbarimg, as the tablet's
// camera would); a second Chromium inside the tablet's own device namespace opens it and is
// a panel: the board without settings, whose tap lets a new device in; it dims at night;
// the settings page lists it and unpairs it, and the tablet then says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cliOf, drag, label, launch, login, newPage, openSettings, screenshot, useBoard } from './lib.mjs';

let home, browser, page;
const cli = cliOf(() => home);
useBoard({}, (h, b, p) => { home = h; browser = b; page = p; });

async function newDevice(name) {
  const dev = await home.call({ op: 'add_device', name });
  await home.call({ op: 'start_dhcp', dev: dev.name });
  await home.call({ op: 'wait_ipv4', dev: dev.name, timeout: 30 });
  return dev;
}

async function state(mac) {
  return JSON.parse(await cli('--json', 'status', mac)).state;
}

test('a wall tablet paired by a QR code is a panel: it lets devices in, dims at night, and can be unpaired',
  { timeout: 420000 }, async () => {
    await login(page, home.info.url, home.info.password);
    // panels dim at night by default (22:00-07:00 of the home's clock): the day first, whatever the hour
    await cli('panel', 'night', '--off');
    // the tablet joins the network like any device, and the household lets it in
    const tablet = await newDevice('kitchen-tablet');
    await label(page, tablet.mac).waitFor();
    await drag(page, tablet.mac, 'permitted');
    await page.locator('#meta-skip').click();
    await page.waitForFunction(async (mac) => (await (await fetch(`/ws.v1/devices/${mac}`)).json()).state === 'permitted',
      tablet.mac);

    // the board's QR code, read the way the tablet's camera would
    await page.locator('#pair-tablet').click();
    const dlg = page.locator('#pair-dialog');
    await dlg.locator('.qr svg').waitFor();
    const shown = await dlg.locator('.link code').innerText();
    assert.match(shown, /^https:\/\/10\.2\.\d+\.\d+\/#panel-code=[A-Za-z0-9_-]{40,}$/);
    const png = await screenshot(page, 'panels-01-qr');
    await dlg.locator('.qr').screenshot({ path: png.replace('.png', '-code.png') });
    const decoded = execFileSync('zbarimg', ['--raw', '-q', png.replace('.png', '-code.png')]).toString().trim();
    assert.equal(decoded, shown, 'the QR code carries the pairing link the dialog shows');
    await dlg.locator('.close').click();

    // The tablet's network settles before it opens the link, as a real tablet's has long
    // before anyone scans a code with it: its IPv6 address comes a moment after it is let in,
    // and Chromium aborts the loads in flight when its namespace's addresses change
    // (ERR_NETWORK_CHANGED: half the page's scripts failed, and the board never started).
    await home.call({ op: 'wait_ipv6', dev: tablet.name });

    // the tablet opens it: a panel's board, no settings, no password typed
    const tabletBrowser = await launch(tablet.ns);
    try {
      const tp = await newPage(tabletBrowser);
      let redeemed = false;
      tp.on('request', (r) => { if (new URL(r.url()).pathname === '/ws.v1/panels/session') redeemed = true; });
      for (let attempt = 1; ; attempt++) {
        try {
          await tp.goto(decoded);
          await tp.locator('#board').waitFor({ state: 'visible' });
          break;
        } catch (err) {
          // a load aborted before the page offered the code (still unused): the link again
          if (redeemed || attempt >= 3) throw err;
          console.error(`the tablet's page did not start (${String(err.message || err).split('\n')[0]}); again`);
        }
      }
      await tp.locator('#live.on').waitFor();
      assert.ok(await tp.locator('body.panel-mode.panel-tablet').count());
      for (const hidden of ['#settings-link', '#pair-tablet', '#logout', '#usage-link']) {
        assert.equal(await tp.locator(hidden).isVisible(), false, `${hidden} is not on a panel`);
      }
      assert.equal(await tp.locator('#login').isVisible(), false);
      assert.equal(new URL(tp.url()).hash, '', 'the code is taken out of the address at once');

      // a new device asks to join; a tap on the tablet lets it in
      const guest = await newDevice('guest-phone');
      await label(tp, guest.mac).waitFor();
      await label(tp, guest.mac).click();
      const decide = tp.locator('#decide-dialog');
      await decide.locator('.let-in').click();
      await tp.locator('#meta-dialog').waitFor({ state: 'visible' });
      await tp.locator('#meta-form input[name=name]').fill("Grandma's phone");
      await tp.locator('#meta-save').click();
      await tp.locator('#zone-permitted').locator(`.label[data-mac="${guest.mac}"]`).waitFor();
      assert.equal(await state(guest.mac), 'permitted');
      await screenshot(tp, 'panels-02-tablet');

      // what a panel may not do: the API says so, whatever the page shows
      const refused = await tp.evaluate(async (mac) => {
        const s = await (await fetch('/ws.v1/session')).json();
        const r = await fetch(`/ws.v1/blacklist/${mac}`, { method: 'POST', headers: { 'X-CSRF-Token': s.csrf } });
        return [s.role, s.panel, r.status];
      }, guest.mac);
      assert.deepEqual(refused, ['panel', 'tablet', 403]);

      // night: the panel's page darkens itself
      await cli('panel', 'night', '--from', '00:00', '--to', '23:59', '--brightness', '20');
      await tp.reload();
      await tp.waitForFunction(() => { const shade = document.querySelector('#night-shade'); return shade !== null && Number(getComputedStyle(shade).opacity) > 0.7; },
        null, { timeout: 90000 });
      await screenshot(tp, 'panels-03-night');
      // a tap lights the dimmed screen, and presses nothing behind the shade
      await tp.locator('#night-shade').click();
      await tp.waitForFunction(() => { const shade = document.querySelector('#night-shade'); return shade !== null && Number(getComputedStyle(shade).opacity) < 0.1; });
      assert.equal(await tp.locator('#decide-dialog[open]').count(), 0, 'the waking tap opened nothing');
      await cli('panel', 'night', '--off');

      // the household unpairs it on the settings page; the tablet says so
      await openSettings(page, home.info.url, home.info.password,
        () => page.locator('#panels .list td').filter({ hasText: 'kitchen-tablet' }).waitFor());
      const row = page.locator('#panels .list tr').filter({ hasText: 'kitchen-tablet' });
      assert.match(await row.innerText(), /Wall tablet\s+tablet\s+kitchen-tablet/);
      await row.locator('button').click();
      await page.locator('#panels .list td.empty').waitFor();
      await tp.locator('#panel-unpaired').waitFor({ state: 'visible', timeout: 60000 });
      assert.equal(await tp.locator('#board').isVisible(), false);
      await screenshot(tp, 'panels-04-unpaired');
    } finally {
      await tabletBrowser.close();
    }
  });

test('the settings page shows the hardware report', { timeout: 120000 }, async () => {
  await openSettings(page, home.info.url, home.info.password,
    () => page.locator('#hardware .ports tbody tr').first().waitFor());
  const rows = await page.locator('#hardware .ports tbody tr').allInnerTexts();
  assert.ok(rows.length >= 1, 'the emulated home\'s LAN ports are listed');
  assert.ok(rows.some((r) => /Home network/.test(r) && /veth/.test(r)), `a LAN port on its veth driver: ${rows}`);
  const file = await screenshot(page, 'panels-05-hardware');
  await page.locator('#hardware').screenshot({ path: file });
});
