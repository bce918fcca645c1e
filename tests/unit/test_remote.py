"""Remote access over WireGuard (components/remote): keys (RFC 7748's vector), the client's
configuration and file name, `wg show dump` as read back, and the component with the away
namespace and the tunnel replaced by recorders (the real ones run in tests/e2e/test_remote.py):
a remote device is made pending with its own addresses, named, given its configuration,
routed when its lease comes, refused bad names, and removed with its keys when forgotten."""
from __future__ import annotations

import base64
import ipaddress
import threading

import pytest

from homework.commands import CommandError
from homework.components.remote import clientconf, keys
from homework.components.remote import component as remote_component
from homework.components.remote.store import RemoteStore
from homework.components.remote.tunnel import parse_dump
from routingkit import join, routing_core

SITE = "2001:db8:100::/48"


def test_keys_are_curve25519_as_wireguard_makes_them():
    # RFC 7748, 6.1: Alice's private scalar and public key
    private = base64.b64encode(bytes.fromhex(
        "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")).decode()
    assert base64.b64decode(keys.public_of(private)).hex() == \
        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
    k = keys.new_private()
    assert keys.is_key(k) and keys.is_key(keys.public_of(k)) and keys.is_key(keys.new_preshared())
    assert not keys.is_key("not base64!") and not keys.is_key(base64.b64encode(b"short").decode())


def test_the_client_configuration_is_what_the_wireguard_apps_import():
    text = clientconf.config_text(name="Dad's phone", private_key="PRIV", address4="10.2.0.6",
                                  address6="2001:db8:100:1::2", dns=["10.2.0.5", "2001:db8:100:1::1"],
                                  router_public_key="PUB", preshared_key="PSK",
                                  endpoint=clientconf.endpoint_text("2001:db8::1", 51820))
    lines = text.splitlines()
    assert lines[1:5] == ["[Interface]", "PrivateKey = PRIV", "Address = 10.2.0.6/32, 2001:db8:100:1::2/128",
                          "DNS = 10.2.0.5, 2001:db8:100:1::1"]
    assert "Endpoint = [2001:db8::1]:51820" in lines and "AllowedIPs = 0.0.0.0/0, ::/0" in lines
    assert clientconf.endpoint_text("198.51.100.2", 51820) == "198.51.100.2:51820"
    assert clientconf.file_name("Dad's phone") == "homework-Dad-s-phone.conf"
    assert clientconf.file_name("../..") == "homework-away.conf"


def test_wg_dump_is_read_back():
    dump = ("PRIVATEKEY\tROUTERPUB\t51820\toff\n"
            "PEER1=\tPSK\t198.51.100.1:36824\t10.2.0.6/32,2001:db8:100:1::/64\t1795818033\t516\t92\t25\n"
            "PEER2=\t(none)\t(none)\t10.2.0.10/32\t0\t0\t0\toff\n")
    peers = parse_dump(dump)
    assert peers["PEER1="].endpoint == "198.51.100.1:36824" and peers["PEER1="].latest_handshake == 1795818033
    assert (peers["PEER1="].rx, peers["PEER1="].tx) == (516, 92)
    assert peers["PEER2="].endpoint == "" and peers["PEER2="].latest_handshake == 0


def test_the_store_keeps_the_routers_key_and_reuses_places(tmp_path, clock):
    core = routing_core(tmp_path, clock)
    store = RemoteStore(core.state)
    again = RemoteStore(core.state)
    assert store.router_key == again.router_key and keys.is_key(store.router_key)
    a = store.add("02:68:77:72:00:01", "a", 1.0)
    b = store.add("02:68:77:72:00:02", "b", 2.0)
    assert (a.index, b.index) == (1, 2) and a.private_key != b.private_key
    store.remove(a.mac)
    assert store.add("02:68:77:72:00:03", "c", 3.0).index == 1
    assert set(RemoteStore(core.state).peers) == {"02:68:77:72:00:02", "02:68:77:72:00:03"}


# -- the component, with the away namespace and the tunnel as recorders ---------------------------
class FakeAway:
    core = None
    ports = iter(range(10, 100))

    def __init__(self, *args, **kw):
        self.devices = {}
        self.routes = {}
        self.pid = 4242
        self.wg = ""

    def start(self):
        return ""

    def stop(self):
        pass

    def add_device(self, index, mac, hostname, ovs_env=None):
        self.devices[index] = mac
        join(FakeAway.core, mac, next(FakeAway.ports))     # its DHCP client asks, from its port
        return ""

    def remove_device(self, index, ovs_env=None):
        self.devices.pop(index, None)
        self.routes.pop(index, None)

    def route(self, index, address, gateway, prefix6):
        self.routes[index] = (address, gateway, prefix6)
        return ""


class FakeTunnel:
    def __init__(self, ifname, backend, run_dir):
        self.ifname, self.kind, self.peers_set = ifname, "wireguard-go", {}

    def start(self, away, private_key, port):
        return ""

    def stop(self, away):
        pass

    def running(self):
        return True

    def set_peer(self, away, public_key, preshared_key, allowed):
        self.peers_set[public_key] = allowed
        return ""

    def remove_peer(self, away, public_key):
        self.peers_set.pop(public_key, None)

    def peers(self, away):
        return {}


@pytest.fixture
def home(tmp_path, clock, monkeypatch):
    monkeypatch.setattr(remote_component, "Away", FakeAway)
    monkeypatch.setattr(remote_component, "Tunnel", FakeTunnel)
    monkeypatch.setattr(remote_component, "run", lambda argv, text=None: (0, ""))      # nft
    monkeypatch.setattr(remote_component, "ipv4_addresses", lambda ifname: ["198.51.100.2"])
    core = routing_core(tmp_path, clock, components=("dhcp", "routing", "remote"), ipv6_enabled=True,
                        ipv6_prefix=SITE, remote_run_dir=str(tmp_path / "remote"))
    FakeAway.core = core
    comp = core.ctx.component("remote")
    assert comp.ready.wait(10)
    return core


def test_a_device_away_from_home_is_pending_with_its_own_addresses(home):
    view = home.commands.call("remote-add", name=" Dad's phone ", owner="Dad")
    mac = view["mac"]
    assert mac.startswith("02:68:77:72:") and view["state"] == "pending" and view["name"] == "Dad's phone"
    device = home.state.get_device(mac)
    assert (device.state, device.name, device.owner) == ("pending", "Dad's phone", "Dad")
    lease = home.ctx.leases.get(mac)
    prefix = str(home.ctx.ipv6.device_prefix(lease.index))
    assert view["ipv6_prefix"] == prefix and prefix.endswith("::/64")
    net = ipaddress.IPv6Network(prefix)
    assert f"Address = {lease.ip}/32, {net.network_address + 2}/128" in view["config"]
    assert f"DNS = {lease.router}, {net.network_address + 1}" in view["config"]
    assert "Endpoint = 198.51.100.2:51820" in view["config"]
    comp = home.ctx.component("remote")
    assert comp.away.routes[1] == (lease.ip, lease.router, prefix)
    assert comp.tunnel.peers_set[view["public_key"]] == [f"{lease.ip}/32", prefix]
    assert home.ctx.wan_services == {"remote access (WireGuard)": ("udp", 51820)}
    # shown with where it connects from (nothing yet)
    view = home.commands.call("status", mac=mac)
    assert view["away"] == {"connected": False, "endpoint": "", "last_handshake": 0.0, "received": 0, "sent": 0}
    assert view["private"] is False and view["attached"] is None     # its MAC and port are the router's making


@pytest.mark.parametrize("name", [None, "", "   ", "x" * 65, "bad\nname", 7])
def test_a_device_needs_a_name(home, name):
    with pytest.raises(CommandError, match="name"):
        home.commands.call("remote-add", name=name)
    assert home.commands.call("remote-list") == []


def test_forgetting_it_removes_its_peer_veth_and_keys(home):
    view = home.commands.call("remote-add", name="tablet")
    comp = home.ctx.component("remote")
    home.commands.call("forget", mac=view["mac"])
    for t in threading.enumerate():          # removal runs off the event's path
        if t is not threading.current_thread() and t.daemon is not False and t.name.startswith("Thread"):
            t.join(5)
    assert home.commands.call("remote-list") == []
    assert comp.tunnel.peers_set == {} and comp.away.devices == {}
    with pytest.raises(CommandError) as err:
        home.commands.call("remote-config", mac=view["mac"])
    assert err.value.status == 404


def test_its_configuration_names_a_set_endpoint(tmp_path, clock, monkeypatch):
    monkeypatch.setattr(remote_component, "Away", FakeAway)
    monkeypatch.setattr(remote_component, "Tunnel", FakeTunnel)
    monkeypatch.setattr(remote_component, "run", lambda argv, text=None: (0, ""))
    core = routing_core(tmp_path, clock, components=("dhcp", "routing", "remote"),
                        remote_endpoint="home.example.net", remote_listen_port=443,
                        remote_run_dir=str(tmp_path / "remote"))
    FakeAway.core = core
    assert core.ctx.component("remote").ready.wait(10)
    view = core.commands.call("remote-add", name="laptop")
    assert "Endpoint = home.example.net:443" in view["config"]
    assert "Address = 10.2.0.2/32\n" in view["config"]          # no IPv6 on this router: IPv4 only


def test_a_backup_carries_the_keys_encrypted_and_refuses_bad_ones():
    from homework.components.backup.contents import SECRETS
    from homework.components.backup.fileformat import BackupError
    from homework.components.backup.validate import validate
    assert "remote_peers" in SECRETS and "remote_router" in SECRETS      # encrypted in the file
    k = keys.new_private()
    peer = {"mac": "02:68:77:72:00:01", "idx": 1, "name": "phone", "private_key": k,
            "public_key": keys.public_of(k), "preshared_key": keys.new_preshared(), "created": 1.0}
    validate({}, {"remote_peers": [peer], "remote_router": [{"id": 1, "private_key": keys.new_private()}]})
    for bad, says in (({"private_key": "nope"}, "not a WireGuard key"), ({"name": ""}, "name"),
                      ({"idx": 0}, "idx")):
        with pytest.raises(BackupError, match=says):
            validate({}, {"remote_peers": [{**peer, **bad}]})
