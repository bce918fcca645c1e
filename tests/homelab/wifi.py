"""802.1X in the emulated home, without radios: hostapd (driver=wired, EAP-MD5 server) on a
veth whose other end is a port of the router's bridge, and wpa_supplicant (-D wired) in a
device namespace. The same EAPOL frames a Wi-Fi handshake starts with cross the switch,
so the controller's EAPOL flows and blacklist are exercised for real.

    home = Home(config=eapol_config(run_id))      # or merge into other overrides
    ap = Hostapd(home).start()
    sup = Supplicant(dev).start()
    sup.wait_state("AUTHENTICATED")
"""
from __future__ import annotations

import subprocess
import time

from . import BRIDGE, REPO, RUN_DIR_PREFIX, RUN_ROOT, Device, Home

TEMPLATE = REPO / "conf" / "hostapd-wired.conf.in"
IDENTITY, PASSWORD = "household", "correct horse battery staple"
AP_IFACE = "ap0"


def eapol_config(run_id: str) -> dict:
    """[eapol] overrides pointing the controller at this run's hostapd."""
    d = RUN_ROOT / f"{RUN_DIR_PREFIX}{run_id}" / "hostapd"
    return {"eapol": {"hostapd_port": f"{run_id}-ap", "hostapd_ctrl": str(d / "ctrl" / AP_IFACE),
                      "hostapd_deny_file": str(d / "deny")}}


class Hostapd:
    def __init__(self, home: Home):
        self.home = home
        self.dir = home.dir / "hostapd"
        self.port_name = f"{home.run_id}-ap"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 15) -> Hostapd:
        h = self.home
        self.dir.mkdir(exist_ok=True)
        (self.dir / "ctrl").mkdir(exist_ok=True)
        h.router(["ip", "link", "add", self.port_name, "type", "veth", "peer", "name", AP_IFACE])
        for ifname in (self.port_name, AP_IFACE):
            h.router(["ethtool", "-K", ifname, "tx", "off"], check=False)
            h.router(["ip", "link", "set", ifname, "up"])
        # A port number far from the devices' (they ask for 1, 2, ...), so it never moves.
        h.vsctl("--may-exist", "add-port", BRIDGE, self.port_name, "--", "set", "interface", self.port_name,
                "ofport_request=1000")
        users = self.dir / "eap_users"
        users.write_text(f'"{IDENTITY}" MD5 "{PASSWORD}"\n')
        deny = self.dir / "deny"
        if not deny.exists():
            deny.write_text("")
        conf = self.dir / "hostapd.conf"
        conf.write_text(TEMPLATE.read_text().replace("@IFACE@", AP_IFACE).replace("@CTRL_DIR@", str(self.dir / "ctrl"))
                        .replace("@EAP_USERS@", str(users)).replace("@DENY_FILE@", str(deny)))
        self.proc = h.router_popen(["hostapd", "-d", str(conf)], stdout=open(self.dir / "hostapd.log", "ab"),
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not (self.dir / "ctrl" / AP_IFACE).exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"hostapd did not start:\n{self.log()[-2000:]}")
            time.sleep(0.05)
        return self

    def cli(self, *args: str) -> str:
        return self.home.router(["hostapd_cli", "-p", str(self.dir / "ctrl"), "-i", AP_IFACE, *args],
                                check=False).stdout

    def log(self) -> str:
        try:
            return (self.dir / "hostapd.log").read_text(errors="replace")
        except OSError:
            return ""

    def deny_file(self) -> str:
        return (self.dir / "deny").read_text()


class Supplicant:
    """wpa_supplicant, wired 802.1X with EAP-MD5, in a device namespace."""

    def __init__(self, dev: Device, identity: str = IDENTITY, password: str = PASSWORD):
        self.dev = dev
        self.dir = dev.dir / "wpa"
        self.identity, self.password = identity, password
        self.proc: subprocess.Popen | None = None

    def start(self) -> Supplicant:
        self.dir.mkdir(parents=True, exist_ok=True)
        conf = self.dir / "wpa.conf"
        conf.write_text(f"ctrl_interface={self.dir / 'ctrl'}\nap_scan=0\n"
                        "network={\n  key_mgmt=IEEE8021X\n  eap=MD5\n"
                        f'  identity="{self.identity}"\n  password="{self.password}"\n  eapol_flags=0\n}}\n')
        self.proc = self.dev.popen(["wpa_supplicant", "-D", "wired", "-i", self.dev.ifname, "-c", str(conf), "-d",
                                    "-f", str(self.dir / "wpa.log")], stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not (self.dir / "ctrl" / self.dev.ifname).exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("wpa_supplicant did not start")
            time.sleep(0.05)
        return self

    def cli(self, *args: str) -> str:
        return self.dev.run(["wpa_cli", "-p", str(self.dir / "ctrl"), "-i", self.dev.ifname, *args], check=False).stdout

    def status(self) -> dict:
        out = {}
        for line in self.cli("status").splitlines():
            k, sep, v = line.partition("=")
            if sep:
                out[k] = v
        return out

    def eap_successes(self) -> int:
        try:
            return (self.dir / "wpa.log").read_text(errors="replace").count("CTRL-EVENT-EAP-SUCCESS")
        except OSError:
            return 0

    def wait_success(self, after: int, timeout: float = 10) -> bool:
        """Wait for an EAP-Success beyond the `after` seen so far."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.eap_successes() > after:
                return True
            time.sleep(0.05)
        return False

    def wait_state(self, state: str = "AUTHENTICATED", timeout: float = 15) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.status().get("Supplicant PAE state") == state:
                return True
            time.sleep(0.1)
        return False

    def reauthenticate(self) -> None:
        """Start 802.1X over (EAPOL-Start), as a station re-associating would."""
        self.cli("reauthenticate")
