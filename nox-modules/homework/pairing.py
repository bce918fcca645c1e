"""Pairing satellite switches: asked for by the satellite, decided by the household.

1. A new satellite makes its key and a certificate request and sends the request with its
   datapath id (`request`: the API's public POST /ws.v1/satellites/pair). It gets a ticket
   back, a secret only it holds, and a short code that it shows on its console. The router
   shows it on the Guest Board as a pending access point, with the same code, so the
   household can tell two boxes apart.
2. Someone in the house permits it (drags it to permitted, or `homework satellite-pair`
   as root on the router): the household CA signs the request for that datapath id.
3. The satellite fetches its certificate with its ticket (`status`) and connects over TLS.
   The controller drives it only while it is permitted *and* shows the certificate issued
   for it last (`admits`: same serial), so denying or forgetting it, or pairing it again,
   makes every older certificate useless. `satellite` events on the bus tell the adapter
   to drop a session that is no longer admitted.

A satellite is cabled one of two ways. Listed in [satellites] switches (the list says its
uplink and router port), it asks over its management link. Or found: plugged into any
LAN port, its own stack takes a lease like a device and asks through the captive page's
one pairing path; the router records the port that lease is on (the satellite's word
names only its datapath id and its uplink's name). Nothing changes on that port while it
is pending: it stays a LAN port of the router's bridge. The household's permit gives it
a cable index, and the controller restarts to take the port for it (a demux bridge, as
for a listed one); denying or forgetting it gives the port back (`found_cables`, read by
core.py at start). One pending request per port: a new one from the same port replaces
it, so no device can fill the board with access points.

A request is the requester's (`requester`: homework/callers.py's key of whoever asked:
the device it asked as, the satellite cable it came over, or its address). While it
waits, a request under the same datapath id from anyone else is refused (409), whether
the id is listed or found: nobody can swap the key, and the code the household compares,
for their own. The one exception is a listed satellite's own cable, which speaks for that
datapath id more than any LAN device does. The household's permit may name the code it
saw (the Guest Board sends it); if the request's code is another by then, nothing is
signed (409). So a certificate is only ever issued for the key whose code was shown.

Rows live in state.db (migrations 11 and 12), so a decision survives restarts.
Framework-free: unit tested without os-ken."""
from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

from .pki import HouseholdCA, PkiError, certificate_serial, request_fingerprint
from . import events
from .satellites import IFNAME, MAX_SATELLITES, free_index, with_found

STATES = ("pending", "permitted", "denied")


class PairingError(ValueError):
    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _hash(ticket: str) -> str:
    return hashlib.sha256(ticket.encode()).hexdigest()


class SatellitePairing:
    def __init__(self, state, config, bus, clock: Callable[[], float] = time.time):
        self.state, self.config, self.bus, self.now = state, config, bus, clock
        self.ca = HouseholdCA(config.pki_dir)

    # -- reading ------------------------------------------------------------------------------
    def _row(self, dpid: int):
        rows = self.state.execute("SELECT * FROM satellites WHERE dpid = ?", (f"{dpid:016x}",))
        return rows[0] if rows else None

    def _listed(self, dpid: int):
        """The satellite the config file lists with this dpid, or None."""
        return next((s for s in self.config.satellites if s.dpid == dpid and not s.found), None)

    def _running(self, dpid: int):
        """The satellite this controller drives with this dpid (listed or found), or None."""
        return next((s for s in self.config.satellites if s.dpid == dpid), None)

    def found_cables(self) -> list[tuple[int, int, str, str]]:
        return self.found_in(self.state)

    @staticmethod
    def found_in(state) -> list[tuple[int, int, str, str]]:
        """(index, dpid, uplink, router port) of every found satellite the household has
        permitted: the cables the controller takes at start (satellites.with_found)."""
        return [(row["cable"], int(row["dpid"], 16), row["uplink"], row["router_port"])
                for row in state.execute("SELECT * FROM satellites WHERE state = 'permitted' AND cable > 0 "
                                         "AND router_port != '' ORDER BY cable")]

    def cables_changed(self) -> bool:
        """The household's decisions name other found cables than this process drives:
        the controller must restart to take (or give back) their ports."""
        listed = tuple(s for s in self.config.satellites if not s.found)
        wanted, _ = with_found(listed, self.found_cables())     # as the next start would take them
        return set(wanted) != set(self.config.satellites)

    def all(self) -> list[dict]:
        return [self.view(row) for row in self.state.execute("SELECT * FROM satellites ORDER BY requested")]

    def get(self, dpid: int) -> dict | None:
        row = self._row(dpid)
        return self.view(row) if row else None

    def view(self, row) -> dict:
        """`found`: it asked from a LAN port (router_port: that port) instead of being
        listed; `cabled`: the controller drives its cable now (a permit of a found
        satellite is cabled after the restart it causes)."""
        dpid = int(row["dpid"], 16)
        sat = self._running(dpid)
        found = bool(row["router_port"]) and self._listed(dpid) is None
        return {"dpid": row["dpid"], "state": row["state"], "code": row["code"], "requested": row["requested"],
                "decided": row["decided"], "paired": bool(row["serial"]),
                "index": sat.index if sat else (row["cable"] or None),
                "uplink": sat.uplink if sat else (row["uplink"] or None),
                "router_port": sat.router_port if sat else (row["router_port"] or None),
                "found": found, "cabled": sat is not None,
                "device_mac": row["origin_mac"] or None}     # its own stack, a device where it asked

    def admits(self, dpid: int, serial: int | None) -> bool:
        """May a TLS session showing a certificate with this serial drive this datapath?"""
        row = self._row(dpid)
        return (row is not None and row["state"] == "permitted" and serial is not None
                and row["serial"] == f"{serial:x}")

    def standing(self, dpid: int, serial: int | None) -> str:
        """Where a certificate with this serial stands: permitted (it admits), or why not:
        denied, forgotten (no row), or replaced (a newer request or certificate)."""
        row = self._row(dpid)
        if row is None:
            return "forgotten"
        if row["state"] == "denied":
            return "denied"
        return "permitted" if self.admits(dpid, serial) else "replaced"

    # -- the satellite's side ---------------------------------------------------------------------
    def request(self, dpid_text: str, csr: str, origin: dict | None = None, uplink: str = "",
                requester: str = "") -> dict:
        """A satellite asks to pair. Returns {dpid, code, ticket}; the ticket is shown once.
        `origin`: {port, mac} of the LAN device the request came from, as the router knows
        it (its lease), or None (over a management link, or not from a device at all);
        `uplink`: the name the satellite gives its uplink port (found satellites);
        `requester`: who asked (Caller.key; a device's is "device:<its MAC>")."""
        dpid = parse_dpid(dpid_text)
        listed = self._listed(dpid)
        if listed is None and origin is None:
            raise PairingError(f"datapath {dpid:016x} is not in [satellites] switches, and this request did not "
                               "come from a device on one of the router's ports: plug the satellite into a LAN "
                               "port (or list it)", 404)
        if listed is None and not IFNAME.match(uplink or ""):
            raise PairingError(f"the uplink port name {uplink!r} is not an interface name")
        code = _code(csr)
        row = self._row(dpid)
        if row is not None and row["state"] == "permitted":
            raise PairingError(f"satellite {dpid:016x} is already paired; forget it on the Guest Board "
                               "before it pairs again", 409)
        port, mac = ("", "") if listed is not None or origin is None else (origin["port"], origin["mac"])
        if port in self.config.radio_interfaces:
            raise PairingError(f"{port} is a Wi-Fi port: a satellite's uplink is a cable, so plug it into a "
                               "wired LAN port", 409)
        if not requester and origin is not None:
            requester = f"device:{origin['mac']}"
        if row is not None and row["state"] == "pending":
            self._same_requester(dpid, row, requester, listed)
        if port:
            # One pending request per port: a device asking again and again under new
            # datapath ids replaces its own request instead of adding access points.
            for other in self.state.execute("SELECT dpid FROM satellites WHERE state = 'pending' "
                                            "AND router_port = ? AND dpid != ?", (port, f"{dpid:016x}")):
                self.state.execute("DELETE FROM satellites WHERE dpid = ?", (other["dpid"],))
                self._publish(int(other["dpid"], 16), "forgotten")
        ticket = secrets.token_urlsafe(24)
        self.state.execute(
            "INSERT INTO satellites (dpid, state, code, csr, ticket_hash, serial, certificate, requested, decided, "
            "router_port, uplink, origin_mac, cable, requester) "
            "VALUES (?, 'pending', ?, ?, ?, '', '', ?, 0, ?, ?, ?, 0, ?) ON CONFLICT(dpid) DO UPDATE SET "
            "state = 'pending', code = excluded.code, csr = excluded.csr, ticket_hash = excluded.ticket_hash, "
            "serial = '', certificate = '', requested = excluded.requested, decided = 0, "
            "router_port = excluded.router_port, uplink = excluded.uplink, origin_mac = excluded.origin_mac, "
            "cable = 0, requester = excluded.requester",
            (f"{dpid:016x}", code, csr, _hash(ticket), self.now(), port, uplink if port else "", mac, requester))
        self._publish(dpid, "requested")
        return {"dpid": f"{dpid:016x}", "code": code, "ticket": ticket}

    def _same_requester(self, dpid: int, row, requester: str, listed) -> None:
        """A waiting request stays its requester's: PairingError (409) for anyone else."""
        first = row["requester"] or (f"device:{row['origin_mac']}" if row["origin_mac"] else "")
        if not first or first == requester:
            return
        if listed is not None and requester == f"satellite:{listed.index}":
            return      # the listed satellite's own cable outranks whoever asked before it
        where = f" (on {row['router_port']})" if row["router_port"] else ""
        who = "another device" if first.startswith("device:") else "another box"
        raise PairingError(f"satellite {dpid:016x} is already asking from {who}{where}: its code "
                           f"{row['code']} is the one to compare; forget that request on the Guest Board "
                           "first if it is not yours", 409)

    def status(self, dpid_text: str, ticket: str) -> dict:
        """What the satellite polls: pending, or its certificate and the CA once permitted."""
        dpid = parse_dpid(dpid_text)
        row = self._row(dpid)
        if row is None or not ticket or not hmac.compare_digest(row["ticket_hash"], _hash(ticket)):
            raise PairingError("no pairing request with this ticket", 404)
        out = {"dpid": row["dpid"], "state": row["state"], "code": row["code"]}
        if row["state"] == "permitted":
            out.update(certificate=row["certificate"], ca=self.ca.ensure().ca_pem())
        return out

    # -- the household's side ---------------------------------------------------------------------
    def permit(self, dpid_text: str, code: str | None = None) -> dict:
        """A listed satellite is driven once it connects with its certificate; a found one
        also gets a cable index here, and its port once the controller restarts. `code`:
        the code the household compared; if the request now shows another, nothing is
        signed (409)."""
        dpid = parse_dpid(dpid_text)
        row = self._row(dpid)
        if row is None:
            raise PairingError(f"satellite {dpid:016x} has not asked to pair", 404)
        if code is not None and not hmac.compare_digest(str(code).encode(), row["code"].encode()):
            raise PairingError(f"satellite {dpid:016x}'s request shows code {row['code']}, not {code}: compare "
                               "the code on the satellite's console again before permitting it", 409)
        if row["state"] == "permitted":
            return self.view(row)
        if self._listed(dpid) is not None:
            return self._sign(dpid, row["csr"])
        if not row["router_port"]:
            raise PairingError(f"datapath {dpid:016x} is no longer in [satellites] switches: list it there, "
                               "or forget it and plug it into a LAN port to ask again", 404)
        cables = self.found_cables()
        if any(c[3] == row["router_port"] for c in cables) or any(
                s.router_port == row["router_port"] for s in self.config.satellites):
            raise PairingError(f"port {row['router_port']} already carries another satellite", 409)
        index = free_index(self.config.satellites, {c[0] for c in cables})
        if index is None:
            raise PairingError(f"the router has no place for another satellite (at most {MAX_SATELLITES})", 409)
        self.state.execute("UPDATE satellites SET cable = ? WHERE dpid = ?", (index, f"{dpid:016x}"))
        return self._sign(dpid, row["csr"])

    def pair_directly(self, dpid_text: str, csr: str) -> dict:
        """Request and permission in one step, by root on the router (`homework
        satellite-pair`), for a listed satellite. Returns the view plus the certificate and the CA."""
        dpid = parse_dpid(dpid_text)
        if self._listed(dpid) is None:
            raise PairingError(f"datapath {dpid:016x} is not in [satellites] switches: list it there first "
                               "(a satellite plugged into a LAN port asks by itself)", 404)
        code = _code(csr)
        self.state.execute(
            "INSERT INTO satellites (dpid, state, code, csr, ticket_hash, serial, certificate, requested, decided) "
            "VALUES (?, 'pending', ?, ?, '', '', '', ?, 0) ON CONFLICT(dpid) DO UPDATE SET csr = excluded.csr, "
            "code = excluded.code, state = 'pending'",
            (f"{dpid:016x}", code, csr, self.now()))
        view = self._sign(dpid, csr)
        row = self._row(dpid)
        return {**view, "certificate": row["certificate"], "ca": self.ca.ensure().ca_pem()}

    def _sign(self, dpid: int, csr: str) -> dict:
        try:
            cert = self.ca.ensure().sign_satellite(csr, dpid)
        except PkiError as exc:
            raise PairingError(str(exc)) from None
        self.state.execute("UPDATE satellites SET state = 'permitted', certificate = ?, serial = ?, decided = ? "
                           "WHERE dpid = ?", (cert, f"{certificate_serial(cert):x}", self.now(), f"{dpid:016x}"))
        self._publish(dpid, "permitted")
        return self.view(self._row(dpid))

    def deny(self, dpid_text: str) -> dict:
        dpid = parse_dpid(dpid_text)
        row = self._row(dpid)
        if row is None:
            raise PairingError(f"satellite {dpid:016x} has not asked to pair", 404)
        # a found satellite's port goes back to the router's bridge (its cable index is freed)
        self.state.execute("UPDATE satellites SET state = 'denied', certificate = '', serial = '', decided = ?, "
                           "cable = 0 WHERE dpid = ?", (self.now(), f"{dpid:016x}"))
        self._publish(dpid, "denied")
        return self.view(self._row(dpid))

    def forget(self, dpid_text: str) -> dict:
        dpid = parse_dpid(dpid_text)
        if self._row(dpid) is None:
            raise PairingError(f"satellite {dpid:016x} has not asked to pair", 404)
        self.state.execute("DELETE FROM satellites WHERE dpid = ?", (f"{dpid:016x}",))
        self._publish(dpid, "forgotten")
        return {"dpid": f"{dpid:016x}", "forgotten": True}

    def _publish(self, dpid: int, what: str) -> None:
        self.bus.publish(events.Satellite(dpid=dpid, what=what))


def _code(csr: str) -> str:
    """The pairing code of a well-formed request (both ends show it); PairingError if not."""
    try:
        return request_fingerprint(csr)[:6]
    except PkiError as exc:
        raise PairingError(str(exc)) from None


def parse_dpid(text) -> int:
    try:
        dpid = int(str(text), 16)
    except ValueError:
        raise PairingError(f"datapath id {text!r} is not hexadecimal") from None
    if not 0 < dpid < 1 << 64:
        raise PairingError(f"datapath id {text!r}: 1 to 16 hex digits, not zero")
    return dpid
