"""A remote device's WireGuard configuration (wg-quick's format, which the WireGuard apps
import from a file or a QR code) and its QR code as SVG (homework/qrsvg.py)."""
from __future__ import annotations

import re


KEEPALIVE = 25          # seconds: keeps the router's view of where it is fresh, and NATs open


def config_text(*, name: str, private_key: str, address4: str, address6: str | None, dns: list[str],
                router_public_key: str, preshared_key: str, endpoint: str) -> str:
    addresses = [f"{address4}/32"] + ([f"{address6}/128"] if address6 else [])
    lines = [f"# {name}: away from home, through the household's Homework router",
             "[Interface]",
             f"PrivateKey = {private_key}",
             f"Address = {', '.join(addresses)}",
             f"DNS = {', '.join(dns)}",
             "",
             "[Peer]",
             f"PublicKey = {router_public_key}",
             f"PresharedKey = {preshared_key}",
             f"Endpoint = {endpoint}",
             "AllowedIPs = 0.0.0.0/0, ::/0",
             f"PersistentKeepalive = {KEEPALIVE}"]
    return "\n".join(lines) + "\n"


def endpoint_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def file_name(name: str) -> str:
    """homework-<name>.conf, safe as a file name (WireGuard apps name the tunnel after it)."""
    safe = re.sub(r"[^A-Za-z0-9_=+.-]+", "-", name).strip("-.")[:20] or "away"
    return f"homework-{safe}.conf"
