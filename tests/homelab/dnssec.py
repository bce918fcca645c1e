"""Signed zones in the emulated internet: an authoritative server (Debian's nsd) serving
zones signed at the start of each run with ldns-signzone (fresh keys every run), and the
trust anchor the router's resolver is given for them ([dns] trust_anchor), as the real
router is given the root's.

    dnssec.test.              signed; the trust anchor; delegates the two below
      signed.dnssec.test.     signed, with a DS in its parent: validated answers (AD)
        www                   -> the internet's web server
        forged                signed with one address, then its A record changed to
                              another after signing (an attacker's answer): bogus
        *.new                 every name exists (the benchmark's names nobody asked before)
      insecure.dnssec.test.   not signed, no DS: provably insecure, still resolves

The internet's resolver (dnsmasq) sends dnssec.test to nsd (--server=/dnssec.test/...).
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

ANCHOR_ZONE = "dnssec.test"
AUTH_ADDR = "203.0.113.60"              # nsd in the internet namespace
SIGNED = f"signed.{ANCHOR_ZONE}"
INSECURE = f"insecure.{ANCHOR_ZONE}"
SIGNED_WWW = f"www.{SIGNED}"
FORGED = f"forged.{SIGNED}"
INSECURE_WWW = f"www.{INSECURE}"
NEW_SIGNED = f"new.{SIGNED}"            # *.new.signed.dnssec.test exists
FORGED_ADDR = "203.0.113.66"            # what the forged record says (the blocked web server's address)


def anchor_path(directory: Path) -> Path:
    """Where the trust anchor (the anchor zone's key-signing key) is written."""
    return directory / "dnssec-anchor.key"


def _zone(origin: str, body: str) -> str:
    return (f"$ORIGIN {origin}.\n$TTL 300\n@ IN SOA ns.{ANCHOR_ZONE}. admin.{ANCHOR_ZONE}. 1 3600 600 86400 300\n"
            f"@ IN NS ns.{ANCHOR_ZONE}.\n{body}")


def _keys(directory: Path, zone: str) -> tuple[str, str]:
    def keygen(*flags: str) -> str:
        return subprocess.run(["ldns-keygen", "-a", "ECDSAP256SHA256", *flags, zone], cwd=directory, check=True,
                              capture_output=True, text=True).stdout.strip()
    return keygen("-k"), keygen()


def _sign(directory: Path, zonefile: str, ksk: str, zsk: str, origin: str) -> None:
    # valid from an hour ago: a resolver whose clock is a little behind still accepts it
    inception = time.strftime("%Y%m%d%H%M%S", time.gmtime(time.time() - 3600))
    subprocess.run(["ldns-signzone", "-n", "-i", inception, "-o", origin, zonefile, ksk, zsk], cwd=directory,
                   check=True, capture_output=True, text=True)


def build(directory: Path, web_addr: str, new_addr: str) -> Path:
    """Write, sign and forge the zones and nsd's config in `directory`; returns nsd.conf."""
    directory.mkdir(parents=True, exist_ok=True)
    signed_ksk, signed_zsk = _keys(directory, SIGNED)
    (directory / "signed.zone").write_text(_zone(SIGNED, f"www IN A {web_addr}\nforged IN A {web_addr}\n"
                                                        f"*.new IN A {new_addr}\n"))
    _sign(directory, "signed.zone", signed_ksk, signed_zsk, SIGNED)
    signed = (directory / "signed.zone.signed").read_text().splitlines()
    forged = [line.replace(web_addr, FORGED_ADDR) if line.split()[:1] == [f"{FORGED}."] and " A " in
              line.replace("\t", " ") and "RRSIG" not in line else line for line in signed]
    assert forged != signed, "the forged record was not found in the signed zone"
    (directory / "signed.zone.signed").write_text("\n".join(forged) + "\n")
    ds = subprocess.run(["ldns-key2ds", "-n", "-2", f"{signed_ksk}.key"], cwd=directory, check=True,
                        capture_output=True, text=True).stdout
    (directory / "insecure.zone").write_text(_zone(INSECURE, f"www IN A {web_addr}\n"))
    anchor_ksk, anchor_zsk = _keys(directory, ANCHOR_ZONE)
    (directory / "anchor.zone").write_text(_zone(ANCHOR_ZONE, f"ns IN A {AUTH_ADDR}\nsigned IN NS ns\n"
                                                             f"insecure IN NS ns\n{ds}"))
    _sign(directory, "anchor.zone", anchor_ksk, anchor_zsk, ANCHOR_ZONE)
    anchor_path(directory).write_text((directory / f"{anchor_ksk}.key").read_text())
    conf = directory / "nsd.conf"
    zones = "".join(f"zone:\n  name: {name}\n  zonefile: {file}\n" for name, file in (
        (ANCHOR_ZONE, "anchor.zone.signed"), (SIGNED, "signed.zone.signed"), (INSECURE, "insecure.zone")))
    conf.write_text(f"""server:
  ip-address: {AUTH_ADDR}
  port: 53
  username: ""
  chroot: ""
  zonesdir: "{directory}"
  database: ""
  zonelistfile: "{directory / 'zone.list'}"
  xfrdfile: "{directory / 'xfrd.state'}"
  pidfile: "{directory / 'nsd.pid'}"
  logfile: "{directory / 'nsd.log'}"
  server-count: 1
  verbosity: 1
remote-control:
  control-enable: no
{zones}""")
    return conf
