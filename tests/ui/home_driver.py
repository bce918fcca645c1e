"""Drives an emulated home for the browser tests (and the UI benchmark): node starts this,
sends one JSON request per line on stdin and reads one JSON answer per line on stdout.

    {"op": "add_device", "mac": "00:09:2d:00:00:01"}   -> {"ok": true, "name": "dev1", "mac": ..}
                                       ("satellite": N puts it on satellite N, see add_satellite)
    {"op": "add_satellite", "index": 1, "dpid": 161}  -> {"ok": true, "bridge": "sat1"}
    {"op": "ask_satellite", "index": 2, "dpid": 162}  -> {"ok": true, "dpid": .., "code": ..}
    {"op": "poll_satellite", "index": 2}   -> {"ok": true, "exit": 3, "state": "pending"|"permitted"|..}
    {"op": "satellite_station", "index": 2, "name": "tablet", "rssi": -57}  -> {"ok": true, "name": .., "mac": ..}
    {"op": "start_dhcp", "dev": "dev1", "client": "udhcpc"} -> {"ok": true, "t": epoch of the DISCOVER}
    {"op": "get", "dev": "dev1", "url": ..}   -> {"ok": true, "code": "200", "body": ..} (curl from the device)
    {"op": "wait_fetch", "dev": "dev1", "expect": true, "timeout": 20}
                                       -> {"ok": true, "elapsed": s, "t": epoch of the first success}
    {"op": "traffic", "dev": "dev1", "seconds": 8}    (ICMP to its gateway, ~1 MB/s, in background)
    {"op": "download", "dev": "dev1", "bytes": 3000000}  (that many bytes from the emulated internet)
    {"op": "link_bytes", "dev": "dev1"}  -> {"ok": true, "bytes": sent + received on its interface}
    {"op": "linksim", "dev": "dev1", "rssi": -92, "retry_rate": 0.3}
    {"op": "cli", "args": ["--json", "devices"]}     -> {"ok": true, "stdout": ..}
    {"op": "start_dot_upstream"}          -> {"ok": true, "server": "ADDRESS#NAME"} (dns_lab homes)
    {"op": "udp_flood", "dev": "dev1", "count": 3000, "size": 1}  (one datagram to each of COUNT ports)
    {"op": "seed_devices", "pending": 900, "permitted": 50, "denied": 50}
                                       -> {"ok": true, "pending": [macs, oldest first], ..}
    {"op": "start_receiver", "port": 8097}  -> {"ok": true, "url": webhook URL in the emulated internet}
    {"op": "receiver_secret", "secret": ..}   (the receiver checks signatures with it)
    {"op": "received"}                        -> {"ok": true, "requests": [{status, signature_ok, body}]}
    {"op": "contract", "answers": [..]}       -> {"ok": true, "problems": [API answers outside openapi.json]}
    {"op": "serve", "dev": "dev1", "port": 8080}         (a server in the device that answers its name)
    {"op": "internet_hello", "port": 9000, "address"?: ..}  -> {"answer": the name of who answered, or ""}
    {"op": "natpmp", "dev": "dev1", "public": 9300, "private": 8080}  -> {"output": natpmpc's}
    {"op": "remote_connect", "mac": ..}   (a WireGuard client in the emulated internet, from its file)
    {"op": "page", "dev": "dev1", "url": .., "family": 4|6}  -> {"code": .., "body": ..} (what its browser shows)
    {"op": "iperf_servers"} / {"op": "rates", "devs": [..], "family": 4}  -> {"kbit": {dev: ..}} (downloads at once)
    {"op": "mqtt_subscribe"} / {"op": "mqtt_received"}  -> {"messages": [{topic, payload}]} (the router's broker)
    {"op": "wait_ipv6", "dev": "dev1"}  -> {"ipv6": [..], "router6": its IPv6 router address}
    {"op": "quit"}

Config overrides for the home (TOML sections as JSON) may come in $HOMEWORK_UI_CONFIG.
The first line written is {"ready": true, "url": .., "view_ns": .., "laptop_mac": .., "password": ..,
"run_id": ..}: the board's URL from the household's laptop, a LAN device that set the router up
through its waiting page (household_laptop), in whose namespace lib.mjs runs Chromium. The
management link (mgmt_url) only observes. The home is torn down on quit, on end of input and
on SIGTERM.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import traceback

from homelab import REPO, WEB6_ADDR, WEB_ADDR
from homelab.web import Web, web_home
from homework.state import StateStore


LAPTOP = "household-laptop"     # the browser's device (its DHCP hostname: its label on the board)


class Driver:
    def __init__(self):
        config = json.loads(os.environ.get("HOMEWORK_UI_CONFIG") or "{}")
        # {"dns_lab": true}: hwdb too, as tests/e2e/test_local_names.py runs it (querylog.test.mjs).
        self.dns_lab = config.pop("dns_lab", False)
        # {"laptop_set_up": false}: the laptop stays pending on a router nobody has set up
        # (the test sets it up in the browser: first_hour.test.mjs).
        self.laptop_set_up = config.pop("laptop_set_up", True)
        kw = {"public_wan": config.pop("public_wan", False)}      # UPnP mappings (homelab.PUBLIC_WAN_ADDR)
        # {"isp_link": {"down_kbit": .., "up_kbit": .., "buffer_ms": ..}}: the slow line of `make run`
        if config.get("isp_link"):
            kw["isp_link"] = config.pop("isp_link")
        # {"isp_edge": true}: the WAN line runs through an ISP edge (homelab/isp_edge.py)
        self.edge = None
        if config.pop("isp_edge", False):
            from homelab.isp_edge import home_edge
            self.edge, config["isp"] = home_edge()
        components = config.get("controller", {}).get("components")
        if components or self.dns_lab:
            # The browser's device gets in as a household's does: through the waiting page,
            # which needs the DNS path (homework-dnsd, dnsmasq, the dns component and its
            # captive redirect and server), as on the image. A home naming no components
            # runs all of it anyway (homelab/household.py).
            from homelab import new_run_id
            from homelab.dns import dns_config
            kw["run_id"] = new_run_id()
            components = list(components or ["dhcp", "routing"])
            components += [] if "dns" in components else ["dns"]
            for section, table in dns_config(kw["run_id"], components).items():
                config.setdefault(section, {}).update(table)
            if self.dns_lab:
                kw["hwdb"] = True
        self.home = web_home(config=config, log=lambda msg: print(msg, file=sys.stderr, flush=True), **kw)
        self.devices = {}
        self.satellites = {}
        self.traffic: list[subprocess.Popen] = []

    def start(self) -> dict:
        self.home.start()
        if self.edge is not None:
            self.edge.splice(self.home)
        # a home that names no components runs the image's, the board and DNS included
        self.web = self.home.web or Web(self.home).start()
        if self.home.dns is not None:
            self.dns_lab = self.home.dns
        else:
            from homelab.dns import DnsLab
            self.dns_lab = DnsLab(self.home).start()
        laptop = self.household_laptop()
        # The management link (mgmt_url) is the harness's, to observe; the browser is on the laptop.
        return {"ready": True, "url": f"https://{laptop.default_gateway()}/", "view_ns": laptop.ns,
                "router_ns": self.home.router_ns,     # the router's own screen (its kiosk) runs there
                "laptop_mac": laptop.mac, "mgmt_url": self.web.url,
                "password": self.home.admin_password,
                "run_id": self.home.run_id, "web": f"http://{WEB_ADDR}/",
                "password_file": str(getattr(self.home, "admin_password_file", "")),   # factory reset
                "state_dir": str(self.home.state_dir)}   # the Wi-Fi settings' wifi.env

    def household_laptop(self):
        """The household's laptop, where the tests' Chromium runs: a device on a LAN port of
        the router with a real DHCP client, let in through the first hour's door (its waiting
        page's set-up, over HTTP through the captive server, as setup.js does), with the
        household's password. IPv4 only, and nothing renumbers it while a test runs:
        Chromium aborts every request in flight (ERR_NETWORK_CHANGED) when an address of
        its namespace comes or goes (udhcpc's renewals leave an unchanged address alone)."""
        dev = self.home.add_device(name=LAPTOP)
        dev.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1",
                 f"net.ipv6.conf.{dev.ifname}.disable_ipv6=1"])
        self.devices[dev.name] = dev
        dev.start_udhcpc()
        dev.wait_for_ipv4(30)
        gateway = dev.wait_for_gateway(10)
        if not self.laptop_set_up:
            return dev
        body = json.dumps({"password": self.home.admin_password})
        deadline = time.monotonic() + 60
        while True:     # the captive redirect follows the lease by a batch of nftables
            r = dev.run(["curl", "-s", "-m", "10", "-o", "-", "-w", "\n%{http_code}", "-H",
                         "Content-Type: application/json", "-d", body, f"http://{gateway}/ws.v1/setup"],
                        check=False, timeout=20)
            text, _, code = r.stdout.rpartition("\n")
            if code == "200":
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the laptop could not set the router up: HTTP {code} {text[:300]}")
            time.sleep(0.2)
        while dev.run(["curl", "-sk", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}",
                       f"https://{gateway}/ws.v1/session"], check=False, timeout=15).stdout != "401":
            if time.monotonic() > deadline:
                raise RuntimeError("the set-up laptop does not reach the Guest Board")
            time.sleep(0.2)
        return dev

    def dev(self, req):
        return self.devices[req["dev"]]

    def op_add_satellite(self, req):
        """{"op": "add_satellite", "index": 1, "dpid": 161}: a satellite switch (its line must
        be in the config: Satellite.spec_for(index, dpid)); devices join it with
        add_device's "satellite": index."""
        from homelab.satellite import Satellite
        sat = Satellite(self.home, int(req["index"]), int(req["dpid"])).start()
        self.satellites[sat.index] = sat
        deadline = time.monotonic() + 20
        while not sat.programmed():
            if time.monotonic() > deadline:
                raise TimeoutError(f"satellite {sat.bridge} got no flows from the controller")
            time.sleep(0.1)
        return {"bridge": sat.bridge}

    def op_ask_satellite(self, req):
        """{"op": "ask_satellite", "index": 2, "dpid": 162}: a satellite box of its own (its
        namespace and OVS) that asks the router to pair through the API -> {dpid, code}."""
        from homelab.satellite import Satellite
        sat = Satellite(self.home, int(req["index"]), int(req["dpid"]), own_ovs=True).start(controller=None)
        self.satellites[sat.index] = sat
        asked = sat.ask()
        return {"dpid": asked["dpid"], "code": asked["code"]}

    def op_poll_satellite(self, req):
        """{"op": "poll_satellite", "index": 2} -> {"state": ..}: the satellite asks how its
        request stands (and, once permitted, installs its certificate and connects)."""
        code, body = self.satellites[int(req["index"])].poll()
        return {"exit": code, "state": body.get("state")}

    def op_satellite_station(self, req):
        """{"op": "satellite_station", "index": 2, "name": "tablet", "rssi": -57}: satellite
        `index` (paired, a box of its own) gets a radio (wlan0, emulated air), its agent, and
        a station on that radio whose signal the radio reports -> {name, mac}."""
        from homelab.satellite import RADIO_PORT, Air
        sat = self.satellites[int(req["index"])]
        if not hasattr(self, "air"):
            self.air = Air(self.home).start()
        self.air.radio(sat)
        sat.start_agent(radios=(RADIO_PORT,))
        dev = self.air.station(req.get("name"), sat)
        self.devices[dev.name] = dev
        sat.air_report(RADIO_PORT, {dev.mac: float(req.get("rssi", -57))})
        return {"name": dev.name, "mac": dev.mac}

    def op_agent_log(self, req):
        """{"op": "agent_log", "index": 2} -> {"log": the tail of satellite 2's agent log}."""
        return {"log": self.satellites[int(req["index"])].agent_log()[-4000:]}

    def op_add_device(self, req):
        switch = self.satellites[int(req["satellite"])] if req.get("satellite") else None
        dev = self.home.add_device(name=req.get("name"), mac=req.get("mac"), switch=switch)
        self.devices[dev.name] = dev
        return {"name": dev.name, "mac": dev.mac, "ns": dev.ns}

    def op_start_dhcp(self, req):
        dev = self.dev(req)
        t = time.time()   # the client sends its DISCOVER as soon as it starts
        dev.start_dhcp(req.get("client", "udhcpc"))
        return {"t": t}

    def op_leave(self, req):
        """The device leaves: its udhcpc (-R) gives its lease back as it stops."""
        self.dev(req).leave(self.home)
        return {}

    def op_imitate(self, req):
        """A device's DHCP imitated with scapy (tests/homelab/imitate.py): {"dev", "kind":
        "dhcp4"|"dhcp6", "spec": the options, "count"}."""
        dev = self.dev(req)
        script = str(REPO / "tests" / "homelab" / "imitate.py")
        out = dev.run([sys.executable, script, dev.ifname, req.get("kind", "dhcp4"), json.dumps(req["spec"]),
                       str(int(req.get("count", 2)))], timeout=60)
        return {"stdout": out.stdout}

    def op_wait_ipv4(self, req):
        addr, prefix = self.dev(req).wait_for_ipv4(req.get("timeout", 20))
        return {"ip": addr, "prefix": prefix, "gateway": self.dev(req).wait_for_gateway(5)}

    def op_fetch(self, req):
        dev = self.dev(req)
        url = req.get("url", f"http://{WEB_ADDR}/")
        max_time = req.get("max_time", 2)
        r = dev.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                     str(max_time), url], check=False, timeout=max_time + 10)
        return {"code": r.stdout.strip(), "success": r.returncode == 0 and r.stdout.strip() == "200"}

    def op_get(self, req):
        """{"op": "get", "dev": "dev1", "url": ..} -> {"code": "200", "body": ..}: one GET from the device."""
        r = self.dev(req).run(["curl", "-sk", "-m", "10", "-o", "-", "-w", "\n%{http_code}", req["url"]],
                              check=False, timeout=20)
        body, _, code = r.stdout.rpartition("\n")
        return {"code": code, "body": body}

    def op_serve(self, req):
        from homelab.reach import serve_hello
        dev = self.dev(req)
        serve_hello(dev.popen, dev.name, int(req.get("port", 8080)))
        return {}

    def op_internet_hello(self, req):
        from homelab.reach import hello
        return {"answer": hello(self.home.internet, req.get("address") or self.home.wan_addr, int(req["port"]))}

    def op_natpmp(self, req):
        out = self.dev(req).run(["natpmpc", "-a", str(req["public"]), str(req["private"]), "tcp", "600"],
                                check=False, timeout=30)
        return {"output": out.stdout + out.stderr}

    def op_remote_connect(self, req):
        from homelab import LAN6_SITE
        from homelab.wgclient import WgClient
        view = self.home.control("remote-config", mac=req["mac"])
        self.wg_client = WgClient(self.home.internet_ns, f"{self.home.run_id}wc", self.home.dir / "wgclient")
        self.wg_client.up(view["config"], ["10.2.0.0/16", LAN6_SITE])
        deadline = time.monotonic() + 20
        while self.wg_client.handshake() == 0:
            if time.monotonic() > deadline:
                raise TimeoutError("no WireGuard handshake in 20 s")
            time.sleep(0.2)
        return {"address": self.wg_client.address4}

    def op_wait_fetch(self, req):
        """Poll until a fetch from the device succeeds (expect true) or fails (false)."""
        expect = req.get("expect", True)
        start = time.monotonic()
        deadline = start + req.get("timeout", 20)
        while True:
            got = self.op_fetch({**req, "max_time": req.get("max_time", 1)})
            if got["success"] == expect:
                return {"elapsed": time.monotonic() - start, "t": time.time()}
            if time.monotonic() > deadline:
                raise TimeoutError(f"fetch from {req['dev']} still {'failing' if expect else 'working'} "
                                   f"after {req.get('timeout', 20)} s (last code {got['code']})")
            time.sleep(0.05)

    def op_traffic(self, req):
        dev = self.dev(req)
        gw = dev.default_gateway()
        seconds = int(req.get("seconds", 8))
        p = dev.popen(["ping", "-q", "-i", "0.002", "-s", "1400", "-w", str(seconds), gw],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.traffic.append(p)
        return {"gateway": gw}

    def op_agent(self, req):
        """{"op": "agent", "dev": "dev1", "secret": .., "app": "zoom", "sport": 40300}: the
        computer runs homework-agent (hostagent/) with that secret, and a program called
        `app` sending a call's media from `sport` to the internet's web address."""
        import hashlib
        import ssl
        dev = self.dev(req)
        gw = dev.default_gateway()
        fp = hashlib.sha256(ssl.PEM_cert_to_DER_cert(open(self.web.ca).read())).hexdigest()
        conf = self.home.dir / f"agent-{dev.name}.conf"
        conf.write_text(f"router = https://{gw}/\nsecret = {req['secret']}\nfingerprint = {fp}\ninterval = 0.5\n")
        exe = self.home.dir / req["app"]
        if not exe.exists():
            os.symlink("/usr/bin/python3", exe)
        code = (f"import socket,time;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);"
                f"s.bind(('0.0.0.0',{int(req['sport'])}))\n"
                f"while True:\n s.sendto(b'x'*160,({WEB_ADDR!r},5004));time.sleep(0.02)")
        self.traffic.append(dev.popen([str(exe), "-c", code]))
        self.traffic.append(dev.popen(["python3", str(REPO / "hostagent" / "homework-agent"), "--config", str(conf)]))
        return {}

    def op_download(self, req):
        """The device fetches a file of `bytes` random bytes from the internet namespace's web server."""
        size = int(req["bytes"])
        name = f"{req['dev']}-{size}.bin"
        (self.home.dir / "www" / name).write_bytes(os.urandom(size))
        # a bound against a hang, not a measure: a loaded machine's userspace switch (and an
        # ISP edge's bridge) may take many seconds over a few megabytes
        got = self.op_fetch({**req, "url": f"http://{WEB_ADDR}/{name}", "max_time": req.get("max_time", 60)})
        if not got["success"]:
            raise RuntimeError(f"download of {name} failed (HTTP {got['code']})")
        return {"bytes": size}

    def op_link_bytes(self, req):
        """{"op": "link_bytes", "dev": ..} -> {"bytes": ..}: every byte the device's interface
        has sent and received (Ethernet frames), the ground truth for its usage."""
        dev = self.dev(req)
        stats = dev.run(["cat", f"/sys/class/net/{dev.ifname}/statistics/rx_bytes",
                         f"/sys/class/net/{dev.ifname}/statistics/tx_bytes"]).stdout.split()
        return {"bytes": sum(int(n) for n in stats)}

    def op_linksim(self, req):
        dev = self.dev(req)
        args = [f"mac={dev.mac}"] + [f"{k}={req[k]}" for k in ("rssi", "retry_rate") if k in req]
        r = self.home.homework("call", "linksim-set", *args)
        if r.returncode:
            raise RuntimeError(r.stderr)
        return {}

    def op_permit_cli(self, req):
        """Permit with the admin CLI (the benchmark's peer for a drop on the board)."""
        t = time.time()
        r = self.home.homework("permit", self.dev(req).mac)
        if r.returncode:
            raise RuntimeError(r.stderr)
        return {"t": t}

    def op_dig(self, req):
        """{"op": "dig", "dev": "dev1", "name": "example.com"} -> {"status": "NOERROR", "answers": [..]}"""
        status, answers = self.dns_lab.dig(self.dev(req), req["name"], req.get("qtype", "A"))
        return {"status": status, "answers": answers}

    def op_serve_file(self, req):
        """{"op": "serve_file", "name": "hosts.txt", "text": ..} -> {"url": ..}: a file on the
        emulated internet's web server (dns_lab homes; blocklists)."""
        from homelab.dns import BLOCKED_WEB
        (self.dns_lab.dir / "blocked-www" / req["name"]).write_text(req["text"])
        return {"url": f"http://{BLOCKED_WEB}/{req['name']}"}

    def op_start_dot_upstream(self, req):
        """{"op": "start_dot_upstream"} -> {"server": "ADDRESS#NAME"}: the emulated internet's
        resolver over TLS too, with a certificate the router's test CA file trusts."""
        from homelab.dns import DOT_NAME, DOT_UPSTREAM
        self.dns_lab.start_dot_upstream()
        return {"server": f"{DOT_UPSTREAM}#{DOT_NAME}"}

    def op_cli(self, req):
        r = self.home.homework(*req["args"])
        return {"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr}

    def op_udp_flood(self, req):
        """Many flows from one device: a UDP datagram (of `size` bytes) to each of `count`
        ports of the web server, as fast as it can."""
        size = int(req.get("size", 1))
        script = ("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                  f"for port in range({int(req.get('count', 3000))}): "
                  f"s.sendto(b'x' * {size}, ('{WEB_ADDR}', 10000 + port))\n")
        self.dev(req).run([sys.executable, "-c", script], timeout=60)
        return {}

    def op_seed_devices(self, req):
        """Give the controller many remembered devices, as after a DHCP flood: the rows
        are written to its state database with its own StateStore while it is stopped,
        then it starts again and loads them like any devices it saw before a restart."""
        rng = random.Random(req.get("seed", 20))
        now = time.time()
        out: dict[str, list[str]] = {}
        self.home.stop_controller()
        store = StateStore(self.home.state_dir / "state.db")
        try:
            i = 0
            for state in ("pending", "permitted", "denied"):
                out[state] = []
                for _ in range(int(req.get(state, 0))):
                    # Locally administered, random: what a flooding tool sends.
                    mac = "02:" + ":".join(f"{rng.randrange(256):02x}" for _ in range(5))
                    i += 1
                    # first_seen one second apart, oldest first: "newest" is well defined.
                    store.touch_device(mac, f"flood-{i}" if state == "pending" else "", now - 5000 + i)
                    if state != "pending":
                        store.set_device_state(mac, state)
                        store.set_device_meta(mac, name=f"{state} {len(out[state]) + 1}")
                    out[state].append(mac)
        finally:
            store.close()
        self.home.start_controller()
        return out

    # -- a webhook receiver in the emulated internet (settings.test.mjs) -----------------------
    def op_start_receiver(self, req):
        """The end-to-end tests' receiver (tests/e2e/test_notify.py): one JSON line per POST
        with its body and whether the signature matches the secret given by receiver_secret."""
        from e2e.test_notify import RECEIVER
        port = int(req.get("port", 8097))
        self.receiver_secret = self.home.dir / "ui-webhook-secret"
        self.receiver_out = self.home.dir / "ui-webhook-received.jsonl"
        self.receiver_secret.write_text("")
        self.home.internet_popen([sys.executable, "-c", RECEIVER, WEB_ADDR, str(self.receiver_secret),
                                  str(self.receiver_out), str(port), "ok"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not self.home.internet(["ss", "-Hltn", f"sport = :{port}"]).stdout.strip():
            if time.monotonic() > deadline:
                raise TimeoutError("the webhook receiver did not start")
            time.sleep(0.05)
        return {"url": f"http://{WEB_ADDR}:{port}/hook"}

    def op_receiver_secret(self, req):
        self.receiver_secret.write_text(req["secret"])
        return {}

    def op_received(self, req):
        out = self.receiver_out
        lines = out.read_text().splitlines() if out.exists() else []
        return {"requests": [json.loads(ln) for ln in lines]}

    def op_contract(self, req):
        """{"op": "contract", "answers": [{method, url, status, type, body}]} -> {"problems": [..]}:
        the API answers the browser received, checked against the checked-in OpenAPI document."""
        from contract import CONTRACT
        problems = [CONTRACT.check(a["method"], a["url"], a["status"], a["type"], a.get("body") or "")
                    for a in req["answers"]]
        return {"checked": len(req["answers"]), "problems": sorted({p for p in problems if p})}

    # -- throughput through the home's ISP link (iperf3 in the emulated internet) -------------
    IPERF_PORTS = (5201, 5202)

    def op_iperf_servers(self, req):
        """iperf3 servers on the internet's web addresses, both families, one per port of
        IPERF_PORTS (one test at a time each: two devices measured at once use two)."""
        for addr in (WEB_ADDR, WEB6_ADDR):
            for port in self.IPERF_PORTS:
                self.home.internet_popen(["iperf3", "-s", "-B", addr, "-p", str(port)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while len(self.home.internet(["ss", "-Hltn", "( sport = :5201 or sport = :5202 )"]).stdout.splitlines()) < 4:
            if time.monotonic() > deadline:
                raise TimeoutError("the iperf3 servers did not start")
            time.sleep(0.1)
        return {}

    def op_rates(self, req):
        """{"op": "rates", "devs": ["dev1", "dev2"], "family": 4|6, "seconds": 4} -> {"kbit":
        {dev: kbit/s}}: each device downloads from the internet at the same time (iperf3 -R,
        the receiver's rate), each from a server of its own, its first second left out (slow
        start, and downloads started together that a loaded machine started apart)."""
        import re
        import threading
        from homelab.iperf import transfer
        addr = WEB6_ADDR if req.get("family") == 6 else WEB_ADDR
        seconds = int(req.get("seconds", 4))
        out: dict[str, str | BaseException] = {}

        def run(name, port):
            try:
                out[name] = transfer(self.devices[name], addr, port, seconds, reverse=True, omit=1)
            except BaseException as exc:       # noqa: BLE001 - reported below, in the answer
                out[name] = exc
        threads = [threading.Thread(target=run, args=(name, port))
                   for name, port in zip(req["devs"], self.IPERF_PORTS, strict=False)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        kbit = {}
        for name, got in out.items():
            if isinstance(got, BaseException):
                raise RuntimeError(f"{name}: {got}")
            row = [line for line in got.splitlines() if "receiver" in line][-1]
            value, unit = re.search(r"([\d.]+) ([KMG]?)bits/sec", row).groups()
            kbit[name] = float(value) * {"": 1e-3, "K": 1, "M": 1e3, "G": 1e6}[unit]
        return {"kbit": kbit}

    # -- an MQTT subscriber on the router's broker (mosquitto, as the image's) -----------------
    def op_mqtt_subscribe(self, req):
        """mosquitto_sub on the router's own broker, subscribed to `topic` (and to a probe
        topic it is seen subscribed on before this answers), every message a line of a file."""
        from homelab.household import MQTT_PORT
        topic = req.get("topic", "homework/notification")
        self.mqtt_out = self.home.dir / "ui-mqtt-received.txt"
        out = open(self.mqtt_out, "w")
        self.home.router_popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(MQTT_PORT), "-v",
                                "-t", topic, "-t", "homelab/probe"], stdout=out, stderr=subprocess.DEVNULL)
        out.close()
        deadline = time.monotonic() + 20
        while "homelab/probe" not in self.mqtt_out.read_text():
            if time.monotonic() > deadline:
                raise TimeoutError("the MQTT subscriber never heard its probe")
            self.home.router(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(MQTT_PORT), "-t", "homelab/probe",
                              "-m", "probe"], check=False)
            time.sleep(0.2)
        return {"topic": topic}

    def op_mqtt_received(self, req):
        """{"op": "mqtt_received"} -> {"messages": [{"topic", "payload"}]} (the probe left out)."""
        messages = []
        for line in self.mqtt_out.read_text().splitlines():
            topic, _, payload = line.partition(" ")
            if topic != "homelab/probe":
                messages.append({"topic": topic, "payload": payload})
        return {"messages": messages}

    # -- what a device sees -------------------------------------------------------------------
    def op_page(self, req):
        """What the device's browser shows for a web address: (HTTP status, the page's text),
        names resolved by the device's own DNS server, over IPv4 or (family 6) IPv6, HTTPS
        unverified (a captive page comes with the router's own certificate)."""
        dev = self.dev(req)
        resolv = dev.dir / "resolv.conf"
        url = req.get("url", "http://example.com/")
        family = {4: "-4", 6: "-6"}.get(req.get("family"), "")
        inner = (f"mount --bind '{resolv}' /etc/resolv.conf && exec curl -sk {family} -m {int(req.get('timeout', 5))} "
                 f"-A 'Mozilla/5.0 (homelab)' -o - -w '\\n%{{http_code}}' '{url}'")
        r = dev.run(["unshare", "-m", "sh", "-c", inner], check=False, timeout=30)
        body, _, code = r.stdout.rpartition("\n")
        return {"code": int(code) if code.isdigit() else 0, "body": body[:20000]}

    def op_wait_ipv6(self, req):
        """The device's global IPv6 addresses (SLAAC in its /64) and its IPv6 router (::1 of it)."""
        import ipaddress
        dev = self.dev(req)
        deadline = time.monotonic() + req.get("timeout", 30)
        while not dev.ipv6_global():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{dev.name} has no global IPv6 address")
            time.sleep(0.1)
        addrs = dev.ipv6_global()
        net = ipaddress.IPv6Network((int(ipaddress.IPv6Address(addrs[0])) >> 64 << 64, 64))
        return {"ipv6": addrs, "router6": str(net.network_address + 1)}

    def op_controller_log(self, req):
        return {"log": self.home.controller_log()[-6000:]}

    def close(self):
        if getattr(self, "wg_client", None) is not None:
            self.wg_client.close()
        if self.edge is not None:
            self.edge.close()
        self.home.close()


def main() -> int:
    driver = Driver()
    try:
        print(json.dumps(driver.start()), flush=True)
        for line in sys.stdin:
            if not line.strip():
                continue
            req = json.loads(line)
            if req.get("op") == "quit":
                print(json.dumps({"ok": True}), flush=True)
                break
            try:
                result = getattr(driver, f"op_{req['op']}")(req)
                print(json.dumps({"ok": True, **result}), flush=True)
            except Exception as exc:
                traceback.print_exc(file=sys.stderr)
                print(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}), flush=True)
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        print(json.dumps({"ready": False, "error": str(exc)}), flush=True)
        return 1
    finally:
        driver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
