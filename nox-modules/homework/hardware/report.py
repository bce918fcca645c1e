"""The hardware report: the gathered facts (collect.py) with each port's role and a plain
sentence for everything that cannot work.

    build(facts, roles) -> {"ports", "radios", "unusable", "problems", ...}
    lines(report)       -> the console's HOMEWORK-HW lines

What a port is for (Roles) comes from the router's bring-up (/run/homework/interfaces.env:
the WAN it found and why, the LAN ports, the Wi-Fi it serves) or, without one, from the
controller's configuration. The router's own access point runs on 2.4 GHz (hostapd's
hw_mode=g), so only a card that cannot be an access point there stops the Wi-Fi.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .collect import Device, Facts, PortFacts, RadioFacts
from .parse import FirmwareLine

AP_BAND = "2.4 GHz"            # the band the router's access point uses (image/guest/homework-wifi)

WAN_REASONS = {                # homework-net's words -> the household's
    "DHCP answer": "it got an answer from a DHCP server (the modem) at boot",
    "configured in router.conf": "router.conf names it (WAN=)",
    "no DHCP answer now; last known WAN": "no DHCP server answered at boot; it was the WAN at the last boot",
}


@dataclass
class Roles:
    wan: str = ""
    wan_reason: str = ""
    lan: tuple[str, ...] = ()
    wifi: tuple[str, ...] = ()                 # Wi-Fi interfaces the router serves
    excluded: tuple[str, ...] = ()             # router.conf's LAN_EXCLUDE
    satellite_cables: tuple[str, ...] = ()


def read_env(path: Path) -> dict[str, str]:
    """KEY=value / KEY="a b" lines (homework-net's interfaces.env, router.conf)."""
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.isidentifier():
            out[key] = value.strip().strip('"').strip("'")
    return out


def roles_from_files(interfaces_env: Path, router_conf: Path | None = None) -> Roles | None:
    """The bring-up's record of the ports (None when there is none: not the image)."""
    env = read_env(interfaces_env)
    if not env:
        return None
    conf = read_env(router_conf) if router_conf else {}
    cables = tuple(s.rsplit(":", 1)[-1] for s in conf.get("SATELLITES", "").split()
                   if ":" in s and not s.rsplit(":", 1)[-1].startswith("hws"))
    return Roles(wan=env.get("WAN", ""), wan_reason=env.get("WAN_REASON", ""),
                 lan=tuple(env.get("LAN_PORTS", "").split()), wifi=tuple(env.get("WIFI_IFACES", "").split()),
                 excluded=tuple(conf.get("LAN_EXCLUDE", "").split()), satellite_cables=cables)


def speed_text(mbps: int | None) -> str:
    if not mbps:
        return ""
    if mbps >= 1000:
        value = mbps / 1000
        return f"{value:g} Gb/s"
    return f"{mbps} Mb/s"


def chip_name(dev: Device) -> str:
    """'RTL8125 2.5GbE Controller' (its model in pci.ids/usb.ids), else vendor:device ids."""
    if dev.model:
        return dev.model
    if dev.vendor_id:
        return f"{dev.vendor + ' ' if dev.vendor else ''}device {dev.vendor_id}:{dev.device_id}".strip()
    return ""


def short_chip(dev: Device) -> str:
    """The chip's first word or two, as a household would say it: 'RTL8125', 'Wi-Fi 6 AX200'."""
    name = chip_name(dev)
    for cut in (" [", " (", " Gigabit", " 2.5GbE", " Ethernet", " PCI Express", " Controller", " Network Connection"):
        if cut in name:
            name = name.split(cut)[0]
    return name.strip() or dev.driver or "this device"


def _firmware(dev: Device, lines: list[FirmwareLine]) -> tuple[list[str], list[str]]:
    """(files loaded, files that failed and were never loaded) for one device."""
    mine = [ln for ln in lines if ln.bus == dev.bus_id] if dev.bus_id else []
    loaded = sorted({ln.file for ln in mine if ln.loaded and ln.file})
    any_loaded = any(ln.loaded for ln in mine)
    failed = sorted({ln.file for ln in mine if not ln.loaded and ln.file})
    if not failed and any(not ln.loaded for ln in mine):
        failed = ["(its driver does not name the file)"]
    return loaded, ([] if any_loaded else failed)


def _role(name: str, roles: Roles) -> tuple[str, str]:
    if name == roles.wan:
        reason = WAN_REASONS.get(roles.wan_reason, roles.wan_reason) or "the configuration names it"
        return "wan", reason
    if name in roles.satellite_cables:
        return "satellite", "a satellite's cable (router.conf's SATELLITES)"
    if name in roles.excluded:
        return "unused", "router.conf's LAN_EXCLUDE leaves it out"
    if name in roles.lan:
        return "lan", "on the household's network (bridge br0)"
    return "unused", "not on the router's network"


class _Problems:
    def __init__(self):
        self.items: list[dict] = []

    def add(self, severity: str, subject: str, message: str) -> None:
        self.items.append({"severity": severity, "subject": subject, "message": message})


def _port(p: PortFacts, facts: Facts, roles: Roles, problems: _Problems) -> dict:
    role, why = _role(p.name, roles)
    loaded, missing = _firmware(p.device, facts.firmware)
    chip = short_chip(p.device)
    out = {"name": p.name, "role": role, "role_reason": why, "driver": p.device.driver or p.info.get("driver", ""),
           "chip": chip_name(p.device), "bus_id": p.device.bus_id, "mac": p.mac, "carrier": p.carrier,
           "operstate": p.operstate, "speed_mbps": p.speed, "max_speed_mbps": p.max_speed,
           "firmware": p.info.get("firmware-version", "") or (", ".join(loaded)),
           "firmware_missing": missing}
    label = {"wan": "the WAN port", "lan": "wired port", "satellite": "the satellite's port",
             "unused": "wired port"}[role]
    if missing:
        state = "is down" if not p.carrier else "works without it for now, but may lose its link"
        problems.add("error" if not p.carrier else "warning", p.name,
                     f"No firmware for {chip} ({', '.join(missing)}): {label} {p.name} {state}.")
    elif role == "wan" and not p.carrier:
        problems.add("error", p.name, f"The WAN port {p.name} has no link: is the modem's cable plugged in "
                                      "and the modem on?")
    if p.carrier and p.speed and p.max_speed and p.speed <= 100 < p.max_speed:
        problems.add("warning", p.name,
                     f"{label[0].upper() + label[1:]} {p.name} is linked at {speed_text(p.speed)} although it can do "
                     f"{speed_text(p.max_speed)}: a damaged cable or a slow device at the other end.")
    return out


def _radio(r: RadioFacts, facts: Facts, roles: Roles, problems: _Problems) -> dict:
    loaded, missing = _firmware(r.device, facts.firmware)
    chip = short_chip(r.device)
    where = f"{chip}, {', '.join(r.interfaces)}" if r.interfaces else chip
    version = r.info.get("firmware-version", "")
    needs = facts.needs_firmware.get(r.device.driver)
    if r.iw is None and not r.phy:
        firmware = "missing" if missing else "unknown"
    elif version or loaded:
        firmware = "loaded"
    elif missing:
        firmware = "missing"
    else:
        firmware = "not needed" if needs is False else "unknown"
    bands = [{"band": b.name, "ap": b.ap, "channels": b.channels, "ap_channels": b.ap_channels,
              "radar_channels": b.radar_channels} for b in (r.iw.bands if r.iw else [])]
    out = {"phy": r.phy, "interfaces": r.interfaces, "driver": r.device.driver, "chip": chip_name(r.device),
           "bus_id": r.device.bus_id, "serving": any(i in roles.wifi for i in r.interfaces),
           "firmware": firmware, "firmware_version": version or ", ".join(loaded), "firmware_missing": missing,
           "ap_mode": r.iw.ap_mode if r.iw else None,            # None: `iw list` did not say
           "bands": bands,
           "max_stations": r.iw.max_ap_stations if r.iw else None}
    if not r.phy:
        why = (f"no firmware for {chip} ({', '.join(missing)})" if missing
               else f"its driver ({r.device.driver or 'none'}) did not start it")
        problems.add("error", chip, f"This Wi-Fi card cannot be used: {why}.")
        return out
    if r.iw is None:
        problems.add("warning", r.phy, f"The router could not read what this Wi-Fi card ({where}) can do "
                                       "(`iw list` did not answer in time); the next report tries again.")
        return out
    if not r.iw.ap_mode:
        problems.add("error", r.phy, f"This Wi-Fi card ({where}) cannot act as an access point: devices cannot "
                                     "join the router's Wi-Fi through it.")
        return out
    for b in r.iw.bands:
        if b.ap or b.channels == 0 and b.name != AP_BAND:
            continue
        if b.name == AP_BAND:
            problems.add("error", r.phy, f"This Wi-Fi card ({where}) cannot act as an access point on {b.name}, "
                                         "the band the router's Wi-Fi uses: devices cannot join through it.")
        else:
            problems.add("info", r.phy, f"This Wi-Fi card ({where}) cannot act as an access point on {b.name} "
                                        f"(its driver only listens there); the router's Wi-Fi uses {AP_BAND}.")
    if missing:
        problems.add("warning", r.phy, f"Some firmware for {chip} is missing ({', '.join(missing)}).")
    return out


def build(facts: Facts, roles: Roles, now: float | None = None) -> dict:
    problems = _Problems()
    ports = [_port(p, facts, roles, problems) for p in facts.ports]
    radios = [_radio(r, facts, roles, problems) for r in facts.radios]
    unusable: list[dict[str, object]] = []
    for dev in facts.unbound:
        unusable.append({"chip": chip_name(dev), "bus_id": dev.bus_id, "driver": "",
                         "ids": f"{dev.vendor_id}:{dev.device_id}"})
        problems.add("error", chip_name(dev), f"No driver for {short_chip(dev)} ({dev.vendor_id}:{dev.device_id}) in "
                                              f"this system's Linux {facts.kernel or ''}".rstrip()
                     + ": it cannot be used.")
    for dev in facts.silent:
        loaded, missing = _firmware(dev, facts.firmware)
        unusable.append({"chip": chip_name(dev), "bus_id": dev.bus_id, "driver": dev.driver,
                         "ids": f"{dev.vendor_id}:{dev.device_id}", "firmware_missing": missing})
        why = f"no firmware for it ({', '.join(missing)})" if missing else f"its driver {dev.driver} did not start it"
        problems.add("error", chip_name(dev), f"{short_chip(dev)} cannot be used: {why}.")
    wired = [p for p in ports if p["role"] != "unused" or p["name"] == roles.wan]
    if not roles.wan:
        problems.add("error", "WAN", "No WAN: none of the wired ports got an answer from a DHCP server (a modem) "
                                     "at boot. Plug the modem into a free port and restart the router.")
    elif len(wired) == 1 and not radios:
        problems.add("warning", "LAN", "This box has one wired port, the WAN, and no Wi-Fi card: no device can "
                                       "join its network.")
    return {"gathered_at": int(time.time() if now is None else now), "kernel": facts.kernel,
            "regdomain": facts.regdomain, "ports": ports, "radios": radios, "unusable": unusable,
            "problems": problems.items}


def lines(report: dict) -> list[str]:
    """The console's report: one HOMEWORK-HW line per port, radio and problem."""
    out = []
    for p in report["ports"]:
        link = (f"link up at {speed_text(p['speed_mbps'])}" if p["carrier"] and p["speed_mbps"]
                else "link up" if p["carrier"] else "no link")
        role = {"wan": "WAN", "lan": "LAN", "satellite": "satellite cable", "unused": "unused"}[p["role"]]
        out.append(f"HOMEWORK-HW port {p['name']}: {role} ({p['role_reason']}); driver {p['driver'] or 'none'}"
                   f"{', ' + p['chip'] if p['chip'] else ''}; MAC {p['mac']}; {link}"
                   f"{'; up to ' + speed_text(p['max_speed_mbps']) if p['max_speed_mbps'] else ''}")
    for r in report["radios"]:
        bands = ", ".join(f"{b['band']} {'yes' if b['ap'] else 'no'}" for b in r["bands"]) or "none"
        fw = r["firmware"] + (f" {r['firmware_version']}" if r["firmware_version"] else "")
        stations = r["max_stations"] if r["max_stations"] is not None else "not stated by the driver"
        out.append(f"HOMEWORK-HW radio {r['phy'] or '-'} ({', '.join(r['interfaces']) or 'no interface'}): driver "
                   f"{r['driver'] or 'none'}{', ' + r['chip'] if r['chip'] else ''}; firmware {fw}; access point: "
                   f"{ {True: 'yes', False: 'no', None: 'unknown'}[r['ap_mode']]} ({bands}); max stations {stations}"
                   f"{'; serving' if r['serving'] else ''}")
    for u in report["unusable"]:
        out.append(f"HOMEWORK-HW unusable {u['bus_id']}: {u['chip']} (driver {u['driver'] or 'none'})")
    for pr in report["problems"]:
        out.append(f"HOMEWORK-HW {pr['severity']}: {pr['message']}")
    out.append(f"HOMEWORK-HW summary ports={len(report['ports'])} radios={len(report['radios'])} "
               f"problems={sum(1 for p in report['problems'] if p['severity'] != 'info')}")
    return out
