// Raw samples for scripts/bench_radio.py (not a test): prints one JSON line at the end.
// The radio monitor reads a station dump through `cat FILE` every second; each change
// rewrites FILE with a new signal and records the moment (epoch ms); the page records when
// the station's label takes the opacity that signal maps to. delay = seen - written.
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startHome, launch, newPage, login, label } from './lib.mjs';

const CHANGES = Number(process.env.BENCH_RADIO_CHANGES || 12);
const INTERVAL = 1;
const MAC = '02:00:00:00:16:02';
const dir = mkdtempSync(path.join(os.tmpdir(), 'hw-bench-radio-'));
const DUMP = path.join(dir, 'station-dump.txt');
let packets = 100;

function writeDump(signal) {
  packets += 10;
  const text = [`Station ${MAC} (on wlan0)`, '\tinactive time:\t20 ms', '\trx bytes:\t1000', '\trx packets:\t40',
    `\ttx bytes:\t${packets * 100}`, `\ttx packets:\t${packets}`, '\ttx retries:\t0', '\ttx failed:\t0',
    `\tsignal:  \t${signal} [${signal}, ${signal}] dBm`, '\ttx bitrate:\t65.0 MBit/s MCS 7', ''].join('\n');
  writeFileSync(DUMP + '.tmp', text);
  renameSync(DUMP + '.tmp', DUMP);
  return Date.now();
}

writeDump(-45);
const home = await startHome({ config: {
  controller: { components: ['dhcp', 'routing', 'radio'] },
  radio: { interfaces: ['wlan0'], interval: INTERVAL, station_dump_command: `cat ${DUMP}`, hostapd_ctrl_dir: '' },
} });
const browser = await launch(home.info.view_ns);
const out = { interval: INTERVAL, delay_ms: [] };
try {
  const page = await newPage(browser);
  await login(page, home.info.url, home.info.password);
  await label(page, MAC).waitFor({ state: 'attached', timeout: 30000 });
  for (let i = 0; i < CHANGES; i++) {
    const signal = i % 2 ? -45 : -85;                 // opacity 1.0 <-> 0.65
    const want = Math.min(1, (150 + signal) / 100).toFixed(3);
    // Wait a random part of a poll so changes do not line up with the monitor's ticks.
    await page.waitForTimeout(300 + Math.random() * 1000);
    const watching = page.evaluate(({ mac, want }) => new Promise((resolve) => {
      const el = document.querySelector(`.label[data-mac="${mac}"]`);
      const done = () => { if (el.style.opacity === want || Number(el.style.opacity).toFixed(3) === want) {
        observer.disconnect(); resolve(performance.timeOrigin + performance.now()); } };
      const observer = new MutationObserver(done);
      observer.observe(el, { attributes: true, attributeFilter: ['style'] });
    }), { mac: MAC, want });
    await page.waitForTimeout(50);                   // the observer is in place before the change
    const written = writeDump(signal);
    const seen = await watching;
    out.delay_ms.push(seen - written);
  }
} finally {
  await browser.close();
  await home.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify(out));
