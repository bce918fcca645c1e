"""The notify component: bus events -> notifications (state.db) -> webhooks.

Commands: notifications, notifications-read, webhooks, webhook-add, webhook-remove,
webhook-deliveries, notify-test, notify-status, presence-alert, presence-alerts. A burst of
the same alert for the same device within `DEDUP_SECONDS` makes one notification (a flood
must not flood the household's phones).

Presence alerts: "tell me when this device comes home or leaves", per device. A device is
home while it holds a lease (as MQTT's presence says): a new lease is "home", a lease
released, declined or run out is "left". Each device's choice is a row of the `settings`
table (`notify.presence.<mac>` = "on"; no row: off), kept in a backup with the check
`check_presence`, dropped when the device is forgotten."""
from __future__ import annotations

import builtins
from urllib.parse import urlsplit

from ...commands import CommandError, seen_device
from ... import wording
from ...component import Component
from ...interfaces import BrokerStatus
from ...netguard import Guard, LocalAddress, household_networks_of
from ...events import Device, Event, Lease, Notification, of
from ...macaddr import BadMac, normalize
from ...values import BadValue, switch, whole_number
from .deliver import Deliverer
from .events import WAN_TITLES, from_event
from .store import NotificationStore
from .webhooks import BadWebhook, WebhookStore, check_allow_local, check_url

DEDUP_SECONDS = 60.0
MAX_LIST = 500
PRESENCE = "notify.presence."     # + the device's MAC: its presence alert is on


# A presence alert's words: the title names the device, the detail says how the lease ended.
LEFT_DETAIL = {"expired": "Its address on the home network ran out: it is away or switched off.",
               "released": "It gave its address on the home network back as it left.",
               "declined": "It gave its address on the home network back."}


def presence_words(action: str, mac: str, who: str) -> dict:
    """Came home (a new lease) or left (its lease ended): a notification's fields."""
    if action not in LEFT_DETAIL:
        return {"kind": "device-home", "mac": mac, "title": wording.sentence(f"{who} is home"),
                "detail": "It has just joined the home network.", "data": {"lease": action}}
    return {"kind": "device-left", "mac": mac, "title": wording.sentence(f"{who} has left"),
            "detail": LEFT_DETAIL[action], "data": {"lease": action}}


def check_presence(key: str, value: str) -> str:
    """A stored presence alert (a restored `settings` row): the key names a MAC, the value is "on"."""
    try:
        normalize(key[len(PRESENCE):])
    except BadMac as exc:
        raise CommandError(f"{key}: {exc}") from None
    if value != "on":
        raise CommandError(f"{key} must be \"on\" (a device whose alert is off has no row), not {value!r}")
    return value


class Notify(Component):
    name = "notify"

    def __init__(self, ctx, broker: BrokerStatus | None = None):
        super().__init__(ctx)
        self.broker = broker        # the mqtt component's, for the status view; None: not loaded
        cfg = ctx.config
        self.store = NotificationStore(ctx.state, cfg.notify_keep)
        self.hooks = WebhookStore(ctx.state, cfg.notify_delivery_log_keep)
        self.guard = Guard(household_networks_of(ctx), ctx.host.interfaces)
        self.deliverer = Deliverer(self.hooks, self.hooks.log, ctx.count, ctx.now, cfg.notify_webhook_attempts,
                                   cfg.notify_webhook_backoff, cfg.notify_webhook_deadline, self.guard,
                                   self.hooks.target)
        self._recent: dict[tuple[str, str, str], float] = {}
        # Devices whose presence alert is on: read once, kept with the rows, so a burst of
        # leases asks nothing of SQLite (a read would flush the state store's write-behind).
        self._presence = {row["key"][len(PRESENCE):] for row in
                          ctx.state.execute("SELECT key FROM settings WHERE key LIKE ?", (PRESENCE + "%",))}

    def start(self) -> None:
        self.ctx.bus.subscribe("device", self._on_event)
        self.ctx.bus.subscribe("alert", self._on_event)
        self.ctx.bus.subscribe("lease", self._on_lease)
        cmd = self.ctx.commands.register
        cmd("notifications", self.list)
        cmd("notifications-read", self.mark_read)
        cmd("webhooks", self.hooks.all)
        cmd("webhook-add", self.webhook_add)
        cmd("webhook-remove", self.webhook_remove)
        cmd("webhook-deliveries", lambda limit=100: self.hooks.deliveries(_limit(limit)))
        cmd("notify-test", self.send_test)
        cmd("notify-status", self.status)
        cmd("presence-alert", self.presence_alert)
        cmd("presence-alerts", self.presence_alerts)
        self.deliverer.resume()

    def stop(self) -> None:
        self.deliverer.stop()

    def _on_event(self, topic: str, ev: Event) -> None:
        ev = of(topic, ev)
        if isinstance(ev, Device) and ev.state is None and ev.mac in self._presence:    # forgotten: its alert too
            self._set_presence(ev.mac, False)
        self._pass_on(from_event(topic, ev, lambda mac: wording.name_of(self.ctx.state, mac)))

    def _on_lease(self, topic: str, event: Lease) -> None:
        ev = of(topic, event)
        assert isinstance(ev, Lease)
        if (ev.action != "granted" and ev.action not in LEFT_DETAIL) or ev.mac not in self._presence:
            return
        self.ctx.count("notify.presence")
        self._pass_on(presence_words(ev.action, ev.mac, wording.name_of(self.ctx.state, ev.mac)))

    def _pass_on(self, fields: dict | None) -> None:
        if fields is None:
            return
        now = self.ctx.now()
        # a flood of one alert makes one notification; an allowance used up that slows the
        # device is other news than one that cut it off a minute before (its action differs)
        key = (fields["kind"], fields["mac"], str((fields.get("data") or {}).get("action") or ""))
        if fields["kind"] not in WAN_TITLES and now - self._recent.get(key, float("-inf")) < DEDUP_SECONDS:
            self.ctx.count("notify.deduplicated")
            return
        self._recent[key] = now
        if len(self._recent) > 4096:     # bounded: drop entries past the window
            self._recent = {k: t for k, t in self._recent.items() if now - t < DEDUP_SECONDS}
        self.notify(**fields)

    def notify(self, kind: str, mac: str, title: str, detail: str, test: bool = False,
               data: dict | None = None) -> dict:
        """Kept (the board's list has the words), and passed on with its machine fields
        (`data`: MQTT, webhooks)."""
        note = self.store.add(self.ctx.now(), kind, mac, title, detail)
        self.ctx.count("notify.notifications")
        note = {**note, "data": data or {}}
        self.ctx.bus.publish(Notification(**note))
        targets = self.hooks.targets()
        if targets:
            self.deliverer.submit(targets, {**note, "test": test})
        return note

    # -- commands --------------------------------------------------------------------------------
    def list(self, limit=100, unread=False) -> dict:
        return {"unread": self.store.unread(),
                "notifications": self.store.list(_limit(limit), unread_only=bool(unread))}

    def mark_read(self, ids=None) -> dict:
        if ids is not None:
            if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                                    and 0 <= i < 2**63 for i in ids):
                raise CommandError("ids must be a list of notification ids (integers from 0), or absent for all")
            if len(ids) > MAX_LIST:
                raise CommandError(f"at most {MAX_LIST} ids at once")
        return {"marked": self.store.mark_read(ids), "unread": self.store.unread()}

    def webhook_add(self, url, allow_local=False) -> dict:
        """`allow_local`: the household allows this webhook local addresses (its own
        network, the router's services); otherwise a URL that points there is refused."""
        if isinstance(allow_local, str):       # the CLI's word
            allow_local = allow_local.lower() in ("1", "true", "yes", "on")
        try:
            parts = urlsplit(check_url(url))
            self.guard.check_url_host(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80),
                                      check_allow_local(allow_local))
            hook = self.hooks.create(url, self.ctx.now(), allow_local)
        except (BadWebhook, LocalAddress) as exc:
            raise CommandError(str(exc)) from None
        return {**hook, "note": "keep the secret now: it is not shown again"}

    def webhook_remove(self, id) -> dict:  # noqa: A002 - the API's field name
        if not self.hooks.remove(str(id)):
            raise CommandError(f"no webhook {id!r}", status=404)
        self.deliverer.forget_hook(str(id))
        return {"removed": str(id)}

    def status(self) -> dict:
        """What the settings page shows besides webhooks: MQTT (set in the config file,
        read-only here; never the password) and the WAN watch, if loaded."""
        cfg = self.ctx.config
        commands = self.ctx.commands
        return {
            "mqtt": {"loaded": self.broker is not None, "host": cfg.mqtt_host, "port": cfg.mqtt_port,
                     "username": cfg.mqtt_username, "password_set": bool(cfg.mqtt_password_file),
                     "topic_prefix": cfg.mqtt_topic_prefix, "discovery_prefix": cfg.mqtt_discovery_prefix,
                     "accept_commands": cfg.mqtt_accept_commands,
                     "connected": self.broker is not None and self.broker.connected()},
            "wan": commands.call("wan-status") if "wan-status" in commands.names() else None,
        }

    def presence_alert(self, mac, on=None) -> dict:
        """A device's presence alert; `on` (true/false, or the CLI's on/off) sets it first."""
        mac = seen_device(self.ctx.state, mac)
        if on is not None:
            try:
                wanted = switch(on, "on")
            except BadValue as exc:
                raise CommandError(str(exc)) from None
            self._set_presence(mac, wanted)
        return self._presence_view(mac)

    def _set_presence(self, mac: str, on: bool) -> None:
        if on:
            self.ctx.state.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, 'on')", (PRESENCE + mac,))
            self._presence.add(mac)
        else:
            self.ctx.state.execute("DELETE FROM settings WHERE key=?", (PRESENCE + mac,))
            self._presence.discard(mac)

    def carry_device(self, old: str, new: str) -> builtins.list[str]:     # `list` is a command here
        """A device let in as the device it was: its presence alert moves to its new address."""
        if old not in self._presence:
            return []
        self._set_presence(old, False)
        self._set_presence(new, True)
        return ["presence alert"]

    def presence_alerts(self) -> builtins.list[dict]:
        return [self._presence_view(mac) for mac in sorted(self._presence)]

    def _presence_view(self, mac: str) -> dict:
        on = mac in self._presence
        who = wording.name_of(self.ctx.state, mac)
        return {"mac": mac, "on": on,
                "text": wording.sentence(f"you are told when {who} comes home or leaves" if on
                                         else f"you are not told when {who} comes home or leaves")}

    def send_test(self) -> dict:
        return self.notify("test", "", "This is a test notification from Homework.",
                           "If you can read this, notifications reach you.", test=True)


def _limit(value) -> int:
    try:
        return whole_number(value, "limit", 1, MAX_LIST)
    except BadValue as exc:
        raise CommandError(str(exc)) from None
