"""A device announcing itself, with real implementations: mDNS/DNS-SD by Debian's
python3-zeroconf, SSDP as a UPnP device sends its NOTIFY.

    announce_tool.py mdns TYPE NAME ADDRESS SECONDS [KEY=VALUE ...]
        register service NAME of TYPE (e.g. _ipp._tcp) at ADDRESS with those TXT entries;
        zeroconf announces it (and answers queries) for SECONDS
    MDNS_V6=1 announce_tool.py mdns ...
        the same over IPv6 only ([ff02::fb]:5353, from the link-local address; ADDRESS an IPv6 one)
    announce_tool.py ssdp SERVER [COUNT]
        COUNT ssdp:alive NOTIFYs to 239.255.255.250:1900 with that SERVER header
"""
import ipaddress
import os
import socket
import sys
import time

from zeroconf import InterfaceChoice, IPVersion, ServiceInfo, Zeroconf


def mdns(service_type: str, name: str, address: str, seconds: float, txt: list[str]) -> None:
    if os.environ.get("MDNS_V6") == "1":
        # one socket on :: (the kernel picks the link-local source), as mdns_tool.py does
        zc = Zeroconf(interfaces=InterfaceChoice.Default, ip_version=IPVersion.V6Only)
    else:
        zc = Zeroconf(interfaces=InterfaceChoice.All, ip_version=IPVersion.V4Only)
    full_type = f"{service_type}.local."
    properties = dict(item.split("=", 1) for item in txt)
    info = ServiceInfo(full_type, f"{name}.{full_type}", addresses=[ipaddress.ip_address(address.split("%")[0]).packed],
                       port=631, properties=properties, server=f"{name.replace(' ', '-')}.local.")
    zc.register_service(info, allow_name_change=True)
    print("published", flush=True)
    time.sleep(seconds)
    zc.unregister_service(info)
    zc.close()


def ssdp(server: str, count: int) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 2)
    message = ("NOTIFY * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nCACHE-CONTROL: max-age=1800\r\n"
               "LOCATION: http://127.0.0.1:1400/xml/device_description.xml\r\nNT: upnp:rootdevice\r\n"
               f"NTS: ssdp:alive\r\nSERVER: {server}\r\nUSN: uuid:RINCON_000E58000001::upnp:rootdevice\r\n\r\n")
    for i in range(count):
        s.sendto(message.encode(), ("239.255.255.250", 1900))
        if i + 1 < count:
            time.sleep(0.5)
    print("sent", count, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "mdns":
        mdns(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), sys.argv[6:])
    else:
        ssdp(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 3)
