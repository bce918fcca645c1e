"""The first hour in the ws.v1 API (homework/firsthour.py says who may set a router up):

    GET  /ws.v1/setup          (asking)  -> {open, device, wired, needs}
    POST /ws.v1/setup          (asking)  {"password": new[, "proof": console password or set-up code]}
                                         -> {permitted, board, ticket, expires_in}
    POST /ws.v1/setup/session  (public)  {"ticket"} -> a Guest Board session, as /login gives

A pending device reaches the first two through the captive page's server
(conf/lighttpd-captive.conf proxies exactly /ws.v1/setup), over plain HTTP on its own
port: nobody else's port carries its frames (every device has its own /30 and the
switch routes). The set-up is the one place a device is let in by its own request: only
while the router has no password of the household's, and it ends the offer. It goes
through the login limiter (a wrong console password or code counts as a failed login) and
the same `permit` command as the board. The answer's ticket, used once, from the same
device, within TICKET_SECONDS, over HTTPS (the board's address), opens the household's
session without typing the new password again (guestboard-ui/js/api.js).
"""
from __future__ import annotations

import hashlib
import logging
import secrets
import threading
from typing import Literal

from ... import cutoff_pages, firsthour
from ...cutoff import PENDING
from ...state import StorageError
from .auth import check_new_password
from .http import ApiError
from .model import Model, field
from .routes import Access, RouteGroup, get, post
from .sessions import LoginAnswer

log = logging.getLogger("homework.api.setup")
TICKET_SECONDS = 600.0     # accepting the self-signed certificate takes a while the first time
MAX_TICKETS = 16

# The offer on the pending device's page (cutoff_pages.py): hidden until setup.js, served
# by the captive pages' server, asks GET /ws.v1/setup and finds it open for this device.
SETUP_OFFER = """  <section id="setup" hidden>
    <h2>Is this your new router?</h2>
    <p>Nobody has set it up yet. If it is yours, choose its password here: this device is then
       let in, and you let every other device in from the Guest Board.</p>
    <button type="button" id="setup-start">This is my router: set it up</button>
    <form id="setup-form" hidden>
      <label>Choose a password for the router (at least 8 characters)
        <input type="password" name="password" minlength="8" maxlength="256" autocomplete="new-password"
               required></label>
      <label>Type it again
        <input type="password" name="again" minlength="8" maxlength="256" autocomplete="new-password" required></label>
      <label id="setup-proof" hidden>This device is not plugged into the router with a cable, so the router
        asks for a secret of its own: the password on the router's screen, or the set-up code shown when it was
        reset. (Without either, plug a computer into one of the router's ports and set it up from there.)
        <input name="proof" autocomplete="off" maxlength="256"></label>
      <button type="submit">Set it up</button>
    </form>
    <div id="setup-done" hidden>
      <p>Done: this device is on the network, and the router's password is the one you chose.
         The Guest Board opens now at <a id="setup-board" href="#"></a>.</p>
      <p class="hint">Your browser will warn that the router's certificate is its own (self-signed):
         that is expected; continue to the site.<span id="setup-fingerprint-row" hidden> Its fingerprint
         (SHA-256) is <code id="setup-fingerprint"></code>.</span></p>
    </div>
    <p id="setup-message" role="status"></p>
  </section>
  <script src="/setup.js"></script>"""


def setup_offer(mac: str) -> str:
    return SETUP_OFFER


class SetupOffer(Model):
    """Whether this router still offers its set-up, and what the calling device needs to show."""
    open: bool = field(doc="nobody has set the router up yet")
    device: bool = field(doc="the caller is a device of the home that may set it up")
    wired: bool = field(doc="on a wired port of the router")
    needs: Literal["nothing", "console-password-or-setup-code"] | None
    setup_code_issued: bool = field(optional=True, doc="a factory reset made a set-up code")


class SetupBody(Model):
    usage = '{"password": "the new admin password"[, "proof": "console password or set-up code"]}'
    password: str = field(secret=True, doc="the household's new admin password, 8 to 256 characters")
    proof: str = field(optional=True, secret=True, doc="a device not on a wired port: the password on the "
                                                       "router's console, or the set-up code the factory reset showed")


class SetupDone(Model):
    """The device is let in and the password set; the ticket opens one Guest Board session."""
    permitted: str = field(doc="the device's MAC")
    board: str = field(doc="https://<its gateway>/")
    ticket: str = field(doc="POST /setup/session within expires_in seconds, from this device")
    expires_in: int
    tls_sha256: str | None = field(doc="the router's certificate fingerprint")


class TicketBody(Model):
    usage = '{"ticket": "..."}'
    ticket: str = field(secret=True)


class SetupRoutes(RouteGroup):
    tag = "setup"

    def __init__(self, api):
        super().__init__(api)
        self.tickets: dict[str, tuple[str, float]] = {}    # sha256(ticket) -> (mac, expires)
        self.lock = threading.Lock()
        self.claiming = threading.Lock()      # one set-up at a time: two devices cannot both win
        self.in_setup: set[str] = set()       # the device a set-up is letting in (its own permit event)
        self.state_dir = api.ctx.config.state_dir
        api.ctx.bus.subscribe("device", self.close_on_decision)
        cutoff_pages.add_piece(PENDING, setup_offer)        # on the pending device's page

    def window_open(self) -> bool:
        return not self.api.auth.password_chosen()

    def close_on_decision(self, topic: str, ev) -> None:
        """A device let in by another door (the CLI, a restore's devices): the household
        is in charge, so the offer closes (ev: events.Device)."""
        if ev.state == "permitted" and ev.mac not in self.in_setup and self.window_open():
            try:
                self.api.auth.adopt_password()
            except StorageError:
                log.warning("could not close the set-up offer (storage)")
            firsthour.drop_setup_code(self.state_dir)
            log.info("set-up offer closed: %s was let in", ev.mac)

    def needs(self, call) -> str:
        if firsthour.wired_port(self.api.ctx, call.client_mac):
            return "nothing"
        return "console-password-or-setup-code"

    @get("/setup", Access.ASKING, "The first hour: whether this router still offers its set-up, and what the "
         "calling device needs to show (asking: also a pending device, through the waiting page's server)",
         name="setupOffer", answer=SetupOffer, errors={403: "a device that was kept out (denied, blacklisted)"})
    def status(self, call):
        api = self.api
        mac = call.client_mac
        device = api.ctx.state.get_device(mac) if mac else None
        mac = mac if device is not None and device.state in ("pending", "permitted") else None
        out = {"open": self.window_open(), "device": mac is not None, "wired": False, "needs": None}
        if out["open"] and mac:
            out["wired"] = firsthour.wired_port(api.ctx, mac) is not None
            out["needs"] = self.needs(call)
            out["setup_code_issued"] = firsthour.has_setup_code(self.state_dir)
        return out

    def refuse_locked_out(self, call) -> None:
        wait = self.api.limiter.retry_after(call.caller.key)
        if wait:
            raise ApiError(429, f"too many wrong passwords or codes from this device; try again in "
                                f"{int(wait) + 1} seconds", {"Retry-After": str(int(wait) + 1)})

    @post("/setup", Access.ASKING, "The first hour: the calling device chooses the router's password and is let "
          "in (asking: a pending device, through the waiting page's server). Only while nobody has set the "
          "router up; a device not on a wired port shows the console's first password or the factory reset's "
          "set-up code. Wrong ones count as failed logins", name="setUp", body=SetupBody, body_required=True,
          answer=SetupDone, before="refuse_locked_out",
          errors={401: "not on a wired port, and neither the console password nor the set-up code",
                  403: "the caller is not a device of the home that may set it up",
                  409: "the router is set up already",
                  429: "too many wrong passwords or codes from this device"})
    def set_up(self, call, body):
        with self.claiming:
            return self.claim(call, body)

    def claim(self, call, body):
        api = self.api
        if not self.window_open():
            raise ApiError(409, "this router is set up already: ask someone in the household to let this "
                                "device in on the Guest Board")
        mac = call.client_mac
        if mac is None:
            raise ApiError(403, "the router cannot tell which of its devices is asking: open "
                                "http://<your gateway>/ from a device plugged into the router (over IPv4)")
        device = api.ctx.state.get_device(mac)
        if device is None or device.state not in ("pending", "permitted"):
            raise ApiError(403, "this device has been kept out; set the router up from another one")
        try:
            new = check_new_password(body.password)
        except ValueError as exc:
            raise ApiError(400, f"the new {exc}") from None
        if not firsthour.wired_port(api.ctx, mac):
            proof = body.proof
            if not (isinstance(proof, str) and (firsthour.setup_code_matches(self.state_dir, proof)
                                                or api.auth.check_password(proof))):
                api.limiter.failed(call.caller.key)
                log.warning("set-up from %s (%s, not on a wired port) refused: wrong console password "
                            "or set-up code", mac, call.client)
                raise ApiError(401, "that is neither the password on the router's screen nor the set-up code "
                                    "from the factory reset. Without either, plug this device into one of "
                                    "the router's ports with a cable and set it up from there.")
        # Let the device in first: a half-done set-up then leaves the offer open for a retry
        # from this (now permitted) device, never a password nobody can use from the LAN.
        self.in_setup.add(mac)
        try:
            if device.state != "permitted":
                api.command("permit", mac=mac)
            api.auth.set_password(new, chosen=True)
        finally:
            self.in_setup.discard(mac)
        firsthour.drop_setup_code(self.state_dir)
        api.limiter.succeeded(call.caller.key)
        ticket = secrets.token_urlsafe(32)
        with self.lock:
            now = api.ctx.now()
            for key in [k for k, (_, exp) in self.tickets.items() if exp < now][:MAX_TICKETS]:
                del self.tickets[key]
            while len(self.tickets) >= MAX_TICKETS:
                self.tickets.pop(next(iter(self.tickets)))
            self.tickets[hashlib.sha256(ticket.encode()).hexdigest()] = (mac, now + TICKET_SECONDS)
        lease = api.ctx.leases.get(mac)
        board = f"https://{lease.router}/" if lease else ""
        log.warning("the router was set up from %s (%s): the household's password is set and that device "
                    "is let in", mac, call.client)
        return {"permitted": mac, "board": board, "ticket": ticket, "expires_in": int(TICKET_SECONDS),
                "tls_sha256": firsthour.certificate_fingerprint(self.state_dir)}

    @post("/setup/session", Access.PUBLIC, "Open the household's Guest Board session with the ticket a set-up "
          "answered (public; once, from the device that set up, over HTTPS)", name="setupSession",
          body=TicketBody, body_required=True, answer=LoginAnswer, before="refuse_locked_out",
          errors={401: "the ticket was used, has expired or is another device's",
                  429: "too many failed logins from this device"})
    def session(self, call, body):
        api = self.api
        key = hashlib.sha256(body.ticket.encode()).hexdigest()
        with self.lock:
            mac, expires = self.tickets.get(key, ("", 0.0))
            valid = bool(mac) and expires >= api.ctx.now() and mac == call.client_mac
            if valid:
                del self.tickets[key]
        if not valid:
            api.limiter.failed(call.caller.key)
            raise ApiError(401, "this set-up link has been used or has expired: log in with the new password")
        api.limiter.succeeded(call.caller.key)
        return api.new_session(call)
