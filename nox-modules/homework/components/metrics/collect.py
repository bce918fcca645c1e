"""What `/ws.v1/metrics` exports, as a prometheus_client collector (the library renders
the text exposition format 0.0.4: escaping, HELP/TYPE lines, `_total` suffixes).

Families:
- homework_<part>_<what>_total: every counter of the controller's registry (counters.py),
  e.g. homework_dhcp_offers_total; so DHCP and DNS totals are the dhcp_* and dns_* ones;
  the help text is what the component's manifest says the counter counts;
- homework_device_receive_bytes_total / homework_device_transmit_bytes_total /
  homework_device_flow_packets_total {mac, name}: per device, since the controller started;
- homework_devices {state}: devices known per state; homework_dhcp_active_leases;
- homework_hwdbd_up / homework_dnsd_up: 1 when the controller's link to the daemon is up
  (only when the component that talks to it is loaded); homework_wan_up: 1 while wanwatch
  holds the WAN up (0 before its first confirmed look).

Cardinality: per-device series exist only for devices with an active lease or seen in the
last day (traffic.py), so at most pool size + the day's departed devices, times 3.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ... import manifest
from .traffic import DeviceTraffic

NAME_BAD = re.compile(r"[^a-zA-Z0-9_]")
# Health probes that are not a link to a daemon say what they measure.
HEALTH_HELP = {"wan": "1 if the router's WAN is up (wanwatch: carrier and a default route, debounced)"}


def counter_name(part: str, what: str) -> str:
    """'dhcp', 'offers' -> 'homework_dhcp_offers' (the library appends `_total`)."""
    name = NAME_BAD.sub("_", f"homework_{part}_{what}").lower()
    return name[: -len("_total")] if name.endswith("_total") else name


class HomeworkCollector(Collector):
    def __init__(self, counters: Callable[[], dict[str, dict[str, int]]],
                 traffic: Callable[[], dict[str, DeviceTraffic]],
                 names: Callable[[], dict[str, str]],
                 device_states: Callable[[], dict[str, int]],
                 active_leases: Callable[[], int],
                 health: Callable[[], dict[str, bool]]):
        self.counters = counters
        self.traffic = traffic
        self.names = names
        self.device_states = device_states
        self.active_leases = active_leases
        self.health = health

    def collect(self) -> Iterable:
        seen: set[str] = set()
        for part, values in sorted(self.counters().items()):
            for what, value in sorted(values.items()):
                name = counter_name(part, what)
                if name in seen:     # two registry names that sanitize alike: keep the first
                    continue
                seen.add(name)
                help_text = manifest.counter_help(f"{part}.{what}") or "a controller counter"
                yield CounterMetricFamily(name, f"{help_text} ({part}.{what})", value=value)

        labels = ["mac", "name"]
        rx = CounterMetricFamily("homework_device_receive_bytes",
                                 "bytes the device received (from the switch's flow counters)", labels=labels)
        tx = CounterMetricFamily("homework_device_transmit_bytes",
                                 "bytes the device sent (from the switch's flow counters)", labels=labels)
        pk = CounterMetricFamily("homework_device_flow_packets",
                                 "packets of the device's learned (per-connection) flows", labels=labels)
        names = self.names()
        for mac, d in sorted(self.traffic().items()):
            label_values = [mac, names.get(mac, "")]
            rx.add_metric(label_values, d.down_bytes)
            tx.add_metric(label_values, d.up_bytes)
            pk.add_metric(label_values, d.flow_packets)
        yield from (rx, tx, pk)

        states = GaugeMetricFamily("homework_devices", "devices the controller knows, per state",
                                   labels=["state"])
        for state, n in sorted(self.device_states().items()):
            states.add_metric([state], n)
        yield states
        yield GaugeMetricFamily("homework_dhcp_active_leases", "active DHCP leases",
                                value=self.active_leases())
        for daemon, up in sorted(self.health().items()):
            yield GaugeMetricFamily(f"homework_{daemon}_up",
                                    HEALTH_HELP.get(daemon, f"1 if the controller's link to {daemon} is up"),
                                    value=int(up))
