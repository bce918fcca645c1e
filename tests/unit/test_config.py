import pytest

from homework.config import ConfigError, load, parse


def test_defaults():
    c = parse({})
    assert str(c.pool) == "10.2.0.0/16" and c.pending_lease == 30 and c.permitted_lease == 3600


def test_repo_config_is_valid():
    import pathlib
    c = load(pathlib.Path(__file__).parents[2] / "conf" / "homework.toml")
    assert c.bridge == "br0"


@pytest.mark.parametrize("data,key", [
    ({"lan": {"pool": "10.2.0.0/33"}}, "lan.pool"),
    ({"lan": {"pool": "10.2.0.1/16"}}, "lan.pool"),
    ({"lan": {"pool": "10.2.0.0/30"}}, "lan.pool"),
    ({"lan": {"datapath_type": "kernel"}}, "lan.datapath_type"),
    ({"lan": {"bridge": "a bridge name that is far too long"}}, "lan.bridge"),
    ({"dhcp": {"pending_lease": "30"}}, "dhcp.pending_lease"),
    ({"dhcp": {"pending_lease": 1}}, "dhcp.pending_lease"),
    ({"dhcp": {"permitted_lease": True}}, "dhcp.permitted_lease"),
    ({"controller": {"components": ["dhcp", "nope"]}}, "controller.components"),
    ({"controller": {"port": 70000}}, "controller.port"),
    ({"controller": {"listen": "localhost-ish"}}, "controller.listen"),
    ({"dhcp": {"lease": 5}}, "dhcp.lease"),
    ({"bogus": {}}, "bogus"),
    ({"dns": {"listen": "localhost:53"}}, "dns.listen"),
    ({"dns": {"intercept": "yes"}}, "dns.intercept"),
    ({"eapol": {"hostapd_port": "not a port name!"}}, "eapol.hostapd_port"),
])
def test_bad_values_name_the_key(data, key):
    with pytest.raises(ConfigError) as exc:
        parse(data)
    assert exc.value.key == key
    assert key in str(exc.value)


def test_unreadable_file(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text("[lan\npool=")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load(tmp_path / "missing.toml")


def test_controller_exits_with_message_on_bad_config(tmp_path):
    import subprocess
    import sys
    bad = tmp_path / "c.toml"
    bad.write_text('[dhcp]\npermitted_lease = "long"\n')
    res = subprocess.run([sys.executable, "-m", "homework", "--config", str(bad)], capture_output=True, text=True)
    assert res.returncode == 2 and "dhcp.permitted_lease" in res.stderr


def test_api_and_linksim_keys():
    c = parse({"api": {"listen": "127.0.0.1", "port": 8081, "admin_password_file": "/etc/homework/pw",
                       "session_lifetime": 3600}, "linksim": {"interval": 5}})
    assert (c.api_port, c.api_admin_password_file, c.api_session_lifetime, c.linksim_interval) == \
        (8081, "/etc/homework/pw", 3600, 5)
    assert parse({}).api_session_lifetime == 43200 and parse({}).linksim_interval == 2


@pytest.mark.parametrize("data,key", [
    ({"api": {"listen": "anywhere"}}, "api.listen"),
    ({"api": {"session_lifetime": 5}}, "api.session_lifetime"),
    ({"api": {"admin_password_file": 3}}, "api.admin_password_file"),
    ({"api": {"password": "x"}}, "api.password"),
    ({"linksim": {"interval": 0}}, "linksim.interval"),
])
def test_bad_api_values_name_the_key(data, key):
    with pytest.raises(ConfigError) as exc:
        parse(data)
    assert exc.value.key == key


# -- one key table, versions and migrations ------------------------------
def test_every_config_field_comes_from_the_key_table():
    import dataclasses
    from homework.config import KEYS, Config
    fields = {f.name for f in dataclasses.fields(Config)}
    assert fields == {k.attr for k in KEYS} | {"version"}
    assert len({k.name for k in KEYS}) == len(KEYS)
    # every default passes its own check (the table builds the dataclass from them)
    for k in KEYS:
        parse({k.name.split(".")[0]: {k.name.split(".")[1]: k.default}})


def test_a_version_1_file_is_migrated():
    c = parse({"wan": {"interface": "wan0"}, "lan": {"ports": ["eth1"]}})
    assert c.version == 2 and c.lan_ports == ("eth1",)


def test_wan_interface_is_unknown_in_version_2():
    with pytest.raises(ConfigError) as exc:
        parse({"version": 2, "wan": {"interface": "wan0"}})
    assert exc.value.key == "wan"


@pytest.mark.parametrize("version", [3, 0, "2", True])
def test_a_newer_or_bad_version_is_refused(version):
    with pytest.raises(ConfigError) as exc:
        parse({"version": version})
    assert exc.value.key == "version"


def test_dnsd_arguments_come_from_the_dns_table(tmp_path):
    import subprocess
    import sys
    conf = tmp_path / "c.toml"
    conf.write_text('version = 2\n[dns]\nlisten = "127.0.0.9:5399"\nupstream = "127.0.0.1:53"\ncontrol = "/x.sock"\n')
    out = subprocess.run([sys.executable, "-m", "homework.config", "--dnsd-args", str(conf)],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["--listen", "127.0.0.9:5399", "--upstream", "127.0.0.1:53", "--control", "/x.sock",
                   "--resolv-file", "/run/homework/resolv.upstream", "--local-domains", "lan,home.arpa",
                   "--listen6", "[fd00:53::53]:5300",      # IPv6 is on by default
                   "--resolver", "127.0.0.1:5335",
                   "--dot-listen", "169.254.53.53:853", "--dot-listen6", "[fd00:53::53]:853",
                   "--tls-cert", "/var/lib/homework/tls/server.crt", "--tls-key", "/var/lib/homework/tls/server.key",
                   "--doh-socket", "/run/homework/dnsd-doh.sock", "--resolver-name", "homework.home.arpa"]
    addr = subprocess.run([sys.executable, "-m", "homework.config", "--dnsd-address", str(conf)],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert addr == "127.0.0.9"


def test_dhcp_and_devices_keys():
    c = parse({"dhcp": {"relays": ["10.9.0.1"], "new_macs_burst": 4}, "devices": {"max_pending": 9}})
    assert (c.dhcp_relays, c.new_macs_burst, c.max_pending) == (("10.9.0.1",), 4, 9)
    with pytest.raises(ConfigError) as exc:
        parse({"dhcp": {"relays": ["nope"]}})
    assert exc.value.key == "dhcp.relays"


def test_a_missing_lan_port_raises_an_alert(tmp_path):
    from conftest import make_core
    from homework.flows import Datapath
    core = make_core(tmp_path, lan_ports=("eth1", "eth2"))
    seen = []
    core.bus.subscribe("alert", lambda topic, ev: seen.append(ev))
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "eth1": 1}))
    assert [(a["kind"], "eth2" in a["detail"]) for a in seen] == [("lan-port-missing", True)]
