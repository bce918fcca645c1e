"""What the Guest Board shows about each device, computed from the device registry, the
DHCP leases and the bus events the API listens to (link, bandwidth, alert).

Zones (seed §4.3.3): "outside" (left: in range but not connected, or denied/blacklisted),
"asking" (centre: pending with a lease, or with an offer made in the last few seconds),
"permitted" (right).
Label name: the user's name, else the DHCP hostname, else the MAC vendor, else the MAC.

`link` events carry counters as `iw station dump` does (cumulative packets, bytes and
tx retries), so rates come from the difference between two reports. They come every
second or two and count everything on the device's link, so they set the label size.
`bandwidth` events (routing: bytes routed per flow-stats interval, ~10 s) are used only
for devices with no link reports (a wired port without a station dump).
"""
from __future__ import annotations
from ...events import Alert, Bandwidth, Link

import threading
import time
from collections import deque
from dataclasses import dataclass, field

from ... import wording
from ...oui import default_table, is_private

ASKING_GRACE = 10.0       # seconds a pending device stays "asking" after its last DHCP message
LINK_ONLY_TTL = 60.0      # a MAC heard only by the radio stays on the board this long
LINK_PREFERRED = 30.0     # seconds a link report keeps bandwidth events out
MAX_ALERTS = 20
MAX_LINK_ONLY = 256


@dataclass
class Metrics:
    rssi: float | None = None
    packets: int | None = None
    retries: int | None = None
    link_bytes: int | None = None
    link_at: float = 0.0
    retrans: float = 0.0          # share of packets retried in the last interval
    bps: float = 0.0              # bytes per second, last interval
    today: int = 0                # bytes since local midnight
    day: str = ""
    traffic_at: float = 0.0
    seen_at: float = 0.0          # last time the radio heard it; 0 = never (wired: no fading)
    leave_after: int = 600        # [radio] leave_after, so labels heard only by the radio fade too
    alerts: deque = field(default_factory=lambda: deque(maxlen=MAX_ALERTS))

    def as_dict(self) -> dict:
        return {"rssi": self.rssi, "retrans": round(self.retrans, 4), "link_at": self.link_at,
                "bps": round(self.bps, 1), "today_bytes": self.today, "seen_at": self.seen_at,
                "leave_after": self.leave_after}


class Board:
    def __init__(self, ctx, oui=None):
        self.ctx = ctx
        self.oui = oui or default_table()
        self._metrics: dict[str, Metrics] = {}
        self._lock = threading.Lock()
        # fn(views so far) -> more views for the snapshot (api/nearby.py's nearby devices)
        self.extra_views: list = []

    def _m(self, mac: str) -> Metrics:
        m = self._metrics.get(mac)
        if m is None:
            if len(self._metrics) >= MAX_LINK_ONLY * 4:
                self._forget_stale()
            m = self._metrics[mac] = Metrics(leave_after=self.ctx.config.radio_leave_after)
        return m

    def _forget_stale(self) -> None:
        known = {d.mac for d in self.ctx.devices.all()}
        cutoff = self.ctx.now() - LINK_ONLY_TTL
        for mac in [k for k, v in self._metrics.items() if k not in known and v.link_at < cutoff]:
            del self._metrics[mac]

    # -- bus events in ------------------------------------------------------------------
    def on_link(self, ev: Link) -> Metrics:
        now = self.ctx.now()
        with self._lock:
            m = self._m(ev.mac)
            packets, retries, nbytes = (_int(getattr(ev, k)) for k in ("packets", "retries", "bytes"))
            if m.packets is not None and packets is not None and retries is not None and m.retries is not None:
                dp, dr = packets - m.packets, retries - m.retries
                # No frames since the last report (a real station idling between two polls): no
                # new evidence, so the last share stands instead of the red blinking off.
                if dp > 0:
                    m.retrans = dr / dp if dr >= 0 else 0.0
            if nbytes is not None and m.link_bytes is not None:
                self._count(m, max(0, nbytes - m.link_bytes), now)
            elif nbytes is not None:
                m.traffic_at = now      # first report: the baseline for the next rate
            m.packets, m.retries, m.link_bytes = packets, retries, nbytes
            if ev.rssi is not None:
                m.rssi = float(ev.rssi)
            m.link_at = now
            # The radio says when the station was last active (inactive time); the simulator does not.
            m.seen_at = max(m.seen_at, float(ev.seen_at or now))
            return m

    def on_bandwidth(self, ev: Bandwidth) -> Metrics:
        now = self.ctx.now()
        with self._lock:
            m = self._m(ev.mac)
            if m.link_bytes is None or now - m.link_at > LINK_PREFERRED:
                # routing tells a device only while it moves bytes (then once with none), and
                # says how long each report covers: the rate is over that, not since the last one
                self._count(m, max(0, _int(ev.bytes) or 0), now, ev.seconds)
            return m

    def on_alert(self, ev: Alert) -> None:
        with self._lock:
            self._m(ev.mac).alerts.appendleft({"at": self.ctx.now(), "kind": str(ev.kind),
                                                  "detail": str(ev.detail)})

    def _count(self, m: Metrics, nbytes: int, now: float, seconds: float | None = None) -> None:
        day = time.strftime("%Y-%m-%d", time.localtime(now))
        if day != m.day:
            m.day, m.today = day, 0
        m.today += nbytes
        if seconds:
            m.bps = nbytes / max(float(seconds), 0.001)
        elif m.traffic_at:
            m.bps = nbytes / max(now - m.traffic_at, 0.001)
        m.traffic_at = now

    def forget_heard(self, mac: str) -> None:
        """a nearby MAC the radio stopped hearing leaves the snapshot too."""
        with self._lock:
            self._metrics.pop(mac, None)

    # -- views out ------------------------------------------------------------------------
    def metrics(self, mac: str) -> dict:
        with self._lock:
            m = self._metrics.get(mac)
            return m.as_dict() if m else Metrics().as_dict()

    def alerts(self, mac: str) -> list[dict]:
        with self._lock:
            m = self._metrics.get(mac)
            return list(m.alerts) if m else []

    def label(self, mac: str, name: str = "", hostname: str = "") -> dict:
        vendor = self.oui.vendor(mac)
        text, source = wording.label(mac, name, hostname, vendor)
        return {"label": text, "label_source": source, "vendor": vendor, "private": is_private(mac)}

    def view(self, device) -> dict:
        """The board's view of one registered device (a state.Device)."""
        lease = self.ctx.leases.get(device.mac)
        now = self.ctx.now()
        if device.state == "permitted":
            zone = "permitted"
        elif device.state == "pending" and lease and (lease.active or now - device.last_seen < ASKING_GRACE):
            zone = "asking"
        else:
            zone = "outside"
        view = device.as_dict()
        view.update(self.label(device.mac, device.name, device.hostname))
        view["zone"] = zone
        view["lease"] = ({"ip": lease.ip, "router": lease.router, "expires": lease.expires, "active": lease.active}
                         if lease else None)
        view["metrics"] = self.metrics(device.mac)
        view.update(self.ctx.facts_about(device.mac))
        return view

    def link_only_views(self, known: set[str]) -> list[dict]:
        """MACs the radio hears that never asked for an address: 'in range, not connected'."""
        cutoff = self.ctx.now() - LINK_ONLY_TTL
        with self._lock:
            macs = [mac for mac, m in self._metrics.items() if mac not in known and m.link_at >= cutoff]
        out = []
        for mac in macs[:MAX_LINK_ONLY]:
            view = {"mac": mac, "state": "unknown", "hostname": "", "name": "", "owner": "", "type": "",
                    "first_seen": 0.0, "last_seen": 0.0, "zone": "outside", "lease": None,
                    "metrics": self.metrics(mac)}
            view.update(self.label(mac))
            out.append(view)
        return out

    def all_views(self) -> list[dict]:
        # A device that has its lease is on the board: the daemon's ACKs not booked yet first.
        self.ctx.leases.settle()
        devices = self.ctx.devices.all()
        views = [self.view(d) for d in devices]
        views += self.link_only_views({d.mac for d in devices})
        for extra in self.extra_views:
            views += extra(views)
        return views


def _int(value) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
