"""Notifications, webhooks and the notify settings page's status (components/notify):

    GET  /ws.v1/notifications?limit=&unread=   -> {unread, notifications: [...]}, newest first
    POST /ws.v1/notifications/read             {"ids": [...]} or nothing (all)
    POST /ws.v1/notifications/test
    GET  /ws.v1/webhooks | POST {"url"} | POST /webhooks/{id}/remove | GET /webhooks/deliveries?limit=
    GET  /ws.v1/notify/status                  MQTT (from the config file) and the WAN watch
    GET  /ws.v1/notifications/presence | GET, POST {"on"} /notifications/presence/{mac}
                                               tell me when this device comes home or leaves
"""
from __future__ import annotations

from typing import Any, Literal

from .devices import KNOWN_MAC, NOT_SEEN
from .model import Model, field
from .routes import Access, Param, RouteGroup, get, needs, post

NOTIFY = needs("notifications", "notifications are", "notify")
HOOK_ID = Param(str, "a webhook's id", example="1")


class Notification(Model):
    id: int
    at: float = field(doc="epoch seconds")
    kind: str = field(doc="what happened: new-device, blacklisted, an alert's kind, test, ...")
    mac: str = field(doc="the device it is about; '' for the router itself")
    title: str
    detail: str
    read: bool
    data: dict[str, Any] = field(optional=True, doc="the machine fields (as webhooks and MQTT get them): only in "
                                                    "the answer that made it")


class NotificationList(Model):
    unread: int = field(doc="unread notifications in all")
    notifications: list[Notification]


class ListQuery(Model):
    extra = "ignore"
    limit: str = field("100", doc="1 to 500")
    unread: str = field("", doc="1, true or yes: only the unread ones")


class LimitQuery(Model):
    extra = "ignore"
    limit: str = field("100", doc="1 to 500")


class ReadBody(Model):
    usage = '{"ids": [...]} or nothing (all)'
    ids: list[int] | None = field(optional=True, doc="notification ids; absent: every notification")


class Marked(Model):
    marked: int
    unread: int


class Webhook(Model):
    """A webhook, without its secret."""
    id: str
    url: str
    created: float
    allow_local: bool = field(doc="it may use an address of the household's own network or of the router")


class NewWebhook(Model):
    """A new webhook: the secret is in this answer only."""
    id: str
    url: str
    created: float
    allow_local: bool
    secret: str = field(doc="the receiver checks X-Homework-Signature: sha256=HMAC-SHA256(secret, body) with it")
    note: str


class WebhookBody(Model):
    usage = ('{"url": "https://..."} and, to allow an address on your own network, "allow_local": true')
    url: str = field(doc="an http or https URL (the router looks its name up before it keeps it)")
    allow_local: bool = field(False, doc="the household allows this webhook an address of its own network or of "
                                         "the router; otherwise such a URL is refused (400)")


class HookRemoved(Model):
    removed: str


class Delivery(Model):
    """One attempt to deliver a notification to a webhook."""
    id: int
    webhook: str
    notification: int
    at: float
    attempt: int
    status: str = field(doc="the receiver's HTTP status, or 'error: ...'")
    ok: bool


class MqttStatus(Model):
    """MQTT as set in the configuration file (never the password)."""
    loaded: bool
    host: str
    port: int
    username: str
    password_set: bool
    topic_prefix: str
    discovery_prefix: str
    accept_commands: bool
    connected: bool


class WanStatus(Model):
    interface: str
    state: Literal["up", "down", "unknown"]
    since: float | None
    reason: str


class NotifyStatus(Model):
    mqtt: MqttStatus
    wan: WanStatus | None = field(doc="null without the wanwatch component")


class PresenceAlert(Model):
    """Whether the household is told when a device comes home (a new lease) or leaves (its lease ends)."""
    mac: str
    on: bool
    text: str = field(doc="the same in words: 'You are told when Anna's phone comes home or leaves.'")


class PresenceBody(Model):
    usage = '{"on": true} or {"on": false}'
    on: bool = field(doc="true: tell the household when the device comes home or leaves")


class NotifyRoutes(RouteGroup):
    tag = "notify"

    @get("/notifications", Access.READ, "Notifications, newest first (new devices asking to join, blacklists, "
         "alerts), with the unread count", query=ListQuery, answer=NotificationList, needs=NOTIFY,
         errors={400: "a limit that is not 1-500"})
    def notifications(self, call, query):
        unread = query.unread in ("1", "true", "yes")
        return self.api.command("notifications", limit=query.limit, unread=unread)

    @post("/notifications/read", Access.ADMIN, 'Mark notifications read: {"ids": [...]}, or an empty body for all '
          "(admin)", name="markNotificationsRead", body=ReadBody, answer=Marked, needs=NOTIFY,
          errors={400: "an unknown field, or ids that are not a list of integers"}, board="markRead")
    def read(self, call, body):
        return self.api.command("notifications-read", ids=body.ids)

    @post("/notifications/test", Access.ADMIN, "Send a test notification (listed, and POSTed to every webhook) "
          "(admin)", name="testNotification", answer=Notification, needs=NOTIFY)
    def test(self, call):
        return self.api.command("notify-test")

    @get("/webhooks", Access.ADMIN, "The webhooks notifications are POSTed to, without their secrets (admin)",
         answer=list[Webhook], needs=NOTIFY)
    def webhooks(self, call):
        return self.api.command("webhooks")

    @post("/webhooks", Access.ADMIN, "Add a webhook: notifications are POSTed as JSON with X-Homework-Signature: "
          "sha256=HMAC-SHA256(secret, body); the secret is in this answer only (admin)", name="addWebhook",
          body=WebhookBody, body_required=True, answer=NewWebhook, needs=NOTIFY,
          errors={400: "not an http(s) URL, a local address without allow_local, other fields, or too many "
                       "webhooks"})
    def add(self, call, body):
        return self.api.command("webhook-add", url=body.url, allow_local=body.allow_local)

    @post("/webhooks/{hook_id}/remove", Access.ADMIN, "Remove a webhook (admin)", name="removeWebhook",
          answer=HookRemoved, needs=NOTIFY, params={"hook_id": HOOK_ID}, errors={404: "no such webhook"})
    def remove(self, call, hook_id):
        return self.api.command("webhook-remove", id=hook_id)

    @get("/webhooks/deliveries", Access.ADMIN, "The webhook delivery log, newest first: one row per attempt "
         "(admin)", name="webhookDeliveries", query=LimitQuery, answer=list[Delivery], needs=NOTIFY,
         errors={400: "a limit that is not 1-500"}, board="deliveries")
    def deliveries(self, call, query):
        return self.api.command("webhook-deliveries", limit=query.limit)

    @get("/notify/status", Access.ADMIN, "MQTT settings and status (set in the config file; never the password) "
         "and the WAN watch's state, for the settings page (admin)", name="notifyStatus", answer=NotifyStatus,
         needs=NOTIFY)
    def status(self, call):
        return self.api.command("notify-status")

    @get("/notifications/presence", Access.READ, "Every device whose coming and going the household is told of "
         "(the same as `homework presence-alerts`)", name="presenceAlerts", answer=list[PresenceAlert],
         needs=NOTIFY)
    def presence_alerts(self, call):
        return self.api.command("presence-alerts")

    @get("/notifications/presence/{mac}", Access.READ, "Whether the household is told when a device comes home "
         "or leaves", name="presenceAlert", answer=PresenceAlert, needs=NOTIFY, params={"mac": KNOWN_MAC},
         errors={404: NOT_SEEN})
    def presence_alert(self, call, mac):
        return self.api.command("presence-alert", mac=mac)

    @post("/notifications/presence/{mac}", Access.ADMIN, "Tell the household when a device comes home (a new "
          "lease) or leaves (its lease ends), or stop (admin)", name="setPresenceAlert", body=PresenceBody,
          body_required=True, answer=PresenceAlert, needs=NOTIFY, own_access="mac", params={"mac": KNOWN_MAC},
          errors={404: NOT_SEEN})
    def set_presence_alert(self, call, mac, body):
        return self.api.command("presence-alert", mac=mac, on=body.on)
