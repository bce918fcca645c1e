"""How the router speaks to the household: devices by their names, amounts in units,
whole sentences. Every message (alerts, notifications, webhooks, MQTT) is worded with
these; the machine fields (MAC, bytes, kbit/s) travel beside the words, in the payload.

    name_of(state, "02:68:77:01:00:01")   -> "Tom's laptop" (else its host name, its
                                             maker's "Apple device", "the device 02:68:...")
    size(28_615_719)                      -> "28.6 MB" (decimal, as providers bill)
    rate(1000)                            -> "1 Mbit/s"
"""
from __future__ import annotations

from functools import lru_cache

from . import routernames
from .oui import default_table


@lru_cache(maxsize=1)
def _oui():
    return default_table()      # read when first needed: the registry files are large


def label(mac: str, name: str = "", hostname: str = "", vendor: str | None = None) -> tuple[str, str]:
    """(what the household calls a device, which kind of name that is): its name, else
    the host name it gave, else its maker's ("Apple device"), else its MAC. A host name
    that is one of the router's own (routernames.py) is never shown as the router: "A
    device calling itself “homework”"."""
    if name:
        return name, "name"
    if hostname and routernames.reserved(routernames.label_of(hostname)):
        vendor = _oui().vendor(mac) if vendor is None else vendor
        return f"{vendor + ' device' if vendor else 'A device'} calling itself “{hostname[:40]}”", "hostname-reserved"
    if hostname:
        return hostname, "hostname"
    vendor = _oui().vendor(mac) if vendor is None else vendor
    if vendor:
        return f"{vendor} device", "vendor"
    return mac, "mac"


def name_of(state, mac: str) -> str:
    """A device as a sentence names it."""
    if not mac:
        return "a device"
    device = state.get_device(mac) if state is not None else None
    text, source = label(mac, device.name if device else "", device.hostname if device else "")
    if source == "vendor":
        return f"an {text}" if text[:1].lower() in "aeiou" else f"a {text}"
    if source == "mac":
        return f"the device {mac}"
    if source == "hostname-reserved":
        return text[0].lower() + text[1:] if text.startswith("A device") else text
    return text


def owner_devices(owner: str) -> str:
    return f"{owner}'s devices" if not owner.endswith("s") else f"{owner}' devices"


def size(n: int | float) -> str:
    """Bytes in decimal units, as internet providers bill and as the household types them
    (an allowance of "25M" is 25 MB): one decimal under 100, '28.6 MB', '500 GB'."""
    n = float(n or 0)
    if n < 1000:
        return f"{round(n)} B"
    for unit in ("kB", "MB", "GB", "TB"):
        n /= 1000
        if n < 1000 or unit == "TB":
            text = f"{n:.1f}" if n < 100 else f"{n:.0f}"
            return f"{text.removesuffix('.0')} {unit}"
    raise AssertionError("not reached")


def rate(kbit: int | float) -> str:
    """kbit/s as the household reads its contract: '1 Mbit/s', '1.5 Mbit/s', '512 kbit/s'."""
    if kbit >= 1000:
        mbit = kbit / 1000
        return f"{mbit:.0f} Mbit/s" if mbit >= 10 or mbit == int(mbit) else f"{mbit:.1f} Mbit/s"
    return f"{kbit:.0f} kbit/s"


def sentence(text: str) -> str:
    """Capitalised, with its full stop."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."
