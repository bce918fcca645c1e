"""Text in, facts out: one parser per tool whose output the hardware report reads.

Each takes the text a tool printed (`iw list`, `ethtool -i IF`, `ethtool IF`, `dmesg`, the
pci.ids/usb.ids files) and returns plain facts; none runs anything. Lines they do not
understand are skipped, so a newer tool's extra lines cannot break the report. The unit
tests feed them recorded outputs (tests/unit/data/hardware/).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..wifiband import band_of

BAND_ORDER = ("2.4 GHz", "5 GHz", "6 GHz", "60 GHz")


# -- iw list ---------------------------------------------------------------------------------
@dataclass
class Band:
    name: str                  # "2.4 GHz", "5 GHz", "6 GHz", "60 GHz"
    channels: int = 0          # channels the card may use here at all (not "disabled")
    ap_channels: int = 0       # of those, where it may start transmitting: no "no IR" flag
    radar_channels: int = 0    # of ap_channels, the ones that need radar detection first (DFS)

    @property
    def ap(self) -> bool:
        return self.ap_channels > 0


@dataclass
class Phy:
    name: str                                  # phy0
    modes: list[str] = field(default_factory=list)       # "Supported interface modes"
    bands: list[Band] = field(default_factory=list)
    max_ap_stations: int | None = None         # "Maximum associated stations in AP mode", if the driver says
    ap_combinations: str = ""                  # the "valid interface combinations" line naming AP, if any

    @property
    def ap_mode(self) -> bool:
        return "AP" in self.modes


WIPHY = re.compile(r"^Wiphy\s+(\S+)")
FREQ = re.compile(r"^\*\s*(\d+)(?:\.\d+)?\s*MHz\b(.*)$")
MAX_STA = re.compile(r"^Maximum associated stations in AP mode:\s*(\d+)")
# Flags iw has printed over the years for "may not initiate radiation here"
NO_IR = ("(no IR)", "(no ir)", "(passive scan", "(passive scanning)", "(no IBSS)", "(no-IR)")


def iw_list(text: str) -> list[Phy]:
    """`iw list` (or `iw phy`): every wiphy with its interface modes, bands and limits."""
    phys: list[Phy] = []
    phy: Phy | None = None
    section = ""            # "modes" | "freqs" | "combos" | ""
    bands: dict[str, Band] = {}
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        m = WIPHY.match(raw)
        if m:
            phy = Phy(m.group(1))
            phys.append(phy)
            bands = {}
            section = ""
            continue
        if phy is None:
            continue
        if line.startswith("Supported interface modes"):
            section = "modes"
            continue
        if line.startswith("Frequencies:"):
            section = "freqs"
            continue
        if line.startswith("valid interface combinations"):
            section = "combos"
            continue
        m = MAX_STA.match(line)
        if m:
            phy.max_ap_stations = int(m.group(1))
            continue
        if line.startswith("*"):
            if section == "modes":
                phy.modes.append(line.lstrip("* ").strip())
            elif section == "freqs":
                _frequency(line, phy, bands)
            elif section == "combos" and "AP" in line and not phy.ap_combinations:
                phy.ap_combinations = line.lstrip("* ").strip()
            continue
        if section == "combos" and line.startswith(("total", "#")):
            continue            # the continuation of a combination line
        section = ""            # any other line ends a list
    for p in phys:
        p.bands.sort(key=lambda b: BAND_ORDER.index(b.name) if b.name in BAND_ORDER else len(BAND_ORDER))
    return phys


def _frequency(line: str, phy: Phy, bands: dict[str, Band]) -> None:
    m = FREQ.match(line)
    if not m:
        return
    name = band_of(int(m.group(1)))
    if name is None:
        return
    band = bands.get(name)
    if band is None:
        band = bands[name] = Band(name)
        phy.bands.append(band)
    flags = m.group(2)
    if "(disabled)" in flags:
        return
    band.channels += 1
    if any(f in flags for f in NO_IR):
        return
    band.ap_channels += 1
    if "radar detection" in flags:
        band.radar_channels += 1


# -- ethtool ---------------------------------------------------------------------------------
def ethtool_info(text: str) -> dict[str, str]:
    """`ethtool -i IF`: driver, version, firmware-version, bus-info, ... ('' when empty, and
    for the "N/A" of drivers that load no firmware, like mac80211_hwsim)."""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key and not key.startswith((" ", "\t")):
            out[key.strip()] = "" if value.strip() == "N/A" else value.strip()
    return out


LINK_MODE = re.compile(r"\b(\d+)base[A-Za-z0-9]*/(?:Full|Half)\b")
SPEED = re.compile(r"^\s*Speed:\s*(\d+)\s*Mb/s", re.MULTILINE)
LINK = re.compile(r"^\s*Link detected:\s*(yes|no)", re.MULTILINE)


def ethtool_link(text: str) -> dict:
    """`ethtool IF`: the fastest supported link mode (Mb/s), the current speed and link."""
    text = text or ""
    supported = _section(text, "Supported link modes:")
    speeds = [int(m) for m in LINK_MODE.findall(supported)]
    speed = SPEED.search(text)
    link = LINK.search(text)
    return {"max_speed": max(speeds) if speeds else None,
            "speed": int(speed.group(1)) if speed else None,
            "link": None if link is None else link.group(1) == "yes"}


def _section(text: str, header: str) -> str:
    """The value of a `Header: a b c` field and its indented continuation lines."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(header):
            out = [line.strip()[len(header):]]
            for more in lines[i + 1:]:
                if ":" in more:
                    break
                out.append(more.strip())
            return " ".join(out)
    return ""


# -- dmesg -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class FirmwareLine:
    driver: str
    bus: str                 # the device's bus id: 0000:02:00.0 (PCI) or 1-1:1.0 (USB)
    file: str                # the firmware file, "" when the driver does not name it
    loaded: bool


# "[    3.21] r8169 0000:02:00.0: firmware: failed to load rtl_nic/rtl8125b-2.fw (-2)"
DEVICE_LINE = re.compile(r"^(?:<\d+>)?(?:\[\s*[\d.]+\]\s*)?(?P<driver>[\w.-]+) "
                         r"(?P<bus>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]|\d+-[\d.]+:\d+\.\d+): (?P<msg>.*)$")
FAILED = (
    re.compile(r"Direct firmware load for (?P<file>\S+) failed with error -?\d+"),
    re.compile(r"firmware: failed to load (?P<file>\S+) \(-?\d+\)"),        # Debian's kernels say this too
    re.compile(r"Unable to load firmware (?P<file>\S+) \(-?\d+\)"),          # r8169
    re.compile(r"[Ff]ailed to (?:load|request|get) (?:the )?firmware(?: file)?[: ]*"
               r"(?P<file>[\w./-]*\.(?:bin|fw|ucode|pnvm))?"),
    re.compile(r"no suitable firmware found"),                                  # iwlwifi, after every try
    re.compile(r"could not fetch firmware(?: files)?"),                         # ath10k
)
LOADED = (
    re.compile(r"firmware: direct-loading firmware (?P<file>\S+)"),            # Debian's kernels
    re.compile(r"loaded firmware version (?P<version>\S+) (?P<file>\S+)"),      # iwlwifi
)


def firmware_lines(text: str) -> list[FirmwareLine]:
    """Firmware loads and failures, per device, from the kernel's log (`dmesg`)."""
    out: list[FirmwareLine] = []
    for line in (text or "").splitlines():
        m = DEVICE_LINE.match(line.strip())
        if not m:
            continue
        msg = m.group("msg")
        for pattern, loaded in [(p, True) for p in LOADED] + [(p, False) for p in FAILED]:
            f = pattern.search(msg)
            if f:
                name = f.groupdict().get("file") or ""
                out.append(FirmwareLine(m.group("driver"), m.group("bus"), name, loaded))
                break
    return out


# -- pci.ids / usb.ids -----------------------------------------------------------------------
def id_name(text: str, vendor: str, device: str) -> tuple[str, str]:
    """(vendor name, device name) from a pci.ids or usb.ids text; '' for what it lacks.
    vendor/device: 4 hex digits."""
    vendor, device = vendor.lower(), device.lower()
    vname = dname = ""
    in_vendor = False
    for line in (text or "").splitlines():
        if not line or line.startswith("#"):
            continue
        if not line.startswith("\t"):
            if in_vendor:
                break                       # past our vendor's devices
            if line[:4].lower() == vendor and line[4:6] == "  ":
                vname, in_vendor = line[6:].strip(), True
            elif line.startswith("C "):     # the device classes at the end
                break
            continue
        if in_vendor and not line.startswith("\t\t") and line[1:5].lower() == device:
            dname = line[5:].strip()
            break
    return vname, dname
