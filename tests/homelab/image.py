"""The router as the image runs it, in the emulated home: the controller with every
component a wired image loads (image/guest/homework-net's list, less the radio, which
needs Wi-Fi), IPv6 on, homework-dnsd with dnsmasq and the captive page, hwdbd, the Guest
Board's lighttpd, and mosquitto on loopback (the image's broker). For the benchmarks that
must measure what a household runs, not a lighter configuration.

    with ImageRouter() as router:
        dev = router.dns.join()               # DHCP + permitted
        router.home.control("status")
"""
from __future__ import annotations

import secrets
import subprocess

from . import LAN6_SITE, Home, new_run_id
from .dns import DnsLab, dns_config
from .routing import wait_until
from .web import API_PORT, Web, have_web

# image/guest/homework-net's order; radio only where there is Wi-Fi, which a wired image
# (and this home) has not.
IMAGE_COMPONENTS = ("dhcp", "routing", "dns", "localnames", "blocklists", "eapol", "hwdb_sync", "api", "usage",
                    "schedules", "notify", "wanwatch", "metrics", "mqtt", "backup", "qos", "satlink")
MQTT_PORT = 1883


class ImageRouter:
    def __init__(self, config: dict | None = None, log=None, **home_kw):
        why = have_web()
        if why:
            raise RuntimeError(f"the image's router needs the Guest Board: {why}")
        run_id = home_kw.pop("run_id", None) or new_run_id()
        cfg = dns_config(run_id, IMAGE_COMPONENTS)
        cfg["ipv6"] = {"enabled": True, "prefix": LAN6_SITE}
        cfg["mqtt"] = {"host": "127.0.0.1", "port": MQTT_PORT}
        cfg["hwdb"] = {"enabled": True}
        for section, table in (config or {}).items():
            cfg.setdefault(section, {}).update(table)
        self.home = Home(config=cfg, run_id=run_id, log=log, hwdb=True, **home_kw)
        # The admin password is read from a file at the controller's first start.
        self.home.admin_password = secrets.token_urlsafe(12)
        self.home.admin_password_file = self.home.dir.parent / f".{self.home.dir.name}-admin-password"
        cfg.setdefault("api", {}).update(admin_password_file=str(self.home.admin_password_file), port=API_PORT)
        self.web: Web | None = None
        self.dns: DnsLab | None = None

    def __enter__(self) -> "ImageRouter":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> "ImageRouter":
        pw = self.home.admin_password_file
        pw.write_text(self.home.admin_password + "\n")
        pw.chmod(0o600)
        try:
            self.home.start()
            self._start_mosquitto()
            self.dns = DnsLab(self.home).start()
            self.web = Web(self.home).start()
        except BaseException:
            self.close()
            raise
        return self

    def _start_mosquitto(self) -> None:
        conf = self.home.dir / "mosquitto.conf"
        conf.write_text(f"user root\nlistener {MQTT_PORT} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                        f"log_dest file {self.home.dir / 'mosquitto.log'}\n")
        self.home.router_popen(["mosquitto", "-c", str(conf)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        wait_until(lambda: self.home.router(["ss", "-Hltn", f"sport = :{MQTT_PORT}"]).stdout.strip(), 10,
                   "mosquitto listening")

    def close(self) -> None:
        if self.web is not None:
            self.web.stop()
        self.home.close()
        self.home.admin_password_file.unlink(missing_ok=True)


def describe(router: ImageRouter) -> str:
    """One line saying what ran, for every table that quotes a figure."""
    return ("the image's components (" + ", ".join(IMAGE_COMPONENTS) + "), IPv6 on, homework-dnsd + dnsmasq, "
            "hwdbd, lighttpd (Guest Board and captive page), mosquitto; userspace OVS (netdev); "
            "config defaults otherwise")
