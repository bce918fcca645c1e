"""The notify component: bus events -> notifications (state.db) -> webhooks.

Commands: notifications, notifications-read, webhooks, webhook-add, webhook-remove,
webhook-deliveries, notify-test, notify-status. A burst of the same alert for the same
device within `DEDUP_SECONDS` makes one notification (a flood must not flood the household's phones)."""
from __future__ import annotations

from urllib.parse import urlsplit

from ...commands import CommandError
from ... import wording
from ...component import Component
from ...interfaces import BrokerStatus
from ...netguard import Guard, LocalAddress, household_networks_of
from ...events import Event
from ...events import Notification
from ...values import BadValue, whole_number
from .deliver import Deliverer
from .events import WAN_TITLES, from_event
from .store import NotificationStore
from .webhooks import BadWebhook, WebhookStore, check_allow_local, check_url

DEDUP_SECONDS = 60.0
MAX_LIST = 500


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

    def start(self) -> None:
        self.ctx.bus.subscribe("device", self._on_event)
        self.ctx.bus.subscribe("alert", self._on_event)
        cmd = self.ctx.commands.register
        cmd("notifications", self.list)
        cmd("notifications-read", self.mark_read)
        cmd("webhooks", self.hooks.all)
        cmd("webhook-add", self.webhook_add)
        cmd("webhook-remove", self.webhook_remove)
        cmd("webhook-deliveries", lambda limit=100: self.hooks.deliveries(_limit(limit)))
        cmd("notify-test", self.send_test)
        cmd("notify-status", self.status)
        self.deliverer.resume()

    def stop(self) -> None:
        self.deliverer.stop()

    def _on_event(self, topic: str, ev: Event) -> None:
        fields = from_event(topic, ev, lambda mac: wording.name_of(self.ctx.state, mac))
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

    def send_test(self) -> dict:
        return self.notify("test", "", "This is a test notification from Homework.",
                           "If you can read this, notifications reach you.", test=True)


def _limit(value) -> int:
    try:
        return whole_number(value, "limit", 1, MAX_LIST)
    except BadValue as exc:
        raise CommandError(str(exc)) from None
