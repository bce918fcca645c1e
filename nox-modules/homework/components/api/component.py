"""The `api` component: the ws.v1 HTTP API inside the controller process.

Server choice: eventlet's WSGI server. The controller already runs on eventlet (os-ken's
hub, with the standard library monkey-patched), so each connection is a green thread: a
long-lived Server-Sent Events stream costs a few KiB, and a handler calling into the
components needs no locking beyond what the CLI's control socket already relies on.
`os_ken.app.wsgi` is a thin layer over the same server that adds os-ken's app registry,
which we do not need; the stdlib http.server would add real threads under a patched
`threading` (green anyway) with none of the streaming support. The application itself is
plain WSGI (WebOb), so unit tests call it directly without sockets.

lighttpd in front terminates HTTPS and forwards /ws.v1/ here with X-Forwarded-For.
"""
from __future__ import annotations

import logging
import socket

from ...commands import CommandError
from ...component import Component
from ...events import Alert, AlertKind
from .app import ApiApp
from .auth import Auth
from . import panels
from .paneldisplay import CHECK_EVERY, PanelDisplay, register_commands as display_commands
from .board import Board
from .ratelimit import LoginLimiter
from .stream import MAX_STREAMS, EventStream

# Green threads of the WSGI server: one per request in progress or open event stream.
# Streams are capped at MAX_STREAMS, so the rest always serves ordinary calls.
POOL_SIZE = 256
assert POOL_SIZE - MAX_STREAMS >= 128


class ApiComponent(Component):
    name = "api"

    def __init__(self, ctx):
        super().__init__(ctx)
        cfg = ctx.config
        self.auth = Auth(ctx.state, ctx.now, cfg.api_session_lifetime, hash_off_loop=cfg.api_hash_off_loop)
        self.limiter = LoginLimiter(ctx.now)
        self.board = Board(ctx)
        self.stream = EventStream()
        self.display = PanelDisplay(ctx)              # panels' screens at night (paneldisplay.py)
        self.app = ApiApp(ctx, self.auth, self.limiter, self.board, self.stream,
                          hwdb_client_factory=self._hwdb_client if cfg.hwdb_enabled else None)
        self._sock = None
        self._server = None
        self._hwdb = None

    # -- life cycle ----------------------------------------------------------------------
    def start(self) -> None:
        generated = self.auth.ensure_password(self.ctx.config.api_admin_password_file)
        if generated:
            # Shown once: only its scrypt hash is stored.
            self.log.warning("Guest Board admin password (shown only now; change it with "
                             "`homework passwd`): %s", generated)
        self._register_commands()
        bus = self.ctx.bus
        for topic in ("device", "lease", "link", "bandwidth", "alert"):
            bus.subscribe(topic, self._on_event)
        bus.subscribe("schedule", self._on_schedule)     # a pause began or ended
        bus.subscribe("qos_device", self._on_schedule)   # a device's priority changed
        bus.subscribe("identity", self._on_schedule)     # what it looks like (components/identify)
        # cut off or back (an allowance used up, lifted or removed): the label says so at once
        bus.subscribe("cutoff", self._on_cutoff)
        bus.subscribe("restart", self._on_restart)       # every open board says so, and when back
        self.ctx.state.watch_storage(self._on_storage)
        if _under_eventlet():
            self._listen()
        else:
            self.log.info("not under eventlet (unit test?): the HTTP server is not started")

    def stop(self) -> None:
        # The server first: a listening socket closed under its accept() throws IOClosed
        # into it, which its loop does not catch, and the hub then dies with it (a
        # restart in place whose stop yields to the hub, e.g. satlink's, exited instead)
        if self._server is not None:
            self._server.kill()
            self._server = None
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None

    def _listen(self) -> None:
        import eventlet
        import eventlet.wsgi
        host, port = self.ctx.config.api_listen, self.ctx.config.api_port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self._sock = eventlet.listen((host, port), family=family)
        except OSError as exc:
            self.log.error("cannot listen on %s:%d (%s): the ws.v1 API is off", host, port, exc)
            return
        access_log = logging.getLogger("homework.api.access")

        class _Log:
            def write(self, line):
                access_log.debug(line.rstrip())

        self._server = eventlet.spawn(eventlet.wsgi.server, self._sock, self.app, log=_Log(), log_output=True,
                       max_size=POOL_SIZE, socket_timeout=60)
        self.log.info("ws.v1 API listening on http://%s:%d/ws.v1/", host, port)

    # -- commands shared with the CLI ----------------------------------------------------------
    def _register_commands(self) -> None:
        cmd = self.ctx.commands
        auth = self.auth

        def token_revoke(id):
            try:
                return auth.revoke_token(id)
            except LookupError as exc:
                raise CommandError(str(exc), 404) from None

        def set_password(password):
            auth.set_password(password)
            return {"password_changed": True, "sessions_ended": True}

        cmd.register("token-create", lambda name, role="read-only": auth.create_token(name, role))
        cmd.register("token-list", auth.tokens)
        cmd.register("token-revoke", token_revoke)
        cmd.register("set-password", set_password)
        panels.register_commands(self.ctx, auth, self.app.panel_pairing, self.board.label)   # panel pair/list/revoke
        display_commands(self.ctx, self.display)                                            # panel night / display
        self.ctx.every(CHECK_EVERY, self.display.tick)

    # -- storage health -> Alert -------------------------------------------------------------
    def _on_storage(self, status: dict) -> None:
        """Once per episode: writes started failing (the board's banner polls /session)."""
        if status["writable"]:
            self.log.warning("state storage writable again: queued writes saved")
            return
        what = "The router's storage is full" if status["full"] else "The router cannot write to its storage"
        kind = AlertKind.STORAGE_FULL if status["full"] else AlertKind.STORAGE_ERROR
        self.ctx.bus.publish(Alert(mac="", kind=kind,
                                   detail=f"{what}: changes are refused, and {status['queued_writes']} waiting "
                                          "changes are kept in memory until there is room again.",
                                   data={"queued_writes": status["queued_writes"], "error": status["error"]}))

    # -- bus -> Guest Board ------------------------------------------------------------------
    def _on_event(self, topic: str, payload) -> None:
        mac = payload.mac
        if not isinstance(mac, str):
            return
        if topic == "alert" and not mac:     # about the router itself, not a device
            self.stream.publish("alert", {**payload.as_dict(), "at": self.ctx.now()})
            return
        if topic == "link":
            metrics = self.board.on_link(payload)
            data = {"mac": mac, "metrics": metrics.as_dict()}
            if self.ctx.state.get_device(mac) is None:
                data["label"] = self.board.label(mac)
            self.stream.publish("link", data)
            return
        if topic == "bandwidth":
            metrics = self.board.on_bandwidth(payload)
            self.stream.publish("bandwidth", {"mac": mac, "metrics": metrics.as_dict()})
            return
        if topic == "alert":
            self.board.on_alert(payload)
            self.stream.publish("alert", {**payload.as_dict(), "at": self.ctx.now()})
            device = self.ctx.state.get_device(mac) if payload.kind in ("flow-limit", "usage-limit") else None
            if device:   # the label gets its flow-limit or usage mark (view["flow_limited"], ["usage_slowed"])
                self.stream.publish("device", {"mac": mac, "state": device.state, "reason": payload.kind,
                                               "view": self.board.view(device)})
            return
        device = self.ctx.state.get_device(mac)
        data = {k: v for k, v in payload.as_dict().items() if k not in ("device", "lease")}
        data["view"] = self.board.view(device) if device else None
        self.stream.publish(topic, data)

    def _on_restart(self, topic: str, ev) -> None:
        self.stream.publish("restart", {"why": ev.why, "back_in": ev.back_in, "at": self.ctx.now()})

    def _on_schedule(self, topic: str, payload) -> None:
        """The label shows "paused until ..." / "bedtime": the board gets the device's view."""
        device = self.ctx.state.get_device(payload.mac or "")
        if device is not None:
            reason = topic if topic in ("identity", "cutoff") else "schedule"
            self.stream.publish("device", {"mac": device.mac, "state": device.state, "reason": reason,
                                           "view": self.board.view(device)})

    def _on_cutoff(self, topic: str, payload) -> None:
        """Pending and denied come with their decision's device event already; every other
        cut (an allowance, a pause) and its end sends the device's view."""
        if payload.kind not in ("pending", "denied"):
            self._on_schedule(topic, payload)

    def _hwdb_client(self):
        if self._hwdb is None:
            import hwdb_client
            self._hwdb = hwdb_client.Client(self.ctx.config.hwdb_host, self.ctx.config.hwdb_port, timeout=3.0)
        return self._hwdb


def _under_eventlet() -> bool:
    try:
        from eventlet import patcher
    except ImportError:
        return False
    return patcher.is_monkey_patched("socket")
