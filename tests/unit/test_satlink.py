"""The satellite agent channel: the wire format's checks, then a real agent
(homework.satellite_agent) against a real controller core over real TLS on loopback: it
is admitted only with its paired certificate, gets the Wi-Fi and the deny list and
follows their changes, its station dumps become the board's link metrics, bad lines are
dropped without ending the session, denying the satellite ends it, and hostapd saying a
station joined makes the agent report that radio at once."""
import shutil
import socket
import ssl
import tempfile
import threading
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from conftest import make_core
from fakehostapd import FakeHostapd
from homework import agentwire, pki
from homework.satellite_agent.__main__ import parse as parse_agent_args
from homework.satellite_agent.agent import Agent, AgentOptions
from homework.satellites import parse
from homework.wifi import read_env

DPID = "00000000000000a1"
DATA = Path(__file__).parent / "data" / "iw"
STATION = "02:00:00:00:01:00"       # in poll1.txt


# -- the wire format ---------------------------------------------------------------------------
class Chunks:
    def __init__(self, *chunks):
        self.chunks = list(chunks)

    def recv(self, n):
        return self.chunks.pop(0) if self.chunks else b""


def test_lines_are_read_whole_and_a_bad_or_too_long_line_is_dropped_alone():
    long = b'{"type":"x","pad":"' + b"a" * (agentwire.MAX_LINE + 10) + b'"}\n'
    reader = agentwire.LineReader(Chunks(b'{"type":"pi', b'ng"}\nnot json\n', long[:70000], long[70000:],
                                         b'[1]\n{"type":"hello","radios":["wlan0"]}\n'))
    assert reader.read() == {"type": "ping"}
    with pytest.raises(agentwire.WireError, match="not JSON"):
        reader.read()
    with pytest.raises(agentwire.WireError, match="longer than"):
        reader.read()
    with pytest.raises(agentwire.WireError, match="type"):
        reader.read()                       # the rest of the long line is skipped, then [1]
    assert reader.read() == {"type": "hello", "radios": ["wlan0"]}
    assert reader.read() is None


def test_message_fields_are_checked():
    assert agentwire.deny({"macs": ["AA-BB-CC-DD-EE-FF", "aa:bb:cc:dd:ee:ff"]}) == ["aa:bb:cc:dd:ee:ff"]
    for bad in ({"macs": "aa:bb:cc:dd:ee:ff"}, {"macs": ["nope"]}, {"macs": [1]}):
        with pytest.raises(agentwire.WireError):
            agentwire.deny(bad)
    assert agentwire.wifi({"ssid": "Home", "passphrase": "correct horse"}) == ("Home", "correct horse")
    with pytest.raises(agentwire.WireError, match="passphrase"):
        agentwire.wifi({"ssid": "Home", "passphrase": "short"})
    assert agentwire.radio_report({"radio": "wlan0", "dump": "x"}) == ("wlan0", "x", "")
    assert agentwire.unpaired({"type": "unpaired", "state": "forgotten"}) == "forgotten"
    for bad in ({}, {"state": "permitted"}, {"state": ["denied"]}):
        with pytest.raises(agentwire.WireError, match="state"):
            agentwire.unpaired(bad)
    for bad in ({"radio": "../etc"}, {"radio": "w" * 16}, {"radio": "wlan0", "dump": 5}):
        with pytest.raises(agentwire.WireError):
            agentwire.radio_report(bad)


def test_agent_arguments():
    opts = parse_agent_args(["--router", "10.2.0.1", "--cert", "c", "--key", "k", "--ca", "a", "--state-dir", "/s",
                             "--radio", "wlan0", "--radio", "wlan1"])
    assert opts.router == ("10.2.0.1", agentwire.DEFAULT_PORT) and opts.radios == ["wlan0", "wlan1"]
    assert parse_agent_args(["--router", "10.2.0.1:7000", "--cert", "c", "--key", "k", "--ca", "a",
                             "--state-dir", "/s"]).router == ("10.2.0.1", 7000)
    with pytest.raises(SystemExit):
        parse_agent_args(["--router", "10.2.0.1:x", "--cert", "c", "--key", "k", "--ca", "a", "--state-dir", "/s"])


# -- a real agent, a real core, real TLS -----------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def key_and_request(directory: Path, name: str) -> tuple[Path, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    path = directory / f"{name}.key"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    csr = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])).sign(key, hashes.SHA256()))
    return path, csr.public_bytes(serialization.Encoding.PEM).decode()


def wait_for(predicate, timeout=30.0):     # generous: a loaded machine is slow, success ends it early
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def home(tmp_path, clock):
    port = free_port()
    core = make_core(tmp_path / "router", components=("dhcp", "routing", "radio", "api", "satlink"), clock=clock,
                     satellites=parse([f"{DPID}:up0:cable1"]), satellites_agent_port=port,
                     satellites_tls_listen="127.0.0.1")
    core.commands.call("set-wifi", ssid="Our home", passphrase="correct horse battery")
    sat_dir = tmp_path / "sat"
    sat_dir.mkdir()
    key, csr = key_and_request(sat_dir, "satellite")
    paired = core.commands.call("satellite-pair", dpid=DPID, csr=csr)
    (sat_dir / "cert.pem").write_text(paired["certificate"])
    (sat_dir / "ca.pem").write_text(paired["ca"])
    links = []
    core.bus.subscribe("link", lambda topic, ev: links.append(ev))
    agents = []

    def start_agent(**kw):
        opts = AgentOptions(router=("127.0.0.1", port), cert=str(sat_dir / "cert.pem"), key=str(key),
                            ca=str(sat_dir / "ca.pem"), state_dir=sat_dir / "state", radios=["wlan0"],
                            station_dump_command=f"cat {DATA / 'poll1.txt'}",
                            info_command=f"cat {DATA / 'info-5g.txt'}", hostapd_ctrl_dir=str(sat_dir / "ctrl"),
                            interval=0.1)
        for name, value in kw.items():
            setattr(opts, name, value)
        agent = Agent(opts)
        agents.append(agent)
        threading.Thread(target=agent.run, daemon=True).start()
        return agent

    yield core, start_agent, links, sat_dir
    for agent in agents:
        agent.stop.set()
    core.stop()


def test_a_paired_agent_gets_the_wifi_and_the_deny_list_and_its_stations_reach_the_board(home):
    core, start_agent, links, sat_dir = home
    agent = start_agent()
    env = sat_dir / "state" / "wifi.env"
    assert wait_for(lambda: read_env(env) == {"SSID": "Our home", "PASSPHRASE": "correct horse battery"})
    assert wait_for(lambda: any(ev["ifname"] == "wlan0@sat1" and ev["mac"] == STATION for ev in links))
    sat_link = next(ev for ev in links if ev["mac"] == STATION)
    assert sat_link["rssi"] == -48.0
    assert wait_for(lambda: core.ctx.component("api").board.metrics(STATION)["rssi"] == -48.0)
    radio = core.ctx.component("radio")
    assert radio.bands["wlan0@sat1"] == "5 GHz"
    assert core.ctx.component("satlink").radios[0xA1] == ["wlan0"]

    # the settings page renames the network: the satellite follows
    core.commands.call("set-wifi", ssid="Our home 2")
    assert wait_for(lambda: read_env(env).get("SSID") == "Our home 2")

    # a blacklisted device goes on the satellite's deny list, and comes off it
    deny = sat_dir / "state" / "hostapd.deny"
    mac = "02:00:00:00:99:01"
    core.commands.call("blacklist", mac=mac)
    assert wait_for(lambda: deny.exists() and mac in deny.read_text())
    core.commands.call("whitelist", mac=mac)
    assert wait_for(lambda: mac not in deny.read_text())
    assert agent.denied == set()


def test_bad_lines_are_dropped_and_the_session_lives_on(home):
    core, _start, links, sat_dir = home
    ctx = pki.client_context(str(sat_dir / "ca.pem"), str(sat_dir / "cert.pem"), str(sat_dir / "satellite.key"))
    port = core.config.satellites_agent_port
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5)) as tls:
        reader = agentwire.LineReader(tls)
        assert reader.read()["type"] == "wifi"
        assert reader.read() == {"type": "deny", "macs": []}
        tls.sendall(b"garbage\n" + agentwire.encode({"type": "radio", "radio": "../x"}) +
                    agentwire.encode({"type": "launch"}) +
                    agentwire.encode({"type": "radio", "radio": "wlan1", "dump": (DATA / "poll1.txt").read_text()}))
        assert wait_for(lambda: any(ev["ifname"] == "wlan1@sat1" for ev in links))
    assert core.counters.get("satlink.bad_messages") == 3


def test_only_the_paired_certificate_is_admitted(home, tmp_path):
    core, start_agent, links, sat_dir = home
    port = core.config.satellites_agent_port
    # a certificate from another household's CA fails at the handshake
    other = pki.HouseholdCA(tmp_path / "other").ensure()
    key, csr = key_and_request(tmp_path, "rogue")
    (tmp_path / "rogue.pem").write_text(other.sign_satellite(csr, 0xA1))
    ctx = pki.client_context(str(sat_dir / "ca.pem"), str(tmp_path / "rogue.pem"), str(key))
    with pytest.raises((ssl.SSLError, OSError)):
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5)) as tls:
            tls.sendall(agentwire.encode({"type": "ping"}))
            assert tls.recv(100) == b""
    assert wait_for(lambda: core.counters.get("satlink.refused") == 1)

    # the paired agent works until the satellite is denied on the board; then it is told
    # why, cut off, and stops (its unpaired command runs, with the reason)
    told = tmp_path / "told"
    command = f"sh -c 'echo \"$HOMEWORK_UNPAIRED\" >> {told}'"
    agent = start_agent(unpaired_command=command)
    # the router's side of the session, not only the agent's: denied before the router had
    # admitted it, the agent would be refused at admission (a third refusal) instead
    assert wait_for(lambda: core.ctx.component("satlink").connected(0xA1))
    core.commands.call("satellite-deny", dpid=DPID)
    assert wait_for(lambda: not core.ctx.component("satlink").connected(0xA1))
    assert wait_for(lambda: agent.unpaired == "denied" and told.exists() and told.read_text() == "denied\n")
    assert agent.stop.is_set()
    # (the denied agent may have tried once more before it stopped: that refusal counts too)
    refused = core.counters.get("satlink.refused")
    # forgotten, the same certificate comes back: refused at once, and told so
    core.commands.call("satellite-forget", dpid=DPID)
    again = start_agent(unpaired_command=command)
    assert wait_for(lambda: again.unpaired == "forgotten")
    assert wait_for(lambda: told.read_text() == "denied\nforgotten\n")
    # the agent is told (last word) before the refusal is counted: wait for the count too
    assert wait_for(lambda: core.counters.get("satlink.refused") == refused + 1)
    assert not core.ctx.component("satlink").connected(0xA1)


def test_a_satellite_denied_while_its_agent_is_admitted_is_told_and_cut_off(home, monkeypatch):
    """The household's decision lands between the check of the agent's certificate and the
    session's registration: the decision still finds the session and ends it."""
    core, start_agent, _links, _sat_dir = home
    satlink = core.ctx.component("satlink")
    admit = satlink.admit

    def admit_then_deny(cert):
        answer = admit(cert)
        decided = threading.Thread(target=core.commands.call, args=("satellite-deny",), kwargs={"dpid": DPID})
        decided.start()
        assert wait_for(lambda: core.pairing.standing(0xA1, None) == "denied")   # stored, being published
        decided.join(0.2)       # the decision's handler waits for the admission to finish, if it must
        return answer
    monkeypatch.setattr(satlink, "admit", admit_then_deny)
    agent = start_agent()
    assert wait_for(lambda: agent.unpaired == "denied")
    assert wait_for(lambda: not satlink.connected(0xA1))


def test_hostapd_saying_a_station_joined_makes_the_agent_report_that_radio_at_once(home, tmp_path):
    core, start_agent, links, _sat_dir = home
    ctrl = Path(tempfile.mkdtemp(prefix="hw-ap-", dir="/tmp"))     # unix socket paths: at most 108 bytes
    dump = tmp_path / "dump.txt"
    dump.write_text("")                                  # the radio has no station yet
    server = FakeHostapd(ctrl / "wlan0")
    try:
        reports = []
        core.bus.subscribe("radio_report", lambda topic, ev: reports.append(ev.ifname))
        agent = start_agent(interval=3600, station_dump_command=f"cat {dump}", hostapd_ctrl_dir=str(ctrl))
        # the agent's first report (read once it is connected) has reached the router
        assert wait_for(lambda: agent.connected.is_set() and server.monitors and "wlan0@sat1" in reports)
        assert server.requests[0] == b"ATTACH"           # stations' comings and goings, no probe flood
        shutil.copy(DATA / "poll1.txt", dump)            # the station associates...
        assert not any(ev["mac"] == STATION for ev in links)     # ...the next interval is an hour away
        server.send(f"<3>AP-STA-CONNECTED {STATION}")   # ...and hostapd says so
        assert wait_for(lambda: any(ev["mac"] == STATION for ev in links), timeout=60)
        assert core.ctx.component("radio").where[STATION] == "wlan0@sat1"
    finally:
        server.stop()
        shutil.rmtree(ctrl, ignore_errors=True)


def test_an_agent_with_a_long_interval_keeps_its_session_with_pings(home, monkeypatch):
    from homework.components.satlink import server
    from homework.satellite_agent import agent as agent_module
    idle = 3.0
    monkeypatch.setattr(server, "IDLE_TIMEOUT", idle)         # the router's patience, shortened
    monkeypatch.setattr(agent_module, "KEEPALIVE", 0.3)       # a tenth of it: a loaded machine's stalls fit
    core, start_agent, _links, _sat_dir = home
    satlink = core.ctx.component("satlink")
    pings = []
    handle = satlink.handle

    def heard(sat, message):
        if message["type"] == "ping":
            pings.append(time.monotonic())
        handle(sat, message)
    monkeypatch.setattr(satlink, "handle", heard)
    start_agent(interval=60)                              # no report for a minute
    assert wait_for(lambda: satlink.connected(0xA1))
    # pings heard over two of the router's timeouts, in the one session it admitted
    assert wait_for(lambda: len(pings) > 1 and pings[-1] - pings[0] > 2 * idle, timeout=60)
    assert satlink.connected(0xA1) and core.counters.get("satlink.sessions") == 1     # never dropped


def test_the_agent_takes_the_router_on_its_management_link_in_brackets():
    import argparse

    from homework.satellite_agent.__main__ import router_address
    assert router_address("[fe80::1%br0]:6655") == ("fe80::1%br0", 6655)
    assert router_address("[fe80::1%br0]") == ("fe80::1%br0", 6655)
    assert router_address("10.2.0.1:7000") == ("10.2.0.1", 7000) and router_address("router") == ("router", 6655)
    for bad in ("fe80::1", "[fe80::1", "[fe80::1]x", "[fe80::1]:0", ":6655", "10.2.0.1:http"):
        with pytest.raises(argparse.ArgumentTypeError):
            router_address(bad)
