"""Prometheus metrics: the collector's families and names, per-device totals from
routing's bus events, the bound on per-device series, promtool's check, and the API route."""
import subprocess

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import make_core
from homework.components.metrics.collect import HomeworkCollector, counter_name
from homework.components.metrics.traffic import DeviceTraffic, TrafficTotals
from homework.events import FlowRecord, Flows
from homework.flows import Datapath
from routingkit import join
from test_api import Api

A, B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
WEB = "203.0.113.10"


def samples(text):
    """{(sample name, frozenset(labels)): value}"""
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def render(collector):
    from prometheus_client import CollectorRegistry, generate_latest
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry).decode()


def collector(**over):
    parts = dict(counters=lambda: {"dhcp": {"offers": 3, "acks": 2}, "dns": {"queries.total": 7}},
                 traffic=lambda: {A: DeviceTraffic(up_bytes=10, down_bytes=2000, flow_packets=4)},
                 names=lambda: {A: 'Mary\'s "phone"\nx'},
                 device_states=lambda: {"permitted": 1, "pending": 2},
                 active_leases=lambda: 1,
                 health=lambda: {"hwdbd": True, "dnsd": False})
    parts.update(over)
    return HomeworkCollector(**parts)


# -- the collector ---------------------------------------------------------------------------------
def test_counter_names_follow_prometheus_conventions():
    assert counter_name("dhcp", "offers") == "homework_dhcp_offers"
    assert counter_name("dns", "queries.total") == "homework_dns_queries"      # `_total` added once
    assert counter_name("core", "Packet-In") == "homework_core_packet_in"


def test_renders_counters_devices_and_health_in_text_format():
    text = render(collector())
    got = samples(text)
    assert got[("homework_dhcp_offers_total", frozenset())] == 3
    assert got[("homework_dns_queries_total", frozenset())] == 7
    labels = frozenset({"mac": A, "name": 'Mary\'s "phone"\nx'}.items())     # escaped and parsed back
    assert got[("homework_device_receive_bytes_total", labels)] == 2000
    assert got[("homework_device_transmit_bytes_total", labels)] == 10
    assert got[("homework_device_flow_packets_total", labels)] == 4
    assert got[("homework_devices", frozenset({"state": "pending"}.items()))] == 2
    assert got[("homework_dhcp_active_leases", frozenset())] == 1
    assert got[("homework_hwdbd_up", frozenset())] == 1
    assert got[("homework_dnsd_up", frozenset())] == 0
    assert "# TYPE homework_device_receive_bytes_total counter" in text
    assert "# TYPE homework_dnsd_up gauge" in text


def test_output_passes_promtool_check_metrics():
    text = render(collector())
    result = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_registry_names_that_sanitize_alike_yield_one_family():
    text = render(collector(counters=lambda: {"a": {"b-c": 1, "b_c": 2}}))
    assert text.count("# TYPE homework_a_b_c_total counter") == 1


# -- per-device totals -----------------------------------------------------------------------------
def test_traffic_sums_bandwidth_events_and_flow_packets():
    t = TrafficTotals()
    t.on_bandwidth({"mac": A, "bytes": 150, "up": 50, "down": 100}, now=1.0)
    t.on_bandwidth({"mac": A, "bytes": 30, "up": 0, "down": 30}, now=2.0)
    t.on_flows(Flows(records=(FlowRecord(A, 6, "10.2.0.2", 40000, WEB, 443, 5, 90),
                              FlowRecord(A, 6, WEB, 443, "10.2.0.2", 40000, 3, 900),
                              FlowRecord(B, 17, "10.2.0.3", 5000, WEB, 53, 1, 60))), now=2.0)
    d = t.snapshot()[A]
    assert (d.up_bytes, d.down_bytes, d.flow_packets, d.last_seen) == (50, 130, 8, 2.0)
    assert t.snapshot()[B].flow_packets == 1


def test_series_of_a_device_without_lease_end_after_keep_seconds():
    t = TrafficTotals(keep_seconds=100)
    t.on_bandwidth({"mac": A, "bytes": 1, "up": 1, "down": 0}, now=0.0)
    t.on_bandwidth({"mac": B, "bytes": 1, "up": 1, "down": 0}, now=0.0)
    assert t.prune(leased={B}, now=50.0) == 0
    assert t.prune(leased={B}, now=101.0) == 1          # A: no lease, quiet too long
    assert set(t.snapshot()) == {B}                     # B still has a lease


@pytest.fixture
def core(tmp_path, clock):
    core = make_core(tmp_path, components=("dhcp", "routing", "api", "metrics"), clock=clock,
                     metrics_device_keep_seconds=600)
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    return core


def test_component_exports_bandwidth_events_and_prunes_departed_devices(core, clock):
    join(core, A, 1)
    core.ctx.devices.set_meta(A, name="laptop")
    core.bus.publish("bandwidth", mac=A, ip="10.2.0.2", bytes=1500, up=500, down=1000)
    core.bus.publish("bandwidth", mac=B, ip="10.2.0.6", bytes=10, up=10, down=0)   # no lease
    got = samples(core.commands.call("metrics"))
    assert got[("homework_device_receive_bytes_total", frozenset({"mac": A, "name": "laptop"}.items()))] == 1000
    assert got[("homework_dhcp_active_leases", frozenset())] == 1
    assert got[("homework_dhcp_acks_total", frozenset())] >= 1          # the registry's DHCP totals
    clock.advance(601)
    core.ctx.component("metrics").prune()
    names = {dict(k[1]).get("mac") for k in samples(core.commands.call("metrics"))}
    assert A in names and B not in names


def test_api_serves_metrics_to_read_only_tokens_only(core):
    api = Api(core)
    assert api.call("GET", "metrics").status_int == 401
    r = api.call("GET", "metrics", token=api.token("read-only"))
    assert r.status_int == 200
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert "homework_dhcp_active_leases 0.0" in r.text


def test_api_says_when_the_component_is_not_loaded(tmp_path, clock):
    core = make_core(tmp_path, components=("dhcp", "routing", "api"), clock=clock)
    api = Api(core)
    r = api.call("GET", "metrics", token=api.token("read-only"))
    assert r.status_int == 503 and "metrics component" in r.json["error"]
