"""The hardware report: its parsers on recorded tool outputs (tests/unit/data/hardware), and
the whole report over a sysfs tree laid out like an N100 mini PC's (two Realtek RTL8125B
ports, one without its firmware; an Intel I226-V; an Intel AX200 that cannot be an access
point on 5 GHz; a MediaTek MT7921 whose firmware is missing; an RTL8126 this kernel has no
driver for), with the tools' outputs replayed."""
import json
import os
from pathlib import Path

import pytest

from homework.hardware import cache, collect, parse, report

DATA = Path(__file__).parent / "data" / "hardware"


def text(name):
    return (DATA / name).read_text()


# -- parsers -----------------------------------------------------------------------------------
def test_intel_ax200_is_an_access_point_on_2_4_ghz_only():
    [phy] = parse.iw_list(text("iw-list-intel-ax200.txt"))
    assert phy.name == "phy0" and phy.ap_mode
    assert "P2P-device" in phy.modes and "AP/VLAN" in phy.modes
    bands = {b.name: b for b in phy.bands}
    assert list(bands) == ["2.4 GHz", "5 GHz"]
    assert (bands["2.4 GHz"].channels, bands["2.4 GHz"].ap_channels) == (13, 13)     # channel 14 disabled
    assert (bands["5 GHz"].channels, bands["5 GHz"].ap_channels) == (25, 0)          # every one "no IR"
    assert phy.max_ap_stations is None
    assert phy.ap_combinations.startswith("#{ managed } <= 1, #{ AP, P2P-client, P2P-GO } <= 1")


def test_mediatek_and_qualcomm_access_points():
    [mt] = parse.iw_list(text("iw-list-mediatek-mt7921.txt"))
    five = [b for b in mt.bands if b.name == "5 GHz"][0]
    assert mt.ap_mode and five.ap and five.channels == 20 and five.radar_channels == 16
    [qca] = parse.iw_list(text("iw-list-qualcomm-qca9984.txt"))
    assert [b.name for b in qca.bands] == ["5 GHz"] and qca.max_ap_stations == 512
    [wcn] = parse.iw_list(text("iw-list-qualcomm-wcn6855.txt"))
    assert not wcn.ap_mode and [b.name for b in wcn.bands] == ["2.4 GHz", "5 GHz", "6 GHz"]
    assert wcn.modes == ["managed", "monitor"]      # the software modes list is not its modes


def test_hwsim_radios_recorded_in_the_vm():
    phys = parse.iw_list(text("qemu-iw-list-hwsim.txt"))
    assert sorted(p.name for p in phys) == ["phy0", "phy1", "phy2"]
    for phy in phys:
        assert phy.ap_mode and [b.name for b in phy.bands][:2] == ["2.4 GHz", "5 GHz"]
        assert {b.name: b.ap for b in phy.bands}["2.4 GHz"]
        assert phy.max_ap_stations is None          # hwsim states no limit


def test_qemu_nics_recorded_in_the_vm():
    """The boot test's NIC models: QEMU's rtl8139 is driven by 8139cp (C+ mode), a 100 Mb/s
    port; e1000e reports the NVM's version as its firmware and links at 1 Gb/s."""
    assert parse.ethtool_info(text("qemu-ethtool-i-8139cp.txt"))["driver"] == "8139cp"
    e1000e = parse.ethtool_info(text("qemu-ethtool-i-e1000e.txt"))
    assert (e1000e["driver"], e1000e["firmware-version"], e1000e["bus-info"]) == ("e1000e", "2.1-0", "0000:00:03.0")
    assert parse.ethtool_link(text("qemu-ethtool-8139cp.txt")) == {"max_speed": 100, "speed": 100, "link": True}
    assert parse.ethtool_link(text("qemu-ethtool-e1000e.txt")) == {"max_speed": 1000, "speed": 1000, "link": True}


def test_iw_list_garbage_and_empty():
    assert parse.iw_list("") == []
    assert parse.iw_list("command failed: No such file or directory (-2)\n") == []
    [phy] = parse.iw_list("Wiphy phy7\n\tSupported interface modes:\n\t\t * AP\n\tBand 1:\n\t\tFrequencies:\n"
                          "\t\t\t* nonsense MHz\n\t\t\t* 2412 MHz [1] (20.0 dBm)\n")
    assert phy.ap_mode and phy.bands[0].ap_channels == 1      # iw before 5.9 printed whole MHz


def test_ethtool_info_and_link():
    info = parse.ethtool_info(text("ethtool-i-r8169-fw.txt"))
    assert (info["driver"], info["firmware-version"], info["bus-info"]) == \
        ("r8169", "rtl8125b-2_0.0.2 07/13/20", "0000:02:00.0")
    assert parse.ethtool_info(text("ethtool-i-r8169-nofw.txt"))["firmware-version"] == ""
    assert parse.ethtool_link(text("ethtool-igc-1g.txt")) == {"max_speed": 2500, "speed": 1000, "link": True}
    assert parse.ethtool_link(text("ethtool-nolink.txt")) == {"max_speed": 2500, "speed": None, "link": False}
    assert parse.ethtool_link("") == {"max_speed": None, "speed": None, "link": None}


def test_firmware_lines_per_device():
    lines = parse.firmware_lines(text("dmesg-n100-box.txt"))
    by_bus = {}
    for ln in lines:
        by_bus.setdefault(ln.bus, []).append(ln)
    assert [ln.loaded for ln in by_bus["0000:02:00.0"]] == [True]
    assert {ln.file for ln in by_bus["0000:03:00.0"]} == {"rtl_nic/rtl8125b-2.fw"}
    assert not any(ln.loaded for ln in by_bus["0000:03:00.0"])
    iwl = by_bus["0000:04:00.0"]
    assert [ln.loaded for ln in iwl] == [False, False, False, False, True, True]     # tries, then 72 loads
    assert {ln.file for ln in by_bus["0000:05:00.0"]} == {"mediatek/WIFI_MT7961_patch_mcu_1_2_hdr.bin"}
    assert "0000:01:00.0" not in by_bus       # igc needs none


def test_pci_ids_names():
    ids = text("pci-ids-excerpt.txt")
    assert parse.id_name(ids, "10ec", "8125") == ("Realtek Semiconductor Co., Ltd.", "RTL8125 2.5GbE Controller")
    assert parse.id_name(ids, "8086", "2723") == ("Intel Corporation", "Wi-Fi 6 AX200")
    assert parse.id_name(ids, "8086", "0084") == ("Intel Corporation", "")      # a subsystem line is not a device
    assert parse.id_name(ids, "dead", "beef") == ("", "")


# -- the whole report over a sysfs tree ----------------------------------------------------------
class Box:
    """A sysfs tree like the kernel's: devices under /sys/devices, class and bus links to them."""

    def __init__(self, root: Path):
        self.sys = root / "sys"
        for d in ("class/net", "class/ieee80211", "bus/pci/devices", "bus/pci/drivers", "bus/usb/devices"):
            (self.sys / d).mkdir(parents=True, exist_ok=True)
        self.outputs = {("iw", "list"): "", ("dmesg",): "", ("iw", "reg", "get"): "global\ncountry GB: DFS-ETSI\n",
                        ("uname", "-r"): "6.1.0-28-amd64\n"}

    def pci(self, bus_id, vendor, device, cls, driver=None):
        node = self.sys / "devices" / "pci0000:00" / bus_id
        node.mkdir(parents=True)
        for name, value in (("vendor", vendor), ("device", device), ("class", cls)):
            (node / name).write_text(value + "\n")
        os.symlink(os.path.relpath(self.sys / "bus" / "pci", node), node / "subsystem")
        if driver:
            (self.sys / "bus/pci/drivers" / driver).mkdir(exist_ok=True)
            os.symlink(os.path.relpath(self.sys / "bus/pci/drivers" / driver, node), node / "driver")
        os.symlink(os.path.relpath(node, self.sys / "bus/pci/devices"), self.sys / "bus/pci/devices" / bus_id)
        return node

    def port(self, node, name, mac, carrier=True, speed=1000, ethtool_i="", ethtool=""):
        d = node / "net" / name
        d.mkdir(parents=True)
        for fname, value in (("address", mac), ("type", "1"), ("operstate", "up" if carrier else "down"),
                             ("carrier", "1" if carrier else "0"), ("speed", str(speed if carrier else -1))):
            (d / fname).write_text(value + "\n")
        os.symlink(os.path.relpath(node, d), d / "device")
        os.symlink(os.path.relpath(d, self.sys / "class/net"), self.sys / "class/net" / name)
        self.outputs[("ethtool", "-i", name)] = text(ethtool_i) if ethtool_i else ""
        self.outputs[("ethtool", name)] = text(ethtool) if ethtool else ""

    def radio(self, node, phy, iface):
        p = node / "ieee80211" / phy
        p.mkdir(parents=True)
        (p / "name").write_text(phy + "\n")
        os.symlink(os.path.relpath(node, p), p / "device")
        os.symlink(os.path.relpath(p, self.sys / "class/ieee80211"), self.sys / "class/ieee80211" / phy)
        d = node / "net" / iface
        d.mkdir(parents=True)
        (d / "type").write_text("1\n")
        (d / "address").write_text("a0:b1:c2:d3:e4:f5\n")
        os.symlink(os.path.relpath(p, d), d / "phy80211")
        os.symlink(os.path.relpath(node, d), d / "device")
        os.symlink(os.path.relpath(d, self.sys / "class/net"), self.sys / "class/net" / iface)

    def run(self, argv):
        if argv[:2] == ["modinfo", "-F"]:
            return {"r8169": "rtl_nic/rtl8125b-2.fw\n", "iwlwifi": "iwlwifi-cc-a0-72.ucode\n",
                    "mt7921e": "mediatek/WIFI_RAM_CODE_MT7961_1.bin\n"}.get(argv[-1], "")
        return self.outputs.get(tuple(argv), "")

    def sources(self):
        return collect.Sources(sys=self.sys, run=self.run, pci_ids=(str(DATA / "pci-ids-excerpt.txt"),),
                               usb_ids=())


@pytest.fixture
def n100(tmp_path):
    box = Box(tmp_path)
    box.port(box.pci("0000:01:00.0", "0x8086", "0x125c", "0x020000", "igc"), "enp1s0", "a8:b8:e0:00:00:01",
             ethtool_i="ethtool-i-igc.txt", ethtool="ethtool-igc-1g.txt")
    box.port(box.pci("0000:02:00.0", "0x10ec", "0x8125", "0x020000", "r8169"), "enp2s0", "00:e0:4c:68:01:02",
             speed=100, ethtool_i="ethtool-i-r8169-fw.txt", ethtool="ethtool-r8169-100m.txt")
    box.port(box.pci("0000:03:00.0", "0x10ec", "0x8125", "0x020000", "r8169"), "enp3s0", "00:e0:4c:68:01:03",
             carrier=False, ethtool_i="ethtool-i-r8169-nofw.txt", ethtool="ethtool-nolink.txt")
    box.radio(box.pci("0000:04:00.0", "0x8086", "0x2723", "0x028000", "iwlwifi"), "phy0", "wlp4s0")
    box.outputs[("ethtool", "-i", "wlp4s0")] = text("ethtool-i-iwlwifi.txt")
    box.pci("0000:05:00.0", "0x14c3", "0x7961", "0x028000", "mt7921e")       # firmware missing: no phy
    box.pci("0000:06:00.0", "0x10ec", "0x8126", "0x020000")                  # no driver in 6.1
    box.pci("0000:00:02.0", "0x8086", "0x46d1", "0x030000", "i915")          # a GPU: not a network device
    box.outputs[("iw", "list")] = text("iw-list-intel-ax200.txt")
    box.outputs[("dmesg",)] = text("dmesg-n100-box.txt")
    return box


ROLES = report.Roles(wan="enp1s0", wan_reason="DHCP answer", lan=("enp2s0", "enp3s0"), wifi=("wlp4s0",))


def messages(rep, severity=None):
    return [p["message"] for p in rep["problems"] if severity in (None, p["severity"])]


def test_report_of_an_n100_box(n100):
    rep = report.build(collect.gather(n100.sources()), ROLES, now=1000)
    ports = {p["name"]: p for p in rep["ports"]}
    assert list(ports) == ["enp1s0", "enp2s0", "enp3s0"]
    wan = ports["enp1s0"]
    assert (wan["role"], wan["driver"], wan["chip"], wan["mac"]) == \
        ("wan", "igc", "Ethernet Controller I226-V", "a8:b8:e0:00:00:01")
    assert wan["role_reason"] == "it got an answer from a DHCP server (the modem) at boot"
    assert (wan["carrier"], wan["speed_mbps"], wan["max_speed_mbps"]) == (True, 1000, 2500)
    assert ports["enp2s0"]["firmware"] == "rtl8125b-2_0.0.2 07/13/20" and not ports["enp2s0"]["firmware_missing"]
    assert ports["enp3s0"]["firmware_missing"] == ["rtl_nic/rtl8125b-2.fw"]
    assert ports["enp3s0"]["carrier"] is False and ports["enp3s0"]["speed_mbps"] is None
    ax200, mt = rep["radios"]
    assert (ax200["phy"], ax200["interfaces"], ax200["driver"], ax200["chip"]) == \
        ("phy0", ["wlp4s0"], "iwlwifi", "Wi-Fi 6 AX200")
    assert (ax200["firmware"], ax200["firmware_version"]) == ("loaded", "72.daa05125.0 cc-a0-72.ucode")
    assert ax200["ap_mode"] and ax200["serving"] and ax200["max_stations"] is None
    assert [(b["band"], b["ap"]) for b in ax200["bands"]] == [("2.4 GHz", True), ("5 GHz", False)]
    assert (mt["phy"], mt["driver"], mt["firmware"]) == ("", "mt7921e", "missing")
    assert mt["firmware_missing"] == ["mediatek/WIFI_MT7961_patch_mcu_1_2_hdr.bin"]
    assert rep["unusable"] == [{"chip": "RTL8126 5GbE Controller", "bus_id": "0000:06:00.0", "driver": "",
                                "ids": "10ec:8126"}]
    assert rep["regdomain"] == "GB" and rep["kernel"] == "6.1.0-28-amd64"
    assert messages(rep) == [
        "Wired port enp2s0 is linked at 100 Mb/s although it can do 2.5 Gb/s: a damaged cable or a slow "
        "device at the other end.",
        "No firmware for RTL8125 (rtl_nic/rtl8125b-2.fw): wired port enp3s0 is down.",
        "This Wi-Fi card (Wi-Fi 6 AX200, wlp4s0) cannot act as an access point on 5 GHz (its driver only "
        "listens there); the router's Wi-Fi uses 2.4 GHz.",
        "This Wi-Fi card cannot be used: no firmware for MT7921 802.11ax (mediatek/WIFI_MT7961_patch_mcu_1_2_hdr"
        ".bin).",
        "No driver for RTL8126 5GbE (10ec:8126) in this system's Linux 6.1.0-28-amd64: it cannot be used.",
    ]
    json.dumps(rep)     # the API sends it as it is


def test_console_lines(n100):
    rep = report.build(collect.gather(n100.sources()), ROLES)
    out = report.lines(rep)
    assert out[0] == ("HOMEWORK-HW port enp1s0: WAN (it got an answer from a DHCP server (the modem) at boot); "
                      "driver igc, Ethernet Controller I226-V; MAC a8:b8:e0:00:00:01; link up at 1 Gb/s; "
                      "up to 2.5 Gb/s")
    assert out[2].endswith("no link; up to 2.5 Gb/s")
    assert out[3] == ("HOMEWORK-HW radio phy0 (wlp4s0): driver iwlwifi, Wi-Fi 6 AX200; firmware loaded "
                      "72.daa05125.0 cc-a0-72.ucode; access point: yes (2.4 GHz yes, 5 GHz no); max stations not "
                      "stated by the driver; serving")
    assert "HOMEWORK-HW error: No firmware for RTL8125 (rtl_nic/rtl8125b-2.fw): wired port enp3s0 is down." in out
    assert out[-1] == "HOMEWORK-HW summary ports=3 radios=2 problems=4"     # the 5 GHz note is not a problem


def test_a_card_without_ap_mode_and_no_wan(tmp_path):
    box = Box(tmp_path)
    box.radio(box.pci("0000:02:00.0", "0x17cb", "0x1103", "0x028000", "ath11k_pci"), "phy0", "wlp2s0")
    box.outputs[("iw", "list")] = text("iw-list-qualcomm-wcn6855.txt")
    rep = report.build(collect.gather(box.sources()), report.Roles(wifi=("wlp2s0",)))
    [radio] = rep["radios"]
    assert not radio["ap_mode"] and radio["chip"] == "device 17cb:1103"     # not in the excerpt: its ids
    assert radio["firmware"] == "not needed"        # modinfo lists none for it here (the fake's answer)
    assert messages(rep, "error") == [
        "This Wi-Fi card (device 17cb:1103, wlp2s0) cannot act as an access point: devices cannot join the "
        "router's Wi-Fi through it.",
        "No WAN: none of the wired ports got an answer from a DHCP server (a modem) at boot. Plug the modem "
        "into a free port and restart the router."]


def test_a_radio_iw_did_not_describe_is_unknown_not_refused(tmp_path):
    """Seen in the image's VM under load: `iw list` gave nothing in time. The card is not
    called unable to be an access point; the report says it could not tell, and hwsim's
    firmware-version "N/A" is no firmware version."""
    box = Box(tmp_path)
    box.radio(box.pci("0000:02:00.0", "0x8086", "0x2723", "0x028000", "mac80211_hwsim"), "phy0", "wlan0")
    box.outputs[("ethtool", "-i", "wlan0")] = text("qemu-ethtool-i-hwsim.txt")
    rep = report.build(collect.gather(box.sources()), report.Roles(wan="enp1s0", wifi=("wlan0",)))
    [radio] = rep["radios"]
    assert radio["ap_mode"] is None and radio["firmware_version"] == "" and radio["firmware"] == "not needed"
    assert messages(rep, "error") == []
    assert messages(rep, "warning") == ["The router could not read what this Wi-Fi card (Wi-Fi 6 AX200, wlan0) can "
                                        "do (`iw list` did not answer in time); the next report tries again."]
    assert "access point: unknown (none)" in "\n".join(report.lines(rep))


def test_roles_from_the_bring_ups_files(tmp_path):
    env = tmp_path / "interfaces.env"
    env.write_text('WAN=enp1s0\nWAN_REASON="configured in router.conf"\nLAN_PORTS="enp2s0 enp3s0"\n'
                   'WIFI_IFACES="wlan0"\nBRIDGE=br0\n')
    conf = tmp_path / "router.conf"
    conf.write_text('LAN_EXCLUDE="enp3s0"\nSATELLITES="0000525400485711:uplink:enp2s0 00:up:hws1p2"\n')
    roles = report.roles_from_files(env, conf)
    assert roles == report.Roles(wan="enp1s0", wan_reason="configured in router.conf", lan=("enp2s0", "enp3s0"),
                                 wifi=("wlan0",), excluded=("enp3s0",), satellite_cables=("enp2s0",))
    assert report.roles_from_files(tmp_path / "absent.env") is None


def test_ports_on_the_switch_without_hardware_are_the_lan(tmp_path):
    """The emulated home: veths on the router's switch and a veth WAN, none with a device
    behind it; the ports the caller names are reported, other veths are not."""
    box = Box(tmp_path)
    for name, mac in (("h1-1", "02:00:00:00:00:01"), ("wan0", "02:00:00:00:00:02"), ("other", "02:00:00:00:00:03")):
        d = box.sys / "devices" / "virtual" / "net" / name
        d.mkdir(parents=True)
        for fname, value in (("address", mac), ("type", "1"), ("operstate", "up"), ("carrier", "1")):
            (d / fname).write_text(value + "\n")
        os.symlink(os.path.relpath(d, box.sys / "class/net"), box.sys / "class/net" / name)
        box.outputs[("ethtool", "-i", name)] = "driver: veth\nversion: 1.0\nbus-info: \n"

    class Config:
        satellites: tuple = ()
        components = ("wanwatch",)
        wanwatch_interface = "wan0"
        lan_ports: tuple = ()
        radio_interfaces: tuple = ()
    hw = cache.HardwareReport(cache.config_roles(Config()), box.sources(), extra_ports=lambda: ("h1-1", "wan0"))
    rep = hw.get()
    ports = {p["name"]: (p["role"], p["driver"]) for p in rep["ports"]}
    assert ports == {"h1-1": ("lan", "veth"), "wan0": ("wan", "veth")}
    assert not [p for p in rep["problems"] if p["severity"] == "error"]


def test_the_controllers_copy_is_gathered_once_per_interval(n100):
    calls = []
    real = n100.run

    def counting(argv):
        calls.append(argv[0])
        return real(argv)
    src = n100.sources()
    src.run = counting
    now = [100.0]
    hw = cache.HardwareReport(lambda ports: ROLES, src, clock=lambda: now[0])
    first = hw.get()
    n = len(calls)
    assert hw.get() is first and len(calls) == n          # within MAX_AGE: the same report, no tools run
    now[0] += cache.MAX_AGE + 1
    assert hw.get() is not first and len(calls) == 2 * n


def test_a_failing_gathering_is_a_message_not_an_error(tmp_path):
    def boom(argv):
        raise RuntimeError("ethtool exploded")
    box = Box(tmp_path)
    box.port(box.pci("0000:01:00.0", "0x8086", "0x125c", "0x020000", "igc"), "enp1s0", "a8:b8:e0:00:00:01")
    src = box.sources()
    src.run = boom
    rep = cache.HardwareReport(lambda ports: ROLES, src).get()
    assert rep["ports"] == [] and "could not read its hardware" in rep["problems"][0]["message"]
