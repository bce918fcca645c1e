"""mDNS with a real implementation (Debian's python3-zeroconf), for the multicast tests.

    mdns_tool.py publish NAME ADDRESS SECONDS     announce _homework._tcp service NAME
    mdns_tool.py browse SECONDS                   print each _homework._tcp service found
"""
import sys
import time

from zeroconf import IPVersion, ServiceBrowser, ServiceInfo, ServiceStateChange, Zeroconf

TYPE = "_homework._tcp.local."


def publish(name: str, address: str, seconds: float) -> None:
    zc = Zeroconf(ip_version=IPVersion.V4Only)
    info = ServiceInfo(TYPE, f"{name}.{TYPE}", addresses=[bytes(int(x) for x in address.split("."))],
                       port=8000, properties={"who": name})
    zc.register_service(info, allow_name_change=True)
    print("published", flush=True)
    time.sleep(seconds)
    zc.unregister_service(info)
    zc.close()


def browse(seconds: float) -> None:
    zc = Zeroconf(ip_version=IPVersion.V4Only)

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
