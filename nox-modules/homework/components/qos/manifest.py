"""QoS's manifest (homework/manifest.py): priorities per device and per application
(backed up; the link rates are in the core's settings table under "qos." keys), the
rate events it publishes every second, its alert and counters."""
from __future__ import annotations

from ... import events, rowcheck
from ...manifest import Manifest, NotBackedUp, Settings
from ..schedules.windows import WindowError
from . import rules
from .store import link_value


def _rule(r: dict, classes: tuple[str, ...]) -> None:
    """A priority row, checked by the qos component's own parsers."""
    try:
        rowcheck.choice(r["class"], "class", classes)
        window = r.get("window", "")
        rowcheck.text(window, "window")
        rules.window_from_text(window)
        if "ports" in r:
            rowcheck.text(r["ports"], "ports")
            rules.parse_ports(r["ports"])
            rowcheck.text(r.get("domains", ""), "domains")
            rules.parse_domains(r.get("domains", ""))
            rules.parse_name(r["name"])
    except (rules.CommandError, WindowError) as exc:
        raise ValueError(str(exc)) from None


def device_row(r: dict) -> None:
    rowcheck.mac(r["mac"])
    _rule(r, ("high", "medium"))


def host_app_row(r: dict) -> None:
    rowcheck.mac(r["mac"])
    rowcheck.text(r["name"], "name")
    rowcheck.choice(r["class"], "class", ("high", "medium"))


def app_row(r: dict) -> None:
    rowcheck.number(r["id"], "id", 1, whole=True)
    _rule(r, ("high", "medium", "default"))


MANIFEST = Manifest(
    component="qos",
    tables=(
        Settings("qos_devices", (10,), ("mac", "class", "window"), device_row),
        Settings("qos_apps", (10,), ("id", "name", "class", "ports", "domains", "window"), app_row),  # id: the ct mark
        Settings("qos_host_apps", (23,), ("mac", "name", "class"), host_app_row),
        NotBackedUp("qos_agents", (23,), "an installed agent's secret: a restored router gets its agents added "
                                         "again (each shows its new secret once)"),
    ),
    routes=("qos",),
    settings_keys={"qos.": lambda key, value: link_value(key[len("qos."):], value)},   # the link's rates
    publishes=(events.QosRate, events.QosAppRate, events.QosDevice, events.QosApp, events.Alert, events.AppTuple),
    hears=(events.Lease, events.Ipv6Plan, events.DnsAnswer),
    alerts=(events.AlertKind.QOS_HIGH_DROPS, events.AlertKind.ISP_HIGH_DROPS),
    counters={
        "qos.applied": "shaping plans applied (tc and nftables)",
        "qos.apply_failed": "shaping plans that failed to apply (retried)",
        "qos.high_drop_alerts": "alerts that the high-priority class dropped packets",
        "qos.edge_drop_alerts": "alerts that the ISP edge's high queue for this home dropped packets",
        "qos.agent_reports": "reports from computers' agents (which application owns which connection)",
        "qos.agent_refused": "agent reports refused (unknown secret, or not from the agent's own computer)",
    },
    carries={"qos_devices": "priority"},
    stays={"qos_host_apps": "the end-host agent's priorities go with its agent, paired again for the new address",
           "qos_agents": "an agent's secret was given for the old address: the computer pairs its agent again"},
)
