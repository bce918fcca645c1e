// A household's day, start to end, in one emulated home running everything the router image
// runs (homework.lineup: DNS, blocklists, usage, schedules, priorities, notifications,
// backup, ...), with the Guest Board in Debian's Chromium on the household's laptop (a LAN
// device of the home) at 1024x600 with touch. Each step asserts what the household sees
// (the board, the device's own screen) in words, not only what the API answers:
//
//   1. the new router is set up from the laptop's waiting page;
//   2. Sam's tablet asks to join: its screen says it waits (IPv4 and IPv6); the board shows
//      it asking; on the router's own screen (a panel) a tap lets it in and names it, and
//      the laptop's board follows;
//   3. it gets a website rule from its panel: the name no longer resolves for it;
//   4. a bedtime from its panel: its label says so, its own screen says when it ends (IPv4
//      and IPv6); removed, it is back online;
//   5. a daily allowance from its panel: the panel's Today matches the bytes on the wire;
//      once used up it is cut off and its screen says so (IPv4 and IPv6); removed, it is back;
//   6. Sam streams until the household's monthly allowance warns (80 %: the board's banner
//      and its notifications say so in words), and the tablet's own allowance, set from its
//      panel, slows it: its downloads measured down to a fraction, not cut (IPv4 and IPv6);
//   7. a work laptop joins; a parent puts it First from its panel while Sam's tablet
//      downloads: over the home's slow ISP line the laptop's share of the line grows
//      (ratios of the two downloads at once, IPv4 and IPv6);
//   8. Pause from its panel switches to Resume, its screen says until when; Resume brings
//      it back;
//   9. forgotten from its panel while it still holds its hour-long lease, it is asking again
//      within seconds (its screen says so), and is let in and named again;
//  10. a backup in Settings; the parent changes things; the restore puts them back, in
//      force when the page says so;
//  11. a webhook (added in Settings in the morning, a receiver in the emulated internet) and
//      an MQTT subscriber on the router's mosquitto heard every step a household wants to
//      hear about, each in words (names, units, whole sentences), signed.
//
// One home for every step, behind the slow ISP line of `make run` (20 Mbit/s down, 5 up,
// a modem's deep buffer) with the router shaping below it; screenshots in
// test-artifacts/ui/day-*.png.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cliOf, drag, label, launch, login, newPage, screenshot, setUpRouter, useBoard } from './lib.mjs';

let home, browser, page;
const PASSWORD = 'our family password';
const PASSPHRASE = 'our family passphrase';
const TABLET = "Sam's tablet";
const LAPTOP = "Alex's work laptop";

useBoard({
  laptop_set_up: false,                 // the household sets the router up in the browser
  router: { timezone: 'UTC' },          // the bedtime's hours below are the router's clock
  routing: { flow_stats_interval: 1 },
  usage: { flush_interval: 1 },
  isp_link: { down_kbit: 20000, up_kbit: 5000, buffer_ms: 500 },     // make run's line (homelab/run.py)
  qos: { enabled: true, down_kbit: 19000, up_kbit: 4750 },          // the household told the router its line
  notify: { webhook_backoff: 1 },
}, (h, b, p) => { home = h; browser = b; page = p; });

const cli = cliOf(() => home);
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];   // Date.getUTCDay() order
const hhmm = (t) => t.toISOString().slice(11, 16);
const day = {};      // what the steps share

async function until(check, what, timeout = 30000, every = 300) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    last = await check();
    if (last) return last;
    await new Promise((r) => setTimeout(r, every));
  }
  throw new Error(`${what}: not within ${timeout} ms (last: ${JSON.stringify(last)})`);
}

/** A finger on it: brought into view as a household scrolls a page, then tapped. A list
    drawn again under the finger (the board refreshed) is looked up again. */
async function tap(locator) {
  for (let i = 1; ; i++) {
    try {
      await locator.waitFor({ state: 'visible' });
      await locator.scrollIntoViewIfNeeded({ timeout: 10000 });
      await locator.tap({ timeout: 10000 });
      return;
    } catch (err) {
      if (i >= 3 || !/not attached|detached|intercepts|Timeout/.test(String(err.message))) {
        await screenshot(page, 'day-tap-failed').catch(() => {});    // what the finger met
        throw err;
      }
    }
  }
}

/** The board again, logged in and live (after another page, or the controller's restart). */
async function board() {
  for (let i = 1; ; i++) {
    try {
      await page.goto(day.url);
      if (await page.locator('#login').isVisible()) await login(page, day.url, PASSWORD);
      await page.locator('#live.on').waitFor({ timeout: 60000 });
      return;
    } catch (err) {           // a load Chromium aborted (ERR_NETWORK_CHANGED): again
      if (i >= 3) throw err;
    }
  }
}

/** What the device's own browser shows for any web address, over IPv4 or IPv6 (its names
    resolved by the DNS server its DHCP gave it). */
async function screenSays(dev, text, family, url = 'http://example.com/') {
  return until(async () => {
    const got = await home.call({ op: 'page', dev: dev.name, url, family });
    return got.code === 200 && got.body.includes(text) ? got.body : null;
  }, `${dev.name}'s screen says "${text}" over IPv${family}`);
}

async function screenSaysBoth(dev, text) {
  await screenSays(dev, text, 4);
  await screenSays(dev, text, 6, 'https://www.school.test/homework');
}

async function online(dev, expect, timeout = 30) {
  await home.call({ op: 'wait_fetch', dev: dev.name, expect, timeout });
}

async function openPanel(dev, name = TABLET) {
  await tap(label(page, dev.mac));
  const panel = page.locator('#panel');
  await panel.waitFor({ state: 'visible' });
  await panel.locator('.title').filter({ hasText: name }).waitFor();
  return panel;
}

/** An allowance from the device's panel form; the panel says it back in words. */
async function setAllowance(panel, amount, action, rate = '') {
  const form = panel.locator('form.allowance-form');
  await form.locator('input[name=allowance]').fill(amount);
  await form.locator('select[name=period]').selectOption('day');
  await form.locator('select[name=action]').selectOption(action);
  if (rate) await form.locator('input[name=rate]').fill(rate);
  await tap(form.locator('button[type=submit]'));
  // the panel says back what the router kept ("No allowance: ..." until then; a string
  // would match that too, Playwright's text match ignoring case)
  const said = new RegExp(`^Allowance: ${amount.replace(/M$/, ' MB')} a day; `);
  await panel.locator('.allowance-note', { hasText: said }).waitFor();
  assert.equal(await panel.locator('.allowance-error').innerText(), '');
}

async function removeAllowance(panel) {
  await tap(panel.locator('button.allowance-off'));
  await panel.locator('.allowance-note', { hasText: 'No allowance' }).waitFor();
}

/** The router's count of a device's bytes today, once it has stopped growing (the last
    flow-stats poll and usage flush are in). */
async function settledToday(dev) {
  const read = async () => JSON.parse(await cli('--json', 'usage', 'day', 'device')).rows
    .filter((r) => r.who === dev.mac).reduce((n, r) => n + r.total, 0);
  let last = -1;
  return until(async () => {
    const now = await read();
    const settled = now - last < 20000 ? now : null;
    last = now;
    return settled;
  }, `${dev.name}'s count settling`, 60000, 1500);
}

/** Downloads from the internet at once, kbit/s per device (iperf3, through the ISP line). */
async function rates(devs, family, seconds = 3) {
  return (await home.call({ op: 'rates', devs: devs.map((d) => d.name), family, seconds })).kbit;
}

async function closePanel() {
  await page.locator('#panel button.close').tap();
  await page.locator('#panel').waitFor({ state: 'hidden' });
}

test('morning: the new router is set up from the laptop\'s waiting page', { timeout: 240000 }, async () => {
  day.url = home.info.url;
  const gateway = new URL(day.url).hostname;
  const got = await home.call({ op: 'page', dev: 'household-laptop', url: `http://${gateway}/`, family: 4 });
  assert.match(got.body, /This is my router: set it up/, 'the waiting page offers the set-up');
  await setUpRouter(page, day.url, PASSWORD);
  await page.locator(`#zone-permitted .label[data-mac="${home.info.laptop_mac}"]`).waitFor();
  await screenshot(page, 'day-01-set-up');

  // the parent wants the day on their phone: a webhook in Settings (a receiver in the
  // emulated internet), and a home-automation box subscribed to the router's MQTT
  const { url } = await home.call({ op: 'start_receiver', port: 8097 });
  await page.goto(new URL('settings.html', day.url).href);
  await page.locator('#webhook-add input[name=url]').fill(url);
  await tap(page.locator('#webhook-add button[type=submit]'));
  await page.locator('#webhook-secret').waitFor({ state: 'visible' });
  await home.call({ op: 'receiver_secret', secret: (await page.locator('#webhook-secret .value').innerText()).trim() });
  await page.locator('#webhooks tbody tr[data-id] td.url', { hasText: url }).waitFor();
  await home.call({ op: 'mqtt_subscribe', topic: 'homework/notification' });
  await home.call({ op: 'iperf_servers' });
  await board();
});

test('Sam\'s tablet asks: its screen says it waits; a tap lets it in and the household names it', { timeout: 240000 }, async () => {
  const dev = await home.call({ op: 'add_device', name: 'sams-tablet' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name, timeout: 30 });
  await home.call({ op: 'wait_ipv6', dev: dev.name });
  day.tablet = dev;
  await screenSaysBoth(dev, 'Waiting for approval on the Guest Board');
  assert.equal((await home.call({ op: 'fetch', dev: dev.name })).success, false, 'no internet while it waits');

  const asking = page.locator(`#zone-asking .label[data-mac="${dev.mac}"]`);
  await asking.waitFor({ timeout: 30000 });
  await screenshot(page, 'day-02-asking');

  // the router's own screen (its kiosk pairs itself over loopback, as at each start) shows
  // the board as a panel; the parent passing by taps the tablet and lets it in there
  await cli('panel', 'night', '--off');          // panels dim at night: the day, whatever the hour
  const code = JSON.parse(await cli('--json', 'panel', 'pair', '--screen')).code;
  const screenBrowser = await launch(home.info.router_ns);
  try {
    const screen = await newPage(screenBrowser);
    for (let i = 1; ; i++) {    // a load Chromium aborted (a lease's address on the router): again,
      try {                     // with the session the code was traded for, if it was
        await screen.goto(i === 1 ? `https://127.0.0.1/#panel-code=${code}` : 'https://127.0.0.1/');
        await screen.locator('#board').waitFor({ state: 'visible' });
        await screen.locator('#live.on').waitFor();
        break;
      } catch (err) {
        if (i >= 3) throw err;
        console.error(`the router's screen: attempt ${i} failed (${String(err.message).split('\n')[0]}); again`);
      }
    }
    assert.equal(await screen.locator('body.panel-mode.panel-screen').count(), 1, 'the router\'s screen is a panel');
    await tap(label(screen, dev.mac));
    await tap(screen.locator('#decide-dialog .let-in'));
    const dialog = screen.locator('#meta-dialog');         // the first permit asks whose it is
    await dialog.waitFor({ state: 'visible' });
    await dialog.locator('input[name=name]').fill(TABLET);
    await dialog.locator('input[name=owner]').fill('Sam');
    await dialog.locator('select[name=type]').selectOption('tablet');
    await tap(dialog.locator('#meta-save'));
    await screen.locator(`#zone-permitted .label[data-mac="${dev.mac}"]`).filter({ hasText: TABLET }).waitFor();
    await screenshot(screen, 'day-03-router-screen');
  } finally {
    await screenBrowser.close();
  }
  // the laptop's board follows, by name
  await page.locator(`#zone-permitted .label[data-mac="${dev.mac}"]`).filter({ hasText: TABLET }).waitFor();
  await online(dev, true);
  assert.equal(JSON.parse(await cli('--json', 'status', dev.mac)).state, 'permitted');
  await screenshot(page, 'day-03-let-in');
});

test('a website rule from the tablet\'s panel: the panel lists it, the name stops resolving', { timeout: 180000 }, async () => {
  const dev = day.tablet;
  const resolves = async () => {
    const got = await home.call({ op: 'dig', dev: dev.name, name: 'games.test' });
    return got.status === 'NOERROR' && got.answers.some((a) => a.startsWith('203.0.113.'));
  };
  assert.ok(await until(resolves, 'games.test resolving before the rule'));
  const panel = await openPanel(dev);
  await panel.locator('form.rule-form input[name=domain]').fill('games.test');
  await tap(panel.locator('form.rule-form button[value=deny]'));
  const rule = panel.locator('.rules li').filter({ hasText: 'games.test' });
  await rule.waitFor();
  assert.match(await rule.innerText(), /blocked/);
  await screenshot(page, 'day-04-website-rule');
  await closePanel();
  await until(async () => !(await resolves()), 'games.test no longer resolving for the tablet');
  assert.equal((await home.call({ op: 'fetch', dev: dev.name })).success, true, 'other websites still work');
});

test('a bedtime from the panel: the label and the tablet\'s screen say until when; removed, it is back', { timeout: 240000 }, async () => {
  const dev = day.tablet;
  let panel = await openPanel(dev);
  const box = panel.locator('.schedules');
  await box.waitFor({ state: 'visible' });
  // a window from 30 minutes ago to 30 minutes ahead (the router's zone is UTC here)
  const start = new Date(Date.now() - 30 * 60000), end = new Date(Date.now() + 30 * 60000);
  const form = box.locator('form.schedule-form');
  await form.locator('input[name=days]').fill(DAYS[start.getUTCDay()]);
  await form.locator('input[name=from]').fill(hhmm(start));
  await form.locator('input[name=to]').fill(hhmm(end));
  await form.locator('select[name=action]').selectOption('pause');
  await tap(form.locator('button[type=submit]'));
  await box.locator('.schedule-list li').filter({ hasText: `${hhmm(start)}-${hhmm(end)}` }).waitFor();
  await closePanel();
  await label(page, dev.mac).filter({ hasText: 'bedtime' }).waitFor({ timeout: 30000 });
  await online(dev, false);
  await screenSaysBoth(dev, `Bedtime: the internet is back at ${hhmm(end)}`);
  await screenshot(page, 'day-05-bedtime');

  // Sam asks for ten more minutes: the parent removes tonight's bedtime
  panel = await openPanel(dev);
  await tap(panel.locator('.schedule-list li .remove').first());
  await panel.locator('.schedule-list li .remove').waitFor({ state: 'detached' });
  await closePanel();
  await label(page, dev.mac).filter({ hasText: TABLET }).filter({ hasNotText: 'bedtime' }).waitFor({ timeout: 30000 });
  await online(dev, true);
});

test('an allowance: Today matches the bytes on the wire; used up, the tablet is told; lifted, it is back', { timeout: 240000 }, async () => {
  const dev = day.tablet;
  const wire0 = (await home.call({ op: 'link_bytes', dev: dev.name })).bytes;
  const counted = async () => {
    const rows = JSON.parse(await cli('--json', 'usage', 'day', 'device')).rows;
    return rows.filter((r) => r.who === dev.mac).reduce((n, r) => n + r.total, 0);
  };
  const count0 = await counted();
  await home.call({ op: 'download', dev: dev.name, bytes: 4000000 });
  const wire = (await home.call({ op: 'link_bytes', dev: dev.name })).bytes - wire0;
  // the router's count of the download, within 5% of what crossed the tablet's cable
  const got = await until(async () => {
    const n = (await counted()) - count0;
    return Math.abs(n - wire) <= 0.05 * wire ? n : null;
  }, `the router's count within 5% of the ${wire} bytes on the wire`, 60000, 1000);
  console.error(`the tablet moved ${wire} bytes on the wire; the router counted ${got}`);
  // the panel's Today says the router's count in megabytes, within the same 5% (both
  // written by the board's one byte formatter)
  let shown = '', expected = '';
  const mb = (text) => { const m = /^([\d.]+) MB$/.exec(text); return m ? Number(m[1]) : NaN; };
  await until(async () => {
    const total = await counted();
    const panel = await openPanel(dev);
    shown = (await panel.locator('.traffic-today').innerText()).trim();
    expected = await page.evaluate((n) => window.HW.labels.bytes(n), total);
    if (Math.abs(mb(shown) - mb(expected)) <= 0.05 * mb(expected)) return true;
    await closePanel();
    return false;
  }, 'the panel\'s Today showing the router\'s count', 60000, 1000).catch((err) => {
    throw new Error(`${err.message}: the panel says ${shown}, the count is ${expected}`);
  });
  await screenshot(page, 'day-06-today');
  await closePanel();

  // a daily allowance from its panel, below what it already used today: cut off at once,
  // and told why
  let panel = await openPanel(dev);
  await setAllowance(panel, '2M', 'block');
  await panel.locator('.allowance-note', { hasText: 'Used up: its internet is off.' }).waitFor({ timeout: 60000 });
  await closePanel();
  await label(page, dev.mac).filter({ hasText: 'blocked: usage limit' }).waitFor({ timeout: 60000 });
  await online(dev, false);
  await screenSaysBoth(dev, 'Today\'s allowance is used up');
  await screenshot(page, 'day-07-allowance');
  panel = await openPanel(dev);
  await removeAllowance(panel);
  await closePanel();
  await label(page, dev.mac).filter({ hasText: TABLET }).filter({ hasNotText: 'usage limit' }).waitFor({ timeout: 30000 });
  await online(dev, true);
});

test('Sam streams until the household\'s cap warns; the tablet\'s allowance slows it, and only slows it', { timeout: 300000 }, async () => {
  const dev = day.tablet;
  // at full speed through the home's line first, both families
  const full = { 4: (await rates([dev], 4))[dev.name], 6: (await rates([dev], 6))[dev.name] };
  const today = await settledToday(dev);
  // the parent sets the plan's monthly allowance on the usage page: 80 % of it is 2 MB away
  const used = JSON.parse(await cli('--json', 'usage-cap')).used;
  const capMB = Math.ceil((used + 2e6) / 0.8 / 1e6);
  await page.goto(new URL('usage.html', day.url).href);
  const capForm = page.locator('#cap-form');
  await capForm.locator('input[name=cap]').fill(`${capMB}M`);
  await tap(capForm.locator('button[type=submit]'));
  await until(async () => JSON.parse(await cli('--json', 'usage-cap')).cap === capMB * 1e6, 'the cap set');
  assert.equal(await capForm.locator('.error').innerText(), '');
  await board();
  // and the tablet's own: 4 MB more today, then slowed to 1 Mbit/s
  const allowMB = Math.ceil((today + 4e6) / 1e6);
  let panel = await openPanel(dev);
  await setAllowance(panel, `${allowMB}M`, 'slow', '1mbit');
  assert.match(await panel.locator('.allowance-note').innerText(),
               new RegExp(`^Allowance: ${allowMB} MB a day; once it is used up, slowed to 1 Mbit/s until the day is over\\.$`));
  await closePanel();

  // Sam streams a film: the household passes 80 % of its month, the tablet its day
  await home.call({ op: 'download', dev: dev.name, bytes: 5000000 });
  const banner = page.locator('#usage-banner', { hasText: 'The household has used' });
  await banner.waitFor({ timeout: 60000 });
  assert.match(await banner.innerText(), /The household has used (its allowance: )?[\d.]+% of this month's [\d.]+ MB/);
  await label(page, dev.mac).filter({ hasText: 'slowed: usage limit' }).waitFor({ timeout: 60000 });
  await page.locator('#notifications-button').click();
  const told = page.locator('#notifications li.unread');
  await told.filter({ hasText: 'The household has used 80% of its data.' }).waitFor({ timeout: 30000 });
  const slowed = told.filter({ hasText: `${TABLET} has used up its allowance.` }).filter({ hasText: 'slowed to 1 Mbit/s' });
  await slowed.waitFor({ timeout: 30000 });
  assert.match(await slowed.innerText(), new RegExp(`today's allowance \\([\\d.]+ MB of ${allowMB} MB\\)`));
  await screenshot(page, 'day-07b-cap-and-slowed');
  await page.locator('#notifications .close').click();

  // slowed, not cut: its downloads go on at a fraction of what they had
  const slow = { 4: (await rates([dev], 4))[dev.name], 6: (await rates([dev], 6))[dev.name] };
  console.error(`the tablet at full speed ${JSON.stringify(full)} kbit/s, slowed ${JSON.stringify(slow)} kbit/s`);
  for (const family of [4, 6]) {
    assert.ok(slow[family] < 0.3 * full[family], `IPv${family}: slowed to ${slow[family]} of ${full[family]} kbit/s`);
    assert.ok(slow[family] > 0.02 * full[family], `IPv${family}: cut (${slow[family]} of ${full[family]} kbit/s)`);
  }
  panel = await openPanel(dev);
  assert.match(await panel.locator('.allowance-note').innerText(), /Used up: it is slowed down\.$/);
  // the film is over: the parent takes the allowance away
  await removeAllowance(panel);
  await closePanel();
  await label(page, dev.mac).filter({ hasText: TABLET }).filter({ hasNotText: 'usage limit' }).waitFor({ timeout: 30000 });
});

test('a work laptop joins; put First from its panel while Sam downloads, it gets the larger share of the line', { timeout: 300000 }, async () => {
  const tablet = day.tablet;
  const dev = await home.call({ op: 'add_device', name: 'work-laptop' });
  await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
  await home.call({ op: 'wait_ipv4', dev: dev.name, timeout: 30 });
  await home.call({ op: 'wait_ipv6', dev: dev.name });
  day.laptop = dev;
  await page.locator(`#zone-asking .label[data-mac="${dev.mac}"]`).waitFor({ timeout: 30000 });
  await tap(label(page, dev.mac).locator('.decide button.let-in'));
  const dialog = page.locator('#meta-dialog');
  await dialog.waitFor({ state: 'visible' });
  await dialog.locator('input[name=name]').fill(LAPTOP);
  await dialog.locator('input[name=owner]').fill('Alex');
  await dialog.locator('select[name=type]').selectOption('laptop');
  await tap(dialog.locator('#meta-save'));
  await page.locator(`#zone-permitted .label[data-mac="${dev.mac}"]`).filter({ hasText: LAPTOP }).waitFor();
  await online(dev, true);

  // both Normal: the laptop's share of the two downloads at once
  const share = async (family) => {
    const r = await rates([dev, tablet], family, 4);
    return { ratio: r[dev.name] / r[tablet.name], kbit: r };
  };
  const before = { 4: await share(4), 6: await share(6) };
  const panel = await openPanel(dev, LAPTOP);
  const priority = panel.locator('.priority select');
  assert.equal(await priority.inputValue(), 'default');
  await priority.selectOption({ label: 'First' });
  await label(page, dev.mac).filter({ hasText: '★ first' }).waitFor({ timeout: 30000 });
  await screenshot(page, 'day-07c-first');
  await closePanel();
  // Priority shows where the line is the limit; on a loaded machine a window may be limited
  // by the CPU instead, where both get what they can: up to three windows for the share.
  const shareFirst = async (family) => {
    let got;
    for (let i = 0; i < 3; i++) {
      got = await share(family);
      if (got.ratio > 1.5) break;
    }
    return got;
  };
  const after = { 4: await shareFirst(4), 6: await shareFirst(6) };
  console.error(`the laptop's share (laptop/tablet) before ${JSON.stringify(before)}, after ${JSON.stringify(after)}`);
  for (const family of [4, 6]) {
    assert.ok(after[family].ratio > 1.5 && after[family].ratio > before[family].ratio,
              `IPv${family}: the laptop First got ${after[family].ratio.toFixed(2)} times the tablet's rate ` +
              `(${before[family].ratio.toFixed(2)} before)`);
    assert.ok(after[family].kbit[tablet.name] > 0.1 * after[family].kbit[dev.name], `IPv${family}: the tablet starved`);
  }
});

test('Pause from the panel switches to Resume and the tablet says until when; Resume brings it back', { timeout: 180000 }, async () => {
  const dev = day.tablet;
  const panel = await openPanel(dev);
  await tap(panel.locator('button.pause-1h'));
  await panel.locator('button.resume').waitFor({ state: 'visible' });
  assert.equal(await panel.locator('button.pause-1h').isVisible(), false, 'Pause gives way to Resume');
  const note = await panel.locator('.pause-note').innerText();
  const until_ = /paused until (\d\d:\d\d)/.exec(note);
  assert.ok(until_, `the panel says until when: ${note}`);
  await online(dev, false);
  await screenSaysBoth(dev, `Paused by the household until ${until_[1]}`);
  await screenshot(page, 'day-08-paused');
  await tap(panel.locator('button.resume'));
  await panel.locator('button.pause-1h').waitFor({ state: 'visible' });
  assert.match(await panel.locator('.pause-note').innerText(), /Not paused/);
  await online(dev, true);
  await closePanel();
});

test('forgotten from its panel while it holds its hour, the tablet asks again within seconds', { timeout: 240000 }, async () => {
  const dev = day.tablet;
  const panel = await openPanel(dev);
  const forget = panel.locator('button.forget');
  await tap(forget);
  await panel.locator('button.forget', { hasText: 'Tap again to forget' }).waitFor();
  const t0 = Date.now();
  await tap(forget);
  await page.locator(`#zone-permitted .label[data-mac="${dev.mac}"]`).waitFor({ state: 'detached' });
  if (await page.locator('#panel').isVisible()) await closePanel();
  // still believing in its hour-long lease, it opens a page: it is a device asking again,
  // on its old address, and its screen says so over both families
  await screenSaysBoth(dev, 'Waiting for approval on the Guest Board');
  await page.locator(`#zone-asking .label[data-mac="${dev.mac}"]`).waitFor({ timeout: 30000 });
  console.error(`the forgotten tablet was asking again after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  await screenshot(page, 'day-09-forgotten-asks');
  // let in again from the laptop's board, and named again (forgetting forgot its name)
  const button = label(page, dev.mac).locator('.decide button.let-in');
  if (await button.count()) await tap(button);
  else await drag(page, dev.mac, 'permitted');
  const dialog = page.locator('#meta-dialog');
  await dialog.waitFor({ state: 'visible' });
  await dialog.locator('input[name=name]').fill(TABLET);
  await dialog.locator('input[name=owner]').fill('Sam');
  await dialog.locator('select[name=type]').selectOption('tablet');
  await tap(dialog.locator('#meta-save'));
  await page.locator(`#zone-permitted .label[data-mac="${dev.mac}"]`).filter({ hasText: TABLET }).waitFor();
  await online(dev, true);
});

test('a backup in Settings; the parent changes things; the restore puts them back, in force', { timeout: 300000 }, async () => {
  const dev = day.tablet;
  await page.goto(new URL('settings.html', day.url).href);
  const form = page.locator('#backup-download');
  await form.waitFor({ state: 'visible' });
  await form.locator('input[name=passphrase]').fill(PASSPHRASE);
  const download = page.waitForEvent('download', { timeout: 60000 });
  await tap(form.locator('button'));
  const file = await (await download).path();
  await form.locator('.status', { hasText: 'Backup downloaded' }).waitFor();

  // later that day the parent says no to the tablet and takes its website rule away
  await cli('deny', dev.mac);
  await cli('remove-dns-rule', 'games.test', dev.mac);
  await online(dev, false);
  await screenSaysBoth(dev, 'Not allowed on this network');

  page.once('dialog', (dialog) => dialog.accept());
  const restore = page.locator('#backup-restore');
  await restore.locator('input[name=file]').setInputFiles(file);
  await restore.locator('input[name=passphrase]').fill(PASSPHRASE);
  await tap(restore.locator('button'));
  await page.waitForFunction(() => {
    const s = document.querySelector('#backup-restore');
    return s && (/every setting is in force/.test(s.querySelector('.status').textContent) ||
                 s.querySelector('.error').textContent);
  }, null, { timeout: 180000 });
  assert.equal(await restore.locator('.error').innerText(), '');
  assert.match(await restore.locator('.status').innerText(), /^Restored the backup/);
  await screenshot(page, 'day-10-restored');

  // in force when it says so: the tablet is online at once, its rule is back
  assert.equal((await home.call({ op: 'fetch', dev: dev.name, max_time: 5 })).success, true);
  const answer = await home.call({ op: 'dig', dev: dev.name, name: 'games.test' });
  assert.ok(!answer.answers.some((a) => a.startsWith('203.0.113.')), `games.test after the restore: ${JSON.stringify(answer)}`);
  await board();
  await label(page, dev.mac).filter({ hasText: TABLET }).waitFor();
  assert.equal(await page.locator(`#zone-permitted .label[data-mac="${dev.mac}"]`).count(), 1);
  await screenshot(page, 'day-11-board-after-restore');
});

test('evening: the webhook and the MQTT subscriber heard every step worth hearing, in words', { timeout: 120000 }, async () => {
  const tablet = day.tablet, laptop = day.laptop;
  // what the household wants to hear about today, in the order it happened: [kind, device,
  // the title's words, the detail's words]
  const steps = [
    ['device-joining', tablet.mac, /asks to join the home network\.$/, /Let it in or turn it away/],
    ['alert-usage-limit', tablet.mac, new RegExp(`^${TABLET} has used up its allowance\\.$`),
     /today's allowance \([\d.]+ MB of 2 MB\)\. Its internet is off/],
    ['alert-usage-80', '', /^The household has used 80% of its data\.$/, /80% of its data for this billing period \([\d.]+ MB of [\d.]+ MB\)/],
    ['alert-usage-limit', tablet.mac, new RegExp(`^${TABLET} has used up its allowance\\.$`),
     /MB\)\. Its internet is slowed to 1 Mbit\/s, back to full speed/],
    ['device-joining', laptop.mac, /asks to join the home network\.$/, /Let it in or turn it away/],
  ];
  const heard = async () => {
    const hooks = (await home.call({ op: 'received' })).requests;
    const mqtt = (await home.call({ op: 'mqtt_received' })).messages.map((m) => JSON.parse(m.payload));
    return { hooks, mqtt };
  };
  const find = (list, [kind, mac, title, detail], from) => list.findIndex((n, i) =>
    i >= from && n.kind === kind && (n.mac || '') === mac && title.test(n.title) && detail.test(n.detail));
  const matched = [];
  const inOrder = (list) => {
    let at = 0;
    for (const step of steps) {
      const i = find(list, step, at);
      if (i < 0) return `${step[0]} of ${step[1] || 'the household'}`;
      matched.push(list[i]);
      at = i + 1;
    }
    return '';
  };
  let got;
  await until(async () => {
    got = await heard();
    matched.length = 0;
    return !inOrder(got.hooks.map((r) => r.body)) && !inOrder(got.mqtt);
  }, 'every step at the webhook and on MQTT', 60000, 1000).catch((err) => {
    throw new Error(`${err.message}: the webhook misses ${inOrder(got.hooks.map((r) => r.body)) || 'nothing'}, ` +
                    `MQTT misses ${inOrder(got.mqtt) || 'nothing'}; heard ${JSON.stringify(got.mqtt.map((n) => n.title))}`);
  });
  assert.ok(got.hooks.every((r) => r.signature_ok), 'every webhook delivery signed with the secret shown in Settings');
  // each in words: whole sentences, names (no MAC address), units (no raw byte counts)
  assert.equal(matched.length, 2 * steps.length);
  for (const n of matched) {
    for (const text of [n.title, n.detail]) {
      assert.match(text, /[.!]$/, `a whole sentence: ${text}`);
      assert.doesNotMatch(text, /([0-9a-f]{2}:){5}[0-9a-f]{2}/i, `a MAC in words meant for the household: ${text}`);
      assert.doesNotMatch(text, /\d{5,} ?(bytes|B)\b/, `raw bytes: ${text}`);
    }
  }
  console.error(`heard at the webhook: ${got.hooks.length}, on MQTT: ${got.mqtt.length}`);
});
