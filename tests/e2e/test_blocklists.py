"""Blocklist subscriptions and safe-search end to end: real OVS, the real
controller with the dns, blocklists and api components, homework-dnsd, the internet's
resolver and web server (the lists are served from there), lighttpd for the ws.v1 API;
dig in device namespaces."""
from __future__ import annotations

import time

import pytest

from homelab.dns import BLOCKED_WEB, NEW_ADDR
from homelab.web import api

HOSTS = "# test hosts list\n127.0.0.1 localhost\n0.0.0.0 ads.new.test\n0.0.0.0 pixel.new.test metrics.new.test\n"
ABP = "[Adblock Plus 2.0]\n! test list\n||tracker.new.test^\nexample.org##.banner\n@@||fine.tracker.new.test^\n"


@pytest.fixture(scope="module")
def lab():
    from conftest import dns_web_lab
    yield from dns_web_lab(("dhcp", "routing", "dns", "blocklists"))


def serve(lab, name: str, text: str) -> str:
    """Put a file on the internet's web server; its URL."""
    (lab.dir / "blocked-www" / name).write_text(text)
    return f"http://{BLOCKED_WEB}/{name}"


def wait_for(check, timeout=5.0, step=0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


def lists(lab) -> dict:
    r = api(lab.home.web, "GET", "blocklists", role="read-only")
    assert r.status_code == 200, r.text
    return {b["url"].rsplit("/", 1)[1]: b for b in r.json()["blocklists"]}


def add(lab, url, **body):
    return api(lab.home.web, "POST", "blocklists", json={"url": url, **body}, timeout=60)


def test_lists_block_rules_win_counts_rise_bad_lists_refused_and_restart_keeps_them(lab):
    home = lab.home
    dev = lab.join("bl1")
    assert lab.dig(dev, "ads.new.test") == ("NOERROR", [NEW_ADDR])             # before: answered
    r = add(lab, serve(lab, "hosts.txt", HOSTS))
    assert r.status_code == 201, r.text
    assert (r.json()["rules"], r.json()["owner"], r.json()["error"]) == (3, "household", "")
    r = add(lab, serve(lab, "abp.txt", ABP))
    assert r.status_code == 201, r.text
    assert (r.json()["rules"], r.json()["skipped"]) == (1, 1)

    assert lab.dig(dev, "ads.new.test")[0] == "NXDOMAIN"
    assert lab.dig(dev, "www.metrics.new.test")[0] == "NXDOMAIN"               # a listed name covers subdomains
    assert lab.dig(dev, "tracker.new.test", "AAAA")[0] == "NXDOMAIN"
    assert lab.dig(dev, "fine.tracker.new.test") == ("NOERROR", [NEW_ADDR])    # the list's own @@ exception
    assert lab.dig(dev, "ok.new.test") == ("NOERROR", [NEW_ADDR])              # unlisted: answered

    # an explicit allow rule beats the lists
    lab.homework("household-permit-dns", "pixel.new.test")
    assert lab.dig(dev, "pixel.new.test") == ("NOERROR", [NEW_ADDR])
    lab.homework("remove-dns-rule", "pixel.new.test")
    assert lab.dig(dev, "pixel.new.test")[0] == "NXDOMAIN"

    # blocked queries are counted per list, and rise
    before = lists(lab)["hosts.txt"]["blocked_queries"]
    assert before >= 3 and lists(lab)["abp.txt"]["blocked_queries"] >= 1
    lab.dig(dev, "ads.new.test")
    assert wait_for(lambda: lists(lab)["hosts.txt"]["blocked_queries"] > before)

    # a URL that 404s, a file that is not a list, a bad URL: 400 with the reason, nothing changes
    for url, why in ((f"http://{BLOCKED_WEB}/missing.txt", "answered with an error"),     # not its own words
                     (serve(lab, "garbage.txt", "<html><body>Welcome to my site</body></html>\n"), "not a blocklist"),
                     ("ftp://example.com/list.txt", "http")):
        r = add(lab, url)
        assert r.status_code == 400 and why in r.json()["error"], r.text
    assert set(lists(lab)) == {"hosts.txt", "abp.txt"}
    r = api(home.web, "POST", "blocklists/1/refresh")
    assert r.status_code == 200 and r.json()["rules"] == 3, r.text
    serve(lab, "hosts.txt", "<html>gone</html>")
    r = api(home.web, "POST", "blocklists/1/refresh", timeout=60)
    assert r.status_code == 400 and "previous names stay" in r.json()["error"], r.text
    assert lab.dig(dev, "ads.new.test")[0] == "NXDOMAIN"
    assert api(home.web, "POST", "blocklists/99/refresh").status_code == 404

    # a restart loads the lists from disk: the internet no longer has them, and they are not fetched
    (lab.dir / "blocked-www" / "hosts.txt").unlink()
    (lab.dir / "blocked-www" / "abp.txt").unlink()
    fetched = {k: v["fetched"] for k, v in lists(lab).items()}
    home.restart_controller()
    assert wait_for(lambda: home.controller_log().count("policy snapshot sent") >= 2, timeout=15)
    assert wait_for(lambda: lab.dig(dev, "ads.new.test")[0] == "NXDOMAIN", timeout=5)
    assert lab.dig(dev, "tracker.new.test")[0] == "NXDOMAIN"
    assert lab.dig(dev, "ok.new.test") == ("NOERROR", [NEW_ADDR])
    assert {k: v["fetched"] for k, v in lists(lab).items()} == fetched

    for list_id in (1, 2):
        assert api(home.web, "POST", f"blocklists/{list_id}/remove").status_code == 200
    assert lab.dig(dev, "ads.new.test") == ("NOERROR", [NEW_ADDR])
    assert "ads.new.test" not in home.homework("blocklist", "list").stdout


def test_an_owner_list_applies_to_that_owners_devices_only(lab):
    kid, parent = lab.join("kid1"), lab.join("parent1")
    r = api(lab.home.web, "POST", f"meta/{kid.mac}", json={"owner": "Kids"})
    assert r.status_code == 200, r.text
    r = add(lab, serve(lab, "kids.txt", "||games.new.test^\n"), owner="Kids")
    assert r.status_code == 201 and r.json()["devices"] == [kid.mac], r.text
    assert lab.dig(kid, "www.games.new.test")[0] == "NXDOMAIN"
    assert lab.dig(parent, "www.games.new.test") == ("NOERROR", [NEW_ADDR])
    api(lab.home.web, "POST", f"blocklists/{r.json()['id']}/remove")


def test_safe_search_answers_with_the_engines_safe_host(lab):
    dev = lab.join("ss1")
    assert lab.dig(dev, "www.google.com") == ("NOERROR", ["203.0.113.91"])
    r = api(lab.home.web, "POST", "dns/safe-search", json={"enabled": True})
    assert r.status_code == 200 and r.json() == {"enabled": True}, r.text
    assert api(lab.home.web, "GET", "dns/safe-search", role="read-only").json() == {"enabled": True}
    assert lab.dig(dev, "www.google.com") == ("NOERROR", ["forcesafesearch.google.com.", "203.0.113.92"])
    assert lab.dig(dev, "www.google.com", tcp=True) == ("NOERROR", ["forcesafesearch.google.com.", "203.0.113.92"])
    assert api(lab.home.web, "POST", "dns/safe-search", json={"enabled": "yes"}).status_code == 400
    lab.homework("safe-search", "off")
    assert lab.dig(dev, "www.google.com") == ("NOERROR", ["203.0.113.91"])
