"""Pairing satellite switches (issue 15): asked for by the satellite, decided by the household.

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

Only datapaths listed in [satellites] switches may pair (the list still says how each is
cabled: its uplink and the router port). Rows live in state.db (migration 11), so a
decision survives restarts. Framework-free: unit tested without os-ken."""
from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from typing import Callable

from .pki import HouseholdCA, PkiError, certificate_serial, request_fingerprint

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
        for sat in self.config.satellites:
            if sat.dpid == dpid:
                return sat
        raise PairingError(f"datapath {dpid:016x} is not in [satellites] switches: list it there first", 404)

    def all(self) -> list[dict]:
        return [self.view(row) for row in self.state.execute("SELECT * FROM satellites ORDER BY requested")]

    def get(self, dpid: int) -> dict | None:
        row = self._row(dpid)
        return self.view(row) if row else None

    def view(self, row) -> dict:
        dpid = int(row["dpid"], 16)
        sat = next((s for s in self.config.satellites if s.dpid == dpid), None)
        return {"dpid": row["dpid"], "state": row["state"], "code": row["code"], "requested": row["requested"],
                "decided": row["decided"], "paired": bool(row["serial"]),
                "index": sat.index if sat else None, "uplink": sat.uplink if sat else None,
                "router_port": sat.router_port if sat else None}

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
    def request(self, dpid_text: str, csr: str) -> dict:
        """A satellite asks to pair. Returns {dpid, code, ticket}; the ticket is shown once."""
        dpid = parse_dpid(dpid_text)
        self._listed(dpid)
        code = _code(csr)
        row = self._row(dpid)
        if row is not None and row["state"] == "permitted":
            raise PairingError(f"satellite {dpid:016x} is already paired; forget it on the Guest Board "
                               "before it pairs again", 409)
        ticket = secrets.token_urlsafe(24)
        self.state.execute(
            "INSERT INTO satellites (dpid, state, code, csr, ticket_hash, serial, certificate, requested, decided) "
            "VALUES (?, 'pending', ?, ?, ?, '', '', ?, 0) ON CONFLICT(dpid) DO UPDATE SET state = 'pending', "
            "code = excluded.code, csr = excluded.csr, ticket_hash = excluded.ticket_hash, serial = '', "
            "certificate = '', requested = excluded.requested, decided = 0",
            (f"{dpid:016x}", code, csr, _hash(ticket), self.now()))
        self._publish(dpid, "requested")
        return {"dpid": f"{dpid:016x}", "code": code, "ticket": ticket}

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
    def permit(self, dpid_text: str) -> dict:
        dpid = parse_dpid(dpid_text)
        self._listed(dpid)
        row = self._row(dpid)
        if row is None:
            raise PairingError(f"satellite {dpid:016x} has not asked to pair", 404)
        if row["state"] == "permitted":
            return self.view(row)
        return self._sign(dpid, row["csr"])

    def pair_directly(self, dpid_text: str, csr: str) -> dict:
        """Request and permission in one step, by root on the router (`homework
        satellite-pair`). Returns the view plus the certificate and the CA."""
        dpid = parse_dpid(dpid_text)
        self._listed(dpid)
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
        self.state.execute("UPDATE satellites SET state = 'denied', certificate = '', serial = '', decided = ? "
                           "WHERE dpid = ?", (self.now(), f"{dpid:016x}"))
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
        self.bus.publish("satellite", dpid=dpid, what=what)


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
