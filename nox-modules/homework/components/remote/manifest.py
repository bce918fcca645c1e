"""Remote's manifest (homework/manifest.py): the devices away from home and the router's
WireGuard key (secrets: in a backup encrypted, so the devices' configurations keep working
on a restored router), what it hears to route them."""
from __future__ import annotations

from ... import events, rowcheck
from ...commands import CommandError
from ...manifest import Manifest, Secrets
from .keys import is_key

MAX_INDEX = 128


def peer_row(r: dict) -> None:
    from .component import parse_name        # (the component imports this package's modules)
    rowcheck.mac(r["mac"])
    rowcheck.number(r["idx"], "idx", 1, MAX_INDEX, whole=True)
    try:
        if parse_name(r["name"]) != r["name"]:
            raise ValueError("name: surrounding spaces")
    except CommandError as exc:
        raise ValueError(f"name: {exc}") from None
    for key in ("private_key", "public_key", "preshared_key"):
        if not is_key(r[key]):
            raise ValueError(f"{key}: not a WireGuard key")
    rowcheck.number(r.get("created", 0), "created")


def router_row(r: dict) -> None:
    rowcheck.number(r.get("id", 1), "id", 1, 1, whole=True)
    if not is_key(r["private_key"]):
        raise ValueError("private_key: not a WireGuard key")


MANIFEST = Manifest(
    component="remote",
    tables=(
        Secrets("remote_peers", (17,), ("mac", "idx", "name", "private_key", "public_key", "preshared_key",
                                        "created"), peer_row),
        Secrets("remote_router", (17,), ("id", "private_key"), router_row),
    ),
    routes=("remote",),
    hears=(events.Lease, events.Device, events.Ipv6Plan),
    stays={"remote_peers": "a remote device is a device of its own, under a MAC the router made for it: never "
                           "one that comes back with a new private address"},
)
