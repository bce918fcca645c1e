// The Guest Board's "storage full" banner in Debian's Chromium, driven by
// tests/e2e/test_api_limits.py (not a test on its own): it runs the home and fills its disk.
//   node ui/storage_banner.mjs URL PASSWORD [VIEWER-NETNS]
// then reads commands on stdin, one per line, and answers one JSON line each:
//   shown  -> waits for the banner, answers {"text": "..."}
//   hidden -> waits until it is gone, answers {"hidden": true}
import { createInterface } from 'node:readline';
import { launch, newPage, login } from './lib.mjs';

const [url, password, netns] = process.argv.slice(2);
const browser = await launch(netns);
try {
  const page = await newPage(browser);
  await login(page, url, password);
  console.log(JSON.stringify({ ready: true }));
  const banner = page.locator('#storage-banner');
  for await (const line of createInterface({ input: process.stdin })) {
    const cmd = line.trim();
    try {
      if (cmd === 'shown') {
        await banner.waitFor({ state: 'visible', timeout: 30000 });
        console.log(JSON.stringify({ text: await banner.innerText() }));
      } else if (cmd === 'hidden') {
        await banner.waitFor({ state: 'hidden', timeout: 30000 });
        console.log(JSON.stringify({ hidden: true }));
      } else {
        console.log(JSON.stringify({ error: `unknown command ${cmd}` }));
      }
    } catch (err) {
      console.log(JSON.stringify({ error: String(err.message || err).split('\n')[0] }));
    }
  }
} finally {
  await browser.close();
}
