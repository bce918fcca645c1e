"""One answer to "which device is calling?" (homework/callers.py), over IPv4 and IPv6,
and the API's per-device rules applied to it: a device cannot change its own access from
any address of its /64, failed logins count per device and per /64, a pending device's
IPv6 address is as pending as its IPv4 one."""
import ipaddress
import threading

import pytest

from conftest import make_core
from homework.callers import DEVICE, OTHER, ROUTER, SATELLITE, STRANGER, Callers
from homework.flows import Datapath
from test_api import MAC, MAC2, PASSWORD, Api
from test_dhcp_server import join

SITE = "2001:db8:5::/48"


@pytest.fixture
def core(tmp_path, clock):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "api", "schedules"), clock=clock,
                     ipv6_enabled=True, ipv6_prefix=SITE, api_admin_password_file=str(pwfile))
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    join(core, MAC, 1)
    join(core, MAC2, 2)
    return core


def addresses(core, mac, n=3):
    """The device's IPv4 address and n addresses of its /64 (SLAAC, privacy ones)."""
    lease = core.ctx.leases.get(mac)
    prefix = core.ctx.ipv6.device_prefix(lease.index)
    v6 = [str(prefix.network_address + 0x1000 + 7919 * i) for i in range(n)]
    return lease.ip, v6


def test_every_address_of_a_device_is_that_device(core):
    callers = core.ctx.callers
    ip, v6 = addresses(core, MAC)
    for address in (ip, *v6, f"::ffff:{ip}"):
        caller = callers.resolve(address)
        assert (caller.kind, caller.mac, caller.key) == (DEVICE, MAC, f"device:{MAC}"), address
    lease = core.ctx.leases.get(MAC)
    assert callers.resolve(lease.router).kind == ROUTER
    assert callers.resolve(str(core.ctx.ipv6.router_address(lease.index))).kind == ROUTER
    assert callers.resolve("127.0.0.1").kind == ROUTER and callers.resolve("::1").kind == ROUTER


def test_household_addresses_no_device_holds_are_strangers_counted_per_64(core):
    callers = core.ctx.callers
    empty = core.ctx.ipv6.device_prefix(200)
    a, b = (callers.resolve(str(empty.network_address + n)) for n in (0x10, 0x20))
    assert a.kind == b.kind == STRANGER and a.key == b.key == f"net:{empty}"
    assert callers.resolve("10.2.3.6").kind == STRANGER          # an unleased /30 of the pool
    outside = [callers.resolve(f"2001:db8:99::{n}") for n in (1, 2)]
    assert {c.kind for c in outside} == {OTHER} and outside[0].key == outside[1].key == "net:2001:db8:99::/64"
    assert callers.resolve("192.0.2.10").key != callers.resolve("192.0.2.11").key
    assert callers.resolve("not an address").kind == OTHER


def test_a_link_local_caller_on_a_satellite_cable_is_that_satellite(core):
    links = {"fe80::a8:1": "hwsat3m", "fe80::b9:2": "mgmt0"}
    callers = Callers(core.ctx, link_interface=links.get)
    sat = callers.resolve("fe80::a8:1")
    assert (sat.kind, sat.satellite, sat.key) == (SATELLITE, 3, "satellite:3")
    other = callers.resolve("fe80::b9:2")
    assert other.kind == OTHER and other.key == "ip:fe80::b9:2"      # never the whole fe80::/64


def test_a_device_cannot_change_its_own_access_from_any_address_of_its_64(core):
    api = Api(core)
    core.devices.permit(MAC)
    core.devices.permit(MAC2)
    tok = api.token("admin")
    ip, v6 = addresses(core, MAC)
    for client in (ip, *v6):
        for method, path, body in (("POST", f"deny/{MAC}", None), ("POST", f"blacklist/{MAC}", None),
                                   ("POST", f"pause/{MAC}", {"minutes": 5}), ("POST", f"resume/{MAC}", None),
                                   ("POST", "schedules", {"mac": MAC, "days": "mon", "from": "20:00",
                                                          "to": "21:00", "action": "pause"}),
                                   ("POST", "deny", {"macs": [MAC2, MAC]})):
            r = api.call(method, path, body, token=tok, client=client)
            assert r.status_int == 403 and "own access" in r.json["error"], (client, path, r.json)
    assert core.devices.get(MAC).state == "permitted"
    # from its own /64 it may still decide about another device
    r = api.call("POST", f"deny/{MAC2}", token=tok, client=v6[1])
    assert r.status_int == 200 and r.json["state"] == "denied"


def test_a_pending_devices_ipv6_addresses_reach_nothing_and_strangers_neither(core):
    api = Api(core)
    tok = api.token("admin")
    _, v6 = addresses(core, MAC)
    r = api.call("GET", "status", token=tok, client=v6[0])
    assert r.status_int == 403 and "not permitted" in r.json["error"]
    stranger = str(core.ctx.ipv6.device_prefix(200).network_address + 5)
    r = api.call("GET", "status", token=tok, client=stranger)
    assert r.status_int == 403 and "no device" in r.json["error"]
    core.devices.permit(MAC)
    assert api.call("GET", "status", token=tok, client=v6[0]).status_int == 200


def test_failed_logins_count_per_device_whatever_address_it_uses_and_per_64(core):
    api = Api(core)
    core.devices.permit(MAC)
    _, v6 = addresses(core, MAC, n=20)
    codes = [api.login("wrong guess", client=a).status_int for a in v6]
    assert codes[:5] == [401] * 5 and set(codes[5:]) == {429}, codes
    assert api.login(PASSWORD, client=v6[0]).status_int == 429        # the device is locked out ...
    assert api.login(PASSWORD, client="192.0.2.10").status_int == 200   # ... the household is not
    # twenty addresses of one /64 that is no device: one caller too
    outside = [f"2001:db8:99::{n:x}" for n in range(1, 21)]
    codes = [api.login("wrong guess", client=a).status_int for a in outside]
    assert codes.count(401) == 5 and codes[5:] == [429] * 15


def test_parallel_guesses_are_charged_before_they_are_hashed(core):
    api = Api(core)
    core.devices.permit(MAC)
    _, v6 = addresses(core, MAC, n=12)
    codes, lock = [], threading.Lock()

    def guess(addr):
        code = api.login("wrong guess", client=addr).status_int
        with lock:
            codes.append(code)
    threads = [threading.Thread(target=guess, args=(a,)) for a in v6]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(codes) == [401] * 5 + [429] * 7, codes


def test_password_hashing_leaves_the_calling_thread_free(core, monkeypatch):
    """Under the controller, offload hands the hash to a real thread; the gate keeps at most
    HASH_PARALLEL hashing and refuses past HASH_WAITING queued (503)."""
    from homework.components.api import auth as auth_mod
    started, release = threading.Semaphore(0), threading.Event()

    def slow_verify(password, stored):
        started.release()
        release.wait(30)
        return False
    monkeypatch.setattr(auth_mod, "verify_password", slow_verify)
    a = core.ctx.component("api").auth
    a.hashing = auth_mod.HashGate(parallel=2, waiting=3)
    results = []
    threads = [threading.Thread(target=lambda: results.append(a.check_password("x" * 8))) for _ in range(3)]
    for t in threads:
        t.start()
    assert started.acquire(timeout=10) and started.acquire(timeout=10)
    assert not started.acquire(timeout=0.2)            # the third waits for a slot
    with pytest.raises(auth_mod.Busy):
        a.check_password("y" * 8)                      # a fourth: too many queued
    release.set()
    for t in threads:
        t.join(10)
    assert results == [False] * 3


def test_a_restored_hash_with_huge_scrypt_parameters_is_refused_without_hashing(monkeypatch):
    from homework import passwords
    from homework.passwords import BadHash, check_hash, hash_password, verify_password
    good = hash_password("correct horse")
    parts = good.split("$")

    def no_hashing(*a, **kw):
        raise AssertionError("scrypt ran for a hash out of bounds (p=600 cost 52 s)")
    monkeypatch.setattr(passwords.hashlib, "scrypt", no_hashing)
    for n, r, p in ((2 ** 14, 8, 600), (2 ** 20, 8, 1), (2 ** 14, 64, 1), (1000, 8, 1)):
        crafted = "$".join(["scrypt", str(n), str(r), str(p), *parts[4:]])
        with pytest.raises(BadHash):
            check_hash(crafted)
        assert not verify_password("correct horse", crafted)
    monkeypatch.undo()
    for bad in ("scrypt$²$8$1$aa$bb", "plain", None, "scrypt$16384$8$1$!!$!!"):
        with pytest.raises(BadHash):
            check_hash(bad)
    assert check_hash(good) == good and verify_password("correct horse", good)


def test_the_plan_is_read_at_each_call(core):
    """Renumbering (a new delegated prefix) moves every device's /64: the new one is the device."""
    from homework.ipv6plan import AddressPlan
    core.ctx.ipv6 = AddressPlan(ipaddress.IPv6Network("2001:db8:77::/48"))
    prefix = core.ctx.ipv6.device_prefix(core.ctx.leases.get(MAC).index)
    assert core.ctx.callers.resolve(str(prefix.network_address + 9)).mac == MAC
