"""DNS in the emulated home: the internet's resolver and an authoritative server with
signed zones (dnssec.py), the router's dnsmasq, its validating resolver (unbound),
homework-dnsd and the captive-portal lighttpd, all real daemons started like the image
starts them.

    with dns_home() as home:
        lab = DnsLab(home).start()
        dev = lab.join()                        # DHCP + permitted
        status, answers = lab.dig(dev, "example.com")

Internet namespace: a dnsmasq with fixed records answers on UPSTREAM (the router's
upstream) and on PUBLIC (a "public resolver" that devices may try to use directly), web
servers on the addresses of example.com and blocked.test, and a TCP listener on PUBLIC:853
standing in for DNS-over-TLS.
"""
from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from . import REPO, RUN_DIR_PREFIX, RUN_ROOT, Device, Home, new_run_id, sh
from . import dnssec
from .tlsca import TestCA
from .web import API_PORT

DNSD_ADDR = "169.254.53.53"
DNSD_PORT = 5300
ROUTER_DNSMASQ = "127.0.0.1:5353"
UPSTREAM = "203.0.113.53"
UPSTREAM6 = "2001:db8:cafe::53"     # the same resolver over IPv6
# An internet provider's resolver that also speaks DNS over TLS (853) and HTTPS (443), with a
# certificate for DOT_NAME from the lab's test CA (unbound, started on demand: start_dot_upstream)
DOT_UPSTREAM = "203.0.113.54"
DOT_UPSTREAM6 = "2001:db8:cafe::54"
DOT_NAME = "dns.isp.test"
ROUTER_NAME = "homework.home.arpa"  # [dns] resolver_name: the name of the router's encrypted DNS
PUBLIC = "203.0.113.99"
WEB = "203.0.113.10"
BLOCKED_WEB = "203.0.113.66"
GAMES_WEB = "203.0.113.70"      # games.test: looked up by one test only (learning is shared)
RECORDS = {
    "example.com": WEB, "www.example.com": WEB,
    "v6games.test": "2001:db8:cafe::10",          # AAAA: the internet's IPv6 web server (WEB6_ADDR)
    "blocked.test": BLOCKED_WEB, "www.blocked.test": BLOCKED_WEB,
    "kids.test": "203.0.113.67", "school.test": "203.0.113.68", "www.school.test": "203.0.113.68",
    "games.test": GAMES_WEB, "www.games.test": GAMES_WEB,
    "use-application-dns.net": "203.0.113.80", "mask.icloud.com": "203.0.113.81",
    "connectivitycheck.gstatic.com": WEB, "captive.apple.com": WEB, "www.msftconnecttest.com": WEB,
    # safe-search: a search engine and its safe host (dnsd answers one with the other)
    "www.google.com": "203.0.113.91", "forcesafesearch.google.com": "203.0.113.92",
}
CNAMES = {"alias.test": "blocked.test"}
# Every name under NEW_DOMAIN exists upstream: names nobody asked before, as many as needed.
NEW_DOMAIN = "new.test"
NEW_ADDR = "203.0.113.77"
# Names only the router's dnsmasq knows (the household's own), never asked upstream.
ROUTER_RECORDS = {"printer.lan": "10.2.255.250"}
DNSD_BINARY = REPO / "dnsd" / "target" / "release" / "homework-dnsd"
CAPTIVE_CONF = REPO / "conf" / "lighttpd-captive.conf"
CAPTIVE_ROOT = REPO / "guestboard-ui" / "captive"
CAPTIVE_SCRIPT = REPO / "scripts" / "captive-conf.sh"


def dns_config(run_id: str, components=("dhcp", "routing", "dns"), **dns) -> dict:
    """Controller config overrides for a home whose controller runs the dns component."""
    control = RUN_ROOT / f"{RUN_DIR_PREFIX}{run_id}" / "dnsd.sock"
    # The WAN lease's resolv file of this home (DnsLab.start writes it): the internet's resolver.
    resolv = RUN_ROOT / f"{RUN_DIR_PREFIX}{run_id}" / "resolv.upstream"
    # The directory the localnames component writes and the router's dnsmasq reads (hostsdir).
    hosts_dir = RUN_ROOT / f"{RUN_DIR_PREFIX}{run_id}" / "hosts.d"
    # The validating resolver: this home's own control socket; it trusts the emulated
    # internet's signed zones (their key, made when the lab starts) as the router trusts the root's.
    # The test CA (tlsca.py) stands in for the public CAs an encrypted upstream's certificate
    # chains to, and signs the router's own certificate for its DNS over TLS (the image
    # uses the Guest Board's). The files are made when the lab starts.
    lab_dir = RUN_ROOT / f"{RUN_DIR_PREFIX}{run_id}" / "dns"
    resolver = {"resolver_control": str(RUN_ROOT / f"{RUN_DIR_PREFIX}{run_id}" / "unbound.ctl"),
                "resolver_user": "", "resolver_special_zones": ["test"],
                "trust_anchor": str(dnssec.anchor_path(lab_dir)), "tls_ca_file": str(lab_dir / "test-ca.pem"),
                "tls_cert": str(lab_dir / "router.crt"), "tls_key": str(lab_dir / "router.key"),
                "doh_socket": str(RUN_ROOT / f"{RUN_DIR_PREFIX}{run_id}" / "dnsd-doh.sock")}
    return {"controller": {"components": list(components)},
            "dns": {"listen": f"{DNSD_ADDR}:{DNSD_PORT}", "upstream": ROUTER_DNSMASQ,
                    "control": str(control), "resolv_file": str(resolv), **resolver, **dns},
            "localnames": {"hosts_dir": str(hosts_dir)}}


def dns_home(components=("dhcp", "routing", "dns", "api"), dns: dict | None = None, **kw) -> Home:
    """A home with the DNS path; the api component by default: the captive pages (what a
    cut-off device sees of the web) come from it."""
    run_id = kw.pop("run_id", None) or new_run_id()
    config = dns_config(run_id, components, **(dns or {}))
    for section, table in kw.pop("config", {}).items():
        config.setdefault(section, {}).update(table)
    return Home(run_id=run_id, config=config, **kw)


def _wait(what: str, check, timeout: float = 15, proc: subprocess.Popen | None = None, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while not check():
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: "
                               f"{log.read_text(errors='replace')[-2000:] if log and log.exists() else ''}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {timeout}s")
        time.sleep(0.05)


class DnsLab:
    def __init__(self, home: Home, log_queries: bool = False):
        self.home = home
        self.dir = home.dir / "dns"
        self.dnsd: subprocess.Popen | None = None
        self.resolver: subprocess.Popen | None = None
        # the internet's resolver logs every query it gets (upstream_saw): tests that prove
        # a name never left the home; off for the benches (logging costs it time)
        self.log_queries = log_queries

    def start(self, captive: bool = True, dnsmasq_args: tuple = ()) -> DnsLab:
        if not DNSD_BINARY.exists():
            raise RuntimeError(f"{DNSD_BINARY} is not built (make deps, or: cd dnsd && cargo build --release)")
        self.dir.mkdir(exist_ok=True)
        self.ca = TestCA(self.dir)
        # the router's certificate for DNS over TLS, from the test CA (the image uses the Guest Board's)
        self.ca.issue("router", [ROUTER_NAME, "homework.home"])
        self._start_internet()
        self.set_upstreams(UPSTREAM)
        # Domains a test has the router's dnsmasq answer itself (--address=/d/...) are the
        # router's own names: dnsd sends them to dnsmasq, as [dns] local_domains says.
        own = [a.split("/")[1] for a in dnsmasq_args if a.startswith("--address=/")]
        if own:
            dns = self.home.config_overrides["dns"]
            dns["local_domains"] = ",".join(filter(None, [dns.get("local_domains", "lan,home.arpa"), *own]))
        self._start_router_dnsmasq(dnsmasq_args)
        if self.home.config_overrides["dns"].get("resolver", "127.0.0.1:5335"):
            self.start_resolver()
        self.start_dnsd()
        if captive:
            self._start_captive()
        # The controller connects to dnsd by itself; wait until it has pushed its policy.
        _wait("controller -> dnsd link", lambda: "policy snapshot sent" in self.home.controller_log(), 15)
        return self

    def _log(self, name: str):
        return open(self.dir / f"{name}.log", "ab")

    # -- the internet ------------------------------------------------------------------
    def _start_internet(self) -> None:
        h = self.home
        for addr in (PUBLIC, BLOCKED_WEB, GAMES_WEB):
            h.internet(["ip", "addr", "replace", f"{addr}/32", "dev", "lo"])
        h.internet(["ip", "addr", "replace", f"{UPSTREAM6}/128", "dev", "lo", "nodad"])
        self._start_signed_zones()
        args = ["dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts", "--bind-interfaces",
                f"--listen-address={UPSTREAM},{PUBLIC},{UPSTREAM6}", f"--pid-file={self.dir / 'internet-dnsmasq.pid'}",
                "--local=/#/", "--local-ttl=300", "--user=root", "--log-facility=-"]
        if self.log_queries:
            args.append("--log-queries")
        args += [f"--host-record={name},{addr}" for name, addr in RECORDS.items()]
        args += [f"--cname={alias},{target}" for alias, target in CNAMES.items()]
        args += [f"--address=/{NEW_DOMAIN}/{NEW_ADDR}", f"--server=/{dnssec.ANCHOR_ZONE}/{dnssec.AUTH_ADDR}"]
        p = h.internet_popen(args, stdout=self._log("internet-dnsmasq"), stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        _wait("internet dnsmasq", lambda: h.internet(["ss", "-Hlun", f"src {UPSTREAM}:53"]).stdout.strip(), proc=p)
        www = self.dir / "blocked-www"
        www.mkdir(exist_ok=True)
        (www / "index.html").write_text("blocked site\n")
        for addr in (BLOCKED_WEB, GAMES_WEB):
            h.internet_popen(["/usr/bin/python3", "-m", "http.server", "80", "--bind", addr, "--directory", str(www)],
                             stdout=self._log(f"web-{addr}"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        # Stands in for a DNS-over-TLS server: only whether a TCP connection opens matters.
        h.internet_popen(["/usr/bin/python3", "-m", "http.server", "853", "--bind", PUBLIC, "--directory", str(www)],
                         stdout=self._log("dot"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _wait("internet web servers", lambda: len(h.internet(["ss", "-Hltn"]).stdout.splitlines()) >= 4)

    def _start_signed_zones(self) -> None:
        """nsd with the signed (and forged) zones of dnssec.py on AUTH_ADDR."""
        h = self.home
        h.internet(["ip", "addr", "replace", f"{dnssec.AUTH_ADDR}/32", "dev", "lo"])
        conf = dnssec.build(self.dir, WEB, NEW_ADDR)
        p = h.internet_popen(["nsd", "-d", "-c", str(conf)], stdout=self._log("nsd"), stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        _wait("nsd", lambda: h.internet(["ss", "-Hlun", f"src {dnssec.AUTH_ADDR}:53"]).stdout.strip(), proc=p,
              log=self.dir / "nsd.log")

    def start_dot_upstream(self) -> subprocess.Popen:
        """The internet provider's resolver over TLS and HTTPS too: unbound on DOT_UPSTREAM
        (and DOT_UPSTREAM6), plain 53, TLS 853, HTTPS 443 (/dns-query), certificate for
        DOT_NAME from the test CA; it asks nsd for the signed zones and the internet's
        resolver (dnsmasq) for everything else, and validates nothing itself (the router does)."""
        h = self.home
        for addr, plen in ((DOT_UPSTREAM, 32), (DOT_UPSTREAM6, 128)):
            h.internet(["ip", "addr", "replace", f"{addr}/{plen}", "dev", "lo"] + (["nodad"] if plen == 128 else []))
        cert, key = self.ca.issue("isp-resolver", [DOT_NAME, DOT_UPSTREAM, DOT_UPSTREAM6])
        conf = self.dir / "isp-unbound.conf"
        interfaces = "".join(f"  interface: {a}@{p}\n" for a in (DOT_UPSTREAM, DOT_UPSTREAM6) for p in (53, 853, 443))
        conf.write_text(f"""server:
{interfaces}  tls-port: 853
  https-port: 443
  tls-service-key: "{key}"
  tls-service-pem: "{cert}"
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "{self.dir}"
  pidfile: ""
  use-syslog: no
  logfile: ""
  verbosity: 1
  access-control: 0.0.0.0/0 allow
  access-control: ::/0 allow
  do-not-query-localhost: no
  module-config: "iterator"
  local-zone: "test." nodefault
stub-zone:
  name: "{dnssec.ANCHOR_ZONE}"
  stub-addr: {dnssec.AUTH_ADDR}
forward-zone:
  name: "."
  forward-addr: {UPSTREAM}
""")
        p = h.internet_popen(["unbound", "-d", "-c", str(conf)], stdout=self._log("isp-unbound"),
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _wait("the internet's DNS-over-TLS resolver",
              lambda: h.internet(["ss", "-Hltn", f"src {DOT_UPSTREAM}:853"]).stdout.strip(), proc=p,
              log=self.dir / "isp-unbound.log")
        return p

    def upstream_status(self, state: str, timeout: float = 20) -> dict:
        """The resolver's upstream status once it is `state` (the controller looks every
        30 s and at once after a change)."""
        import json
        deadline = time.monotonic() + timeout
        while True:
            view = json.loads(self.homework("--json", "dns-upstream"))
            if view["state"] == state or time.monotonic() > deadline:
                return view
            time.sleep(0.2)

    # -- the router ----------------------------------------------------------------------
    def _start_router_dnsmasq(self, extra: tuple = ()) -> None:
        h = self.home
        # This home's own hosts directory (conf/dnsmasq.conf's /run/homework/hosts.d is the
        # image's; homes running side by side must not share one). It must exist before
        # dnsmasq starts, or dnsmasq does not watch it.
        hosts_dir = Path(h.config_overrides.get("localnames", {}).get("hosts_dir", self.dir / "hosts.d"))
        hosts_dir.mkdir(parents=True, exist_ok=True)
        # The local domains as the image's homework-dns.service gives them (never asked upstream).
        from homework.config import dnsmasq_args, parse
        own = dnsmasq_args(parse({"dns": h.config_overrides["dns"]}))
        p = h.router_popen(["dnsmasq", f"--conf-file={REPO / 'conf' / 'dnsmasq.conf'}", "--keep-in-foreground",
                            "--no-resolv", f"--server={UPSTREAM}", f"--pid-file={self.dir / 'dnsmasq.pid'}",
                            "--user=root", "--log-facility=-", f"--hostsdir={hosts_dir}",
                            *(f"--host-record={name},{addr}" for name, addr in ROUTER_RECORDS.items()), *own, *extra],
                           stdout=self._log("dnsmasq"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _wait("router dnsmasq", lambda: h.router(["ss", "-Hlun", "sport = :5353"]).stdout.strip(), proc=p)

    def set_upstreams(self, *addrs: str) -> None:
        """Write the resolv file as the WAN's DHCP client does (dnsd re-reads it within 1 s)."""
        resolv = Path(self.home.config_overrides["dns"]["resolv_file"])
        resolv.parent.mkdir(parents=True, exist_ok=True)
        tmp = resolv.with_suffix(".new")
        tmp.write_text("".join(f"nameserver {a}\n" for a in addrs))
        tmp.replace(resolv)

    def upstream_saw(self, name: str) -> bool:
        """Did the internet's resolver (either address, either family) get a query for this
        name? (DnsLab(log_queries=True) only.)"""
        if not self.log_queries:
            raise RuntimeError("the internet's resolver logs no queries in this home")
        log = self.dir / "internet-dnsmasq.log"
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        return any("query[" in line and f" {name} from " in line for line in lines)

    def router_dnsmasq_queries(self) -> int:
        """Queries the router's dnsmasq has handled (forwarded + answered itself), from the
        statistics it writes to its log on SIGUSR1."""
        import os
        import signal
        log = self.dir / "dnsmasq.log"
        before = log.stat().st_size if log.exists() else 0
        os.kill(int((self.dir / "dnsmasq.pid").read_text()), signal.SIGUSR1)
        pattern = re.compile(r"queries forwarded (\d+), queries answered locally (\d+)")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with open(log, "rb") as f:
                f.seek(before)
                m = pattern.findall(f.read().decode(errors="replace"))
            if m:
                return int(m[-1][0]) + int(m[-1][1])
            time.sleep(0.05)
        raise TimeoutError("dnsmasq wrote no statistics after SIGUSR1")

    def start_resolver(self) -> subprocess.Popen:
        """unbound, configured as the image's unit does it (homework.unbound)."""
        h = self.home
        from homework.unbound import prepare
        from homework.config import load
        config = load(h.config_path)
        path = prepare(config)
        host, _, port = config.dns_resolver.rpartition(":")
        self.resolver = h.router_popen(["unbound", "-d", "-c", str(path)], stdout=self._log("unbound"),
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _wait("unbound", lambda: Path(config.dns_resolver_control).exists() and
              h.router(["ss", "-Hlun", f"src {host}:{port}"]).stdout.strip(), proc=self.resolver,
              log=self.dir / "unbound.log")
        return self.resolver

    def resolver_control(self, command: str) -> str:
        from homework.unbound import control
        from homework.config import load
        return control(load(self.home.config_path).dns_resolver_control, command)

    def start_dnsd(self, **dns) -> subprocess.Popen:
        """`dns`: [dns] keys for this dnsd only (the benchmark's dnsd without the resolver)."""
        h = self.home
        control = Path(h.config_overrides["dns"]["control"])
        h.router(["ip", "addr", "replace", f"{DNSD_ADDR}/32", "dev", "lo"])
        # dnsd's arguments come from the same [dns] table the controller reads, as on the router.
        from homework.config import dnsd_args, parse
        args = dnsd_args(parse({"dns": {**h.config_overrides["dns"], **dns},
                                "ipv6": h.config_overrides.get("ipv6", {})}))
        self.dnsd = h.router_popen([str(DNSD_BINARY), *args],
                                   stdout=self._log("dnsd"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _wait("homework-dnsd", lambda: control.exists() and
              h.router(["ss", "-Hlun", f"sport = :{DNSD_PORT}"]).stdout.strip(), proc=self.dnsd,
              log=self.dir / "dnsd.log")
        return self.dnsd

    def restart_dnsd(self, **dns) -> None:
        """A new dnsd (with these [dns] keys of its own), once the controller has given it
        its policy again."""
        sent = self.home.controller_log().count("policy snapshot sent")
        if self.dnsd is not None and self.dnsd.poll() is None:
            self.dnsd.terminate()
            self.dnsd.wait(timeout=10)
        self.start_dnsd(**dns)
        _wait("the controller's policy in the new dnsd",
              lambda: self.home.controller_log().count("policy snapshot sent") > sent, 20)

    def dnsd_alive(self) -> bool:
        return self.dnsd is not None and self.dnsd.poll() is None

    def _start_captive(self) -> None:
        """The captive pages' lighttpd as the image starts it (scripts/captive-conf.sh): on
        dnsd's addresses (IPv6 too when the home has it), HTTPS with the Guest Board's
        certificate when this home has one."""
        h = self.home
        conf = self.dir / "lighttpd-captive.conf"
        from homework.config import parse
        ipv6 = parse({"ipv6": h.config_overrides.get("ipv6", {})}).ipv6_enabled
        bind6 = parse({"dns": h.config_overrides["dns"]}).dns_listen6.rpartition(":")[0].strip("[]") if ipv6 else ""
        if bind6:
            h.router(["ip", "addr", "replace", f"{bind6}/128", "dev", "lo", "nodad"])
        tls = h.dir / "web" / "tls"
        conf.write_text(sh(["sh", str(CAPTIVE_SCRIPT), str(CAPTIVE_CONF), str(CAPTIVE_ROOT), str(self.dir), DNSD_ADDR,
                            bind6, str(tls) if (tls / "server.crt").exists() else ""]).stdout)
        # HOMEWORK_API_PORT: the satellite pairing paths it proxies to the API
        p = h.router_popen(["env", f"HOMEWORK_API_PORT={API_PORT}", "lighttpd", "-D", "-f", str(conf)],
                           stdout=self._log("lighttpd-captive"),
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _wait("captive lighttpd", lambda: h.router(["ss", "-Hltn", f"src {DNSD_ADDR}:8088"]).stdout.strip(), proc=p,
              log=self.dir / "lighttpd-captive.log")

    # -- devices ---------------------------------------------------------------------------
    def join(self, name: str | None = None, permit: bool = True, timeout: float = 20) -> Device:
        dev = self.home.add_device(name)
        dev.start_udhcpc()
        dev.wait_for_ipv4(timeout)
        if permit:
            res = self.home.homework("permit", dev.mac)
            assert res.returncode == 0, res.stderr
        return dev

    def dig(self, dev: Device, name: str, qtype: str = "A", server: str | None = None, tcp: bool = False,
            timeout: int = 2, tries: int = 2) -> tuple[str, list[str]]:
        """(status, answer data) as dig in the device's namespace sees it; status is
        NOERROR/NXDOMAIN/REFUSED/... or TIMEOUT."""
        server = server or dev.default_gateway() or "10.2.0.1"
        cmd = ["dig", f"@{server}", name, qtype, "+noall", "+comments", "+answer", f"+time={timeout}",
               f"+tries={tries}"] + (["+tcp"] if tcp else [])
        out = dev.run(cmd, check=False, timeout=timeout * tries + 10).stdout
        m = re.search(r"status: (\w+)", out)
        if not m:
            return "TIMEOUT", []
        answers = [line.split()[-1] for line in out.splitlines()
                   if line and not line.startswith(";") and len(line.split()) >= 5]
        return m.group(1), answers

    def http(self, dev: Device, url: str, timeout: int = 3) -> tuple[int, str]:
        """(HTTP status or 0, body) of a browser-style GET from the device, resolving names
        through the device's own resolv.conf (the DHCP-given DNS server), as a browser would."""
        resolv = dev.dir / "resolv.conf"
        inner = (f"mount --bind '{resolv}' /etc/resolv.conf && exec curl -s -m {timeout} "
                 f"-A 'Mozilla/5.0 (homelab)' -o - -w '\\n%{{http_code}}' '{url}'")
        res = dev.run(["unshare", "-m", "sh", "-c", inner], check=False, timeout=timeout + 10)
        body, _, code = res.stdout.rpartition("\n")
        return (int(code) if code.isdigit() else 0), body

    def debug(self) -> str:
        """What to look at when a DNS expectation fails."""
        h = self.home
        parts = [h.homework("dns-stats").stdout, h.router(["nft", "list", "table", "inet", "homework_dns"],
                                                          check=False).stdout]
        for name in ("dnsd.log",):
            f = self.dir / name
            parts.append(f.read_text(errors="replace")[-1500:] if f.exists() else "")
        parts.append(h.controller_log()[-3000:])
        return "\n".join(parts)

    def homework(self, *args: str):
        res = self.home.homework(*args)
        if res.returncode != 0:
            raise AssertionError(f"homework {' '.join(args)[:200]} failed: {res.stderr[-500:]}")
        return res.stdout
