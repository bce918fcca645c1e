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

from ... import cutoff_pages, firsthour
from ...cutoff import PENDING

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


def add_routes(app) -> None:
    from .app import ApiError, json_response     # here: app.py imports this module
    from .auth import check_new_password
    from ...state import StorageError

    tickets: dict[str, tuple[str, float]] = {}    # sha256(ticket) -> (mac, expires)
    lock = threading.Lock()
    claiming = threading.Lock()      # one set-up at a time: two devices cannot both win
    in_setup: set[str] = set()       # the device a set-up is letting in (its own permit event)
    state_dir = app.ctx.config.state_dir

    def window_open() -> bool:
        return not app.auth.password_chosen()

    def close_on_decision(topic: str, ev) -> None:
        """A device let in by another door (the CLI, a restore's devices): the household
        is in charge, so the offer closes (ev: events.Device)."""
        if ev.state == "permitted" and ev.mac not in in_setup and window_open():
            try:
                app.auth.adopt_password()
            except StorageError:
                log.warning("could not close the set-up offer (storage)")
            firsthour.drop_setup_code(state_dir)
            log.info("set-up offer closed: %s was let in", ev.mac)

    def needs(call) -> str:
        if firsthour.wired_port(app.ctx, call.client_mac):
            return "nothing"
        return "console-password-or-setup-code"

    def status(call):
        mac = call.client_mac
        device = app.ctx.state.get_device(mac) if mac else None
        mac = mac if device is not None and device.state in ("pending", "permitted") else None
        out = {"open": window_open(), "device": mac is not None, "wired": False, "needs": None}
        if out["open"] and mac:
            out["wired"] = firsthour.wired_port(app.ctx, mac) is not None
            out["needs"] = needs(call)
            out["setup_code_issued"] = firsthour.has_setup_code(state_dir)
        return json_response(out)

    def refuse_locked_out(call) -> None:
        wait = app.limiter.retry_after(call.caller.key)
        if wait:
            raise ApiError(429, f"too many wrong passwords or codes from this device; try again in "
                                f"{int(wait) + 1} seconds", {"Retry-After": str(int(wait) + 1)})

    def set_up(call):
        refuse_locked_out(call)
        data = app.fields(call, {"password", "proof"})
        with claiming:
            return claim(call, data)

    def claim(call, data):
        if not window_open():
            raise ApiError(409, "this router is set up already: ask someone in the household to let this "
                                "device in on the Guest Board")
        mac = call.client_mac
        if mac is None:
            raise ApiError(403, "the router cannot tell which of its devices is asking: open "
                                "http://<your gateway>/ from a device plugged into the router (over IPv4)")
        device = app.ctx.state.get_device(mac)
        if device is None or device.state not in ("pending", "permitted"):
            raise ApiError(403, "this device has been kept out; set the router up from another one")
        try:
            new = check_new_password(data.get("password"))
        except ValueError as exc:
            raise ApiError(400, f"the new {exc}") from None
        if not firsthour.wired_port(app.ctx, mac):
            proof = data.get("proof")
            if not (isinstance(proof, str) and (firsthour.setup_code_matches(state_dir, proof)
                                                or app.auth.check_password(proof))):
                app.limiter.failed(call.caller.key)
                log.warning("set-up from %s (%s, not on a wired port) refused: wrong console password "
                            "or set-up code", mac, call.client)
                raise ApiError(401, "that is neither the password on the router's screen nor the set-up code "
                                    "from the factory reset. Without either, plug this device into one of "
                                    "the router's ports with a cable and set it up from there.")
        # Let the device in first: a half-done set-up then leaves the offer open for a retry
        # from this (now permitted) device, never a password nobody can use from the LAN.
        in_setup.add(mac)
        try:
            if device.state != "permitted":
                app.command("permit", mac=mac)
            app.auth.set_password(new, chosen=True)
        finally:
            in_setup.discard(mac)
        firsthour.drop_setup_code(state_dir)
        app.limiter.succeeded(call.caller.key)
        ticket = secrets.token_urlsafe(32)
        with lock:
            now = app.ctx.now()
            for key in [k for k, (_, exp) in tickets.items() if exp < now][:MAX_TICKETS]:
                del tickets[key]
            while len(tickets) >= MAX_TICKETS:
                tickets.pop(next(iter(tickets)))
            tickets[hashlib.sha256(ticket.encode()).hexdigest()] = (mac, now + TICKET_SECONDS)
        lease = app.ctx.leases.get(mac)
        board = f"https://{lease.router}/" if lease else ""
        log.warning("the router was set up from %s (%s): the household's password is set and that device "
                    "is let in", mac, call.client)
        return json_response({"permitted": mac, "board": board, "ticket": ticket,
                              "expires_in": int(TICKET_SECONDS),
                              "tls_sha256": firsthour.certificate_fingerprint(state_dir)})

    def session(call):
        refuse_locked_out(call)
        data = app.fields(call, {"ticket"})
        ticket = data.get("ticket")
        key = hashlib.sha256(ticket.encode()).hexdigest() if isinstance(ticket, str) else ""
        with lock:
            mac, expires = tickets.get(key, ("", 0.0))
            valid = bool(mac) and expires >= app.ctx.now() and mac == call.client_mac
            if valid:
                del tickets[key]
        if not valid:
            app.limiter.failed(call.caller.key)
            raise ApiError(401, "this set-up link has been used or has expired: log in with the new password")
        app.limiter.succeeded(call.caller.key)
        return app.new_session(call)

    cutoff_pages.add_piece(PENDING, setup_offer)        # on the pending device's page
    app.ctx.bus.subscribe("device", close_on_decision)
    app._add("GET", "/setup/?", status, "asking")
    app._add("POST", "/setup/?", set_up, "asking")
    app._add("POST", "/setup/session/?", session, "public")
