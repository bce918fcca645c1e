"""End to end: a device asking to join becomes a notification that the real
controller POSTs to a webhook receiver in the emulated internet; the receiver checks the
HMAC signature, answers 500 first and 200 next; the retry and the delivery log show it."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from homelab import ISP6_ADDR, ISP_ADDR, ROUTER_WAN6_ADDR, WAN_IF, WEB_ADDR, Home
from homelab.routing import wait_until

PORT = 8099
WAN_RECEIVER_PORT = 8098
# Appends one JSON line per request: the status it answered and whether the signature
# (HMAC-SHA256 over the body with the secret in argv[2]'s file) was right. argv[4]: the
# port (default PORT); argv[5]: "ok" to answer 200 from the first request on.
RECEIVER = r"""
import hashlib, hmac, json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
addr, secret_file, out = sys.argv[1], sys.argv[2], sys.argv[3]
port = int(sys.argv[4]) if len(sys.argv) > 4 else %d
answers = [] if sys.argv[5:] == ["ok"] else [500]
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
HTTPServer((addr, port), H).serve_forever()
""" % PORT  # noqa: UP031 - a script with braces of its own: a %d is the one substitution


@pytest.fixture(scope="module")
def home():
    config = {"controller": {"components": ["dhcp", "routing", "api", "notify", "wanwatch"]},
              # attempts: a wan-down webhook to the internet can only arrive once the WAN is back
              "notify": {"webhook_backoff": 1, "webhook_attempts": 8},
              "wanwatch": {"interface": WAN_IF, "interval": 1, "down_after": 2, "up_after": 2}}
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
    # what the household reads: whole sentences naming the device by the name it gave, no
    # MAC in the words (the machine fields travel beside them)
    body = second["body"]
    assert body["title"] == f"{dev.name[0].upper()}{dev.name[1:]} asks to join the home network.", body
    assert body["detail"] == "Let it in or turn it away on the Guest Board.", body
    assert dev.mac not in body["title"] + body["detail"]
    log = cli_json(home, "webhook-deliveries")
    mine = [(d["attempt"], d["status"], d["ok"]) for d in log if d["notification"] == second["body"]["id"]]
    assert mine == [(2, "200", True), (1, "answered with an error", False)]     # not the receiver's own words
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


def api_notifications(home, token):
    """GET /ws.v1/notifications from the router itself, as a script with a token would."""
    r = home.router(["curl", "-sf", "--max-time", "5", "-H", f"Authorization: Bearer {token}",
                     "http://127.0.0.1:8080/ws.v1/notifications"], check=False)
    return json.loads(r.stdout)["notifications"] if r.returncode == 0 else []


def restore_wan(home):
    """The link up again and what the kernel dropped with it (routes, the IPv6 address),
    as the ISP's DHCP/RA would bring them back."""
    home.router(["ip", "link", "set", WAN_IF, "up"])
    home.router(["ip", "-6", "addr", "replace", f"{ROUTER_WAN6_ADDR}/64", "dev", WAN_IF, "nodad"])
    home.router(["ip", "route", "replace", "default", "via", ISP_ADDR])
    home.router(["ip", "-6", "route", "replace", "default", "via", ISP6_ADDR, "dev", WAN_IF], check=False)


def test_wan_down_and_up_are_notified(home):
    """The router's WAN veth goes down in its namespace: a wan-down notification in the API;
    back up: wan-up. The webhook receiver sits in the internet, so it gets wan-down by a
    retry once the WAN is back, then wan-up."""
    secret_file = home.dir / "wan-webhook-secret"
    received = home.dir / "wan-webhook-received.jsonl"
    secret_file.write_text("")
    home.internet_popen([sys.executable, "-c", RECEIVER, WEB_ADDR, str(secret_file), str(received),
                         str(WAN_RECEIVER_PORT), "ok"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: home.internet(["ss", "-Hltn", f"sport = :{WAN_RECEIVER_PORT}"]).stdout.strip(), 10,
               "receiver listening")
    hook = cli_json(home, "webhook-add", f"http://{WEB_ADDR}:{WAN_RECEIVER_PORT}/wan")
    secret_file.write_text(hook["secret"])
    token = home.control("token-create", name="e2e wan", role="read-only")["token"]
    wait_until(lambda: home.control("wan-status")["state"] == "up", 20, "the WAN confirmed up")

    def wan_notes():
        return [n for n in api_notifications(home, token) if n["kind"] in ("wan-down", "wan-up")]
    try:
        home.router(["ip", "link", "set", WAN_IF, "down"])
        down = wait_until(lambda: wan_notes(), 20, "a wan-down notification")
        assert [n["kind"] for n in down] == ["wan-down"] and down[0]["mac"] == ""
        assert WAN_IF in down[0]["detail"]
        assert home.control("wan-status")["state"] == "down"
    finally:
        restore_wan(home)
    notes = wait_until(lambda: (lambda ns: ns if len(ns) >= 2 else None)(wan_notes()), 20, "a wan-up notification")
    assert [n["kind"] for n in notes] == ["wan-up", "wan-down"]      # newest first, one of each

    def bodies():
        lines = received.read_text().splitlines() if received.exists() else []
        return [json.loads(ln) for ln in lines]
    wait_until(lambda: {b["body"]["kind"] for b in bodies()} >= {"wan-down", "wan-up"}, 60,
               "wan-down (retried) and wan-up at the webhook receiver")
    assert all(b["signature_ok"] for b in bodies())
    wan_down_id = next(b["body"]["id"] for b in bodies() if b["body"]["kind"] == "wan-down")
    attempts = [d for d in cli_json(home, "webhook-deliveries")
                if d["notification"] == wan_down_id and d["webhook"] == hook["id"]]
    assert attempts[0]["ok"] and len(attempts) > 1 and not any(d["ok"] for d in attempts[1:])
