"""The validating resolver behind homework-dnsd: unbound, configured from the same file
the controller reads, and driven at run time over its control socket. Standard library
only: the image's unit runs it at every start of the resolver, on the boot's critical
path (`python3 -m homework.unbound CONFIG`), and the dns component drives unbound with it
(components/dns/resolver.py).

    device -> homework-dnsd (per-device policy, cache) -> unbound (DNSSEC, upstreams) -> the internet
                                                      \\-> dnsmasq (the household's own names)

Two files, both in <state dir>/resolver/ so a reboot starts unbound the way it last ran:

  - unbound.conf: written at every start of the resolver (`python3 -m
    homework.unbound CONFIG`, the unit's ExecStartPre, and the emulated
    home) from [dns]: where it listens (dnsd's --resolver), the control socket, the trust
    anchor, the certificate authorities of encrypted upstreams. It includes
  - household.conf: what the household chose (upstreams plain or over TLS, DNSSEC on or
    off, the domains whose validation is off), written by the controller on every change
    (resolver.py). Before the controller ever wrote one, a start writes the default: plain
    DNS to the WAN lease's resolvers, validation on.

Why unbound (measured, see docs/dns.md): it validates, speaks DNS over TLS to the
upstreams with the server's name checked against its certificate and connections reused,
takes negative trust anchors and option changes at run time without losing its cache, and
forwards at several times dnsmasq's rate; dnsmasq's --dnssec validates but has no
encrypted upstreams.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT_KEY = Path("/usr/share/dns/root.key")      # Debian's dns-root-data: the root's KSKs
CONTROL_TIMEOUT = 5.0


@dataclass(frozen=True)
class Forward:
    """One upstream as unbound's forward-addr writes it."""
    address: str
    port: int = 53
    tls_name: str = ""          # the name its certificate must carry (TLS only)

    def line(self) -> str:
        text = f"{self.address}@{self.port}"
        return f"{text}#{self.tls_name}" if self.tls_name else text


@dataclass(frozen=True)
class Plan:
    """What household.conf says: the household's settings as unbound needs them."""
    forwards: tuple[Forward, ...] = ()
    tls: bool = False
    validate: bool = True
    insecure: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())


def resolver_dir(config) -> Path:
    return Path(config.state_dir) / "resolver"


def listen(config) -> tuple[str, int]:
    host, _, port = config.dns_resolver.rpartition(":")
    return host.strip("[]"), int(port)


def main_conf(config) -> str:
    """unbound.conf for this router (everything but the household's choices)."""
    directory = resolver_dir(config)
    host, port = listen(config)
    if config.dns_trust_anchor:
        anchor = f'  trust-anchor-file: "{config.dns_trust_anchor}"'
    else:
        anchor = f'  auto-trust-anchor-file: "{directory / "root.key"}"'   # kept current (RFC 5011)
    special = "".join(f'  local-zone: "{z.strip(".")}." nodefault\n' for z in config.dns_resolver_special_zones)
    return f"""# Written by homework from {"[dns]"} of the controller's config at each start; do not edit.
server:
  interface: {host}@{port}
  port: {port}
  interface-automatic: no
  access-control: 127.0.0.0/8 allow
  access-control: ::1/128 allow
  do-daemonize: no
  username: "{config.dns_resolver_user}"
  chroot: ""
  directory: "{directory}"
  pidfile: ""
  use-syslog: no
  logfile: ""
  log-time-ascii: yes
  verbosity: 1
  val-log-level: 1
  num-threads: 2
  so-reuseport: yes
  msg-cache-size: 8m
  rrset-cache-size: 16m
  key-cache-size: 4m
  prefetch: yes
  hide-identity: yes
  hide-version: yes
  edns-buffer-size: 1232
  # TLS (and TCP) connections to an upstream stay open for more queries
  tcp-reuse-timeout: 60000
  max-reuse-tcp-queries: 200
  # the forwarders may be on this router (dnsmasq, tests)
  do-not-query-localhost: no
  module-config: "validator iterator"
{anchor}
{special}  ede: yes
  tls-cert-bundle: "{config.dns_tls_ca_file}"
  include: "{directory / "household.conf"}"
remote-control:
  control-enable: yes
  control-interface: "{config.dns_resolver_control}"
"""


def household_conf(plan: Plan) -> str:
    lines = ["# Written by the homework controller from the household's DNS settings; do not edit."]
    lines += [f"# {n}" for n in plan.notes]
    lines += ["server:", f"  val-permissive-mode: {'no' if plan.validate else 'yes'}"]
    lines += [f'  domain-insecure: "{d}"' for d in plan.insecure]
    if plan.forwards:
        lines += ["forward-zone:", '  name: "."', f"  forward-tls-upstream: {'yes' if plan.tls else 'no'}"]
        lines += [f"  forward-addr: {f.line()}" for f in plan.forwards]
    return "\n".join(lines) + "\n"


def resolv_servers(path: str) -> tuple[str, ...]:
    """The WAN lease's resolvers (loopback ones would be this router itself)."""
    out: list[str] = []
    try:
        text = Path(path).read_text() if path else ""
    except OSError:
        return ()
    import ipaddress
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "nameserver":
            try:
                ip = ipaddress.ip_address(words[1].split("%")[0])
            except ValueError:
                continue
            if not ip.is_loopback and not ip.is_unspecified and str(ip) not in out:
                out.append(str(ip))
    return tuple(out)


def default_plan(config) -> Plan:
    """Before the controller has written anything: plain DNS to the WAN lease's resolvers,
    or while there are none, to dnsmasq (which follows the lease file by itself)."""
    servers = resolv_servers(config.dns_resolv_file)
    host, _, port = config.dns_upstream.rpartition(":")
    forwards = tuple(Forward(s) for s in servers) or (Forward(host.strip("[]"), int(port)),)
    return Plan(forwards=forwards, validate=config.dns_dnssec,
                notes=("the default until the controller starts",))


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_household(config, plan: Plan) -> Path:
    return write_household_text(config, household_conf(plan))


def write_household_text(config, text: str) -> Path:
    directory = resolver_dir(config)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "household.conf"
    _write(path, text)
    return path


def write_main(config) -> bool:
    """unbound.conf and the trust anchor it names, as [dns] says; True when anything had
    to be written (a first start, a changed config, or a state dir wiped meanwhile).
    Logs nothing: the controller calls it off its event loop, where logging's (green)
    locks must not be taken."""
    directory = resolver_dir(config)
    directory.mkdir(parents=True, exist_ok=True)
    changed = False
    key = directory / "root.key"
    if not config.dns_trust_anchor and not key.exists() and ROOT_KEY.exists():
        shutil.copyfile(ROOT_KEY, key)     # RFC 5011 updates it from here on
        changed = True
    path, text = directory / "unbound.conf", main_conf(config)
    try:
        unchanged = path.read_text() == text
    except OSError:
        unchanged = False
    if not unchanged:
        _write(path, text)
        changed = True
    if config.dns_resolver_user:
        try:       # unbound keeps the root's key current (RFC 5011): it writes here as its user
            shutil.chown(directory, config.dns_resolver_user)
            if key.exists():
                shutil.chown(key, config.dns_resolver_user)
        except (LookupError, PermissionError):
            pass       # a development machine without the user: unbound then runs as root there
    return changed


def prepare(config) -> Path:
    """Everything unbound needs before it starts; returns unbound.conf's path."""
    write_main(config)
    directory = resolver_dir(config)
    if not (directory / "household.conf").exists():
        write_household(config, default_plan(config))
    return directory / "unbound.conf"


class ControlError(RuntimeError):
    pass


def control(path: str, command: str, timeout: float = CONTROL_TIMEOUT) -> str:
    """One unbound-control command over the local control socket (the UBCT1 protocol);
    its output. Raises ControlError when unbound is not there or says "error"."""
    if "\n" in command:
        raise ValueError("one command per line")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        sock.sendall(f"UBCT1 {command}\n".encode())
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    except OSError as exc:
        raise ControlError(f"the resolver (unbound) is not answering on {path}: {exc}") from None
    finally:
        sock.close()
    out = b"".join(chunks).decode(errors="replace")
    if out.startswith("error"):
        raise ControlError(f"unbound refused '{command}': {out.strip()}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m homework.unbound",
                                     description="Write the resolver's unbound.conf from a Homework config file")
    parser.add_argument("config", help="the controller's TOML file")
    args = parser.parse_args(argv)
    from .config import ConfigError, load
    try:
        config = load(args.config)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not config.dns_resolver:
        print("[dns] resolver is empty: no resolver to configure", file=sys.stderr)
        return 1
    print(prepare(config))
    return 0


if __name__ == "__main__":
    sys.exit(main())
