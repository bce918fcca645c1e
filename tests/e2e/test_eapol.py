"""802.1X end to end: hostapd (wired driver) on a bridge port, wpa_supplicant in
device namespaces, the real controller's EAPOL flows and blacklist."""
from __future__ import annotations

import time

import pytest

from homelab import Home, new_run_id
from homelab.wifi import Hostapd, Supplicant, eapol_config
from homework.pipeline import PRIO_EAPOL_BLACKLIST


@pytest.fixture(scope="module")
def wired():
    run_id = new_run_id()
    config = eapol_config(run_id)
    config["controller"] = {"components": ["dhcp", "routing", "eapol"]}
    with Home(run_id=run_id, config=config) as home:
        yield home, Hostapd(home).start()


def joined(home, name):
    dev = home.add_device(name)
    sup = Supplicant(dev).start()
    assert sup.wait_state("AUTHENTICATED"), sup.status()
    dev.start_udhcpc()
    dev.wait_for_ipv4(20)
    assert home.homework("permit", dev.mac).returncode == 0
    return dev, sup


def wait_whitelisted(home, ap, mac, timeout=10) -> bool:
    """Until neither hostapd's live deny list nor the switch's drop flows name `mac`. The
    command returns once the controller has decided; hostapd hears of it from a worker
    thread a moment later. An EAPOL-Start sent in that moment is ignored, and a wired
    supplicant waits 30 s (startPeriod) before it asks again."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        drops = [f for f in home.dump_flows().splitlines() if f"priority={PRIO_EAPOL_BLACKLIST}," in f]
        if mac not in ap.cli("deny_acl", "SHOW") and not any(mac in f for f in drops):
            return True
        time.sleep(0.1)
    return False


def test_blacklist_stops_the_handshake_and_all_traffic_whitelist_restores(wired):
    home, ap = wired
    dev, sup = joined(home, "laptop")
    other, other_sup = joined(home, "phone")
    gateway = dev.default_gateway()
    assert dev.ping(gateway, timeout=2)

    res = home.homework("blacklist", dev.mac)
    assert res.returncode == 0, res.stderr
    deadline = time.monotonic() + 5
    while dev.mac not in ap.deny_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert dev.mac in ap.deny_file()
    assert dev.mac in ap.cli("deny_acl", "SHOW")
    successes = sup.eap_successes()
    sup.reauthenticate()
    assert not sup.wait_success(successes, timeout=5), "a blacklisted device completed 802.1X"
    assert not dev.ping(gateway, count=2, timeout=1)                 # and no traffic at all
    # the others are not affected
    n = other_sup.eap_successes()
    other_sup.reauthenticate()
    assert other_sup.wait_success(n)
    assert other.ping(other.default_gateway(), timeout=2)

    res = home.homework("whitelist", dev.mac)
    assert res.returncode == 0, res.stderr
    assert wait_whitelisted(home, ap, dev.mac), "the whitelist did not reach hostapd and the switch"
    sup.reauthenticate()
    assert sup.wait_success(successes), sup.status()
    assert sup.wait_state("AUTHENTICATED")
    assert dev.mac not in ap.deny_file()
    assert dev.mac not in ap.cli("deny_acl", "SHOW")


def test_blacklist_survives_a_controller_restart(wired):
    home, ap = wired
    dev, sup = joined(home, "tablet")
    home.homework("blacklist", dev.mac)
    home.restart_controller()
    n = sup.eap_successes()
    sup.reauthenticate()
    assert not sup.wait_success(n, timeout=5)
    home.homework("whitelist", dev.mac)
    assert wait_whitelisted(home, ap, dev.mac), "the whitelist did not reach hostapd and the switch"
    sup.reauthenticate()
    assert sup.wait_success(n)


def test_wrong_password_is_refused(wired):
    home, ap = wired
    dev = home.add_device("intruder")
    sup = Supplicant(dev, password="wrong").start()
    assert not sup.wait_state("AUTHENTICATED", timeout=5)
    assert "EAP-FAILURE" in (sup.dir / "wpa.log").read_text(errors="replace")
