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
    import subprocess, sys
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
