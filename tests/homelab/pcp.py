"""A small PCP client (RFC 6887 MAP requests) for the tests: Debian ships NAT-PMP's
natpmpc and UPnP's upnpc, but no PCP client. Run inside a device namespace:

    python3 pcp.py SERVER INTERNAL_ADDRESS PROTO PORT LIFETIME [EXTERNAL_PORT]

prints one JSON line: result code, lifetime, external address and port. SERVER is the
router (its IPv4 gateway, or fe80::1%eth0); INTERNAL_ADDRESS the device's own address the
mapping (IPv4) or pinhole (IPv6) is for; the request is sent from it."""
import ipaddress
import json
import os
import socket
import struct
import sys

PROTOCOLS = {"tcp": 6, "udp": 17}
RESULTS = {0: "SUCCESS", 1: "UNSUPP_VERSION", 2: "NOT_AUTHORIZED", 3: "MALFORMED_REQUEST", 4: "UNSUPP_OPCODE",
           5: "UNSUPP_OPTION", 6: "MALFORMED_OPTION", 7: "NETWORK_FAILURE", 8: "NO_RESOURCES",
           9: "UNSUPP_PROTOCOL", 10: "USER_EX_QUOTA", 11: "CANNOT_PROVIDE_EXTERNAL", 12: "ADDRESS_MISMATCH",
           13: "EXCESSIVE_REMOTE_PEERS"}


def as16(address: str) -> bytes:
    ip = ipaddress.ip_address(address)
    return ip.packed if ip.version == 6 else b"\0" * 10 + b"\xff\xff" + ip.packed


def map_request(internal: str, proto: str, port: int, lifetime: int, external_port: int, nonce: bytes) -> bytes:
    header = struct.pack("!BBHI16s", 2, 1, 0, lifetime, as16(internal))
    suggested = "::" if ":" in internal else "0.0.0.0"
    body = struct.pack("!12sB3sHH16s", nonce, PROTOCOLS[proto], b"\0" * 3, port, external_port, as16(suggested))
    return header + body


def main() -> int:
    server, internal, proto, port, lifetime = sys.argv[1:6]
    external_port = int(sys.argv[6]) if len(sys.argv) > 6 else int(port)
    family = socket.AF_INET6 if ":" in internal else socket.AF_INET
    nonce = os.urandom(12)
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.bind((internal, 0))
        s.settimeout(1.0)
        host, _, scope = server.partition("%")
        dest = (host, 5351, 0, socket.if_nametoindex(scope)) if scope else (host, 5351)
        for _ in range(4):
            s.sendto(map_request(internal, proto, int(port), int(lifetime), external_port, nonce), dest)
            try:
                data = s.recv(1100)
            except ConnectionRefusedError:
                print(json.dumps({"result": "REFUSED", "code": -1}))
                return 2
            except TimeoutError:
                continue
            _ver, op, _r, code, life, _epoch = struct.unpack_from("!BBBBII", data, 0)
            _nonce, _proto, _iport, eport, eaddr = struct.unpack_from("!12sB3xHH16s", data, 24)
            ext = ipaddress.IPv6Address(eaddr)
            ext_text = str(ext.ipv4_mapped) if ext.ipv4_mapped else str(ext)
            print(json.dumps({"result": RESULTS.get(code, str(code)), "code": code, "lifetime": life,
                              "external_address": ext_text, "external_port": eport}))
            return 0 if code == 0 else 1
    print(json.dumps({"result": "TIMEOUT", "code": -2}))
    return 3


if __name__ == "__main__":
    sys.exit(main())
