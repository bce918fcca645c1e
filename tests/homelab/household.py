"""A home that runs what the router image runs: every component of homework.lineup this
machine can have (the link simulator standing in for a radio), and every daemon they
talk to, started as the image starts them:

    homework-dnsd, the router's dnsmasq and the captive pages' lighttpd (dns.DnsLab)
    the Guest Board's lighttpd with a management link for the host (web.Web)
    mosquitto on 127.0.0.1 (the mqtt component's broker, as the image's own)
    hwdbd (Home starts it whenever it is built)

Home uses this for every home whose config names no components (`make run`, the
household's-day suite); a test that needs less names its components. Its config is the
shipped one (homework.lineup.SHIPPED: IPv6 on, each device's /64 from LAN6_SITE) with this
home's paths, and a test's own overrides on top.
"""
from __future__ import annotations

import secrets
import shutil
import subprocess
import time

from homework import lineup

from . import LAN6_SITE, REPO

MQTT_PORT = 1883          # the router namespace is the home's own: the image's port


def lab_needs(home) -> set[str]:
    """The needs of homework.lineup this machine meets for this home (no radio: the
    link simulator stands in)."""
    from .dns import DNSD_BINARY
    have = set()
    if DNSD_BINARY.exists():
        have.add("dnsd")
    if home.want_hwdb is not False and (REPO / "hwdb" / "target" / "release" / "hwdbd").exists():
        have.add("hwdbd")
    if home.with_internet:
        have.add("wan")
    if shutil.which("mosquitto"):
        have.add("mqtt-broker")
    from require_all import require_all
    if require_all():    # under CI the full lineup is whole: a component is never quietly left out
        missing = {"dnsd", "mqtt-broker"} - have | ({"hwdbd"} - have if home.want_hwdb is not False else set())
        if missing:
            raise RuntimeError(f"the image's full lineup needs {', '.join(sorted(missing))} here (make deps): "
                               "under CI=true / HOMEWORK_REQUIRE_ALL=1 none is left out")
    return have


def household_config(home) -> None:
    """Fill home.config_overrides with the shipped config for this home (the test's own
    values win)."""
    from .dns import dns_config
    from .web import API_PORT
    have = lab_needs(home)
    components = lineup.components(have, stand_ins=getattr(home, "stand_ins", True))
    config = dns_config(home.run_id, components) if "dnsd" in have else {"controller": {"components": components}}
    for section, table in lineup.SHIPPED.items():
        config.setdefault(section, {}).update(table)
    if not home.ipv6_pd:
        config["ipv6"]["prefix"] = LAN6_SITE
    if "linksim" in components:
        config["linksim"] = {"interval": 1}
    if "mqtt-broker" in have:
        config["mqtt"] = {"host": "127.0.0.1", "port": MQTT_PORT}
    # The Guest Board's admin password: the controller hashes it from this file at its
    # first start (web.Web removes the file once the board is up), as the image's first boot.
    home.admin_password = secrets.token_urlsafe(12)
    home.admin_password_file = home.dir.parent / f".{home.dir.name}-admin-password"
    home.admin_password_file.write_text(home.admin_password + "\n")
    home.admin_password_file.chmod(0o600)
    config["api"] = {"admin_password_file": str(home.admin_password_file), "port": API_PORT}
    for section, table in home.config_overrides.items():
        config.setdefault(section, {}).update(table)
    home.config_overrides.clear()
    home.config_overrides.update(config)


def start_services(home) -> None:
    """The daemons the components talk to, once the controller runs."""
    from .dns import DnsLab
    from .web import Web, have_web
    components = home.config_overrides["controller"]["components"]
    if "api" in components and have_web() is None:
        home.web = Web(home).start()
    home.admin_password_file.unlink(missing_ok=True)     # hashed by the controller by now
    if "dns" in components:
        home.dns = DnsLab(home, log_queries=True).start()
    if "mqtt" in components:
        start_mosquitto(home)


def start_mosquitto(home) -> subprocess.Popen:
    """mosquitto in the router namespace on 127.0.0.1, anonymous, as the image's own; the
    controller's MQTT link retries until it is up."""
    d = home.dir / "mosquitto"
    d.mkdir(exist_ok=True)
    conf = d / "mosquitto.conf"
    conf.write_text(f"user root\nlistener {MQTT_PORT} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                    f"log_dest file {d / 'mosquitto.log'}\n")
    proc = home.router_popen(["mosquitto", "-c", str(conf)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while not home.router(["ss", "-Hltn", f"sport = :{MQTT_PORT}"]).stdout.strip():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"mosquitto did not start (see {d / 'mosquitto.log'})")
        time.sleep(0.05)
    home.mosquitto = proc
    return proc


def describe(home) -> str:
    """What a household home runs, in one line, for the tables that quote a figure."""
    cfg = home.config_overrides
    daemons = [name for name, on in (("homework-dnsd + dnsmasq + the captive page", home.dns is not None),
                                     ("the Guest Board's lighttpd", home.web is not None),
                                     ("mosquitto", getattr(home, "mosquitto", None) is not None),
                                     ("hwdbd", home.hwdb_enabled)) if on]
    return (f"components {', '.join(cfg['controller']['components'])}; "
            f"IPv6 {'on' if cfg.get('ipv6', {}).get('enabled') else 'off'}; " + ", ".join(daemons)
            + "; userspace OVS (netdev); every other setting at its default")
