// The real radio's link monitor (issue 16) in Debian's Chromium against an emulated home:
// the `radio` component reads a recorded `iw station dump` through its configurable command
// (`cat FILE`; the test rewrites FILE), and the label of the station it hears follows the data:
// opacity from the signal, the red `retrans` mark from the tx retries' share, fading and
// leaving the board when the station goes idle past [radio] leave_after, back when it is active.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { label, login, screenshot, useBoard } from './lib.mjs';

const dir = mkdtempSync(path.join(os.tmpdir(), 'hw-radio-'));
const DUMP = path.join(dir, 'station-dump.txt');
const MAC = '02:00:00:00:16:01';
after(() => rmSync(dir, { recursive: true, force: true }));

// One station as `iw dev wlan0 station dump` prints it (cumulative counters).
function writeDump({ signal, txPackets, txRetries, inactiveMs = 50, rxBytes = 1000 }) {
  const text = [`Station ${MAC} (on wlan0)`, `\tinactive time:\t${inactiveMs} ms`, `\trx bytes:\t${rxBytes}`,
    '\trx packets:\t40', `\ttx bytes:\t${txPackets * 100}`, `\ttx packets:\t${txPackets}`,
    `\ttx retries:\t${txRetries}`, '\ttx failed:\t0', `\tsignal:  \t${signal} [${signal}, ${signal}] dBm`,
    '\ttx bitrate:\t65.0 MBit/s MCS 7', '\trx bitrate:\t54.0 MBit/s', '\tauthorized:\tyes', ''].join('\n');
  writeFileSync(DUMP + '.tmp', text);
  renameSync(DUMP + '.tmp', DUMP);      // the monitor never reads half a file
}
writeDump({ signal: -45, txPackets: 100, txRetries: 0 });

let home, browser, page;
useBoard({
  controller: { components: ['dhcp', 'routing', 'radio'] },
  radio: { interfaces: ['wlan0'], interval: 1, station_dump_command: `cat ${DUMP}`, leave_after: 10 },
}, (h, b, p) => { home = h; browser = b; page = p; });

const look = () => label(page, MAC).evaluate((el) => ({
  opacity: Number(el.style.opacity), retrans: el.classList.contains('retrans'),
  departed: el.classList.contains('departed'), zone: el.dataset.zone }));

async function until(check, what, timeout = 30000) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    last = await look().catch(() => null);
    if (last && check(last)) return last;
    await page.waitForTimeout(250);
  }
  throw new Error(`${what}: label is ${JSON.stringify(last)}`);
}

test('a station label follows the recorded station dump', { timeout: 180000 }, async () => {
  await login(page, home.info.url, home.info.password);
  // Heard by the radio, never asked for an address: "in range" (left zone), strong, no red.
  await label(page, MAC).waitFor({ state: 'attached', timeout: 30000 });
  let got = await until((l) => l.opacity === 1 && !l.retrans, 'strong and clean');
  assert.equal(got.zone, 'outside');

  // Weak signal and 40 of the next 100 frames retried: (150 - 90) / 100 = 0.6, and red.
  let packets = 100, retries = 0;
  const step = async (signal, more, retried, extra = {}) => {
    packets += more; retries += retried;
    writeDump({ signal, txPackets: packets, txRetries: retries, ...extra });
  };
  await step(-90, 100, 40);
  got = await until((l) => Math.abs(l.opacity - 0.6) < 0.01 && l.retrans, 'weak and retransmitting');
  await screenshot(page, 'radio-01-weak-retrans');

  // Better again: 100 frames, none retried -> the red goes, opacity back up.
  await step(-60, 100, 0);
  await until((l) => Math.abs(l.opacity - 0.9) < 0.01 && !l.retrans, 'recovered');

  // Idle (associated but inactive for 8 s of a 10 s leave_after): fades below its signal's opacity.
  await step(-60, 0, 0, { inactiveMs: 8000 });
  got = await until((l) => l.opacity < 0.6 && !l.departed, 'fading');
  // Past leave_after: out of the board's middle.
  await step(-60, 0, 0, { inactiveMs: 15000 });
  await until((l) => l.departed, 'departed');
  assert.equal(await label(page, MAC).isVisible(), false);
  // Active again: back, at its signal's opacity.
  await step(-60, 10, 0, { inactiveMs: 20 });
  await until((l) => !l.departed && Math.abs(l.opacity - 0.9) < 0.01, 'back');
  assert.equal(await label(page, MAC).isVisible(), true);
});
