// Raw samples for scripts/bench_ui.py (not a test): prints one JSON line at the end.
//  label: first DHCPDISCOVER -> the device's label in the page; live board (SSE) vs the
//         same board polling every 3 s (the research board's design);
//  permit: drop on "On the network" -> the device's first successful HTTP fetch, vs the
//         admin CLI's `homework permit` -> first successful fetch.
import { startHome, launch, newPage, login, label, drag } from './lib.mjs';

const N = Number(process.env.BENCH_UI_DEVICES || 20);
const POLL = Number(process.env.BENCH_UI_POLL || 3);

async function watch(page) {
  // Record, in the page, when each label first appears (epoch ms).
  await page.evaluate(() => {
    window.__seen = {};
    const note = () => document.querySelectorAll('.label:not(.ghost)').forEach((el) => {
      if (!(el.dataset.mac in window.__seen)) window.__seen[el.dataset.mac] = performance.timeOrigin + performance.now();
    });
    new MutationObserver(note).observe(document.body, { childList: true, subtree: true });
  });
}

async function labelLatency(home, page, prefix, i) {
  const dev = await home.call({ op: 'add_device', name: `${prefix}${i}` });
  const started = (await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' })).t;
  await label(page, dev.mac).waitFor({ timeout: 30000 });
  const seen = await page.evaluate((mac) => window.__seen[mac], dev.mac);
  await home.call({ op: 'wait_ipv4', dev: dev.name });
  return { dev, ms: seen - started * 1000 };
}

const home = await startHome();
const browser = await launch(home.info.view_ns);
const out = { devices: N, poll_seconds: POLL, label_sse_ms: [], label_poll_ms: [], permit_drop_ms: [], permit_cli_ms: [] };
try {
  const live = await newPage(browser);
  await login(live, home.info.url, home.info.password);
  const polling = await newPage(browser);
  await login(polling, home.info.url + '?poll=' + POLL, home.info.password);
  await watch(live);
  await watch(polling);
  const viaBoard = [];
  const viaCli = [];
  for (let i = 1; i <= N; i++) {
    const a = await labelLatency(home, live, 'ui', i);
    out.label_sse_ms.push(a.ms);
    viaBoard.push(a.dev);
    const b = await labelLatency(home, polling, 'po', i);
    out.label_poll_ms.push(b.ms);
    viaCli.push(b.dev);
  }
  for (let i = 0; i < N; i++) {
    const d = viaBoard[i];
    const from = await label(live, d.mac).boundingBox();
    const to = await live.locator('#zone-permitted').boundingBox();
    await live.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
    await live.mouse.down();
    await live.mouse.move(to.x + to.width / 2, to.y + to.height / 2, { steps: 5 });
    const dropped = Date.now();
    await live.mouse.up();
    const ok = await home.call({ op: 'wait_fetch', dev: d.name, expect: true, timeout: 30 });
    out.permit_drop_ms.push(ok.t * 1000 - dropped);
    await live.locator('#meta-dialog').waitFor({ state: 'visible' });
    await live.locator('#meta-skip').click();

    const c = viaCli[i];
    const t0 = (await home.call({ op: 'permit_cli', dev: c.name })).t;
    const ok2 = await home.call({ op: 'wait_fetch', dev: c.name, expect: true, timeout: 30 });
    out.permit_cli_ms.push((ok2.t - t0) * 1000);
  }
} finally {
  await browser.close();
  await home.close();
}
console.log(JSON.stringify(out));
