"""The household's resolver settings (components/dns/resolver.py): stored in state.db,
written to household.conf, applied to unbound over its control socket (a fake here),
and the commands the CLI and API call."""
from __future__ import annotations

import json

import pytest

from conftest import make_core
from homework.commands import CommandError
from homework import unbound
from homework.components.dns.resolver import KEY_INSECURE, Resolver, SettingError, parse_insecure
from homework.config import Config
from homework.state import StateStore


class FakeUnbound:
    """Records control commands; `down` makes it unreachable."""

    def __init__(self):
        self.commands: list[str] = []
        self.down = False

    def __call__(self, path: str, command: str) -> str:
        if self.down:
            raise unbound.ControlError(f"the resolver (unbound) is not answering on {path}")
        self.commands.append(command)
        return "ok\n"


@pytest.fixture
def resolver(tmp_path):
    resolv = tmp_path / "resolv.upstream"
    resolv.write_text("nameserver 192.0.2.53\n")
    config = Config(state_dir=tmp_path, dns_resolv_file=str(resolv), dns_resolver_user="")
    fake = FakeUnbound()
    r = Resolver(config, StateStore(config.state_db), control=fake)
    r.fake, r.resolv = fake, resolv
    r.apply(r.load())
    return r


def household(r) -> str:
    return (unbound.resolver_dir(r.config) / "household.conf").read_text()


def test_start_writes_the_household_file_and_reloads_only_when_it_changed(resolver):
    assert "forward-addr: 192.0.2.53@53" in household(resolver)
    assert resolver.fake.commands == ["reload"]
    again = Resolver(resolver.config, StateStore(resolver.config.state_db), control=resolver.fake)
    assert again.apply(again.load()) is False
    assert resolver.fake.commands == ["reload", "status"], "unchanged settings: unbound keeps its cache"
    assert again.running


def test_a_negative_trust_anchor_is_stored_written_and_applied_without_a_reload(resolver):
    assert resolver.apply(resolver.add_insecure("Broken.Example.")) is True
    assert resolver.view()["insecure"] == ["broken.example"]
    assert 'domain-insecure: "broken.example"' in household(resolver)
    assert resolver.fake.commands[-3:] == ["insecure_add broken.example", "flush_zone broken.example", "flush_bogus"]
    assert json.loads(resolver.options.get(KEY_INSECURE)) == ["broken.example"]
    resolver.apply(resolver.remove_insecure("broken.example"))
    assert "domain-insecure" not in household(resolver)
    assert resolver.fake.commands[-2:] == ["insecure_remove broken.example", "flush_zone broken.example"]
    with pytest.raises(SettingError, match="not among"):
        resolver.remove_insecure("broken.example")
    with pytest.raises(SettingError, match="not a domain name"):
        resolver.add_insecure("https://example.com/")


def test_validation_off_and_on_again(resolver):
    resolver.apply(resolver.set_dnssec(False))
    assert resolver.view()["enabled"] is False
    assert "val-permissive-mode: yes" in household(resolver)
    assert resolver.fake.commands[-2:] == ["set_option val-permissive-mode: yes", "flush_bogus"]
    resolver.apply(resolver.set_dnssec("on"))
    assert "val-permissive-mode: no" in household(resolver)
    with pytest.raises(SettingError):
        resolver.set_dnssec("maybe")


def test_settings_made_while_unbound_is_down_are_kept_for_its_start(resolver):
    resolver.fake.down = True
    resolver.apply(resolver.add_insecure("example.org"))
    view = resolver.view()
    assert view["running"] is False and "not answering" in view["error"]
    assert 'domain-insecure: "example.org"' in household(resolver), "unbound reads it when it starts"
    resolver.fake.down = False
    resolver.apply(resolver.wan_resolvers(resolver.isp))
    assert resolver.running, "a look a moment later notices it is back"


def test_a_new_wan_lease_moves_the_forwarders(resolver):
    assert resolver.wan_resolvers(("192.0.2.53",)) is None, "same resolvers: nothing to do"
    assert resolver.apply(resolver.wan_resolvers(("198.51.100.53",))) is True
    assert "forward-addr: 198.51.100.53@53" in household(resolver) and resolver.fake.commands[-1] == "reload"


def test_the_stored_list_is_checked_like_any_other_value():
    assert parse_insecure('["b.example", "A.example"]') == ("a.example", "b.example")
    for bad in ("{}", "[1]", "not json", json.dumps(["x"] * 201)):
        with pytest.raises(SettingError):
            parse_insecure(bad)


def test_the_commands_go_through_the_dns_component(tmp_path):
    core = make_core(tmp_path, components=("dhcp", "routing", "dns"), dns_intercept=False, dns_control="",
                     dns_resolver_user="", dns_resolver_control=str(tmp_path / "nobody.ctl"))
    assert core.commands.call("dnssec")["enabled"] is True
    view = core.commands.call("dnssec-insecure-add", domain="broken.example")
    assert view["insecure"] == ["broken.example"] and view["running"] is False
    with pytest.raises(CommandError):
        core.commands.call("dnssec-insecure-add", domain="not a name")
    assert core.commands.call("dnssec", enabled=False)["enabled"] is False
    assert core.commands.call("dnssec-insecure-remove", domain="broken.example")["insecure"] == []
