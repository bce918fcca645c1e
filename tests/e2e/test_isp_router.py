"""The router's side of the ISP edge, end to end: a real router (OVS, the controller with
[qos] and [isp] edge, NAT, conntrack) whose WAN line runs through a real ispedge bridge.
A device set to High opens a connection; the router places it at the edge under the
addresses the ISP sees (after NAT), the edge's high queue carries it, and it goes when the
class changes or the connection ends; a restarted edge gets it back from the router."""
from __future__ import annotations

import re
import subprocess
import time

import pytest

from homelab import BARE, ROUTER_WAN_ADDR, WEB_ADDR, Home
from homelab.isp_edge import home_edge
from homelab.routing import permitted_device, wait_until

PORT = 5004


@pytest.fixture(scope="module")
def lab():
    edge, isp = home_edge()
    home = Home(config={"controller": {"components": list(BARE)},
                        "qos": {"enabled": True, "down_kbit": 19000, "up_kbit": 4750}, "isp": isp})
    try:
        home.start()
        # the connections end quickly after their last packet (a UDP call's 30 s otherwise)
        home.router(["sysctl", "-qw", "net.netfilter.nf_conntrack_udp_timeout=3",
                     "net.netfilter.nf_conntrack_udp_timeout_stream=3"])
        edge.splice(home)
        home.edge = edge
        yield home
    finally:
        edge.close()
        home.close()


@pytest.fixture
def dev(lab):
    device = permitted_device(lab)
    yield device
    lab.control("qos-device", mac=device.mac, cls="default")
    lab.remove_devices()


def sender(dev, sport: int, seconds: float = 120, rate_pps: int = 50) -> subprocess.Popen:
    """A paced UDP flow from the device (a call's media) to the internet's server."""
    code = (f"import socket,time;s=socket.socket();s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);"
            f"s.bind(('0.0.0.0',{sport}));end=time.time()+{seconds}\n"
            f"while time.time()<end:\n s.sendto(b'x'*160,({WEB_ADDR!r},{PORT}));time.sleep({1 / rate_pps})")
    return dev.popen(["python3", "-c", code])


def placed(home, sport_seen: bool = True) -> list[str]:
    """The edge's flows placing the home's connections to the server's port (both directions)."""
    return [ln for ln in home.edge.dump_flows().splitlines()
            if "priority=100" in ln and f"nw_src={ROUTER_WAN_ADDR}" in ln and f"tp_dst={PORT}" in ln]


def stop(p: subprocess.Popen) -> None:
    p.terminate()
    p.wait(10)


def test_a_high_devices_connection_is_placed_at_the_edge_after_nat_and_removed_when_it_ends(lab, dev):
    lab.control("qos-device", mac=dev.mac, cls="high")
    flow = sender(dev, 40000)
    try:
        try:
            lines = wait_until(lambda: placed(lab), 30, "the router placed the device's connection at the edge")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nstatus: {lab.control('qos-edge')}\nflows: {lab.edge.dump_flows()}\n"
                                 f"conntrack: {lab.router(['conntrack', '-L', '-p', 'udp'], check=False).stdout}\n"
                                 f"{lab.controller_log()[-3000:]}") from None
        # the ISP sees the router's public address and the port NAT chose, in the home's high queue
        assert re.search(rf"udp,nw_src={ROUTER_WAN_ADDR},nw_dst={WEB_ADDR},tp_src=\d+,tp_dst={PORT} "
                         r"actions=set_queue:5", lines[0]), lines
        status = wait_until(lambda: (s := lab.control("qos-edge")) and s.get("honoured") and s, 30,
                            "the edge counted the placed connection's packets")
        assert status["reachable"] and status["placed"] == 1 and status["refused"] == []
        assert wait_until(lambda: lab.control("qos-edge")["queues"].get("high", {}).get("packets", 0) > 0, 30,
                          "the edge's high queue carried it")
        # a class change takes the placement away; back to High puts it back
        lab.control("qos-device", mac=dev.mac, cls="default")
        wait_until(lambda: not placed(lab), 30, "the placement removed when the device went back to Normal")
        lab.control("qos-device", mac=dev.mac, cls="medium")
        wait_until(lambda: any("set_queue:6" in ln for ln in placed(lab)), 30, "placed in the medium queue")
    finally:
        stop(flow)
    # the connection ends (conntrack forgets it): so does its placement
    wait_until(lambda: not placed(lab), 60, "the placement removed when the connection ended")


def test_a_normal_devices_connection_is_not_placed(lab, dev):
    flow = sender(dev, 40100)
    try:
        wait_until(lambda: lab.router(["conntrack", "-L", "-p", "udp", "--orig-port-src", "40100"],
                                      check=False).stdout.strip(), 20, "the connection is tracked")
        status = lab.control("qos-edge")
        before = status["at"]
        wait_until(lambda: lab.control("qos-edge")["at"] > before + 1, 30, "two more rounds with the edge")
        assert placed(lab) == [] and lab.control("qos-edge")["wanted"] == 0
    finally:
        stop(flow)


def test_a_restarted_edge_gets_the_placements_back_from_the_router(lab, dev):
    lab.control("qos-device", mac=dev.mac, cls="high")
    flow = sender(dev, 40200)
    try:
        wait_until(lambda: placed(lab), 30, "placed before the restart")
        epoch = lab.control("qos-edge")["epoch"]
        lab.edge.restart_edge()
        started = time.monotonic()
        wait_until(lambda: placed(lab), 60, "the router placed its connection again on the restarted edge")
        print(f"re-placed {time.monotonic() - started:.2f} s after the edge came back")
        assert wait_until(lambda: lab.control("qos-edge")["epoch"] not in ("", epoch), 30, "the new epoch seen")
    finally:
        stop(flow)
