"""End to end: latency under load behind a slow ISP link with a cable modem's
deep buffer (homelab isp_link: 20/5 Mbit/s, 500 ms of queue each way), on real Open vSwitch
with the real controller, the ws.v1 API through lighttpd, iperf3 and ping.

One "bulk" device saturates the link down and up (iperf3, 8 streams each way) for the whole
test while a "prio" device (set "high") pings the internet and fetches a small page:
  - with qos off the queue builds in the modem; with qos on (the router shapes just below
    the line) the prio device's median RTT and page time are far lower, measured in this
    same test, and the bulk device still gets most of the shaped rate;
  - a class change moves running traffic: the bulk device set "high" (a class capped at
    qos.high_share of the line) has its running download held to that cap within a few
    seconds, and set back to "default" it has the link again.
No wall-clock thresholds: every figure is compared with another measured here."""
from __future__ import annotations

import os
import statistics
import time

import pytest

from homelab.latency import BulkLoad, http_seconds, ping_rtts
from homelab.routing import permitted_device
from homelab.web import Web, api, have_web, web_home

LINK = {"down_kbit": 20000, "up_kbit": 5000, "buffer_ms": 500}
SHAPED_DOWN = LINK["down_kbit"] * 90 // 100        # qos.down_percent
HIGH_SHARE = 30
LOAD_SECONDS = 50


@pytest.fixture(scope="module")
def home():
    why = ("needs root (network namespaces, OVS)" if os.geteuid() != 0 else None) or have_web()
    if why:
        pytest.skip(why)
    config = {"controller": {"components": ["dhcp", "routing", "qos"]},
              "qos": {"enabled": True, "down_kbit": LINK["down_kbit"], "up_kbit": LINK["up_kbit"],
                      "high_share": HIGH_SHARE}}
    with web_home(config, hwdb=False, isp_link=LINK) as h:
        h.web = Web(h).start()
        yield h


def post(home, path: str, body: dict) -> dict:
    r = api(home.web, "POST", path, json=body)
    assert r.status_code == 200, (path, body, r.status_code, r.text)
    return r.json()


def rtt_median(dev, seconds: float = 4) -> float:
    rtts = ping_rtts(dev, seconds=seconds, interval=0.1)
    assert len(rtts) >= seconds * 10 // 2, f"{dev.name}: most pings lost ({len(rtts)} replies)"
    return statistics.median(rtts)


def page_median(dev) -> float:
    times = [http_seconds(dev) for _ in range(3)]
    assert all(t is not None for t in times), times
    return statistics.median(times)


@pytest.mark.machine
def test_shaping_keeps_the_prio_device_fast_under_load_and_class_changes_move_running_traffic(home):
    bulk, prio = permitted_device(home, "bulk"), permitted_device(home, "prio")
    post(home, f"qos/devices/{prio.mac}", {"class": "high"})
    idle = rtt_median(prio, 1)

    with BulkLoad(home, bulk, LOAD_SECONDS) as load:
        # qos on: the router shapes just below the line, so the queue is its own (after the
        # streams' slow start, whose overshoot into the modem drains only at the spare 10%).
        time.sleep(8)
        t0 = load.elapsed()
        rtt_on, page_on = rtt_median(prio), page_median(prio)
        shaped = (t0, load.elapsed())

        # The bulk device into the capped high class, then back: its running flows follow.
        post(home, f"qos/devices/{bulk.mac}", {"class": "high"})
        t1 = load.elapsed()
        time.sleep(8)
        capped = (t1 + 2, load.elapsed())
        post(home, f"qos/devices/{bulk.mac}", {"class": "default"})
        t2 = load.elapsed()
        # Out of the cap the flows' windows grow back by the clock (CUBIC, at a few ms of
        # RTT), which takes several seconds after the losses the cap cost them: measured
        # 6 to 14 s after the change (3 to 8 s was too early on a slow CI machine).
        time.sleep(14)
        released = (t2 + 6, load.elapsed())

        # qos off: the modem's 500 ms buffers fill (filling takes TCP a moment; draining a
        # full one at the 5% the shaper leaves spare would take ~10 s, hence this order).
        post(home, "qos/link", {"enabled": False})
        time.sleep(4)
        rtt_off, page_off = rtt_median(prio), page_median(prio)
        load.wait()
        # Medians of the 1 s intervals: a class change costs the running flows losses, and a
        # retransmission's backlog reaches iperf3 in one burst above the cap.
        rate_shaped, rate_capped, rate_released = (load.window(*w, average=statistics.median)
                                                   for w in (shaped, capped, released))

    print(f"idle RTT {idle:.1f} ms; under load: qos off {rtt_off:.1f} ms (page {page_off * 1000:.0f} ms), "
          f"on {rtt_on:.1f} ms (page {page_on * 1000:.0f} ms); bulk kbit/s shaped {rate_shaped}, "
          f"bulk high {rate_capped}, back to default {rate_released}")
    stats = api(home.web, "GET", "qos/stats").json()
    print("bulk download (s, kbit/s):", [(round(t, 1), round(k)) for t, k in load.intervals["down"]],
          f"phases at {t0:.1f}, {t1:.1f}, {t2:.1f} s")
    print("stats", stats)

    # With qos on the queue is the router's, not the modem's: the prio device's latency is
    # less than half of what it is without shaping.
    assert rtt_on < rtt_off / 2, (rtt_on, rtt_off)
    assert page_on < page_off / 2, (page_on, page_off)
    # ... while the bulk device keeps most of the shaped download (1 s intervals as iperf3's
    # receiver saw them; upload is left out: its sender-side intervals are too bursty).
    assert rate_shaped["down"] and rate_shaped["down"] > 0.5 * SHAPED_DOWN, rate_shaped
    # Running flows moved into the capped class, then out again.
    high_cap = SHAPED_DOWN * HIGH_SHARE / 100
    assert rate_capped["down"] and rate_capped["down"] < 1.5 * high_cap, (rate_capped, high_cap)
    assert rate_released["down"] and rate_released["down"] > 1.5 * rate_capped["down"], (rate_released, rate_capped)
