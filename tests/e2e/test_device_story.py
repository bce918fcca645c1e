"""Each device's story end to end: real OVS, the controller with dns, hwdb_sync, usage and
identify, homework-dnsd, hwdbd, lighttpd. A device in a namespace joins, is let in through
the API, looks names up over IPv4 and over IPv6, and is plugged into another port; its story
(GET /ws.v1/identity/{mac}/story, and its CSV download) tells each of those."""
from __future__ import annotations

import csv
import io
import ipaddress
import json

import pytest

from homelab import LAN6_SITE
from homelab.web import api
from homelab.routing import wait_until


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns", "hwdb_sync", "usage", "identify"), hwdb=True,
                           extra={"ipv6": {"enabled": True, "prefix": LAN6_SITE}})


def router6(lab, dev) -> str:
    def prefix():
        [view] = [d for d in json.loads(lab.homework("--json", "devices")) if d["mac"] == dev.mac]
        return view.get("ipv6_prefix")
    net = ipaddress.IPv6Network(wait_until(prefix, 30, f"{dev.name}'s /64"))
    wait_until(dev.ipv6_global, 30, f"{dev.name}: a SLAAC address")
    return str(net.network_address + 1)


def story(lab, mac):
    r = api(lab.home.web, "GET", f"identity/{mac}/story", role="read-only")
    assert r.status_code == 200, r.text
    return r.json()


def test_a_devices_story_tells_its_decision_names_and_ports_over_ipv4_and_ipv6(lab):
    home = lab.home
    dev = lab.join("storylaptop", permit=False)
    first_port = dev.port_name
    r = api(home.web, "POST", f"permit/{dev.mac}")
    assert r.status_code == 200, r.text
    # names over IPv4 and over IPv6, each to the router's own address of that family
    wait_until(lambda: lab.dig(dev, "example.com")[0] == "NOERROR", 30, "example.com over IPv4")
    r6 = router6(lab, dev)
    wait_until(lambda: lab.dig(dev, "www.example.com", "AAAA", server=r6)[0] not in ("TIMEOUT", "REFUSED"), 30,
             "www.example.com over IPv6")

    # plugged into another port: the same MAC, a new cable
    mac = dev.mac
    home.remove_device(dev)
    moved = home.add_device("storylaptop2", mac=mac)
    moved.start_udhcpc()
    moved.wait_for_ipv4(30)
    assert moved.port_name != first_port

    def told():
        s = story(lab, mac)
        names = {n["name"] for n in s["names_today"] or []}
        return s if len(s["places"]) >= 2 and {"example.com", "www.example.com"} <= names else None
    s = wait_until(told, 60, "the story's second port and both names")
    kinds = [e["kind"] for e in s["events"]]
    assert kinds[0] == "first seen" and "decision" in kinds
    assert s["approved"]["by"] == "an API token (admin)"
    assert s["places"][:2] == [f"port {first_port} of the router", f"port {moved.port_name} of the router"]
    words = [e["words"] for e in s["events"]]
    assert "Let in by an API token (admin)." in words
    assert f"Moved to port {moved.port_name} of the router." in words
    assert s["usage"]["today"]["words"].endswith(" up")
    assert mac not in " ".join(words)              # names, not MACs

    # the CSV download: one row per event, then the day's names and the usage
    r = api(home.web, "GET", f"identity/{mac}/story?format=csv", role="read-only")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/csv")
    assert r.headers["Content-Disposition"].startswith("attachment; filename=")
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows[0] == ["time", "kind", "words"]
    assert [row[1] for row in rows[1:len(s["events"]) + 1]] == kinds
    assert any(row[1] == "names today" and "example.com" in row[2] for row in rows)
    assert any(row[1] == "usage this week" for row in rows)
    # a bad format is refused in words; a device the router never saw is a 404
    bad = api(home.web, "GET", f"identity/{mac}/story?format=xml", role="read-only")
    assert bad.status_code == 400 and "format must be one of json, csv (or left out), not 'xml'" in bad.json()["error"]
    assert api(home.web, "GET", "identity/02:00:00:99:99:99/story", role="read-only").status_code == 404
