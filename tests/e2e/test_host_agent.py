"""The end-host agent end to end: the package `make agent-deb` builds, unpacked and run on
an emulated computer (a device namespace) of a real router (the controller with qos, the
API behind lighttpd, hwdb) whose WAN line runs through a real ISP edge. Its reports reach
hwdb (AppTuples) and the router's view of that computer's applications; a priority set for
one application moves that application's running connection to the household's high queue
at the edge (the time it takes is printed: make bench's isp section reports it); unknown
agents, and an agent speaking from another computer, are refused."""
from __future__ import annotations

import hashlib
import os
import ssl
import subprocess
import time

import pytest

from homelab import REPO, ROUTER_WAN_ADDR, WEB_ADDR
from homelab.isp_edge import home_edge
from homelab.routing import gateway, hwdb_query, permitted_device, wait_until
from homelab.web import Web, api, web_home

PORT = 5004


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    pkg = tmp_path_factory.mktemp("deb")
    deb = subprocess.run(["bash", str(REPO / "hostagent" / "build-deb.sh"), str(pkg)], check=True,
                         capture_output=True, text=True).stdout.strip()
    root = pkg / "root"
    subprocess.run(["dpkg-deb", "-x", deb, str(root)], check=True)
    edge, isp = home_edge()
    with web_home(config={"controller": {"components": ["dhcp", "routing", "hwdb_sync"]},
                          "qos": {"enabled": True, "down_kbit": 19000, "up_kbit": 4750}, "isp": isp},
                  hwdb=True) as home:
        try:
            home.web = Web(home).start()
            home.router(["sysctl", "-qw", "net.netfilter.nf_conntrack_udp_timeout=3",
                         "net.netfilter.nf_conntrack_udp_timeout_stream=3"])
            edge.splice(home)
            home.edge = edge
            home.agent_bin = root / "usr" / "bin" / "homework-agent"
            yield home
        finally:
            edge.close()


def fingerprint(web) -> str:
    pem = open(web.ca).read()
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest()


def start_agent(home, dev, secret: str) -> subprocess.Popen:
    conf = home.dir / f"agent-{dev.name}.conf"
    conf.write_text(f"router = https://{gateway(dev)}/\nsecret = {secret}\nfingerprint = {fingerprint(home.web)}\n"
                    "interval = 0.5\n")
    return dev.popen(["python3", str(home.agent_bin), "--config", str(conf)], stderr=subprocess.PIPE)


def app_sender(home, dev, app: str, sport: int) -> subprocess.Popen:
    """A program called `app` (a python3 under that name) sending a call's media."""
    exe = home.dir / app
    if not exe.exists():
        os.symlink("/usr/bin/python3", exe)
    code = (f"import socket,time;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(('0.0.0.0',{sport}))\n"
            f"while True:\n s.sendto(b'x'*160,({WEB_ADDR!r},{PORT}));time.sleep(0.02)")
    return dev.popen([str(exe), "-c", code])


def placed_high(home, sport_any: bool = True) -> list[str]:
    return [ln for ln in home.edge.dump_flows().splitlines()
            if "priority=100" in ln and f"nw_src={ROUTER_WAN_ADDR}" in ln and f"tp_dst={PORT}" in ln
            and "set_queue:5" in ln]


def test_an_applications_priority_follows_its_connection_to_the_edges_high_queue(lab):
    dev = permitted_device(lab)
    secret = api(lab.web, "POST", f"qos/agents/{dev.mac}").json()["token"]
    agent = start_agent(lab, dev, secret)
    zoom = app_sender(lab, dev, "zoom", 40300)
    other = app_sender(lab, dev, "steam", 40301)
    try:
        try:
            view = wait_until(lambda: (v := api(lab.web, "GET", f"qos/devices/{dev.mac}/apps").json()) and
                              {a["name"] for a in v["apps"] if a["connections"]} >= {"zoom", "steam"} and v, 30,
                              "the agent's report names zoom and steam")
        except AssertionError as exc:
            agent.terminate()
            raise AssertionError(f"{exc}\nagent: {agent.communicate(timeout=10)[1]}\n"
                                 f"{api(lab.web, 'GET', f'qos/devices/{dev.mac}/apps').json()}") from None
        assert view["reporting"] is True
        rows = wait_until(lambda: [r for r in hwdb_query(lab, "select * from AppTuples")
                                   if r.get("app") == "zoom" and r.get("sport") == 40300], 30,
                          "the report's zoom connection in hwdb's AppTuples")
        assert rows[0]["mac"] == dev.mac and rows[0]["proto"] == "udp"
        assert placed_high(lab) == []          # nothing is prioritised yet
        started = time.monotonic()
        r = api(lab.web, "POST", f"qos/devices/{dev.mac}/apps", json={"name": "zoom", "class": "high"})
        assert r.status_code == 200, r.text
        lines = wait_until(lambda: placed_high(lab), 30, "zoom's running connection in the edge's high queue")
        took = time.monotonic() - started
        print(f"zoom's running connection placed in the edge's high queue {took:.2f} s after the priority was set")
        (REPO / "out").mkdir(exist_ok=True)
        (REPO / "out" / "agent-placement-seconds").write_text(f"{took:.3f}\n")
        # zoom's connection (NAT kept its port here), not steam's
        assert len(lines) == 1 and "tp_src=40300" in lines[0], lines
        assert "tp_src=40301" not in lab.edge.dump_flows() and "tp_dst=40301" not in lab.edge.dump_flows()
    finally:
        for p in (zoom, other, agent):
            p.terminate()
            p.wait(10)
        api(lab.web, "POST", f"qos/devices/{dev.mac}/apps", json={"name": "zoom", "class": "default"})


def test_unknown_agents_and_agents_of_another_computer_are_refused(lab):
    laptop, phone = permitted_device(lab), permitted_device(lab)
    secret = api(lab.web, "POST", f"qos/agents/{laptop.mac}").json()["token"]
    flow = {"proto": "udp", "src": laptop.ipv4()[0], "sport": 40400, "dst": WEB_ADDR, "dport": PORT, "app": "zoom"}
    for who, key, want in ((laptop, "hwa_not-a-secret", "unknown agent"),
                           (phone, secret, "only for its own computer")):
        out = who.run(["curl", "-sk", "-o", "-", "-w", "\n%{http_code}", "-H", "Content-Type: application/json",
                       "-H", f"X-Homework-Agent: {key}", "-d", '{"flows": [' + __import__("json").dumps(flow) + "]}",
                       f"https://{gateway(who)}/ws.v1/agent/report"], check=False, timeout=20).stdout
        body, _, code = out.rpartition("\n")
        assert code == "403" and want in body, out
    # the laptop's own agent is heard, about its own connections only
    out = laptop.run(["curl", "-sk", "-o", "-", "-w", "\n%{http_code}", "-H", "Content-Type: application/json",
                      "-H", f"X-Homework-Agent: {secret}", "-d",
                      '{"flows": [' + __import__("json").dumps({**flow, "src": phone.ipv4()[0]}) + "]}",
                      f"https://{gateway(laptop)}/ws.v1/agent/report"], check=False, timeout=20).stdout
    assert out.endswith("\n400") and "own connections" in out, out
