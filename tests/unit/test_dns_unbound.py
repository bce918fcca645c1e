"""The resolver's files (homework/unbound.py): unbound.conf from [dns], the
household's file, the first start's default, and the control socket's protocol."""
from __future__ import annotations

import socket
import subprocess
import threading

import pytest

from homework import unbound
from homework.config import parse


def config(tmp_path, **dns):
    resolv = tmp_path / "resolv.upstream"
    dns.setdefault("resolv_file", str(resolv))
    dns.setdefault("resolver_user", "")
    return parse({"state": {"dir": str(tmp_path / "state")}, "dns": dns})


def test_main_conf_listens_where_dnsd_sends_and_includes_the_household_file(tmp_path):
    c = config(tmp_path, resolver="127.0.0.1:5399", resolver_control=str(tmp_path / "u.ctl"))
    text = unbound.main_conf(c)
    assert "interface: 127.0.0.1@5399" in text and "port: 5399" in text
    assert f'control-interface: "{tmp_path / "u.ctl"}"' in text
    assert 'module-config: "validator iterator"' in text and "ede: yes" in text
    assert f'auto-trust-anchor-file: "{tmp_path / "state" / "resolver" / "root.key"}"' in text
    assert f'include: "{tmp_path / "state" / "resolver" / "household.conf"}"' in text
    anchored = unbound.main_conf(config(tmp_path, trust_anchor="/x/anchor.key"))
    assert 'trust-anchor-file: "/x/anchor.key"' in anchored and "auto-trust-anchor-file" not in anchored


def test_household_conf_says_what_the_household_chose():
    plan = unbound.Plan(forwards=(unbound.Forward("1.1.1.1", 853, "cloudflare-dns.com"),), tls=True,
                        validate=False, insecure=("broken.example",))
    text = unbound.household_conf(plan)
    assert "val-permissive-mode: yes" in text
    assert 'domain-insecure: "broken.example"' in text
    assert "forward-tls-upstream: yes" in text and "forward-addr: 1.1.1.1@853#cloudflare-dns.com" in text
    plain = unbound.household_conf(unbound.Plan(forwards=(unbound.Forward("192.0.2.53"),)))
    assert "val-permissive-mode: no" in plain and "forward-addr: 192.0.2.53@53\n" in plain


def test_first_start_forwards_plainly_to_the_wan_lease_resolvers(tmp_path):
    c = config(tmp_path)
    (tmp_path / "resolv.upstream").write_text("nameserver 192.0.2.53\nnameserver 127.0.0.1\nnameserver 2001:db8::53\n")
    path = unbound.prepare(c)
    household = (path.parent / "household.conf").read_text()
    assert "forward-addr: 192.0.2.53@53" in household and "forward-addr: 2001:db8::53@53" in household
    assert "127.0.0.1" not in household.split("forward-zone")[1], "this router is no upstream"
    # the household's file, once written, is kept across starts
    unbound.write_household(c, unbound.Plan(forwards=(unbound.Forward("9.9.9.9", 853, "dns.quad9.net"),), tls=True))
    unbound.prepare(c)
    assert "dns.quad9.net" in (path.parent / "household.conf").read_text()


def test_without_a_lease_yet_the_default_goes_through_dnsmasq(tmp_path):
    c = config(tmp_path)
    assert unbound.default_plan(c).forwards == (unbound.Forward("127.0.0.1", 5353),)


def test_the_written_config_is_one_unbound_accepts(tmp_path):
    checkconf = "/usr/sbin/unbound-checkconf"     # Debian's unbound (scripts/deps.sh)
    c = config(tmp_path, resolver_control=str(tmp_path / "u.ctl"), tls_ca_file="/etc/ssl/certs/ca-certificates.crt")
    (tmp_path / "resolv.upstream").write_text("nameserver 192.0.2.53\n")
    path = unbound.prepare(c)
    res = subprocess.run([checkconf, str(path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_control_speaks_ubct1_and_reports_errors(tmp_path):
    path = str(tmp_path / "ctl")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)
    seen = []

    def serve():
        for reply in (b"ok\n", b"error cannot parse name\n"):
            conn, _ = server.accept()
            seen.append(conn.recv(1024))
            conn.sendall(reply)
            conn.close()
    threading.Thread(target=serve, daemon=True).start()
    assert unbound.control(path, "insecure_add example.com") == "ok\n"
    with pytest.raises(unbound.ControlError, match="cannot parse name"):
        unbound.control(path, "insecure_add bad..name")
    assert seen == [b"UBCT1 insecure_add example.com\n", b"UBCT1 insecure_add bad..name\n"]
    with pytest.raises(unbound.ControlError, match="not answering"):
        unbound.control(str(tmp_path / "nobody"), "status")
    server.close()
