"""End to end: devices in device namespaces say what they are, the way real ones do, and
the router's view of each (the CLI's and the API's, the board's label) shows the guess
with its reasons, never a decision; the household's correction survives a restart.

The real clients are Debian 12's own (dhclient with Debian's /etc/dhcp/dhclient.conf,
BusyBox udhcpc, dhcpcd, systemd-networkd), so their fingerprints are the real ones; the
other devices are imitated with scapy (tests/homelab/imitate.py) sending the options
recorded from real devices by the sources the catalog cites (fingerbank, Google's
wifi_taxonomy, AOSP's DHCP client, the makers' default host names)."""
from __future__ import annotations

import json
import time

import pytest

from homelab import LAN6_SITE, REPO, Home
from homelab.routing import wait_until

IMITATE = str(REPO / "tests" / "homelab" / "imitate.py")
COMPONENTS = ["dhcp", "routing", "identify"]


@pytest.fixture(scope="module")
def home():
    from conftest import emulated_home
    yield from emulated_home({"controller": {"components": COMPONENTS},
                              "ipv6": {"enabled": True, "prefix": LAN6_SITE}})


def identity(home: Home, mac: str) -> dict:
    return home.control("identity", mac=mac)


def wait_for_label(home: Home, mac: str, want: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    seen: dict = {}
    while time.monotonic() < deadline:
        try:
            seen = identity(home, mac)
        except RuntimeError:          # not seen yet
            seen = {}
        if seen.get("label") == want:
            return seen
        time.sleep(0.2)
    raise AssertionError(f"{mac}: wanted {want!r}, the router says {seen}")


def imitate(dev, kind: str, spec: dict, count: int = 2) -> None:
    from homelab import _python
    out = dev.run([_python(), IMITATE, dev.ifname, kind, json.dumps(spec), str(count)], timeout=60)
    assert "sent" in out.stdout, out


# What real devices send in their DISCOVER (option code -> value), in the order they send it.
IMITATED = [
    ("Windows 11", "00:15:5d:01:02:03",
     {"61": [1, 0, 21, 93, 1, 2, 3], "57": [5, 220], "12": "DESKTOP-4K2J7QF", "60": "MSFT 5.0",
      "55": [1, 3, 6, 15, 31, 33, 43, 44, 46, 47, 119, 121, 249, 252]},
     "laptop", "Windows PC (Windows 10 or 11)"),
    ("Android 14", "6e:3f:a1:22:33:44",
     {"61": [1, 0x6e, 0x3f, 0xa1, 0x22, 0x33, 0x44], "57": [5, 220], "60": "android-dhcp-14",
      "55": [1, 3, 6, 15, 26, 28, 51, 58, 59, 43, 114, 108]},
     "phone", "Android phone (Android 14)"),
    ("iPhone", "5a:2b:3c:4d:5e:6f",
     {"55": [1, 121, 3, 6, 15, 108, 114, 119, 252], "57": [5, 220],
      "61": [1, 0x5a, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f], "51": [0, 0x76, 0xa7, 0], "12": "Toms-iPhone"},
     "phone", "iPhone (iOS 15 or later)"),
    ("macOS", "3c:22:fb:10:20:30",
     {"55": [1, 121, 3, 6, 15, 108, 114, 119, 252, 95, 44, 46], "57": [5, 220],
      "61": [1, 0x3c, 0x22, 0xfb, 0x10, 0x20, 0x30], "12": "Annas-MacBook-Air"},
     "laptop", "Mac (macOS 12 or later)"),
    ("Brother printer", "3c:2a:f4:e1:b7:d9",
     {"61": [1, 0x3c, 0x2a, 0xf4, 0xe1, 0xb7, 0xd9], "12": "BRW3C2AF4E1B7D9",
      "55": [6, 3, 1, 15, 66, 67, 13, 44, 2, 42, 12]},
     "printer", "Brother printer"),
    ("ESP8266", "5c:cf:7f:3a:4f:1c", {"55": [1, 3, 28, 6], "12": "ESP_3A4F1C", "57": [2, 64]},
     "IoT", "ESP8266 smart-home device"),
    ("PlayStation 5", "bc:33:29:7c:2e:9a", {"12": "PS5-7C2E9A", "55": [1, 3, 15, 6], "57": [5, 220]},
     "console", "PlayStation 5"),
]


@pytest.mark.parametrize("what, mac, options, type_, label", IMITATED, ids=[i[0] for i in IMITATED])
def test_an_imitated_device_gets_its_type_and_label_and_stays_pending(home: Home, what, mac, options, type_, label):
    dev = home.add_device(mac=mac)
    imitate(dev, "dhcp4", options)
    seen = wait_for_label(home, mac, label)
    assert seen["type"] == type_ and seen["why"], seen
    assert home.control("identity", mac=mac)["evidence"]["prl"] == ",".join(str(c) for c in options["55"])
    # a guess never decides: it is still asking to join
    [view] = [d for d in json.loads(home.homework("--json", "devices").stdout) if d["mac"] == mac]
    assert view["state"] == "pending" and view["identity"]["label"] == label


def test_the_board_learns_what_a_new_device_is_from_its_one_discover_without_being_asked(home: Home):
    """The DISCOVER's handler only hands the options over; identify's timer reads them and
    the device's view (the board's list: `homework devices`, never the `identity` command,
    which reads at once) gets the guess though the device said nothing more."""
    dev = home.add_device(mac="5c:cf:7f:3a:4f:2d")
    imitate(dev, "dhcp4", {"55": [1, 3, 28, 6], "12": "ESP_3A4F2D", "57": [2, 64]}, count=1)

    def guessed() -> str:
        views = [d for d in json.loads(home.homework("--json", "devices").stdout) if d["mac"] == dev.mac]
        return (views[0].get("identity") or {}).get("label", "") if views else ""
    assert wait_until(guessed, 30, "the device's view to carry its guess") == "ESP8266 smart-home device"


def test_malformed_options_are_read_bounded_and_the_router_still_answers(home: Home):
    """A request list of every code there is, a vendor class of control bytes and a user
    class (77) of garbage: the router takes the device as any other asking to join, what it keeps
    of them is bounded and printable, and a device after it is served as ever."""
    dev = home.add_device(mac="02:66:00:00:00:77")
    imitate(dev, "dhcp4", {"55": list(range(1, 256)), "60": list(range(1, 32)) * 8, "77": list(range(255)),
                           "12": "odd-one"}, count=1)

    def kept() -> dict:
        try:
            return identity(home, dev.mac)["evidence"]
        except RuntimeError:          # not seen yet
            return {}
    evidence = wait_until(lambda: kept().get("hostname") and kept(), 30, "what the odd device said")
    assert evidence["hostname"] == "odd-one" and evidence["prl"].startswith("1,2,3,4,5,"), evidence
    assert "vendor" not in evidence and all(len(v) <= 256 and v.isprintable() for v in evidence.values()), evidence
    after = home.add_device()
    after.start_udhcpc()
    after.wait_for_ipv4(30)


REAL = [
    ("dhclient", "Linux computer"),
    ("udhcpc", "Linux device (BusyBox)"),
    ("dhcpcd", "Linux computer"),
    ("networkd", "Linux computer"),
]


@pytest.mark.parametrize("client, label", REAL, ids=[r[0] for r in REAL])
def test_a_real_linux_client_is_recognised_by_what_it_sends(home: Home, client, label):
    dev = home.add_device(name=f"id-{client}"[:15])
    if client == "dhclient":      # Debian's own configuration: its real request list
        dev._start_client("dhclient", f"exec dhclient -4 -d -v -cf /etc/dhcp/dhclient.conf "
                                      f"-lf '{dev.dir}/l' -pf '{dev.dir}/p' -sf /bin/true {dev.ifname}")
    elif client == "networkd":
        dev.start_networkd()
    else:
        dev.start_dhcp(client)
    seen = wait_for_label(home, dev.mac, label, timeout=60)
    assert seen["os"] == "Linux", seen
    print(client, json.dumps(seen["evidence"]))


def test_dhcpv6_says_windows_and_the_router_hears_it(home: Home):
    dev = home.add_device(name="win6", mac="02:15:5d:0a:0b:0c")
    # A lease first (DHCPv6 is heard from leased devices), from a udhcpc that says nothing of
    # itself over DHCPv4 (no request list, no vendor class): what it is comes over DHCPv6.
    dev.start_udhcpc(extra=["-o", "-V", "''"])
    dev.wait_for_ipv4(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not dev.ipv6_link_local():
        time.sleep(0.2)
    imitate(dev, "dhcp6", {"duid": "000100012c3a4b5c00155d0a0b0c", "oro": [23, 24, 17],
                           "vendor": [311, "MSFT 5.0"]}, count=3)
    deadline = time.monotonic() + 30
    evidence: dict = {}
    while time.monotonic() < deadline and evidence.get("v6_vendor") != "311:MSFT 5.0":
        evidence = identity(home, dev.mac)["evidence"]
        time.sleep(0.2)
    assert evidence.get("v6_vendor") == "311:MSFT 5.0" and evidence.get("v6_duid") == "1", evidence
    assert evidence.get("v6_oro") == "23,24,17"
    seen = identity(home, dev.mac)
    assert seen["label"] == "Windows device" and seen["why"] == ["says it is Windows over DHCPv6"], seen


def test_the_households_correction_survives_a_restart(home: Home):
    mac = "bc:33:29:00:00:42"
    dev = home.add_device(mac=mac)
    imitate(dev, "dhcp4", {"12": "PS5-000042", "55": [1, 3, 15, 6]})
    wait_for_label(home, mac, "PlayStation 5")
    out = home.homework("--json", "identify-correct", mac, "--type", "console", "--label", "Sam's PlayStation")
    assert out.returncode == 0, out.stderr + out.stdout
    assert json.loads(out.stdout)["label"] == "Sam's PlayStation"
    home.restart_controller()
    seen = identity(home, mac)
    assert (seen["label"], seen["corrected"], seen["guess"]["label"]) == ("Sam's PlayStation", True, "PlayStation 5")


ANNOUNCE = str(REPO / "tests" / "homelab" / "announce_tool.py")


def quiet_device(home: Home, name: str):
    """A device that holds a (pending) lease but says nothing of itself over DHCP (udhcpc
    with no request list and no vendor class): what it is comes from what it announces."""
    dev = home.add_device(name=name)
    dev.start_udhcpc(extra=["-o", "-V", "''"])
    dev.wait_for_ipv4(30)
    return dev


ANNOUNCED = [
    ("printer", ["mdns", "_ipp._tcp", "Brother HL-L2350DW", "ty=Brother HL-L2350DW series", "usb_MFG=Brother"],
     "printer", "Brother printer", "offers printing over mDNS"),
    ("speaker", ["mdns", "_googlecast._tcp", "Google-Home-Mini-4a3f", "md=Google Home Mini", "fn=Kitchen speaker"],
     "speaker", "Google Home Mini speaker", "announces a Google Cast speaker, Google Home Mini, over mDNS"),
    ("sonos", ["ssdp", "Linux UPnP/1.0 Sonos/70.3-88200 (ZPS27)"],
     "speaker", "Sonos speaker", "announces a Sonos speaker over SSDP"),
]


@pytest.mark.parametrize("name, how, type_, label, why", ANNOUNCED, ids=[a[0] for a in ANNOUNCED])
def test_a_pending_device_is_recognised_by_what_it_announces(home: Home, name, how, type_, label, why):
    from homelab import _python
    dev = quiet_device(home, f"ann-{name}")
    assert identity(home, dev.mac)["label"] == ""           # DHCP said nothing of it
    if how[0] == "mdns":
        address = dev.ipv4()[0]
        proc = dev.popen([_python(), ANNOUNCE, "mdns", how[1], how[2], address, "20", *how[3:]])
    else:
        proc = dev.popen([_python(), ANNOUNCE, "ssdp", how[1], "6"])
    try:
        seen = wait_for_label(home, dev.mac, label, timeout=30)
    finally:
        proc.terminate()
        proc.wait(10)
    assert seen["type"] == type_ and why in seen["why"], seen
    [view] = [d for d in json.loads(home.homework("--json", "devices").stdout) if d["mac"] == dev.mac]
    assert view["state"] == "pending"


def test_a_pending_device_announcing_over_ipv6_only_is_recognised(home: Home):
    """mDNS over IPv6 ([ff02::fb]:5353 from the device's link-local address), with
    python3-zeroconf told to use IPv6 only: the router hears it (a packet socket: the frame's
    MAC names the device) and the label follows; the device stays pending."""
    from homelab import _python
    dev = quiet_device(home, "ann-v6")
    link_local = wait_until(dev.ipv6_link_local, 30, "a link-local address")
    proc = dev.popen(["env", "MDNS_V6=1", _python(), ANNOUNCE, "mdns", "_ipp._tcp", "Office printer v6",
                      link_local, "20", "ty=Brother HL-L2350DW series", "usb_MFG=Brother"])
    try:
        seen = wait_for_label(home, dev.mac, "Brother printer", timeout=30)
    finally:
        proc.terminate()
        proc.wait(10)
    assert seen["type"] == "printer" and "offers printing over mDNS" in seen["why"], seen
    assert identity(home, dev.mac)["evidence"]["mdns_name"] == "Office printer v6"
    [view] = [d for d in json.loads(home.homework("--json", "devices").stdout) if d["mac"] == dev.mac]
    assert view["state"] == "pending"


IPHONE = IMITATED[2][2]


def test_a_phone_back_with_a_new_private_address_is_recognised_and_joined_only_by_a_tap(home: Home):
    first = home.add_device(name="toms-phone", mac="5a:2b:3c:4d:5e:01")
    imitate(first, "dhcp4", IPHONE)
    wait_for_label(home, first.mac, "iPhone (iOS 15 or later)")
    for args in (("name", first.mac, "--name", "Tom's iPhone", "--owner", "Tom", "--type", "phone"),
                 ("permit", first.mac)):
        out = home.homework(*args)
        assert out.returncode == 0, out.stderr + out.stdout
    # the same phone on another day: a new private address, the same options and host name
    back = home.add_device(name="toms-phone-2", mac="6e:11:22:33:44:02")
    imitate(back, "dhcp4", IPHONE)
    deadline = time.monotonic() + 30
    seen: dict = {}
    while time.monotonic() < deadline and not seen.get("looks_like"):
        try:
            seen = identity(home, back.mac)
        except RuntimeError:
            pass
        time.sleep(0.2)
    assert seen.get("looks_like", {}).get("text") == "looks like Tom's iPhone with a new private address", seen
    status = json.loads(home.homework("--json", "status", back.mac).stdout)
    assert status["state"] == "pending"                       # nothing by itself
    out = home.homework("--json", "identify-join", back.mac, first.mac)
    assert out.returncode == 0, out.stderr + out.stdout
    devices = {d["mac"]: d for d in json.loads(home.homework("--json", "devices").stdout)}
    assert devices[back.mac]["state"] == "permitted" and devices[back.mac]["name"] == "Tom's iPhone"
    assert first.mac not in devices


@pytest.mark.parametrize("family", ["ipv4", "ipv6"])
def test_with_the_router_listening_mdns_still_reaches_permitted_devices_and_not_a_pending_one(home: Home, family):
    """The router hears every device's mDNS (announcement flows, router groups, and over
    IPv6 its packet socket): that must not change who else hears it."""
    import subprocess
    from homelab import _python
    tool = str(REPO / "tests" / "homelab" / "mdns_tool.py")
    run = [_python(), tool] if family == "ipv4" else ["env", "MDNS_V6=1", _python(), tool]
    a, b = quiet_device(home, f"mdns-a{family[-1]}"), quiet_device(home, f"mdns-b{family[-1]}")
    pending = quiet_device(home, f"mdns-p{family[-1]}")
    for dev in (a, b):
        assert home.homework("permit", dev.mac).returncode == 0
    deadline = time.monotonic() + 60          # the permitted lease (their next renewal, 15 s at most)
    while time.monotonic() < deadline and not all(dev.lease() and dev.lease().lease_time > 30 for dev in (a, b)):
        time.sleep(0.5)
    address = b.ipv4()[0] if family == "ipv4" else wait_until(b.ipv6_link_local, 30, "b's link-local address")
    publisher = b.popen([*run, "publish", f"printer-{family}", address, "40"], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True)
    outsider = pending.popen([*run, "browse", "15"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    try:
        found = a.run([*run, "browse", "12"], timeout=60).stdout
        assert f"found printer-{family}._homework._tcp.local." in found, found
        out, _ = outsider.communicate(timeout=30)
        assert "found" not in out, out
    finally:
        publisher.kill()
    # and the router heard b's announcement, as evidence about b
    assert "_homework._tcp" in identity(home, b.mac)["evidence"].get("mdns_services", "")
