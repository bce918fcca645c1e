"""Notify's manifest (homework/manifest.py): the notifications and delivery logs (not
backed up), the webhooks with their signing secrets (backed up, encrypted), the devices'
presence alerts (settings rows, backed up), what it hears and publishes, its counters and
its commands' CLI form."""
from __future__ import annotations

from ... import events, rowcheck
from ...interfaces import BrokerStatus
from ...manifest import Manifest, NotBackedUp, Secrets
from .component import PRESENCE, check_presence
from .webhooks import BadWebhook, check_url


def webhook_row(r: dict) -> None:
    rowcheck.text(r["id"], "id", empty=False)
    try:
        check_url(r["url"])          # the check a webhook-add makes
    except BadWebhook as exc:
        raise ValueError(str(exc)) from None
    rowcheck.text(r["secret"], "secret")
    rowcheck.number(r.get("created", 0), "created")
    rowcheck.number(r.get("allow_local", 0), "allow_local", 0, 1, whole=True)


MANIFEST = Manifest(
    component="notify",
    tables=(
        NotBackedUp("notifications", (5,), "a log of what happened on this router"),
        Secrets("webhooks", (5, 15), ("id", "url", "secret", "created", "allow_local"), webhook_row),
        NotBackedUp("webhook_deliveries", (5,), "a log of deliveries"),
        NotBackedUp("webhook_queue", (15,),
                    "deliveries waiting for a retry: a restore replaces the webhooks they were for"),
    ),
    routes=("notifications",),
    needs={"broker": BrokerStatus},
    publishes=(events.Notification,),
    hears=(events.Device, events.Alert, events.Lease),
    settings_keys={PRESENCE: check_presence},          # a device's presence alert: notify.presence.<mac> = on
    carries={PRESENCE: "presence alert"},
    cli={"presence-alert": (("mac", "on?"), "tell me when this device comes home or leaves: on or off (none: show)"),
         "presence-alerts": ((), "the devices whose coming and going you are told of")},
    counters={
        "notify.notifications": "notifications kept",
        "notify.deduplicated": "notifications left out as a repeat of a recent one",
        "notify.webhook_ok": "webhook deliveries answered with success",
        "notify.webhook_failed": "webhook delivery attempts that failed",
        "notify.webhook_given_up": "webhook deliveries given up after their last attempt",
        "notify.webhook_dropped": "webhook deliveries dropped because the queue was full",
        "notify.presence": "leases begun or ended of devices whose presence alert is on",
    },
)
