// Away from home on the Guest Board in Debian's Chromium against a real emulated home: the
// header's "Away from home" makes a device's WireGuard key and shows its QR code and file;
// the device asks to join like any other; once a WireGuard client (wireguard-go in the
// emulated internet) uses that file, its panel says where it connects from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { label, login, screenshot, useBoard } from './lib.mjs';

let home, browser, page;

useBoard({
  controller: { components: ['dhcp', 'routing', 'remote'] },
  remote: { check_interval: 1 },
}, (h, b, p) => { home = h; browser = b; page = p; });

test('a device away from home, from the board', { timeout: 240000 }, async () => {
  await login(page, home.info.url, home.info.password);
  await page.locator('#remote-button').click();
  const dlg = page.locator('#remote-dialog');
  await dlg.locator('input[name=name]').fill("Dad's phone");
  await dlg.locator('input[name=owner]').fill('Dad');
  await dlg.locator('button[type=submit]').click();
  const qr = dlg.locator('img.qr');
  await qr.waitFor({ state: 'visible' });
  await page.waitForFunction(() => document.querySelector('#remote-dialog img.qr').naturalWidth > 0);
  const href = await dlg.locator('a.download').getAttribute('href');
  assert.match(href, /^\/ws\.v1\/remote\/02%3A68%3A77%3A72%3A[0-9a-f%A]+\/config$/);
  assert.equal(await dlg.locator('a.download').getAttribute('download'), 'homework-Dad-s-phone.conf');
  const file = await page.evaluate(async (url) => (await fetch(url)).text(), href);
  assert.match(file, /\[Interface\][\s\S]*PrivateKey = [\s\S]*Endpoint = 198\.51\.100\.2:51820/);
  await screenshot(page, 'remote-01-qr');
  await dlg.locator('button.done').click();

  const mac = decodeURIComponent(href.split('/')[3]);
  const tile = label(page, mac);
  await page.locator('#zone-asking').locator(`.label[data-mac="${mac}"]`).waitFor();
  await tile.click();
  const away = page.locator('#panel .away');
  await away.locator('.where').filter({ hasText: 'Not connected yet' }).waitFor();
  await page.locator('#panel .close').click();

  await home.call({ op: 'remote_connect', mac });
  await tile.click();
  for (let i = 0; ; i++) {           // the panel reads the device again on each open
    if (/Connected from 198\.51\.100\.1/.test(await away.locator('.where').innerText())) break;
    if (i > 30) assert.fail('the panel does not say where it connects from');
    await page.locator('#panel .close').click();
    await new Promise((r) => setTimeout(r, 500));
    await tile.click();
  }
  await screenshot(page, 'remote-02-panel');
  await page.locator('#panel .close').click();
});
