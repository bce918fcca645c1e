"""A restore applies everything before it says "restored": the emulated home runs what
the image runs. A blocklist in the backup that the router no longer has is fetched before
the restore writes anything, so its names block from the restored controller's first
moment (never "names file missing", never a minute of blocked names resolving); the CLI
says "restored" only once the restarted controller has every setting in force; and a
device the backup has as pending that had been permitted meanwhile loses its hour: a
pending device's lease, its DNS answered by the router over IPv4 and IPv6. Real udhcpc,
SLAAC and dig."""
from __future__ import annotations

import ipaddress
import json
import time

import pytest

from homelab.dns import BLOCKED_WEB, NEW_ADDR
from homelab.routing import wait_until

PASSPHRASE = "correct horse backup staple"
LIST = "# the household's list\n0.0.0.0 ads.new.test\n0.0.0.0 tracker.new.test\n"


@pytest.fixture(scope="module")
def home():
    from conftest import emulated_home
    yield from emulated_home()


def cli(home, *args) -> str:
    res = home.homework(*args, timeout=300)
    assert res.returncode == 0, f"homework {' '.join(args)}: {res.stderr}{res.stdout}"
    return res.stdout


def status(home, mac) -> dict:
    return json.loads(cli(home, "--json", "status", mac))


def join(home, name, permit: bool):
    dev = home.add_device(name)
    dev.start_udhcpc()
    dev.wait_for_ipv4(30)
    if permit:
        cli(home, "permit", dev.mac)
        dev.renew()
        dev.wait_for_lease(20, pred=lambda lease: lease.lease_time == 3600)
    return dev


def test_a_restore_is_in_force_when_it_says_restored(home, tmp_path):
    lab = home.dns
    (lab.dir / "blocked-www" / "household.txt").write_text(LIST)
    url = f"http://{BLOCKED_WEB}/household.txt"
    parent = join(home, "parent", permit=True)
    kid = join(home, "kid", permit=False)               # pending when the backup is made
    cli(home, "blocklist", "add", url)
    assert lab.dig(parent, "ads.new.test")[0] == "NXDOMAIN"
    secret = tmp_path / "passphrase"
    secret.write_text(PASSPHRASE + "\n")
    backup = tmp_path / "homework.hwbak"
    cli(home, "backup", "--out", str(backup), "--passphrase-file", str(secret))

    # meanwhile: the list is dropped (its names file goes), the kid is let in for an hour
    [listed] = json.loads(cli(home, "--json", "blocklist", "list"))["blocklists"]
    cli(home, "blocklist", "remove", str(listed["id"]))
    assert lab.dig(parent, "ads.new.test") == ("NOERROR", [NEW_ADDR])
    cli(home, "permit", kid.mac)
    kid.renew()
    kid.wait_for_lease(20, pred=lambda lease: lease.lease_time == 3600)
    wait_until(lambda: status(home, kid.mac)["lease"]["expires"] - time.time() > 3000, 10,
               "the router's side of the kid's hour")

    out = cli(home, "restore", str(backup), "--passphrase-file", str(secret))
    # "restored" only now, and at once: the list's names block, not "missing", not fetching
    assert "every setting is in force" in out, out
    assert lab.dig(parent, "ads.new.test")[0] == "NXDOMAIN"
    assert lab.dig(parent, "tracker.new.test")[0] == "NXDOMAIN"
    [again] = json.loads(cli(home, "--json", "blocklist", "list"))["blocklists"]
    assert again["url"] == url and again["error"] == "" and again["rules"] == 2, again
    restored = json.loads(cli(home, "--json", "restore-status"))["restore"]
    assert restored["applied"] is True and restored["problems"] == []
    # the kid is pending again, with a pending device's lease, not the hour
    seen = status(home, kid.mac)
    assert seen["state"] == "pending" and seen["lease"]["expires"] - time.time() <= 31, seen["lease"]
    wait_until(lambda: lab.dig(kid, "example.com", timeout=1, tries=1) == ("NOERROR", [kid.default_gateway()]), 15,
               "the kid's DNS answered by the router")
    # over IPv6 too: the router's address in its /64 answers every name with itself
    r6 = str(ipaddress.IPv6Network(seen["ipv6_prefix"]).network_address + 1)
    wait_until(kid.ipv6_global, 20, "the kid's SLAAC address")
    wait_until(lambda: lab.dig(kid, "example.com", "AAAA", server=r6, timeout=1, tries=1) == ("NOERROR", [r6]), 15,
               "the kid's DNS over IPv6 answered by the router")
    # and it is not stranded when our side of that lease ends, though it still believes in
    # its hour: its next packets bring it back, pending
    ends = seen["lease"]["expires"]
    wait_until(lambda: time.time() > ends + 3, 60, "our side of its pending lease to end")
    wait_until(lambda: lab.dig(kid, "example.com", timeout=1, tries=1) == ("NOERROR", [kid.default_gateway()]),
               15, "the kid answered as pending after its lease ended on our side")
    assert status(home, kid.mac)["state"] == "pending"
