"""`make run`: the router with an emulated home of three devices, live.

    python -m homelab.run [--devices N] [--satellites N] [--seconds S]

Starts OVS, the controller and three devices running dhclient, udhcpc and dhcpcd;
HOMEWORK_SATELLITES=N (or --satellites) adds N satellite switches, each a namespace with
its own Open vSwitch cabled to the router, paired and connected over TLS, with one more
device on each;
prints what happens (the controller's log lines, each client's leases, each
device's state) and how to permit a device; tears everything down on Ctrl-C.
HOMEWORK_RUN_SECONDS=S (or --seconds) exits by itself after S seconds (smoke mode);
then the exit status is 1 if a device got no /30.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from . import LAN6_SITE, WEB6_ADDR, WEB_ADDR, Home, new_run_id
from .satellite import Satellite

CLIENTS = ("dhclient", "udhcpc", "dhcpcd")
# A cable line: 20 Mbit/s down, 5 up, half a second of buffer in the modem.
ISP_LINK = {"down_kbit": 20000, "up_kbit": 5000, "buffer_ms": 500}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="make run")
    ap.add_argument("--devices", type=int, default=3)
    ap.add_argument("--satellites", type=int, default=int(os.environ.get("HOMEWORK_SATELLITES", "0") or 0),
                    help="satellite switches cabled to the router, one more device on each (at most 15)")
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("HOMEWORK_RUN_SECONDS", "0") or 0),
                    help="exit by itself after this many seconds (0: run until Ctrl-C)")
    args = ap.parse_args(argv)
    if not 0 <= args.satellites <= 15:
        ap.error("--satellites: 0 to 15")
    t0 = time.monotonic()

    def say(msg: str) -> None:
        print(f"[{time.monotonic() - t0:6.1f}s] {msg}", flush=True)

    ok = False
    # What the router image runs (homework.lineup): a home that names no components gets
    # every one this machine can have, with homework-dnsd, dnsmasq, the captive pages,
    # hwdb, mosquitto and the Guest Board (household.py); IPv6 on, each device's /64 from
    # LAN6_SITE. The ISP link is slow with a modem's deep buffer, so priorities, caps and
    # charts meet a real bottleneck.
    run_id = new_run_id()
    config: dict = {}
    sat_ids = [(i, 0xA0 + i) for i in range(1, args.satellites + 1)]
    if sat_ids:
        # satellite boxes reach the TLS listener over their management links
        config["satellites"] = {"switches": [Satellite.spec_for(i, dpid) for i, dpid in sat_ids],
                                "tls_listen": "::"}
    # public_wan: an ISP address miniupnpd takes for public, so games can open ports (PUBLIC_WAN_ADDR)
    home = Home(config=config, run_id=run_id, log=say, isp_link=ISP_LINK, public_wan=True)
    if sat_ids:      # their agents: the household's Wi-Fi and deny list out, station dumps in
        components = home.config_overrides["controller"]["components"]
        components += [c for c in ("radio", "satlink") if c not in components]
    with home:
        say(f"run {home.run_id}: router namespace {home.router_ns}, state and logs in {home.dir}")
        say(f"components: {', '.join(home.config_overrides['controller']['components'])}")
        say(f"ISP link: {ISP_LINK['down_kbit'] // 1000} Mbit/s down, {ISP_LINK['up_kbit'] // 1000} Mbit/s up, "
            f"{ISP_LINK['buffer_ms']} ms of buffer in the modem")
        web = home.web
        if home.dns is not None:
            say("DNS interception on: homework-dnsd -> dnsmasq -> the emulated internet's resolver")
        sats = [Satellite(home, i, dpid, own_ovs=True).start(controller=None) for i, dpid in sat_ids]
        for sat in sats:
            sat.pair()      # its key made there, its certificate signed here; then ssl: to the controller
            sat.start_agent(radios=())
            say(f"satellite {sat.bridge} (datapath {sat.dpid:016x}, namespace {sat.ns}, its own OVS) "
                f"cabled to router port {sat.router_port}, paired, OpenFlow over TLS, its agent started")
        devs = []
        for i in range(args.devices):
            client = CLIENTS[i % len(CLIENTS)]
            dev = home.add_device(name=f"{client}{i + 1}")
            devs.append(dev)
        for sat in sats:
            client = CLIENTS[(args.devices + sat.index - 1) % len(CLIENTS)]
            devs.append(home.add_device(name=f"{client}-{sat.bridge}", switch=sat))
        for i, dev in enumerate(devs):
            client = CLIENTS[i % len(CLIENTS)]
            dev.start_dhcp(client)
            where = "" if dev.bridge == "br0" else f" on satellite {dev.bridge}"
            say(f"{dev.name} ({client}) {dev.mac} in namespace {dev.ns}{where}: asking for an address")
        print()
        print("  To permit a device (its next renewal then gets the 3600 s lease):")
        for dev in devs:
            print(f"    {home.cli_command('permit', dev.mac)}")
        print(f"  To list devices:  {home.cli_command('devices')}")
        print(f"  To use a device:  ip netns exec {devs[0].ns} curl http://{WEB_ADDR}/" if devs else "")
        if devs:
            print(f"  Over IPv6:        ip netns exec {devs[0].ns} curl -6 'http://[{WEB6_ADDR}]/'"
                  f"   (its own /64 from {LAN6_SITE}; `ip -6 addr` in the namespace shows it)")
            print(f"  A big download:   ip netns exec {devs[0].ns} curl -o /dev/null http://{WEB_ADDR}/download/200M")
            print(f"  A video stream:   ip netns exec {devs[0].ns} curl -o /dev/null http://{WEB_ADDR}/stream/3000"
                  "   (3 Mbit/s until Ctrl-C)")
        if web:
            print(f"  Guest Board:      {web.url}  (admin password: {home.admin_password};"
                  " self-signed certificate, so accept it once)")
        print("  Ctrl-C tears everything down." if not args.seconds else
              f"  Smoke mode: exiting after {args.seconds:.0f} s.")
        print(flush=True)

        log_pos = 0
        seen_leases = {dev.mac: 0 for dev in devs}
        seen_v6: dict[str, list[str]] = {}
        states: dict[str, str] = {}
        deadline = time.monotonic() + args.seconds if args.seconds else None  # after start-up
        try:
            while deadline is None or time.monotonic() < deadline:
                text = home.controller_log()
                if len(text) > log_pos:
                    for line in text[log_pos:].splitlines():
                        if line.strip():
                            say(f"controller: {line.split(' ', 2)[-1] if line[:2] == '20' else line}")
                    log_pos = len(text)
                for dev in devs:
                    leases = dev.leases()
                    for lease in leases[seen_leases[dev.mac]:]:
                        say(f"{dev.name} ({dev.client}) {lease.reason}: {lease.ip}/"
                            f"{_prefix(lease.mask)} router {lease.router} dns {','.join(lease.dns)} "
                            f"lease {lease.lease_time} s")
                    seen_leases[dev.mac] = len(leases)
                    try:
                        v6 = dev.ipv6_global()
                    except subprocess.TimeoutExpired:     # a busy machine: look again next round
                        continue
                    if v6 and v6 != seen_v6.get(dev.mac):
                        seen_v6[dev.mac] = v6
                        say(f"{dev.name} IPv6 (SLAAC in its own /64): {', '.join(v6)}")
                try:
                    res = home.homework("--json", "devices")
                except subprocess.TimeoutExpired:     # a busy controller: ask again next round
                    res = None
                if res is not None and res.returncode == 0:
                    try:
                        rows = json.loads(res.stdout)
                    except ValueError:
                        rows = []
                    for row in rows if isinstance(rows, list) else []:
                        mac, state = row.get("mac"), row.get("state")
                        if mac and states.get(mac) != state:
                            states[mac] = state
                            name = next((d.name for d in devs if d.mac == mac), mac)
                            say(f"{name} {mac} is {state}")
                if not home.controller_running():
                    say("controller exited! last log lines:\n" + home.controller_log()[-2000:])
                    break
                time.sleep(0.5)
        except KeyboardInterrupt:
            print()
            say("Ctrl-C: tearing down")
        got = [d for d in devs if (d.ipv4() or ("", 0))[1] == 30]
        ok = len(got) == len(devs)
        say(f"{len(got)} of {len(devs)} devices hold a /30")
    say(f"run {home.run_id} torn down")
    return 0 if ok or not args.seconds else 1


def _prefix(mask: str | None) -> str:
    if not mask:
        return "?"
    return str(sum(bin(int(x)).count("1") for x in mask.split(".")))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C during start-up: Home has already torn down
        print("interrupted; everything torn down", flush=True)
        sys.exit(130)
