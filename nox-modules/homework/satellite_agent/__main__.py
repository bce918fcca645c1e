"""homework-satellite-agent: python3 -m homework.satellite_agent --router 10.2.0.1 ..."""
from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

from ..agentwire import DEFAULT_PORT
from .agent import Agent, AgentOptions


def router_address(text: str) -> tuple[str, int]:
    """HOST, HOST:PORT, or an IPv6 address in brackets ([fe80::1%br0]:6655, the router on
    the satellite's management link)."""
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or not host or (rest and not rest.startswith(":")):
            raise argparse.ArgumentTypeError(f"not [ADDRESS] or [ADDRESS]:PORT: {text!r}")
        text = f"{host}{rest}" if rest else f"{host}:{DEFAULT_PORT}"
        host, _, port = text.rpartition(":")
        return host, _port(port, text)
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, DEFAULT_PORT
    if not host or ":" in host:
        raise argparse.ArgumentTypeError(f"not HOST or HOST:PORT (an IPv6 address goes in brackets): {text!r}")
    return host, _port(port, text)


def _port(port: str, text: str) -> int:
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not HOST or HOST:PORT: {text!r}") from None
    if not 0 < number < 65536:
        raise argparse.ArgumentTypeError(f"not HOST or HOST:PORT: {text!r}")
    return number


def parse(argv: list[str]) -> AgentOptions:
    p = argparse.ArgumentParser(prog="homework-satellite-agent",
                                description="A satellite's agent: the router's Wi-Fi settings and deny list to "
                                            "hostapd, the radios' station dumps to the router.")
    p.add_argument("--router", required=True, type=router_address,
                   help=f"the router's agent channel, HOST[:PORT] or [IPV6%%IFACE][:PORT] (port {DEFAULT_PORT} "
                        "by default)")
    p.add_argument("--cert", required=True, help="this satellite's certificate (from pairing)")
    p.add_argument("--key", required=True, help="this satellite's private key")
    p.add_argument("--ca", required=True, help="the household CA's certificate (from pairing)")
    p.add_argument("--state-dir", required=True, type=Path, help="where wifi.env and hostapd.deny are kept")
    p.add_argument("--radio", action="append", default=[], help="a Wi-Fi interface (repeat for several)")
    p.add_argument("--station-dump-command", default="iw dev {ifname} station dump")
    p.add_argument("--info-command", default="iw dev {ifname} info")
    p.add_argument("--hostapd-ctrl-dir", default="/run/hostapd")
    p.add_argument("--wifi-apply-command", default="",
                   help="run after the Wi-Fi settings changed (e.g. 'homework-wifi apply')")
    p.add_argument("--unpaired-command", default="",
                   help="run (with HOMEWORK_UNPAIRED=denied|forgotten|replaced) when the router says it no "
                        "longer admits this satellite; the agent then exits")
    p.add_argument("--interval", type=float, default=0.5,
                   help="seconds between reports (how soon a roamed station is noticed)")
    a = p.parse_args(argv)
    if not 0.1 <= a.interval <= 60:
        p.error("--interval: 0.1 to 60 seconds")
    return AgentOptions(router=a.router, cert=a.cert, key=a.key, ca=a.ca, state_dir=a.state_dir, radios=a.radio,
                        station_dump_command=a.station_dump_command, info_command=a.info_command,
                        hostapd_ctrl_dir=a.hostapd_ctrl_dir, wifi_apply_command=a.wifi_apply_command,
                        unpaired_command=a.unpaired_command, interval=a.interval)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    agent = Agent(parse(sys.argv[1:] if argv is None else argv))
    signal.signal(signal.SIGTERM, lambda *_: agent.stop.set())
    try:
        agent.run()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
