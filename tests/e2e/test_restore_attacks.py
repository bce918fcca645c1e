"""End to end: a crafted or careless restore cannot break the controller.

A permitted device holding an admin token (it may restore a backup: the household gave
it the token) sends, through lighttpd's HTTPS, over IPv4 and IPv6:
- a backup it signed itself (its own passphrase) with `qos.down_kbit = "²"`: before, it
  passed `isdigit()`, was restored, and the shaper then failed every second;
- a backup whose admin password hash asks scrypt for p=600: before, restored, and one
  wrong login then froze the API for most of a minute;
- 400 KB of nested JSON: before, a 500;
- `/schedules/²/remove`: before, a 500.
Each is now a 400 with a sentence, nothing is restored, and the controller keeps
answering and logs no failure. Real OVS, the controller (qos, schedules, backup), lighttpd."""
from __future__ import annotations

import copy
import ipaddress
import json
from urllib.parse import quote

import pytest

from homelab import LAN6_SITE, Home
from homelab.routing import permitted_device, wait_until
from homelab.web import Web, api, web_home

from homework import migrations
from homework.components.backup.fileformat import pack

PASS = "the intruder's own passphrase"


@pytest.fixture(scope="module")
def home():
    with web_home({"controller": {"components": ["dhcp", "routing", "schedules", "backup", "qos"]},
                   "ipv6": {"enabled": True, "prefix": LAN6_SITE}}) as h:
        h.web = Web(h).start()
        yield h


def post(dev, url: str, token: str, body: bytes) -> tuple[str, str]:
    path = dev.dir / "body.json"
    path.write_bytes(body)
    out = dev.run(["curl", "-sk", "-m", "60", "-o", "-", "-w", "\n%{http_code}", "-X", "POST",
                   "-H", f"Authorization: Bearer {token}", "-H", "Content-Type: application/json",
                   "--data-binary", f"@{path}", url], check=False, timeout=90).stdout
    text, _, code = out.rpartition("\n")
    return code, text


def bases(home: Home, dev) -> list[str]:
    [view] = [d for d in json.loads(home.homework("--json", "devices").stdout) if d["mac"] == dev.mac]
    wait_until(dev.ipv6_global, 20, f"{dev.name}: a SLAAC address")
    router6 = ipaddress.IPv6Network(view["ipv6_prefix"]).network_address + 1
    return [f"https://{dev.default_gateway()}/ws.v1", f"https://[{router6}]/ws.v1"]


def test_crafted_restores_are_refused_and_the_controller_keeps_working(home: Home):
    intruder = permitted_device(home, "restorer")
    token = home.web.token("admin")
    doc = api(home.web, "POST", "backup", json={"passphrase": PASS}).json()
    log_before = len(home.controller_log())

    def signed(settings_extra=None, secrets_extra=None) -> bytes:
        settings = copy.deepcopy(doc["settings"])
        for table, rows in (settings_extra or {}).items():
            settings[table] = settings.get(table, []) + rows
        crafted = pack(settings, secrets_extra or {}, PASS, schema=migrations.LATEST, software="crafted")
        return json.dumps({"passphrase": PASS, "backup": crafted}).encode()

    good_hash = home.router(["sqlite3", str(home.dir / "state" / "state.db"),
                             "SELECT password_hash FROM api_admin"], check=False).stdout.strip().split("$")
    costly = "$".join(["scrypt", "16384", "8", "600", *good_hash[4:]]) if len(good_hash) == 6 else \
        "scrypt$16384$8$600$c2FsdHNhbHRzYWx0c2FsdA==$ZGlnZXN0ZGlnZXN0ZGlnZXN0ZGlnZXN0"
    attacks = [
        ("restore", signed({"settings": [{"key": "qos.down_kbit", "value": "²"}]}), "qos.down_kbit"),
        ("restore", signed(secrets_extra={"api_admin": [{"id": 1, "password_hash": costly, "changed": 0}]}),
         "password_hash"),
        ("restore", b"[" * 200_000 + b"]" * 200_000, "deeper"),
        (f"schedules/{quote('²')}/remove", b"", "schedule id"),
    ]
    for base in bases(home, intruder):
        for path, body, words in attacks:
            code, text = post(intruder, f"{base}/{path}", token, body)
            assert code == "400" and words in text, (base, path, code, text[:300])
    # nothing was restored, and the controller is well: it answers, and nothing failed in it
    assert api(home.web, "GET", "status", role="read-only").status_code == 200
    qos = api(home.web, "GET", "qos", role="read-only").json()
    assert "²" not in json.dumps(qos)
    code, _ = post(intruder, f"{bases(home, intruder)[0]}/login", "", json.dumps({"password": "wrong"}).encode())
    assert code == "401"
    new_log = home.controller_log()[log_before:]
    assert "Traceback" not in new_log and " failed" not in new_log.replace("failed Guest Board login", ""), \
        new_log[-3000:]
