"""What the box has: its network ports, Wi-Fi cards and network devices without a driver,
read from sysfs and from `ethtool`, `iw list` and `dmesg`.

One job: gather raw facts (Facts) for report.py. Everything it touches is injectable
(Sources: the sysfs root, a command runner, the files), so the unit tests run it over a
recorded sysfs tree and recorded tool outputs. It runs tools and reads files, so it is
never called on the controller's event loop (hardware/cache.py hands it to a thread).
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

from . import parse

PCI_IDS = ("/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids")
USB_IDS = ("/usr/share/misc/usb.ids", "/var/lib/usbutils/usb.ids", "/usr/share/hwdata/usb.ids")
NETWORK_CLASS = "0x02"         # PCI class 02xxxx: network controllers (Ethernet 0200, other 0280 = Wi-Fi)
TOOL_TIMEOUT = 30.0            # `iw list` of three radios took over 10 s in a loaded VM


def run_tool(argv: list[str]) -> str:
    """A tool's standard output; '' when it is missing, fails or hangs."""
    try:
        res = subprocess.run(argv, capture_output=True, timeout=TOOL_TIMEOUT, check=False,
                             env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return ""
    return res.stdout.decode("utf-8", "replace")


@dataclass
class Sources:
    sys: Path = Path("/sys")
    run: Callable[[list[str]], str] = run_tool
    pci_ids: tuple[str, ...] = PCI_IDS
    usb_ids: tuple[str, ...] = USB_IDS


@dataclass
class Device:
    """The hardware behind an interface (or a network device nobody drives)."""
    bus: str = ""                 # "pci" | "usb" | "virtual" | ""
    bus_id: str = ""              # 0000:02:00.0, 1-2:1.0
    vendor_id: str = ""           # 4 hex digits
    device_id: str = ""
    vendor: str = ""              # from pci.ids / usb.ids
    model: str = ""
    driver: str = ""              # the kernel driver bound to it ('' = none)


@dataclass
class PortFacts:
    name: str
    mac: str
    device: Device
    carrier: bool | None          # None: the port is down (administratively)
    operstate: str
    speed: int | None             # Mb/s now, None when unknown or no link
    max_speed: int | None         # the fastest link mode it supports
    info: dict[str, str]          # ethtool -i


@dataclass
class RadioFacts:
    phy: str                      # phy0 ('' for a card without one: its firmware did not load)
    interfaces: list[str]
    device: Device
    iw: parse.Phy | None
    info: dict[str, str]          # ethtool -i of its first interface


@dataclass
class Facts:
    ports: list[PortFacts] = field(default_factory=list)
    radios: list[RadioFacts] = field(default_factory=list)
    unbound: list[Device] = field(default_factory=list)       # network controllers without a driver
    silent: list[Device] = field(default_factory=list)        # driven, but with no interface at all
    firmware: list[parse.FirmwareLine] = field(default_factory=list)
    regdomain: str = ""                                       # `iw reg get`'s global country
    kernel: str = ""                                          # the running kernel's release
    needs_firmware: dict[str, bool] = field(default_factory=dict)   # driver -> `modinfo -F firmware` lists some


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _hex4(text: str) -> str:
    text = text.lower().removeprefix("0x")
    return text[-4:].rjust(4, "0") if text else ""


def _ids_text(paths: tuple[str, ...]) -> str:
    for p in paths:
        try:
            return Path(p).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    return ""


class Namer:
    """Vendor and model names from pci.ids / usb.ids, each file read once per gathering."""

    def __init__(self, src: Sources):
        self.src = src
        self._text: dict[str, str] = {}

    def name(self, dev: Device) -> None:
        if not dev.vendor_id or dev.bus not in ("pci", "usb"):
            return
        if dev.bus not in self._text:
            self._text[dev.bus] = _ids_text(self.src.pci_ids if dev.bus == "pci" else self.src.usb_ids)
        dev.vendor, dev.model = parse.id_name(self._text[dev.bus], dev.vendor_id, dev.device_id)


def device_of(devdir: Path) -> Device:
    """The bus device at or above a sysfs device directory (a virtio device's PCI parent,
    a USB interface's USB device), and the driver of the directory itself."""
    dev = Device()
    try:
        real = devdir.resolve(strict=True)
    except OSError:
        return dev
    drv = devdir / "driver"
    dev.driver = os.path.basename(os.readlink(drv)) if drv.is_symlink() else ""
    node = real
    while node != node.parent and node.name != "devices":
        subsystem = node / "subsystem"
        kind = os.path.basename(os.readlink(subsystem)) if subsystem.is_symlink() else ""
        if kind == "pci" and (node / "vendor").exists():
            dev.bus, dev.bus_id = "pci", node.name
            dev.vendor_id, dev.device_id = _hex4(_read(node / "vendor")), _hex4(_read(node / "device"))
            return dev
        if kind == "usb" and (node / "idVendor").exists():
            dev.bus, dev.bus_id = "usb", real.name
            dev.vendor_id, dev.device_id = _hex4(_read(node / "idVendor")), _hex4(_read(node / "idProduct"))
            return dev
        node = node.parent
    dev.bus = "virtual"
    return dev


def _int_or_none(text: str) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value > 0 else None


def gather(src: Sources | None = None, extra_ports: tuple[str, ...] = ()) -> Facts:
    """Every wired port with hardware behind it (plus `extra_ports`, the router's ports that
    have none, like the emulated home's veths), every Wi-Fi card, and the network
    controllers the kernel has no driver for."""
    src = src or Sources()
    namer = Namer(src)
    facts = Facts()
    net = src.sys / "class" / "net"
    wifi_by_phy: dict[str, list[str]] = {}
    seen_bus: set[str] = set()
    names = sorted(os.listdir(net)) if net.is_dir() else []
    for name in names:
        d = net / name
        phy = _read(d / "phy80211" / "name")
        if phy:
            wifi_by_phy.setdefault(phy, []).append(name)
            continue
        if (d / "wireless").exists() or _read(d / "type") != "1":
            continue
        if not (d / "device").exists() and name not in extra_ports:
            continue            # bridges, veths, tunnels, taps: not the box's hardware
        dev = device_of(d / "device") if (d / "device").exists() else Device(bus="virtual")
        info = parse.ethtool_info(src.run(["ethtool", "-i", name]))
        dev.driver = dev.driver or info.get("driver", "")
        namer.name(dev)
        seen_bus.add(dev.bus_id)
        link = parse.ethtool_link(src.run(["ethtool", name]))
        carrier_text = _read(d / "carrier")
        carrier = None if carrier_text == "" else carrier_text == "1"
        speed = _int_or_none(_read(d / "speed")) if carrier else None
        facts.ports.append(PortFacts(name, _read(d / "address"), dev, carrier, _read(d / "operstate"),
                                     speed or (link["speed"] if carrier else None), link["max_speed"], info))
    phys = {p.name: p for p in parse.iw_list(src.run(["iw", "list"]))}
    ieee = src.sys / "class" / "ieee80211"
    for phy in sorted(os.listdir(ieee)) if ieee.is_dir() else []:
        dev = device_of(ieee / phy / "device")
        namer.name(dev)
        seen_bus.add(dev.bus_id)
        ifaces = sorted(wifi_by_phy.get(phy, []))
        info = parse.ethtool_info(src.run(["ethtool", "-i", ifaces[0]])) if ifaces else {}
        facts.radios.append(RadioFacts(phy, ifaces, dev, phys.get(phy), info))
    facts.firmware = parse.firmware_lines(src.run(["dmesg"]))
    # Network controllers with no interface: no driver in this kernel, or a driver that gave
    # up (its firmware missing). A Wi-Fi card among them is a radio without a phy.
    pci = src.sys / "bus" / "pci" / "devices"
    for bus_id in sorted(os.listdir(pci)) if pci.is_dir() else []:
        node = pci / bus_id
        cls = _read(node / "class").lower()
        if not cls.startswith(NETWORK_CLASS) or bus_id in seen_bus:
            continue
        dev = device_of(node)
        namer.name(dev)
        if not dev.driver:
            facts.unbound.append(dev)
        elif cls.startswith("0x0280"):
            facts.radios.append(RadioFacts("", [], dev, None, {}))
        else:
            facts.silent.append(dev)
    for bus_id, driver in _usb_without_interface(src, facts.firmware, seen_bus):
        dev = device_of(src.sys / "bus" / "usb" / "devices" / bus_id)
        dev.driver = dev.driver or driver
        namer.name(dev)
        if is_wifi_driver(dev.driver):
            facts.radios.append(RadioFacts("", [], dev, None, {}))
        else:
            facts.silent.append(dev)
    for driver in sorted({d.driver for d in [p.device for p in facts.ports] + [r.device for r in facts.radios]
                          + facts.silent if d.driver}):
        facts.needs_firmware[driver] = bool(src.run(["modinfo", "-F", "firmware", driver]).strip())
    facts.kernel = src.run(["uname", "-r"]).strip()
    reg = src.run(["iw", "reg", "get"])
    for line in reg.splitlines():
        if line.startswith("country "):
            facts.regdomain = line.split()[1].rstrip(":")
            break
    return facts


# Kernel drivers of Wi-Fi cards (by name prefix): a USB device one of them drives is a radio.
WIFI_DRIVERS = ("iwl", "mt76", "mt79", "mt7601u", "rtw", "rtl8xxxu", "rtl818", "rtl819", "rtl88", "rt2", "rt61",
                "rt73", "ath", "ar5523", "carl9170", "brcm", "b43", "mwifiex", "mwl8k", "wl12", "wl18", "p54",
                "mac80211_hwsim", "zd1211rw", "qtnfmac", "wcn36xx", "wil6210")


def is_wifi_driver(name: str) -> bool:
    return bool(name) and name.startswith(WIFI_DRIVERS)


def _usb_without_interface(src: Sources, firmware: list[parse.FirmwareLine], seen: set[str]):
    """USB devices whose driver reported a firmware failure and that have no interface: a
    USB Wi-Fi stick or Ethernet adapter that did not come up."""
    out = []
    for line in firmware:
        if line.loaded or ":" not in line.bus or "-" not in line.bus or line.bus in seen:
            continue
        if (line.bus, line.driver) not in out and (src.sys / "bus" / "usb" / "devices" / line.bus).exists():
            out.append((line.bus, line.driver))
    return out
