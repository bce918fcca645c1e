// What a device is, on the Guest Board: the label of a device asking to join shows the
// router's guess with an icon, the panel says why, and the household's correction replaces
// the guess on the label. The device is imitated with scapy from its own namespace (the
// options a Brother printer sends: its request list and default node name).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { label, login, screenshot, useBoard } from './lib.mjs';

let home, page;
useBoard({}, (h, _b, p) => { home = h; page = p; });

const PRINTER = {
  61: [1, 0x3c, 0x2a, 0xf4, 0xe1, 0xb7, 0xd9], 12: 'BRW3C2AF4E1B7D9',
  55: [6, 3, 1, 15, 66, 67, 13, 44, 2, 42, 12],
};

test('a printer asking to join is labelled as one; the panel says why; a correction replaces the guess',
  { timeout: 240000 }, async () => {
    await login(page, home.info.url, home.info.password);
    const dev = await home.call({ op: 'add_device', name: 'printer', mac: '3c:2a:f4:e1:b7:d9' });
    await home.call({ op: 'imitate', dev: dev.name, kind: 'dhcp4', spec: PRINTER });
    const guess = label(page, dev.mac).locator('.guess');
    await guess.filter({ hasText: 'looks like Brother printer' }).waitFor({ timeout: 30000 });
    assert.match(await guess.innerText(), /^🖨 looks like Brother printer$/);
    await screenshot(page, 'identify-01-label');

    await label(page, dev.mac).click();
    const panel = page.locator('#panel');
    await panel.waitFor({ state: 'visible' });
    const box = panel.locator('.identity');
    await box.locator('.identity-label', { hasText: 'Brother printer' }).waitFor();
    assert.match(await box.locator('.identity-why').innerText(),
      /^Why: has a Brother printer's default name “BRW3C2AF4E1B7D9”; asked for an address as Brother printers do; made by Brother\.$/);
    assert.match(await box.locator('.identity-level').innerText(), /fairly sure/);
    // a guess decides nothing: still asking
    const status = await home.call({ op: 'cli', args: ['--json', 'status', dev.mac] });
    assert.equal(JSON.parse(status.stdout).state, 'pending');
    await screenshot(page, 'identify-02-panel');

    await box.locator('select[name=type]').selectOption('printer');
    await box.locator('input[name=label]').fill('Office printer');
    await box.locator('button[type=submit]').click();
    await box.locator('.identity-level', { hasText: 'as the household said' }).waitFor();
    await guess.filter({ hasText: '🖨 Office printer' }).waitFor({ timeout: 10000 });
    const stored = await home.call({ op: 'cli', args: ['--json', 'identity', dev.mac] });
    assert.equal(JSON.parse(stored.stdout).label, 'Office printer');

    // a bad correction is refused in words, and nothing changes
    await box.locator('input[name=label]').fill('x'.repeat(60) + 'y');
    await box.locator('input[name=label]').evaluate((el) => { el.removeAttribute('maxlength'); el.value = 'x'.repeat(61); });
    await box.locator('button[type=submit]').click();
    await box.locator('.identity-error', { hasText: 'at most 60' }).waitFor();

    await box.locator('.identity-clear').click();
    await guess.filter({ hasText: 'looks like Brother printer' }).waitFor({ timeout: 10000 });
    await screenshot(page, 'identify-03-corrected-and-back');
    await page.locator('#panel .close').click();
    await page.locator('#panel').waitFor({ state: 'hidden' });
  });

const IPHONE = { 55: [1, 121, 3, 6, 15, 108, 114, 119, 252], 57: [5, 220], 12: 'Toms-iPhone' };

test('a phone back with a new private address is labelled as the one let in before; only the tap joins them',
  { timeout: 240000 }, async () => {
    const first = await home.call({ op: 'add_device', name: 'toms-phone', mac: '5a:2b:3c:4d:5e:11' });
    await home.call({ op: 'imitate', dev: first.name, kind: 'dhcp4', spec: IPHONE });
    await label(page, first.mac).locator('.guess').filter({ hasText: 'iPhone' }).waitFor({ timeout: 30000 });
    for (const args of [['name', first.mac, '--name', "Tom's iPhone", '--owner', 'Tom', '--type', 'phone'],
      ['permit', first.mac]]) {
      const res = await home.call({ op: 'cli', args });
      assert.equal(res.rc, 0, res.stderr);
    }
    const back = await home.call({ op: 'add_device', name: 'toms-phone-2', mac: '6e:11:22:33:44:12' });
    await home.call({ op: 'imitate', dev: back.name, kind: 'dhcp4', spec: IPHONE });
    const guess = label(page, back.mac).locator('.guess');
    await guess.filter({ hasText: "looks like Tom's iPhone with a new private address" }).waitFor({ timeout: 30000 });
    const before = await home.call({ op: 'cli', args: ['--json', 'status', back.mac] });
    assert.equal(JSON.parse(before.stdout).state, 'pending');     // nothing by itself
    await screenshot(page, 'identify-04-looks-like');

    await label(page, back.mac).click();
    const box = page.locator('#panel .identity');
    const join = box.locator('button.identity-join', { hasText: "Let it in as Tom's iPhone" });
    await join.waitFor();
    await join.click();
    await page.waitForFunction(async (mac) => {
      const r = await fetch(`/ws.v1/devices/${mac}`, { credentials: 'same-origin' });
      return r.ok && (await r.json()).state === 'permitted';
    }, back.mac, { timeout: 20000, polling: 500 });
    const after = JSON.parse((await home.call({ op: 'cli', args: ['--json', 'status', back.mac] })).stdout);
    assert.equal(after.state, 'permitted');
    const devices = JSON.parse((await home.call({ op: 'cli', args: ['--json', 'devices'] })).stdout);
    assert.ok(!devices.some((d) => d.mac === first.mac), 'the old address is forgotten: one device');
    assert.equal(devices.find((d) => d.mac === back.mac).name, "Tom's iPhone");
    await screenshot(page, 'identify-05-joined');
  });

test("a device's story in its panel: who let it in, where it joined; the story downloads as CSV",
  { timeout: 240000 }, async () => {
    if (!(await page.locator('#board').isVisible().catch(() => false))) {
      await login(page, home.info.url, home.info.password);      // run alone (--test-name-pattern)
    }
    if (await page.locator('#panel').isVisible()) {          // left open by the test before
      await page.locator('#panel .close').click();
      await page.locator('#panel').waitFor({ state: 'hidden' });
    }
    const dev = await home.call({ op: 'add_device', name: 'storybook' });
    await home.call({ op: 'start_dhcp', dev: dev.name, client: 'udhcpc' });
    await home.call({ op: 'wait_ipv4', dev: dev.name, timeout: 30 });
    const res = await home.call({ op: 'cli', args: ['permit', dev.mac] });
    assert.equal(res.rc, 0, res.stderr);
    const port = JSON.parse((await home.call({ op: 'cli', args: ['--json', 'devices'] })).stdout)
      .find((d) => d.mac === dev.mac).attached.port;

    await label(page, dev.mac).click();
    const box = page.locator('#panel .story');
    await box.waitFor({ state: 'visible' });
    // the panel asks for the story when it opens: close and open again until it tells the decision
    const letIn = box.locator('.story-facts li', { hasText: "Let in:" });
    for (let i = 0; !/by the router's command line/.test(await letIn.innerText().catch(() => '')); i++) {
      if (i >= 60) assert.fail(`the story never said who let it in: ${await box.innerText()}`);
      await page.locator('#panel .close').click();
      await page.waitForTimeout(500);
      await label(page, dev.mac).click();
      await box.waitFor({ state: 'visible' });
      await box.locator('.story-facts li').first().waitFor({ timeout: 10000 });
    }
    assert.match(await box.locator('.story-facts li', { hasText: 'Where:' }).innerText(),
      new RegExp(`^Where: port ${port} of the router$`));
    assert.match(await box.locator('.story-facts li', { hasText: 'First seen:' }).innerText(), /^First seen: \S/);
    const words = await box.locator('.story-events .story-words').allInnerTexts();
    assert.ok(words.includes("Let in by the router's command line."), words.join(' | '));
    assert.ok(words.includes(`Joined on port ${port} of the router.`), words.join(' | '));
    assert.ok(words.some((w) => /^First seen, asking to join/.test(w)), words.join(' | '));
    await screenshot(page, 'identify-06-story');

    const download = page.waitForEvent('download', { timeout: 30000 });
    await box.locator('a.story-csv').click();
    const got = await download;
    assert.match(got.suggestedFilename(), /-story\.csv$/);
    const { readFile } = await import('node:fs/promises');
    const text = await readFile(await got.path(), 'utf8');
    const rows = text.trim().split('\r\n');
    assert.equal(rows[0], 'time,kind,words');
    assert.ok(rows.some((r) => /^\d{4}-\d\d-\d\d \d\d:\d\d,decision,Let in by the router's command line\.$/.test(r)), text);
    assert.ok(rows.some((r) => r.endsWith(`,place,Joined on port ${port} of the router.`)), text);
    assert.ok(!text.includes(dev.mac), 'names, not MACs');
    await page.locator('#panel .close').click();
    await page.locator('#panel').waitFor({ state: 'hidden' });
  });
