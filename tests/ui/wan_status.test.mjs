// The settings page's Router section shows the WAN's lease (optional part): the
// file the image's udhcpc hook writes ([router] wan_lease_file) is shown as address, gateway,
// DNS servers and how long the WAN has been up; without a lease it says so.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { login, useBoard } from './lib.mjs';

let home, browser, page;
const LEASE_FILE = path.join(os.tmpdir(), `homework-ui-wan-lease-${process.pid}.env`);

useBoard({ controller: { components: ['dhcp', 'routing'] }, router: { wan_lease_file: LEASE_FILE } },
  (h, b, p) => { home = h; browser = b; page = p; });
after(() => rmSync(LEASE_FILE, { force: true }));

async function wanText() {
  for (let i = 1; ; i++) {        // Chromium may abort a load with ERR_NETWORK_CHANGED: retry
    try {
      await page.goto(new URL('settings.html', home.info.url).href);
      const wan = page.locator('#router dd.wan');
      await wan.filter({ hasText: /./ }).waitFor({ timeout: 30000 });
      return await wan.innerText();
    } catch (e) {
      if (i >= 3) throw e;
    }
  }
}

test('the Router section shows the WAN lease, or that there is none', { timeout: 120000 }, async () => {
  const upSince = Math.floor(Date.now() / 1000) - 2 * 3600 - 5 * 60;
  writeFileSync(LEASE_FILE, "INTERFACE='enp2s0'\nADDRESS='198.51.100.23/24'\nGATEWAY='198.51.100.1'\n" +
    `DNS='198.51.100.1 9.9.9.9'\nLEASE_SECONDS=600\nUP_SINCE=${upSince}\n`);
  await login(page, home.info.url, home.info.password);
  assert.equal(await wanText(),
    '198.51.100.23/24 on enp2s0 via 198.51.100.1; DNS 198.51.100.1, 9.9.9.9; up for 2 h 5 min');
  rmSync(LEASE_FILE);
  assert.equal(await wanText(), 'no lease from the ISP (not connected?)');
});
