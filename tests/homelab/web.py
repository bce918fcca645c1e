"""The Guest Board in the emulated home: lighttpd (conf/lighttpd.conf) in the router
namespace, HTTPS with a self-signed certificate made on first start, /ws.v1/ proxied to
the controller's API, plus a management veth so the host (a browser, a test, a person
running `make run`) reaches it:

    host  <id>-m  169.254.A.B+1/30  <---->  mgmt0  169.254.A.B+2/30  router namespace

The /30 comes from the run id (inside 169.254.128.0/17, clear of the DNS resolver's
169.254.53.53), so concurrent runs do not collide; the pair disappears with the router
namespace, so teardown (and scripts/teardown-stale.sh) needs nothing extra.

    home = web_home()            # a Home whose controller runs the api + linksim components
    with home:
        web = Web(home).start()
        requests.get(web.url + "ws.v1/status", headers=web.bearer("admin"), verify=web.ca)
"""
from __future__ import annotations

import ipaddress
import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import tomllib

from . import REPO, Home, sh, to_toml

UI_DIR = REPO / "guestboard-ui"
CONF = REPO / "conf" / "lighttpd.conf"
CERT_SCRIPT = REPO / "scripts" / "web-cert.sh"
JQUERY_DIR = Path("/usr/share/javascript/jquery")
API_PORT = 8080
WEB_COMPONENTS = ("api", "linksim")
MGMT_BASE = ipaddress.IPv4Address("169.254.128.0")
VIEW_BASE = ipaddress.IPv4Address("169.254.1.0")      # below MGMT_BASE's range


def web_home(config: dict | None = None, password: str | None = None, **kw) -> Home:
    """A Home configured for the Guest Board: the api and linksim components added to
    whatever components the home runs, and a known admin password (read from a file on
    the controller's first start)."""
    cfg = {k: dict(v) for k, v in (config or {}).items()}
    home = Home(config=cfg, **kw)
    if home.household:          # runs everything the image runs, the board included (household.py)
        return home
    password = password or secrets.token_urlsafe(12)
    cfg.setdefault("linksim", {}).setdefault("interval", 1)
    pwfile = home.dir.parent / f".{home.dir.name}-admin-password"
    # Written before the home exists (its directory is made by start()); removed by Web.
    pwfile.write_text(password + "\n")
    pwfile.chmod(0o600)
    cfg.setdefault("api", {}).update(admin_password_file=str(pwfile), port=API_PORT)
    home.config_overrides = cfg
    home.admin_password = password
    home.admin_password_file = pwfile
    write_config = home._write_config

    def write_config_with_web() -> None:
        # Append our components to the home's own list (its defaults may grow).
        write_config()
        doc = tomllib.loads(home.config_path.read_text())
        components = doc.setdefault("controller", {}).setdefault("components", [])
        components += [c for c in WEB_COMPONENTS if c not in components]
        home.config_path.write_text(to_toml(doc))
        cfg.setdefault("controller", {})["components"] = components

    home._write_config = write_config_with_web
    return home


def mgmt_addresses(run_id: str) -> tuple[str, str]:
    """(host side, router side) of this run's management /30."""
    index = int(run_id[2:], 16) % 8000
    base = MGMT_BASE + 4 * index
    return str(base + 1), str(base + 2)


def view_addresses(run_id: str) -> tuple[str, str]:
    """(viewer side, router side) of this run's viewer /30 (Web.add_viewer)."""
    base = VIEW_BASE + 4 * (int(run_id[2:], 16) % 7900)
    return str(base + 1), str(base + 2)


class Web:
    def __init__(self, home: Home):
        self.home = home
        self.dir = home.dir / "web"
        self.tls = self.dir / "tls"
        self.host_if = f"{home.run_id}-m"
        self.host_addr, self.router_addr = mgmt_addresses(home.run_id)
        self.url = f"https://{self.router_addr}/"
        self.password = getattr(home, "admin_password", None)
        self.proc: subprocess.Popen | None = None
        self._tokens: dict[str, str] = {}

    @property
    def ca(self) -> str:
        """The self-signed certificate, to verify HTTPS against."""
        return str(self.tls / "server.crt")

    def env(self) -> dict:
        env = dict(os.environ)
        env.update(HOMEWORK_UI_DIR=str(UI_DIR), HOMEWORK_TLS_DIR=str(self.tls),
                   HOMEWORK_WEB_DIR=str(self.dir), HOMEWORK_API_PORT=str(API_PORT),
                   # this home's dnsd (homelab.dns): DNS over HTTPS at /dns-query
                   HOMEWORK_DOH_SOCKET=self.home.config_overrides.get("dns", {}).get("doh_socket",
                                                                                     str(self.dir / "no-dnsd.sock")),
                   HOMEWORK_JQUERY_DIR=f"{JQUERY_DIR}/")
        return env

    def start(self, mgmt: bool = True, timeout: float = 15) -> Web:
        self.dir.mkdir(parents=True, exist_ok=True)
        pwfile = getattr(self.home, "admin_password_file", None)
        if pwfile is not None:
            Path(pwfile).unlink(missing_ok=True)   # the controller has hashed it by now
        sh(["bash", str(CERT_SCRIPT), str(self.tls), self.router_addr])
        if mgmt:
            self._add_mgmt_link()
        self._log = open(self.dir / "lighttpd.log", "ab")
        # lighttpd -D stays in the foreground, so its pid is ours to stop.
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.home.router_ns, "lighttpd", "-D", "-f", str(CONF)],
            env=self.env(), stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        self.home._procs.append(self.proc)
        deadline = time.monotonic() + timeout
        while not self.home.router(["ss", "-Hltn", "sport = :443"]).stdout.strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"lighttpd did not start: {self.error_log()[-2000:]}")
            time.sleep(0.05)
        return self

    def _add_mgmt_link(self) -> None:
        r = self.home.router_ns
        sh(["ip", "link", "add", self.host_if, "type", "veth", "peer", "name", "mgmt0", "netns", r])
        sh(["ip", "addr", "add", f"{self.host_addr}/30", "dev", self.host_if])
        sh(["ip", "link", "set", self.host_if, "up"])
        sh(["ip", "-n", r, "addr", "add", f"{self.router_addr}/30", "dev", "mgmt0"])
        sh(["ip", "-n", r, "link", "set", "mgmt0", "up"])
        for cmd in (["ethtool", "-K", self.host_if, "tx", "off"],):
            sh(cmd, check=False)
        self.home.router(["ethtool", "-K", "mgmt0", "tx", "off"], check=False)

    def add_viewer(self) -> tuple[str, str]:
        """A namespace of its own for the browser tests' Chromium, cabled straight to the
        router: (its name, the board's URL from there). Chromium aborts every request in
        flight (ERR_NETWORK_CHANGED) when an address of its namespace comes or goes, and
        the host's namespace sees that whenever an emulated home starts or a finished
        one's links are cleaned up (the kernel does that late, in the background). Here,
        with IPv4 only, nothing changes while a test runs, as on a household member's
        laptop."""
        ns = f"{self.home.run_id}-v"
        viewer, router = view_addresses(self.home.run_id)
        if ns in self.home._namespaces:          # made already for this home
            return ns, f"https://{router}/"
        sh(["ip", "netns", "add", ns])
        self.home._namespaces.append(ns)
        # IPv4 only: an IPv6 address appearing later (link-local after DAD, or SLAAC from
        # an RA the router sends) is a change too, and aborts what is in flight.
        sh(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1"])
        sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        sh(["ip", "-n", self.home.router_ns, "link", "add", "view0", "type", "veth", "peer", "name", "eth0",
            "netns", ns])
        sh(["ip", "-n", ns, "addr", "add", f"{viewer}/30", "dev", "eth0"])
        sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
        sh(["ip", "-n", self.home.router_ns, "addr", "add", f"{router}/30", "dev", "view0"])
        sh(["ip", "-n", self.home.router_ns, "link", "set", "view0", "up"])
        for side in (["ip", "netns", "exec", ns], ["ip", "netns", "exec", self.home.router_ns]):
            iface = "eth0" if side[-1] == ns else "view0"
            sh([*side, "ethtool", "-K", iface, "tx", "off"], check=False)
        return ns, f"https://{router}/"

    def error_log(self) -> str:
        try:
            return (self.dir / "error.log").read_text(errors="replace")
        except OSError:
            return ""

    def token(self, role: str = "admin") -> str:
        """An API token made with the CLI (as an admin would), cached per role."""
        if role not in self._tokens:
            import json
            out = self.home.homework("--json", "token", "create", f"tests-{role}", "--role", role, check=True)
            self._tokens[role] = json.loads(out.stdout)["token"]
        return self._tokens[role]

    def bearer(self, role: str = "admin") -> dict:
        return {"Authorization": f"Bearer {self.token(role)}"}

    def stop(self) -> None:
        if self.proc is not None:
            from . import _kill_pid
            _kill_pid(self.proc.pid, 3)
            self.proc = None
        sh(["ip", "link", "del", self.host_if], check=False)


def curl_from(dev, url: str, *args: str, timeout: float = 5) -> subprocess.CompletedProcess:
    """curl from a device namespace (insecure TLS: the device has no copy of our CA)."""
    return dev.run(["curl", "-sk", "--max-time", str(timeout), "-o", "-", "-w", "\n%{http_code}",
                    *args, url], check=False, timeout=timeout + 5)


def have_web() -> str | None:
    """Why the Guest Board cannot run here, or None."""
    for tool in ("lighttpd", "openssl", "curl"):
        if not shutil.which(tool):
            return f"{tool} not installed (make deps)"
    if not Path("/usr/lib/lighttpd/mod_openssl.so").exists():
        return "lighttpd-mod-openssl not installed (make deps)"
    return None


def api(web: Web, method: str, path: str, role: str | None = "admin", **kw):
    """One ws.v1 call through lighttpd over HTTPS, with a bearer token of that role
    (a requests.Response)."""
    import requests      # only the tests that talk HTTPS need it
    headers = kw.pop("headers", {})
    if role:
        headers.update(web.bearer(role))
    return requests.request(method, f"{web.url}ws.v1/{path}", headers=headers, verify=web.ca,
                            timeout=kw.pop("timeout", 10), **kw)


def sse_events(response):
    """(event name, decoded data) for each Server-Sent Event of a streaming response."""
    import json
    name = None
    for line in response.iter_lines(decode_unicode=True):
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            yield name, json.loads(line[6:])
