"""The end-host agent without a network: what it reads from `ss` (hostagent/homework-agent),
and the router's side (components/qos/hostapps.py + the qos component): reports checked,
refused from unknown agents and from another computer, an application's priority applied
to the connections its computer reported, and the view the Priorities page reads."""
from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

from homework.commands import CommandError
from homework.components.qos import apply
from homework.components.qos.edge import device_lookup, wanted_placements
from homework.components.qos.hostapps import HostApps, parse_flows
from homework.conntrack import Translated
from test_api import MAC, MAC2, Api
from test_dhcp_server import join
from test_qos_api import MONDAY_0826, Tools, new_core, qos

AGENT = Path(__file__).resolve().parents[2] / "hostagent" / "homework-agent"


def load_agent():
    loader = importlib.machinery.SourceFileLoader("homework_agent", str(AGENT))
    spec = importlib.util.spec_from_loader("homework_agent", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


SS = """udp   UNCONN 0      0             10.2.0.6:40000      0.0.0.0:*    users:(("zoom",pid=12,fd=3))
tcp   ESTAB  0      0             10.2.0.6:5000   203.0.113.10:80  users:(("curl",pid=5,fd=3))
tcp   LISTEN 0      4096          0.0.0.0:22      0.0.0.0:*    users:(("sshd",pid=1,fd=3))
tcp   ESTAB  0      0             127.0.0.1:5000   127.0.0.1:80  users:(("local",pid=5,fd=3))
udp   UNCONN 0      0             0.0.0.0:5353      0.0.0.0:*    users:(("avahi",pid=7,fd=3))
tcp   ESTAB  0      0    [2001:db8:100:1::5]:5001 [2001:db8:cafe::10]:443 users:(("firefox",pid=9,fd=30))
"""


def test_the_agent_reads_each_connections_owner_from_ss():
    flows = load_agent().connections(SS, ["10.2.0.6"])
    assert flows == [
        {"proto": "udp", "src": "10.2.0.6", "sport": 40000, "dst": "*", "dport": 0, "app": "zoom"},
        {"proto": "tcp", "src": "10.2.0.6", "sport": 5000, "dst": "203.0.113.10", "dport": 80, "app": "curl"},
        {"proto": "udp", "src": "10.2.0.6", "sport": 5353, "dst": "*", "dport": 0, "app": "avahi"},
        {"proto": "tcp", "src": "2001:db8:100:1::5", "sport": 5001, "dst": "2001:db8:cafe::10", "dport": 443,
         "app": "firefox"}]
    assert parse_flows(flows)[0] == (("udp", "10.2.0.6", 40000, "*", 0), "zoom")    # the router takes them


@pytest.mark.parametrize("bad", [{"proto": "icmp"}, {"src": "x"}, {"sport": 0}, {"dport": 0},
                                 {"dst": "*", "dport": 80}, {"app": "a/b"}, {"app": ""}])
def test_a_malformed_report_is_refused(bad):
    flow = {"proto": "udp", "src": "10.2.0.6", "sport": 1, "dst": "203.0.113.10", "dport": 2, "app": "zoom", **bad}
    with pytest.raises(CommandError):
        parse_flows([flow])


@pytest.fixture
def core(tmp_path, clock, monkeypatch):
    monkeypatch.setattr(apply, "run_tool", Tools())
    clock.now = MONDAY_0826
    c = new_core(tmp_path, clock)
    join(c, MAC, 1)
    join(c, MAC2, 2)
    c.commands.call("permit", mac=MAC)
    c.commands.call("permit", mac=MAC2)
    return c


def addr(core, mac):
    return core.ctx.leases.get(mac).ip


def test_only_a_known_agent_speaks_and_only_for_its_own_computer(core):
    q = qos(core)
    secret = core.commands.call("qos-agent-add", mac=MAC)["token"]
    mine = addr(core, MAC)
    flow = {"proto": "udp", "src": mine, "sport": 40000, "dst": "*", "dport": 0, "app": "zoom"}
    for token, caller in (("hwa_wrong", MAC), (secret, MAC2), (secret, None)):
        with pytest.raises(CommandError) as err:
            q.agent_report(token=token, caller_mac=caller, flows=[flow])
        assert err.value.status == 403
    with pytest.raises(CommandError):            # another computer's connection in its report
        q.agent_report(token=secret, caller_mac=MAC, flows=[{**flow, "src": addr(core, MAC2)}])
    tuples = []
    core.ctx.bus.subscribe("app_tuple", lambda topic, ev: tuples.append(ev) or [])
    assert q.agent_report(token=secret, caller_mac=MAC, flows=[flow])["connections"] == 1
    assert [(t.mac, t.app, t.sport) for t in tuples] == [(MAC, "zoom", 40000)]
    view = core.commands.call("qos-host-apps", mac=MAC)
    assert view["reporting"] and view["apps"] == [{"name": "zoom", "class": "default", "last_seen": view["apps"][0]
                                                   ["last_seen"], "connections": 1}]
    # adding the agent again makes a new secret; the old one stops working
    core.commands.call("qos-agent-add", mac=MAC)
    with pytest.raises(CommandError):
        q.agent_report(token=secret, caller_mac=MAC, flows=[flow])


def test_an_applications_priority_applies_to_the_connections_its_computer_reported(core, clock):
    q = qos(core)
    secret = core.commands.call("qos-agent-add", mac=MAC)["token"]
    mine = addr(core, MAC)
    q.agent_report(token=secret, caller_mac=MAC, flows=[
        {"proto": "udp", "src": mine, "sport": 40000, "dst": "*", "dport": 0, "app": "zoom"},
        {"proto": "tcp", "src": mine, "sport": 40001, "dst": "203.0.113.10", "dport": 443, "app": "steam"}])
    core.commands.call("qos-host-app", mac=MAC, name="zoom", cls="high")
    entries = [Translated("udp", mine, 40000, "203.0.113.10", 5004, "203.0.113.10", 5004, "198.51.100.2", 61000, 0),
               Translated("tcp", mine, 40001, "203.0.113.10", 443, "203.0.113.10", 443, "198.51.100.2", 61001, 0)]
    now = clock.now
    wanted = wanted_placements(entries, device_lookup(q.members()), q.device_classes(), {},
                               lambda mac, flow: q._host_class(mac, flow, now))
    assert wanted == {("udp", "198.51.100.2", 61000, "203.0.113.10", 5004): "high"}
    # a report older than 30 s no longer names the connection
    assert q._host_class(MAC, ("udp", mine, 40000, "203.0.113.10", 5004), now + 31) == "default"
    # the priority is kept (state.db), the reports are not
    assert HostApps(core.ctx.state).classes == {(MAC, "zoom"): "high"}


def test_the_routes(core):
    api = Api(core)
    admin, reader = api.token("admin"), api.token("read-only")
    r = api.call("POST", f"qos/agents/{MAC}", token=admin)
    assert r.status_int == 200 and r.json["token"].startswith("hwa_")
    assert api.call("POST", f"qos/agents/{MAC}", token=reader).status_int == 403
    r = api.call("POST", f"qos/devices/{MAC}/apps", token=admin, body={"name": "zoom", "class": "high"})
    assert r.status_int == 200 and r.json["apps"][0]["class"] == "high"
    assert api.call("POST", f"qos/devices/{MAC}/apps", token=admin, body={"name": "zoom", "class": "top"}
                    ).status_int == 400
    assert api.call("GET", f"qos/devices/{MAC}/apps", token=reader).json["agent"] is True
