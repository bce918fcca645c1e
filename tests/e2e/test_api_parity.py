"""API parity and pre-approval end to end: real OVS, the real controller
with the dns component, homework-dnsd, the router's dnsmasq, lighttpd with the ws.v1 API
over HTTPS; udhcpc, TCP connects and dig in device namespaces.

A MAC permitted before it is first seen reaches the emulated internet on its first lease
with no approval step; a pre-blacklisted one gets no address at all; group decisions are
all or nothing; household rules and allow-list mode work through the API; a POST without
a body gets JSON from lighttpd and from the API, never HTML."""
from __future__ import annotations

import http.client
import json
import os
import ssl
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from homelab import REPO, WEB_ADDR
from homelab.dns import WEB
from homelab.routing import can_connect, wait_until
from homelab.web import API_PORT, api

PRE_PERMITTED = "02:68:77:17:05:01"     # outside the homelab's own 02:68:77:01:xx:xx range
PRE_BLACKLISTED = "02:68:77:17:05:02"


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns"))


@pytest.fixture(autouse=True)
def fresh(lab):
    yield
    if not lab.home.controller_running():
        lab.home.start_controller()
    lab.home.remove_devices()
    for rule in api(lab.home.web, "GET", "dns-rules/household").json()["rules"]:
        api(lab.home.web, "POST", f"remove-dns-rule/household/{rule['domain']}")


def web_ok(dev) -> bool:
    return can_connect(dev, WEB_ADDR, 80, timeout=0.5)


def state(lab, mac) -> str | None:
    r = api(lab.home.web, "GET", f"status/{mac}")
    return r.json()["state"] if r.status_code == 200 else None


def test_a_pre_permitted_mac_reaches_the_internet_on_its_first_lease(lab):
    web = lab.home.web
    r = api(web, "POST", f"permit/{PRE_PERMITTED}")
    assert r.status_code == 200, r.text
    assert r.json()["state"] == "permitted" and r.json()["lease"] is None
    board = {d["mac"]: d for d in api(web, "GET", "devices").json()}
    assert board[PRE_PERMITTED]["last_seen"] == 0            # known, not yet seen
    dev = lab.home.add_device("console", mac=PRE_PERMITTED)
    dev.start_udhcpc()
    dev.wait_for_ipv4(20)
    # No approval step: forwarding flows come with the first lease.
    wait_until(lambda: web_ok(dev), 5, "the pre-permitted device reaches the internet")
    seen = api(web, "GET", f"status/{PRE_PERMITTED}").json()
    assert seen["state"] == "permitted" and seen["last_seen"] > 0 and seen["lease"]["ip"] == dev.ipv4()[0]


def test_a_pre_blacklisted_mac_gets_nothing(lab):
    web = lab.home.web
    out = lab.homework("blacklist", PRE_BLACKLISTED)                  # the CLI, this time
    assert out == f"{PRE_BLACKLISTED} is now blacklisted (pre-approved: not seen yet)\n"
    dev = lab.home.add_device("troublemaker", mac=PRE_BLACKLISTED)
    dev.start_udhcpc()
    with pytest.raises(TimeoutError):
        dev.wait_for_ipv4(6)
    assert api(web, "GET", f"status/{PRE_BLACKLISTED}").json()["lease"] is None
    assert api(web, "POST", "permit/01:00:5e:00:00:01").status_code == 400    # multicast: never a device


def test_group_permit_of_three_pending_devices(lab):
    devs = [lab.join(f"g{i}", permit=False) for i in range(3)]
    assert not any(web_ok(d) for d in devs)
    r = api(lab.home.web, "POST", "permit", json={"macs": [d.mac for d in devs]})
    assert r.status_code == 200, r.text
    assert [x["state"] for x in r.json()["results"]] == ["permitted"] * 3
    for d in devs:
        wait_until(lambda d=d: web_ok(d), 5, f"{d.name} reaches the internet")


def test_a_group_with_one_bad_mac_is_400_and_changes_nothing(lab):
    devs = [lab.join(f"b{i}", permit=False) for i in range(2)]
    macs = [devs[0].mac, "02:68:77:zz:00:01", devs[1].mac]
    r = api(lab.home.web, "POST", "blacklist", json={"macs": macs})
    assert r.status_code == 400 and "02:68:77:zz:00:01" in r.json()["error"]
    assert [state(lab, d.mac) for d in devs] == ["pending", "pending"]


def test_household_deny_through_the_api_blocks_a_name_for_every_device(lab):
    a, b = lab.join("ha"), lab.join("hb")
    assert lab.dig(a, "example.com") == ("NOERROR", [WEB])
    r = api(lab.home.web, "POST", "deny-dns/household/example.com")
    assert r.status_code == 200 and r.json()["owner"] == "household", r.text
    assert lab.dig(a, "example.com")[0] == "NXDOMAIN" and lab.dig(b, "www.example.com")[0] == "NXDOMAIN"
    rules = api(lab.home.web, "GET", "dns-rules/household").json()["rules"]
    assert [(x["domain"], x["action"]) for x in rules] == [("example.com", "deny")]
    assert api(lab.home.web, "POST", "remove-dns-rule/household/example.com").status_code == 200
    assert lab.dig(a, "example.com") == ("NOERROR", [WEB])


def test_allowlist_mode_through_the_api(lab):
    kid, other = lab.join("kid"), lab.join("other")
    web = lab.home.web
    r = api(web, "POST", f"dns-mode/{kid.mac}", json={"mode": "allowlist"})
    assert r.status_code == 200 and r.json()["mode"] == "allowlist", r.text
    assert api(web, "POST", f"permit-dns/{kid.mac}/school.test").status_code == 200
    assert lab.dig(kid, "www.school.test")[0] == "NOERROR"
    assert lab.dig(kid, "example.com")[0] == "NXDOMAIN"
    assert lab.dig(other, "example.com")[0] == "NOERROR"
    assert api(web, "GET", f"dns-mode/{kid.mac}").json()["mode"] == "allowlist"
    assert api(web, "POST", f"dns-mode/{kid.mac}", json={"mode": "nope"}).status_code == 400
    assert api(web, "POST", f"dns-mode/{kid.mac}", json={"mode": "denylist"}).status_code == 200
    assert lab.dig(kid, "example.com")[0] == "NOERROR"


def curl_post(web, path, *extra) -> tuple[int, str, str]:
    """(status, content type, body) of curl -X POST from the host through lighttpd."""
    out = subprocess.run(["curl", "-s", "--cacert", str(web.ca), "-X", "POST", "-o", "-",
                          "-w", "\n%{http_code} %{content_type}", "-H", f"Authorization: Bearer {web.token('admin')}",
                          *extra, f"{web.url}ws.v1/{path}"], capture_output=True, text=True, timeout=20).stdout
    body, _, tail = out.rpartition("\n")
    code, _, ctype = tail.partition(" ")
    return int(code), ctype, body


def raw_post(web, path, headers) -> tuple[int, str, int]:
    """(status, content type, the JSON body's status) of a POST sent by http.client with
    exactly these headers and no body."""
    host = urlsplit(web.url).hostname
    conn = http.client.HTTPSConnection(host, context=ssl.create_default_context(cafile=str(web.ca)), timeout=10)
    try:
        conn.putrequest("POST", f"/ws.v1/{path}")
        for name, value in {**headers, **web.bearer("admin")}.items():
            conn.putheader(name, value)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type"), json.loads(r.read())["status"]
    finally:
        conn.close()


def test_a_post_without_a_body_gets_json_never_html(lab):
    dev = lab.join("nobody", permit=False)
    web = lab.home.web
    # curl -X POST with no data sends no Content-Length: lighttpd answers 411 itself, in JSON.
    code, ctype, body = curl_post(web, f"permit/{dev.mac}")
    assert (code, ctype) == (411, "application/json"), body
    assert json.loads(body)["status"] == 411 and "Content-Length" in json.loads(body)["error"]
    assert state(lab, dev.mac) == "pending"
    # An empty body with Content-Length: 0 reaches the API: routes that need no body work...
    code, ctype, body = curl_post(web, f"permit/{dev.mac}", "-d", "")
    assert (code, ctype) == (200, "application/json") and json.loads(body)["state"] == "permitted", body
    # ...and those that need one say so in JSON.
    for path in ("deny", f"dns-mode/{dev.mac}", "tokens"):
        code, ctype, body = curl_post(web, path, "-d", "")
        assert (code, ctype) == (400, "application/json"), (path, body)
        assert json.loads(body)["status"] == 400
    # Without curl: no Content-Length at all (411), or one beyond server.max-request-size (4 MiB,
    # for backups: 413, refused on the headers alone): lighttpd's own answers, in JSON.
    assert raw_post(web, "deny", {}) == (411, "application/json", 411)
    assert raw_post(web, "deny", {"Content-Length": str(8 * 1024 * 1024)}) == (413, "application/json", 413)


def test_lighttpd_errors_are_json_while_the_controller_is_down(lab):
    lab.home.stop_controller()
    try:
        r = api(lab.home.web, "GET", "status")
        assert r.status_code in (502, 503, 504) and r.headers["Content-Type"] == "application/json"
        assert "controller" in r.json()["error"]
    finally:
        lab.home.start_controller()
    wait_until(lambda: api(lab.home.web, "GET", "status").status_code == 200, 20, "the API is back")


@pytest.mark.timeout(1500)      # a loaded machine: as test_api's schemathesis run (a bound, not a measure)
def test_openapi_conformance_of_these_routes_with_schemathesis(lab, tmp_path):
    """test_api.py runs schemathesis without the dns component; here it is loaded, so the
    DNS rule routes (household included), dns-mode and the group forms are checked against
    openapi.json (last in the file: it leaves random rules and decisions behind)."""
    st = Path(REPO) / ".venv" / "bin" / "st"
    assert st.exists(), "schemathesis not installed (make deps)"
    base = f"http://127.0.0.1:{API_PORT}/ws.v1"
    routes = r"^/ws\.v1/(permit-dns|deny-dns|remove-dns-rule|dns-rules|dns-mode|permit$|deny$|blacklist$|forget$)"
    proc = subprocess.run(
        ["ip", "netns", "exec", lab.home.router_ns, str(st), "run", f"{base}/openapi.json", "--base-url", base,
         "-H", f"Authorization: Bearer {lab.home.web.token('admin')}", "--checks", "all",
         "--include-path-regex", routes, "--hypothesis-max-examples", "25", "--hypothesis-seed", "17", "--no-color"],
        capture_output=True, text=True, timeout=1200, env=dict(os.environ, PYTHONWARNINGS="ignore"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
    assert "POST /ws.v1/dns-mode/{mac}" in proc.stdout and "POST /ws.v1/permit " in proc.stdout
