"""Notifications: what the household should hear about (a new device asking to
join, a device blacklisted, alerts) kept as a bounded read/unread list in state.db, shown
on the Guest Board, and delivered to webhooks (signed, retried off the event loop)."""
from .component import Notify

COMPONENT = Notify
