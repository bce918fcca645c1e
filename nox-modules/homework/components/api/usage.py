"""Usage in the ws.v1 API (components/usage): what the household used, against its cap,
per device over time, and the per-device or per-owner limits.

    GET  /ws.v1/usage?period=&by=            this hour, day or billing period, per device, owner or type
    GET  /ws.v1/usage/cap | POST {cap, billing_day}
    GET  /ws.v1/usage.csv?month=YYYY-MM
    GET  /ws.v1/usage/devices/{mac}?range=   one device's chart
    GET  /ws.v1/usage/limits | POST /usage/limits | /usage/limits/remove | /usage/lift
"""
from __future__ import annotations

from typing import Literal

from webob import Response

from .http import ApiError
from .model import Model, field
from .routes import Access, RouteGroup, get, needs, post
from .devices import KNOWN_MAC, NOT_SEEN
from .views import UsageBurst, UsageLimit

USAGE = needs("usage", "usage is", "usage")


class UsageQuery(Model):
    extra = "ignore"
    period: str = field("month", doc="hour, day or month (the billing period)")
    by: str = field("device", doc="device, owner or type")


class UsageRow(Model):
    period: str = field(doc="the hour, day or billing period's name")
    who: str = field(doc="a MAC, an owner or a device type; 'unassigned' without one")
    up: int
    down: int
    total: int


class UsageReport(Model):
    """Bytes used this hour, local day or billing period; devices without owner or type count
    as 'unassigned'."""
    period: Literal["hour", "day", "month"]
    by: Literal["device", "owner", "type"]
    start: int = field(doc="epoch seconds")
    end: int = field(doc="epoch seconds")
    label: str
    total: int
    rows: list[UsageRow]
    series: list[UsageRow] = field(doc="the same per hour (period hour or day) or per day (month)")
    steps: list[str] = field(doc="every hour or day of the series from the start to now, quiet ones included")


class CapBody(Model):
    usage = 'cap (bytes, or e.g. "500G") and/or billing_day (1-31)'
    cap: int | str | None = field(optional=True, doc='bytes, or with a decimal unit: "500G", "1.5T"; 0 = no cap',
                                  example="500G")
    billing_day: int | str | None = field(optional=True, doc="1-31", example=15)


class CapStatus(Model):
    """This billing period's use against the cap, and where it is heading."""
    cap: int = field(doc="bytes; 0 = no cap")
    billing_day: int
    start: int = field(doc="the billing period's start, epoch seconds")
    end: int
    used: int
    percent: float | None = field(doc="null without a cap")
    projected: int = field(doc="bytes by the period's end at this rate")
    projected_percent: float | None


class CsvQuery(Model):
    extra = "ignore"
    month: str = field("", doc="YYYY-MM; default this month", example="2026-11")


class RangeQuery(Model):
    extra = "ignore"
    range: str = field("day", doc="hour (per minute), day (per local hour) or month (per local day)")


class DeviceSeries(Model):
    """One device's bytes per bucket (the per-minute hour is kept in memory: it starts empty
    after a controller restart)."""
    mac: str
    range: Literal["hour", "day", "month"]
    step: Literal["minute", "hour", "day"]
    start: int
    end: int
    starts: list[int] = field(doc="each bucket's start, epoch seconds")
    labels: list[str] = field(doc="each bucket's local name")
    up: list[int]
    down: list[int]
    total: int


class LimitBody(Model):
    mac: str | None = field(optional=True, doc="the device (give mac or owner)")
    owner: str | None = field(optional=True, doc="every device of this owner, counted together")
    allowance: int | str | None = field(optional=True, doc='bytes, or e.g. "2G"', example="2G")
    period: str | None = field(optional=True, doc="day (default) or month")
    action: str | None = field(optional=True, doc="notify, slow or block (default)")
    rate: int | str | None = field(optional=True, doc='slow only: what the device keeps, e.g. "1mbit" or '
                                                      'kbit/s (default 1 Mbit/s)')


class TargetBody(Model):
    mac: str | None = field(optional=True, doc="the device (give mac or owner)")
    owner: str | None = field(optional=True, doc="every device of this owner")


class Removed(Model):
    removed: str = field(doc="the target: a MAC, or owner:NAME")


class Lifted(Model):
    lifted: list[str] = field(doc="the targets whose limit was lifted until the next period")


class BurstBody(Model):
    usage = '{"mac": "...", "size": "500M", "minutes": 10}'
    mac: str = field(doc="the device")
    size: int | str = field(doc='bytes, or with a decimal unit: "500M", "2G"; at least 1 MB', example="500M")
    minutes: int = field(doc="the window, 1-60 minutes", minimum=1, maximum=60, enforce=False, example=10)


class BurstTarget(Model):
    usage = '{"mac": "..."}'
    mac: str = field(doc="the device")


class BurstRemoved(Model):
    mac: str
    removed: bool = field(doc="false: it had no usage alert")


class UsageRoutes(RouteGroup):
    tag = "usage"

    @get("/usage", Access.READ, "Bytes used this hour, local day or billing period, per device, owner or device "
         "type (the same as `homework usage`)", query=UsageQuery, answer=UsageReport, needs=USAGE,
         errors={400: "period or by is not one of the listed values"})
    def usage(self, call, query):
        return self.api.command("usage", period=query.period, by=query.by)

    @get("/usage/cap", Access.READ, "The household cap: this billing period's use against it and the projection "
         "to its end (the same as `homework usage-cap`)", name="usageCap", answer=CapStatus, needs=USAGE)
    def cap(self, call):
        return self.api.command("usage-cap")

    @post("/usage/cap", Access.ADMIN, "Set the plan's monthly allowance and/or the billing day (alerts at 80% "
          "and 100%, once per period)", name="setUsageCap", body=CapBody, answer=CapStatus, needs=USAGE)
    def set_cap(self, call, body):
        given = {k: getattr(body, k) for k in body.given()}
        if not given:
            raise ApiError(400, f"send {CapBody.usage}")
        return self.api.command("usage-cap", **given)

    @get("/usage.csv", Access.READ, "A local calendar month of usage as CSV: one row per day and device (day, "
         "mac, name, owner, type, up_bytes, down_bytes, total_bytes)", name="usageCsv", query=CsvQuery,
         answer=str, content_type="text/csv", slash=False, needs=USAGE, errors={400: "month is not YYYY-MM"})
    def csv(self, call, query):
        text = self.api.command("usage-csv", month=query.month)
        resp = Response(text, content_type="text/csv", charset="utf-8")
        resp.headers["Content-Disposition"] = 'attachment; filename="usage.csv"'
        return resp

    @get("/usage/devices/{mac}", Access.READ, "One device's bytes up and down over the last hour (per minute), "
         "day (per local hour) or month (per local day): the Guest Board panel's chart", name="usageDevice",
         query=RangeQuery, answer=DeviceSeries, needs=USAGE, params={"mac": KNOWN_MAC}, errors={404: NOT_SEEN})
    def device(self, call, mac, query):
        return self.api.command("usage-device", mac=mac, span=query.range)

    @get("/usage/limits", Access.READ, "The per-device and per-owner usage limits (the same as `homework "
         "usage-limits`)", name="usageLimits", answer=list[UsageLimit], needs=USAGE)
    def limits(self, call):
        return self.api.command("usage-limits")

    @post("/usage/limits", Access.ADMIN, "Set a device's or an owner's allowance per day or month; when used "
          "up: notify (an Alert), slow or block (only DNS, HTTP and ICMP with its gateway until the next "
          "period or a lift)", name="setUsageLimit", body=LimitBody, answer=UsageLimit, needs=USAGE,
          own_access="body.mac", errors={400: "neither or both of mac and owner, a bad MAC, size, period, action "
                                              "or rate"})
    def set_limit(self, call, body):
        return self.api.command("usage-limit", **{k: getattr(body, k) for k in body.given()})

    @post("/usage/limits/remove", Access.ADMIN, "Remove a device's or an owner's limit (a block it caused ends)",
          name="removeUsageLimit", body=TargetBody, answer=Removed, needs=USAGE, own_access="body.mac",
          errors={404: "no limit for that"})
    def remove_limit(self, call, body):
        return self.api.command("usage-limit-remove", **{k: getattr(body, k) for k in body.given()})

    @post("/usage/lift", Access.ADMIN, "A household member lifts a reached limit (and its block) until the next "
          "period", name="liftUsageLimit", body=TargetBody, answer=Lifted, needs=USAGE, own_access="body.mac",
          errors={404: "no limit for that"})
    def lift(self, call, body):
        return self.api.command("usage-lift", **{k: getattr(body, k) for k in body.given()})

    @get("/usage/bursts", Access.READ, "Every device's usage alert ('more than X in Y minutes'; the same as "
         "`homework usage-bursts`)", name="usageBursts", answer=list[UsageBurst], needs=USAGE)
    def bursts(self, call):
        return self.api.command("usage-bursts")

    @post("/usage/bursts", Access.ADMIN, "Tell the household when a device moves more than `size` within "
          "`minutes` (an alert of kind usage-burst, once per burst)", name="setUsageBurst", body=BurstBody,
          body_required=True, answer=UsageBurst, needs=USAGE, own_access="body.mac",
          errors={400: "a bad MAC, an amount under 1 MB or not a size, minutes not 1-60", 404: NOT_SEEN})
    def set_burst(self, call, body):
        return self.api.command("usage-burst", mac=body.mac, size=body.size, minutes=body.minutes)

    @post("/usage/bursts/remove", Access.ADMIN, "Turn a device's usage alert off", name="removeUsageBurst",
          body=BurstTarget, body_required=True, answer=BurstRemoved, needs=USAGE, own_access="body.mac",
          errors={404: NOT_SEEN})
    def remove_burst(self, call, body):
        return self.api.command("usage-burst-remove", mac=body.mac)
