"""A satellite switch in the emulated home (issue 15): another Open vSwitch bridge
(userspace datapath, fail_mode=secure, its own datapath id) cabled to a router port by a
veth pair and connected to the router's controller. Devices plug into it with
home.add_device(switch=sat).

For now it is a bridge of the router's own ovs-vswitchd, so its OpenFlow connection is
plain tcp to 127.0.0.1; a satellite in a namespace of its own, with its own OVS and TLS,
comes with pairing."""
from __future__ import annotations

import subprocess
import time

from . import ROUTER_NET, Home, ns_cmd, sh


class Satellite:
    def __init__(self, home: Home, index: int, dpid: int):
        self.home, self.index, self.dpid = home, index, dpid
        self.bridge = f"sat{index}"
        self.uplink = f"sat{index}up"           # the cable's satellite end, port 250 of the satellite
        self.router_port = f"sat{index}cable"   # its router end
        self._port = 0

    @property
    def spec(self) -> str:
        """Its line in the controller's [satellites] switches."""
        return self.spec_for(self.index, self.dpid)

    @staticmethod
    def spec_for(index: int, dpid: int) -> str:
        """The config line of the satellite this class makes with that index and dpid (the
        controller's config is written before the satellites exist)."""
        return f"{dpid:016x}:sat{index}up:sat{index}cable"

    def next_port(self) -> int:
        self._port += 1
        return self._port

    def start(self) -> "Satellite":
        h = self.home
        sh(["ip", "-n", h.router_ns, "link", "add", self.uplink, "type", "veth", "peer", "name", self.router_port])
        for end in (self.uplink, self.router_port):
            sh(ns_cmd(h.router_ns, ["ethtool", "-K", end, "tx", "off"]))
            sh(ns_cmd(h.router_ns, ["bash", str(ROUTER_NET), "guard", end]))
            sh(["ip", "-n", h.router_ns, "link", "set", end, "up"])
        h.vsctl("--may-exist", "add-br", self.bridge, "--", "set", "bridge", self.bridge, "datapath_type=netdev",
                "fail_mode=secure", "protocols=OpenFlow13", f"other-config:datapath-id={self.dpid:016x}",
                "--", "add-port", self.bridge, self.uplink, "--", "set", "interface", self.uplink,
                "ofport_request=250", "--", "set-controller", self.bridge, "tcp:127.0.0.1:6653")
        return self

    def flows(self) -> str:
        return self.home.router(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", self.bridge]).stdout

    def programmed(self) -> bool:
        """The controller has given it its table (flows with the satellite cookie)."""
        return "cookie=0x9" in self.flows()

    def connected(self) -> bool:
        """Its OpenFlow connection to the controller is up (OVS's own view)."""
        uuid = self.home.vsctl("get", "bridge", self.bridge, "controller").strip("[] \n")
        return bool(uuid) and self.home.vsctl("get", "controller", uuid, "is_connected").strip() == "true"

    def set_controller(self, target: str) -> None:
        """Point the satellite at another controller address (one nobody serves cuts it off)."""
        self.home.vsctl("set-controller", self.bridge, target)

    def take(self, dev) -> float:
        """Move a device's cable from its switch to a free port of this satellite: unplugged
        (its link goes down, as the device sees it), then plugged in here. A real switch's
        ports exist before a cable arrives, so the port is added without link and the cable
        "plugged" (link up) once the router has its patch port. Returns time.time() of the
        plug-in."""
        h = self.home
        sh(["ip", "-n", h.router_ns, "link", "set", dev.port_name, "down"])
        dev.ofport = self.next_port()
        h.vsctl("del-port", dev.bridge, dev.port_name, "--", "add-port", self.bridge, dev.port_name,
                "--", "set", "interface", dev.port_name, f"ofport_request={dev.ofport}")
        dev.bridge = self.bridge
        patch = f"hws{self.index}p{dev.ofport}"
        deadline = time.monotonic() + 10
        while patch not in h.vsctl("list-ports", "br0").split():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the router never got {patch} for port {dev.ofport} of {self.bridge}")
            time.sleep(0.05)
        plugged = time.time()
        sh(["ip", "-n", h.router_ns, "link", "set", dev.port_name, "up"])
        return plugged

    def stop(self) -> None:
        h = self.home
        h.vsctl("--if-exists", "del-br", self.bridge)
        h.vsctl("--if-exists", "del-br", f"hwsat{self.index}")
        subprocess.run(["ip", "-n", h.router_ns, "link", "del", self.uplink], capture_output=True)
