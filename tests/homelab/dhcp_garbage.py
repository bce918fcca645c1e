"""Send garbage, truncated and malformed DHCP packets out of one interface (scapy).

    python3 dhcp_garbage.py IFACE [ROUNDS] [SEED]

Run inside a device namespace of the emulated home: the router's DHCP server must
drop all of it without disturbing anyone else. Prints how many frames were sent.
"""
import random
import sys

from scapy.all import BOOTP, DHCP, IP, UDP, Ether, Raw, conf, get_if_hwaddr, sendp  # noqa: E402

conf.verb = 0


def frames(iface: str, rounds: int, rng: random.Random):
    mac = get_if_hwaddr(iface)
    chaddr = bytes.fromhex(mac.replace(":", "")) + b"\0" * 10
    base = (Ether(src=mac, dst="ff:ff:ff:ff:ff:ff") / IP(src="0.0.0.0", dst="255.255.255.255")
            / UDP(sport=68, dport=67))
    good = base / BOOTP(chaddr=chaddr, xid=rng.getrandbits(32)) / DHCP(
        options=[("message-type", "discover"), ("hostname", b"garbage"), "end"])
    good_bytes = bytes(good)
    udp_off = 14 + 20
    for _ in range(rounds):
        # 1. random payloads of every size, including empty
        yield base / Raw(bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 600))))
        # 2. a valid DISCOVER cut short anywhere after the UDP header (lengths fixed up)
        cut = rng.randrange(udp_off + 8, len(good_bytes) - 1)
        yield base / Raw(good_bytes[udp_off + 8:cut])
        # 3. a valid DISCOVER whose IP/UDP length fields claim more than is there
        raw = bytearray(good_bytes)
        raw[udp_off + 4:udp_off + 6] = (len(raw) - udp_off + 200).to_bytes(2, "big")
        yield Ether(bytes(raw))
        # 4. well-formed header, broken options
        bad_options = rng.choice([
            b"\x35\x05\x01",                      # option length past the end
            b"\x35\x00",                          # message type with length 0
            b"\x35\x01\x63\xff",                  # message type 99
            b"\x35\x01\x01",                      # no end option
            b"\x35\x01\x03\x32\x02\x0a\x02\xff",  # REQUEST with a 2-byte requested address
            b"\x35\x01\x03\x36\x04\xc0\x00\x02\x01\x32\x04\x0a\x02\x00\x02\xff",  # foreign server id
            b"\x0c\xff" + b"A" * 255 + b"\xff",   # hostname that overruns
            b"\x34\x01\x03\x35\x01\x01\xff",      # option overload pointing at garbage
            bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 300))),
        ])
        header = BOOTP(op=rng.choice([1, 1, 2, 7]), htype=rng.choice([1, 1, 6, 0]),
                       hlen=rng.choice([6, 6, 0, 16, 255]), chaddr=chaddr,
                       xid=rng.getrandbits(32), options=b"")
        yield base / Raw(bytes(header)[:236] + b"\x63\x82\x53\x63" + bad_options)
        # 5. no magic cookie at all
        yield base / Raw(bytes(header)[:236] + bad_options)
        # 6. a lone BOOTP header, no cookie, no options; and a frame too short to be BOOTP
        yield base / Raw(bytes(header)[:rng.randrange(1, 236)])


def main() -> int:
    iface = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    pkts = list(frames(iface, rounds, rng))
    sendp(pkts, iface=iface, inter=0.002)
    print(f"sent {len(pkts)} malformed DHCP frames on {iface}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
