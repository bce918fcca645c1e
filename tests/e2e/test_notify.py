"""End to end (issue 19): a device asking to join becomes a notification that the real
controller POSTs to a webhook receiver in the emulated internet; the receiver checks the
HMAC signature, answers 500 first and 200 next; the retry and the delivery log show it."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from homelab import WEB_ADDR, Home
from homelab.routing import wait_until

PORT = 8099
# Appends one JSON line per request: the status it answered and whether the signature
# (HMAC-SHA256 over the body with the secret in argv[2]'s file) was right.
RECEIVER = r"""
import hashlib, hmac, json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
addr, secret_file, out = sys.argv[1], sys.argv[2], sys.argv[3]
answers = [500]
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        secret = open(secret_file).read().strip().encode()
        good = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        ok = hmac.compare_digest(good, self.headers.get("X-Homework-Signature", ""))
        status = answers.pop(0) if answers else 200
        with open(out, "a") as f:
            f.write(json.dumps({"status": status, "signature_ok": ok, "body": json.loads(body)}) + "\n")
        self.send_response(status)
        self.end_headers()
    def log_message(self, *a):
        pass
HTTPServer((addr, %d), H).serve_forever()
""" % PORT


@pytest.fixture(scope="module")
def home():
    from conftest import _can_run_home
    why = _can_run_home()
    if why:
        pytest.skip(why)
    config = {"controller": {"components": ["dhcp", "routing", "notify"]},
              "notify": {"webhook_backoff": 1}}
    with Home(config=config) as h:
        yield h


def cli_json(home, *args):
    out = home.homework("--json", *args)
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)


def test_new_device_is_posted_signed_and_retried(home):
    secret_file = home.dir / "webhook-secret"
    received = home.dir / "webhook-received.jsonl"
    secret_file.write_text("")
    home.internet_popen([sys.executable, "-c", RECEIVER, WEB_ADDR, str(secret_file), str(received)],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: home.internet(["ss", "-Hltn", f"sport = :{PORT}"]).stdout.strip(), 10, "receiver listening")
    hook = cli_json(home, "webhook-add", f"http://{WEB_ADDR}:{PORT}/homework")
    secret_file.write_text(hook["secret"])
    assert all("secret" not in h for h in cli_json(home, "webhooks"))

    dev = home.add_device()
    dev.start_dhcp("udhcpc")
    dev.wait_for_ipv4(20)

    def lines():
        return [json.loads(ln) for ln in received.read_text().splitlines()] if received.exists() else []
    wait_until(lambda: len(lines()) >= 2, 20, "the webhook delivered after a retry")
    first, second = lines()[:2]
    assert (first["status"], second["status"]) == (500, 200)
    assert first["signature_ok"] and second["signature_ok"]
    assert second["body"]["kind"] == "device-joining" and second["body"]["mac"] == dev.mac
    log = cli_json(home, "webhook-deliveries")
    mine = [(d["attempt"], d["status"], d["ok"]) for d in log if d["notification"] == second["body"]["id"]]
    assert mine == [(2, "200", True), (1, "500", False)]
    listed = cli_json(home, "notifications")
    assert listed["unread"] >= 1 and listed["notifications"][0]["mac"] == dev.mac


def test_a_wrong_secret_fails_the_receivers_check(home):
    """The receiver's check is real: a body signed with another secret does not pass."""
    received = home.dir / "webhook-received.jsonl"
    before = len(received.read_text().splitlines())
    (home.dir / "webhook-secret").write_text("not-the-secret")
    cli_json(home, "notify-test")
    wait_until(lambda: len(received.read_text().splitlines()) > before, 20, "the test notification")
    last = json.loads(received.read_text().splitlines()[-1])
    assert last["body"]["test"] is True and not last["signature_ok"]
