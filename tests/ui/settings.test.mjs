// The notification settings page in Debian's Chromium against a real emulated
// home: add a webhook pointing at a receiver in the emulated internet, its secret shown
// once; "Send a test notification" reaches the receiver, signed with that secret, and the
// delivery log on the page shows it; an invalid URL shows the API's error and adds nothing;
// MQTT and WAN status are shown; a webhook can be removed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { login, screenshot, useBoard } from './lib.mjs';

let home, browser, page;

useBoard({
  controller: { components: ['dhcp', 'routing', 'notify', 'wanwatch'] },
  mqtt: { host: '127.0.0.1', username: 'homework' },
}, (h, b, p) => { home = h; browser = b; page = p; });

// Other emulated homes on this machine add and remove host interfaces; Chromium may then
// abort a page load or a request with ERR_NETWORK_CHANGED (or land on chrome-error://).
// That is the test bench, not the page: the steps that only get us to the page are retried.
async function navigate(fn, tries = 3) {
  for (let i = 1; ; i++) {
    try { return await fn(); } catch (e) {
      if (i >= tries) throw e;
      console.error(`retrying a navigation after: ${String(e.message).split('\n')[0]}`);
    }
  }
}

async function waitFor(what, fn, timeout = 60000) {
  const end = Date.now() + timeout;
  for (;;) {
    const got = await fn();
    if (got) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('webhook added on the page gets the test notification; the log shows it', { timeout: 300000 }, async () => {
  const { url } = await home.call({ op: 'start_receiver', port: 8097 });
  // (a retried login starts logged out again: lib's login() expects the login form)
  await navigate(async () => { await page.context().clearCookies(); await login(page, home.info.url, home.info.password); });
  assert.equal(await page.locator('#settings-link').getAttribute('href'), 'settings.html');
  await navigate(async () => {
    if (page.url().endsWith('settings.html')) await page.reload();
    else await page.locator('#settings-link').click();
    await page.locator('#settings').waitFor({ state: 'visible' });
  });
  await page.locator('#webhooks td.empty', { hasText: 'No webhooks yet.' }).waitFor();

  // Bad input: the API's message, nothing added.
  await page.locator('#webhook-add input[name=url]').fill('ftp://example.net/x');
  await page.locator('#webhook-add button[type=submit]').click();
  await page.locator('#webhooks .error', { hasText: 'url must be http:// or https:// with a host' }).waitFor();
  assert.equal(await page.locator('#webhooks tbody tr[data-id]').count(), 0);
  const listed = JSON.parse((await home.call({ op: 'cli', args: ['--json', 'webhooks'] })).stdout);
  assert.deepEqual(listed, []);
  await screenshot(page, 'settings-01-invalid-url');

  // A real one: the secret is on the page once, and it is the one the receiver needs.
  await page.locator('#webhook-add input[name=url]').fill(url);
  await page.locator('#webhook-add button[type=submit]').click();
  await page.locator('#webhook-secret').waitFor({ state: 'visible' });
  const secret = (await page.locator('#webhook-secret .value').innerText()).trim();
  assert.ok(secret.length >= 32);
  await page.locator('#webhooks tbody tr[data-id] td.url', { hasText: url }).waitFor();
  assert.equal(await page.locator('#webhooks .error').innerText(), '');
  await home.call({ op: 'receiver_secret', secret });
  await screenshot(page, 'settings-02-secret-once');
  await page.locator('#webhook-secret .dismiss').click();
  assert.equal(await page.locator('#webhook-secret .value').innerText(), '');

  await page.locator('#test .send-test').click();
  const sent = await page.locator('#test .status', { hasText: 'sent.' }).innerText();
  const id = Number(/#(\d+)/.exec(sent)[1]);
  const got = await waitFor('the test notification at the receiver', async () => {
    const { requests } = await home.call({ op: 'received' });
    return requests.find((r) => r.body.id === id);
  });
  assert.equal(got.body.test, true);
  assert.equal(got.body.kind, 'test');
  assert.equal(got.signature_ok, true, 'signed with the secret shown on the page');
  const row = page.locator(`#deliveries tbody tr.ok[data-notification="${id}"]`);
  await row.waitFor();
  assert.match(await row.innerText(), /test/);
  assert.match(await row.innerText(), /200 ok/);
  await screenshot(page, 'settings-03-delivered');

  // What the API says about MQTT (read-only) and the WAN watch; never a password.
  await page.locator('#mqtt dd', { hasText: '127.0.0.1:1883' }).waitFor();
  assert.match(await page.locator('#mqtt').innerText(), /homework/);
  await page.locator('#wan dd', { hasText: "the router's internet port (wan0) is connected" }).waitFor();
  assert.match(await page.locator('#wan').innerText(), /Interface\s+wan0/);

  // Remove it (after confirming).
  page.once('dialog', (d) => d.accept());
  await page.locator('#webhooks tbody tr[data-id] .remove').click();
  await page.locator('#webhooks td.empty', { hasText: 'No webhooks yet.' }).waitFor();
  const after = JSON.parse((await home.call({ op: 'cli', args: ['--json', 'webhooks'] })).stdout);
  assert.deepEqual(after, []);
});
