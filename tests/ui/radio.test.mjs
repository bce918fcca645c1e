// The real radio's link monitor in Debian's Chromium against an emulated home:
// the `radio` component reads a recorded `iw station dump` through its configurable command
// (`cat FILE`; the test rewrites FILE), and the label of the station it hears follows the data:
// opacity from the signal, the red `retrans` mark from the tx retries' share, fading and
// leaving the board when the station goes idle past [radio] leave_after, back when it is active.
// Nearby devices: a stand-in for hostapd's control socket (fake_hostapd.py, in the router's
// namespace) sends probe requests; the prober's label and one label for the randomised MACs
// appear in the left zone and leave after [radio] nearby_forget; the station's label says its band.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliOf, label, login, screenshot, useBoard } from './lib.mjs';

const dir = mkdtempSync(path.join(os.tmpdir(), 'hw-radio-'));
const DUMP = path.join(dir, 'station-dump.txt');
const INFO = path.join(dir, 'iw-info.txt');
const CTRL = path.join(dir, 'hostapd');
const MAC = '02:00:00:00:16:01';
const PROBER = '00:16:3e:16:00:01';                 // globally administered: a label of its own
const RANDOM = ['da:a1:19:16:00:01', '5e:16:00:00:00:02'];   // randomised: one group label
let fakeHostapd;
after(() => { if (fakeHostapd) fakeHostapd.kill(); rmSync(dir, { recursive: true, force: true }); });
mkdirSync(CTRL);
writeFileSync(INFO, 'Interface wlan0\n\tifindex 5\n\ttype AP\n\tchannel 6 (2437 MHz), width: 20 MHz, center1: 2437 MHz\n');

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
  radio: { interfaces: ['wlan0'], interval: 1, station_dump_command: `cat ${DUMP}`, leave_after: 10,
           info_command: `cat ${INFO}`, hostapd_ctrl_dir: CTRL, nearby_interval: 1, nearby_forget: 10 },
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

test('the station says its band; probing devices appear in the left zone, randomised ones as one label, and leave',
     { timeout: 180000 }, async () => {
  // The station asks for an address: its registered device's label says how it is connected.
  const dev = await home.call({ op: 'add_device', mac: MAC });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await until((l) => l.zone === 'asking', 'registered', 40000);
  await page.waitForFunction((mac) => /Wi-Fi 2\.4 GHz \(wlan0\)/.test(
    document.querySelector(`.label[data-mac="${mac}"]`).textContent), MAC, { timeout: 30000 });

  const here = path.dirname(fileURLToPath(import.meta.url));
  fakeHostapd = spawn('ip', ['netns', 'exec', `${home.info.run_id}-r`, 'python3', path.join(here, 'fake_hostapd.py'),
                             path.join(CTRL, 'wlan0')], { stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise((resolve) => createInterface({ input: fakeHostapd.stdout })
    .on('line', (line) => { if (line === 'attached') resolve(); }));   // the controller retries every few seconds
  const probe = (mac, signal) => fakeHostapd.stdin.write(`<3>RX-PROBE-REQUEST sa=${mac} signal=${signal}\n`);
  const probeAll = () => { probe(PROBER, -70); probe(RANDOM[0], -60); probe(RANDOM[1], -80); };
  // Phones probe again every few seconds while they look for a network: so do these until
  // the board and the CLI have been checked (a loaded machine can take longer than
  // [radio] nearby_forget over those checks), then they stop and must leave.
  probeAll();
  const probing = setInterval(probeAll, 2000);
  const group = label(page, 'random-wlan0');
  try {
    // The prober: left zone, its probe's signal on the label.
    await label(page, PROBER).waitFor({ state: 'visible', timeout: 30000 });
    const prober = await label(page, PROBER).evaluate((el) => ({ zone: el.dataset.zone, rssi: el.dataset.rssi,
                                                                  opacity: Number(el.style.opacity) }));
    assert.equal(prober.zone, 'outside');
    assert.equal(prober.rssi, '-70');
    assert.ok(prober.opacity <= 0.81, `opacity ${prober.opacity}`);     // (150 - 70) / 100, or fading already
    // The randomised MACs: one label with their count, not one each.
    await group.waitFor({ state: 'visible', timeout: 30000 });
    // (the second MAC may come a [radio] nearby_interval later: the group's count is rate-limited too)
    await page.waitForFunction(() => /2 randomised devices nearby/.test(
      document.querySelector('.label[data-mac="random-wlan0"]').textContent), null, { timeout: 10000 });
    for (const mac of RANDOM) assert.equal(await label(page, mac).count(), 0);
    await screenshot(page, 'radio-02-nearby');

    const nearby = JSON.parse(await cliOf(() => home)('--json', 'nearby')).nearby;
    assert.deepEqual(nearby.map((e) => [e.mac, e.randomised, e.count, e.band]),
                     [['random-wlan0', true, 2, '2.4 GHz'], [PROBER, false, 1, '2.4 GHz']]);
  } finally {
    clearInterval(probing);
  }
  // Not heard for [radio] nearby_forget (10 s): both labels leave the board.
  await label(page, PROBER).waitFor({ state: 'detached', timeout: 40000 });
  await group.waitFor({ state: 'detached', timeout: 40000 });
});
