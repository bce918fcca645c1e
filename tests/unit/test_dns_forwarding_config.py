"""dnsd's forwarding settings come from the controller's [dns] table, like the
rest of its command line, so dnsd and dnsmasq read the same resolv file."""
from __future__ import annotations

from pathlib import Path

import pytest

from homework.config import ConfigError, dnsd_args, dnsmasq_args, main, parse

REPO = Path(__file__).resolve().parents[2]


def test_dnsd_reads_the_wan_resolv_file_and_the_local_domains_by_default():
    args = dnsd_args(parse({}))
    assert args[args.index("--resolv-file") + 1] == "/run/homework/resolv.upstream"
    assert args[args.index("--local-domains") + 1] == "lan,home.arpa"


def test_empty_settings_are_left_out_so_the_unit_can_word_split_the_line():
    args = dnsd_args(parse({"dns": {"resolv_file": "", "local_domains": " lan , , home.arpa "}}))
    assert "--resolv-file" not in args
    assert args[args.index("--local-domains") + 1] == "lan,home.arpa"
    assert "" not in args
    assert "--local-domains" not in dnsd_args(parse({"dns": {"local_domains": ""}}))


def test_a_bad_local_domain_is_a_clear_config_error():
    with pytest.raises(ConfigError) as exc:
        parse({"dns": {"local_domains": "lan,my home"}})
    assert exc.value.key == "dns.local_domains" and "'my home' is not a domain name" in str(exc.value)


def test_dnsd_sends_names_to_the_validating_resolver_unless_there_is_none():
    args = dnsd_args(parse({}))
    assert args[args.index("--resolver") + 1] == "127.0.0.1:5335"
    assert "--resolver" not in dnsd_args(parse({"dns": {"resolver": ""}}))
    with pytest.raises(ConfigError) as exc:
        parse({"dns": {"resolver": "localhost"}})
    assert exc.value.key == "dns.resolver"


def test_dnsmasq_answers_the_local_domains_itself_and_never_asks_upstream():
    assert dnsmasq_args(parse({})) == ["--local=/lan/", "--local=/home.arpa/"]
    assert dnsmasq_args(parse({"dns": {"local_domains": " home.arpa , , family.example "}})) == [
        "--local=/home.arpa/", "--local=/family.example/"]
    assert dnsmasq_args(parse({"dns": {"local_domains": ""}})) == []


def test_the_images_dnsmasq_unit_gets_the_local_domains_from_the_config_file(tmp_path, capsys):
    config = tmp_path / "homework.toml"
    config.write_text('[dns]\nlocal_domains = "lan,home.arpa"\n')
    assert main(["--dnsmasq-args", str(config)]) == 0
    assert capsys.readouterr().out.split() == ["--local=/lan/", "--local=/home.arpa/"]
    unit = (REPO / "conf" / "systemd" / "homework-dns.service").read_text()
    assert "homework.config --dnsmasq-args /run/homework/homework.toml" in unit
