"""A satellite joins the household: what the satellite box runs, in the image
and in the emulated home alike.

    python3 -m homework.satellite_agent.join up   --bridge BR --state-dir DIR
    python3 -m homework.satellite_agent.join ask  --bridge BR --state-dir DIR
    python3 -m homework.satellite_agent.join poll --bridge BR --state-dir DIR
    python3 -m homework.satellite_agent.join wait --bridge BR --state-dir DIR

- up: the bridge's own stack (LOCAL) up and joined to its uplink, untagged: the two flows
  the router's table also keeps. With fail_mode=secure they are the only path until the
  controller speaks, and they reach the router's management port at fe80::1.
- ask: makes this box's key (it never leaves DIR) and a certificate request, and sends it
  with the bridge's datapath id to https://[fe80::1%BR]/ws.v1/satellites/pair. The
  router answers with a ticket (kept in DIR) and a 6-digit code, printed here, that the
  Guest Board shows beside the pending access point.
- poll: asks once how the request stands; once permitted, installs the certificate and
  the household CA and points the bridge at ssl:[fe80::1%BR]:6654.
- wait: ask (unless a ticket is kept), then poll until permitted or denied: every
  --interval for two minutes after asking, then every 15 s.

Each prints one JSON object. Exit status: 0 done (permitted, or up/ask done), 3 still
pending, 4 denied, 1 anything else (the router unreachable, a refusal).

Where the router is: on a listed cable, at fe80::1 on the management link. Plugged into
any other LAN port, the box's own stack is a device of the router: it takes a lease
there (udhcpc on BR, as any device does) and asks at its gateway, over HTTP through the
router's captive page (the one path a pending device may use, and the router records
the port it came from). Every call tries the management link first, so once the
household permits the box and its port becomes a cable, the same steps reach fe80::1.

On first contact the satellite has no CA to check the router's HTTPS certificate with;
the code both ends show is the check, as in Bluetooth pairing. Its key never crosses the
wire, and the ticket only fetches a certificate for the key this box holds.
"""
from __future__ import annotations

import argparse
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from ..satellites import MANAGEMENT_ADDRESS

TLS_PORT = 6654
UPLINK_OFPORT = 250
EXIT_PENDING, EXIT_DENIED = 3, 4
FAST_FOR = 120.0        # wait: seconds after asking during which it polls at --interval
SLOW_INTERVAL = 15.0    # then at most this often


class JoinError(RuntimeError):
    pass


class Join:
    def __init__(self, bridge: str, state_dir: Path, uplink_port: int = UPLINK_OFPORT, tls_port: int = TLS_PORT):
        self.bridge, self.dir, self.uplink_port, self.tls_port = bridge, state_dir, uplink_port, tls_port
        self.key = state_dir / "satellite-key.pem"
        self.request_file = state_dir / "satellite-req.pem"
        self.ticket_file = state_dir / "pairing-ticket"
        self.cert = state_dir / "satellite-cert.pem"
        self.ca = state_dir / "household-ca.pem"
        self._dpid: str | None = None

    @property
    def router(self) -> str:
        """The router on this bridge's management link, for a URL or an OVS target."""
        return f"[{MANAGEMENT_ADDRESS}%{self.bridge}]"

    # -- the switch -------------------------------------------------------------------------
    def up(self) -> dict:
        _run(["ip", "link", "set", self.bridge, "up"])
        self.management_flows()
        return {"bridge": self.bridge, "router": self.router}

    def management_flows(self) -> None:
        for flow in (f"priority=100,in_port=LOCAL,actions=output:{self.uplink_port}",
                     f"priority=100,in_port={self.uplink_port},vlan_tci=0x0000/0x1fff,actions=LOCAL"):
            _run(["ovs-ofctl", "-O", "OpenFlow13", "add-flow", self.bridge, flow])

    def uplink_name(self) -> str:
        """Its uplink port's name (the router's gate looks for it among the switch's ports)."""
        names = set(_run(["ovs-vsctl", "list-ports", self.bridge]).split())
        for name in _run(["ovs-vsctl", "--bare", "--columns=name", "find", "Interface",
                          f"ofport={self.uplink_port}"]).split():
            if name in names:
                return name
        raise JoinError(f"{self.bridge} has no port {self.uplink_port} (its uplink)")

    def gateway(self) -> str | None:
        """The IPv4 gateway of a lease on the bridge's own stack, if it has one (plugged
        into a LAN port rather than a cable: see above)."""
        try:
            out = _run(["ip", "-4", "route", "show", "default", "dev", self.bridge])
        except JoinError:
            return None
        words = out.split()
        return words[words.index("via") + 1] if "via" in words[:-1] else None

    def dpid(self) -> str:
        if self._dpid is None:      # fixed for the bridge's life: asked once, not at every poll
            self._dpid = _run(["ovs-vsctl", "get", "bridge", self.bridge, "datapath_id"]).strip().strip('"')
        return self._dpid

    # -- pairing ------------------------------------------------------------------------------
    def ask(self) -> dict:
        self.dir.mkdir(parents=True, exist_ok=True)
        csr = self._request()
        answer = self._call("POST", "/ws.v1/satellites/pair",
                            {"dpid": self.dpid(), "csr": csr, "uplink": self.uplink_name()})
        self.ticket_file.write_text(answer["ticket"])
        self.ticket_file.chmod(0o600)
        return {"dpid": answer["dpid"], "code": answer["code"], "state": "pending"}

    def poll(self) -> dict:
        try:
            ticket = self.ticket_file.read_text().strip()
        except OSError:
            raise JoinError("no pairing request yet: run `ask` first") from None
        answer = self._call("GET", f"/ws.v1/satellites/pair/{self.dpid()}", headers={"X-Pairing-Ticket": ticket})
        if answer.get("state") == "permitted":
            self.install(answer["certificate"], answer["ca"])
        return {k: answer[k] for k in ("dpid", "state", "code") if k in answer}

    def install(self, certificate: str, ca: str) -> None:
        """The identity pairing gave it; its switch now connects over TLS."""
        self.cert.write_text(certificate)
        self.ca.write_text(ca)
        # A box pairing again writes its new certificate under the old names. Open vSwitch
        # reads the files again only when its configuration changes (a new SSL row), and
        # then only if the key's file changed too (its mtime): both are touched. The
        # session with the old certificate must go too (a new controller).
        os.utime(self.key)
        _run(["ovs-vsctl", "del-ssl", "--", "set-ssl", str(self.key), str(self.cert), str(self.ca)])
        _run(["ovs-vsctl", "del-controller", self.bridge])
        _run(["ovs-vsctl", "set-controller", self.bridge, f"ssl:{self.router}:{self.tls_port}"])
        # Open vSwitch empties a bridge's table when it gets its first controller: the
        # management link again, until the controller's table replaces it
        self.management_flows()

    def wait(self, interval: float, timeout: float) -> dict:
        if not self.ticket_file.exists():
            print(json.dumps(self.ask()), flush=True)
        end = time.monotonic() + timeout
        while True:
            status = self.poll()
            if status["state"] != "pending" or time.monotonic() > end:
                return status
            time.sleep(self.poll_interval(interval))

    def poll_interval(self, interval: float, now: float | None = None) -> float:
        """`interval` while the request is new (the household usually decides while the box
        is in front of them), then at least SLOW_INTERVAL: a box left pending for hours
        need not cost the router a request every few seconds."""
        try:
            asked = self.ticket_file.stat().st_mtime
        except OSError:
            return interval
        age = (time.time() if now is None else now) - asked
        return interval if age < FAST_FOR else max(interval, SLOW_INTERVAL)

    def _request(self) -> str:
        """This box's key and certificate request, made once (the key stays in DIR)."""
        if not self.key.exists():
            _run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(self.key)])
            self.key.chmod(0o600)
        if not self.request_file.exists():
            _run(["openssl", "req", "-new", "-key", str(self.key), "-subj", "/CN=homework satellite",
                  "-out", str(self.request_file)])
        return self.request_file.read_text()

    def _call(self, method: str, path: str, body: dict | None = None, headers: dict | None = None) -> dict:
        """The management link first; if nothing answers there and the box has a lease,
        its gateway: HTTP (the captive page's server takes a pending device's), then
        HTTPS if that redirects (a device the household permitted reaches the Guest
        Board's server, whose port 80 only redirects)."""
        gateway = self.gateway()
        # Host without the zone (%BR): it means nothing to the router, and lighttpd refuses it
        url = f"https://{self.router.replace('%', '%25')}{path}"
        try:
            return self._send(url, method, body, headers, f"[{MANAGEMENT_ADDRESS}]", 5 if gateway else 15)
        except _Unreachable as exc:
            if gateway is None:
                raise JoinError(str(exc)) from None
        try:
            return self._send(f"http://{gateway}{path}", method, body, headers, gateway, 15)
        except _Redirected:
            pass
        except _Unreachable as exc:
            raise JoinError(str(exc)) from None
        try:
            return self._send(f"https://{gateway}{path}", method, body, headers, gateway, 15)
        except (_Unreachable, _Redirected) as exc:
            raise JoinError(str(exc)) from None

    def _send(self, url: str, method: str, body: dict | None, headers: dict | None, host: str,
              timeout: float) -> dict:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE      # first contact: the code is the check (above)
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Host": host, **(headers or {})})
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context), _NoRedirects)
        try:
            with opener.open(req, timeout=timeout) as res:
                return json.loads(res.read())
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                raise _Redirected(f"{url} redirects ({exc.code})") from None
            try:
                detail = json.loads(exc.read()).get("error", "")
            except ValueError:
                detail = ""
            raise JoinError(f"the router answered {exc.code}: {detail or exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise _Unreachable(f"cannot reach the router at {url}: {exc}") from None
        except ValueError as exc:
            raise JoinError(f"the router at {url} answered something other than JSON: {exc}") from None


class _Unreachable(Exception):
    pass


class _Redirected(Exception):
    pass


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer here (HTTP -> HTTPS), not something to follow with a POST."""
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def _run(cmd: list[str]) -> str:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JoinError(f"{cmd[0]}: {exc}") from None
    if res.returncode != 0:
        raise JoinError(f"{' '.join(cmd)} exited {res.returncode}: {res.stderr.strip()}")
    return res.stdout


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="homework-satellite-join",
                                description="A satellite asks the household's router to pair, and connects "
                                            "once permitted.")
    p.add_argument("step", choices=("up", "ask", "poll", "wait"))
    p.add_argument("--bridge", required=True, help="the satellite's Open vSwitch bridge")
    p.add_argument("--state-dir", required=True, type=Path, help="its key, request, ticket and certificates")
    p.add_argument("--uplink-port", type=int, default=UPLINK_OFPORT, help="its uplink's OpenFlow port number")
    p.add_argument("--tls-port", type=int, default=TLS_PORT, help="the router's OpenFlow-over-TLS port")
    p.add_argument("--interval", type=float, default=2.0, help="wait: seconds between polls")
    p.add_argument("--timeout", type=float, default=86400.0, help="wait: give up after this many seconds")
    a = p.parse_args(argv)
    join = Join(a.bridge, a.state_dir, a.uplink_port, a.tls_port)
    try:
        out = {"up": join.up, "ask": join.ask, "poll": join.poll,
               "wait": lambda: join.wait(a.interval, a.timeout)}[a.step]()
    except JoinError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        return 1
    print(json.dumps(out), flush=True)
    state = out.get("state")
    if state == "pending" and a.step in ("poll", "wait"):
        return EXIT_PENDING
    return EXIT_DENIED if state == "denied" else 0


if __name__ == "__main__":
    sys.exit(main())
