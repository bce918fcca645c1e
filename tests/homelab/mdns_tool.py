"""mDNS with a real implementation (Debian's python3-zeroconf), for the multicast tests.

    mdns_tool.py publish NAME ADDRESS SECONDS     announce _homework._tcp service NAME
    mdns_tool.py browse SECONDS                   print each _homework._tcp service found
    MDNS_V6=1 ...                                 the same over IPv6 only (ff02::fb)
"""
import ipaddress
import os
import sys
import time

from zeroconf import InterfaceChoice, IPVersion, ServiceBrowser, ServiceInfo, ServiceStateChange, Zeroconf

TYPE = "_homework._tcp.local."
VERSION = IPVersion.V6Only if os.environ.get("MDNS_V6") == "1" else IPVersion.V4Only
# Over IPv6 one socket on :: (the kernel picks the link-local source), not zeroconf's
# default of one socket bound to each address: a socket bound to an address that is
# briefly tentative is never made, and that host then answers nobody.
INTERFACES = InterfaceChoice.Default if VERSION is IPVersion.V6Only else InterfaceChoice.All


def publish(name: str, address: str, seconds: float) -> None:
    zc = Zeroconf(interfaces=INTERFACES, ip_version=VERSION)
    info = ServiceInfo(TYPE, f"{name}.{TYPE}", addresses=[ipaddress.ip_address(address).packed],
                       port=8000, properties={"who": name})
    zc.register_service(info, allow_name_change=True)
    print("published", flush=True)
    time.sleep(seconds)
    zc.unregister_service(info)
    zc.close()


def browse(seconds: float) -> None:
    zc = Zeroconf(interfaces=INTERFACES, ip_version=VERSION)

    def changed(zeroconf, service_type, name, state_change):
        if state_change is ServiceStateChange.Added:
            print(f"found {name}", flush=True)

    ServiceBrowser(zc, TYPE, handlers=[changed])
    time.sleep(seconds)
    zc.close()


if __name__ == "__main__":
    if sys.argv[1] == "publish":
        publish(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        browse(float(sys.argv[2]))
