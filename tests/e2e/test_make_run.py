"""`make run` runs what the image runs: the emulated home of `python -m homelab.run` (what
scripts/run-home.sh starts) loads the router's one component list (homework.lineup, the
link simulator standing in for the radio), and each of the household's features answers
on the Guest Board and the CLI while it runs. The ISP link is the slow one, and the
emulated internet's web server serves downloads and streams over IPv4 and IPv6."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from homelab import REPO, WEB6_ADDR, WEB_ADDR, sh
from homelab.routing import wait_until

# make run ends at Ctrl-C, as a household's developer ends it (the last test); the
# smoke-mode timer is only a bound, so a run nobody interrupts still ends
RUN_SECONDS = 600


@pytest.fixture(scope="module")
def run():
    paths = [str(REPO / "nox-modules"), str(REPO / "hwdb" / "python"), str(REPO / "tests")]
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join(paths))
    proc = subprocess.Popen([sys.executable, "-m", "homelab.run", "--seconds", str(RUN_SECONDS)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO)
    lines: list[str] = []
    import threading

    def read():
        for line in proc.stdout:
            lines.append(line)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    text = lambda: "".join(lines)      # noqa: E731
    try:
        try:
            wait_until(lambda: "Guest Board:" in text() and re.search(r"dhcpcd3 .* is pending", text()), 120,
                       "make run's home up with its three devices asking")
        except AssertionError:
            raise AssertionError(text()[-3000:]) from None
        board = re.search(r"Guest Board:\s+(\S+)\s+\(admin password: ([^;]+);", text())
        socket_path = re.search(r"--socket (\S+) devices", text()).group(1)
        ns = re.search(r"ip netns exec (\S+) curl http", text()).group(1)
        yield {"proc": proc, "text": text, "url": board.group(1), "password": board.group(2),
               "socket": socket_path, "ns": ns, "run_id": ns.split("-")[0]}
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(60)
        reader.join(5)


def cli(run, *args, check=True):
    return sh([sys.executable, "-m", "homework.cli", "--socket", run["socket"], *args], check=check)


def test_the_image_components_are_loaded(run):
    from homework import lineup
    loaded = re.search(r"components: (.*)", run["text"]()).group(1).split(", ")
    expected = lineup.components({"dnsd", "hwdbd", "wan", "mqtt-broker"}, stand_ins=True)
    assert loaded == expected
    assert "linksim" in loaded and "radio" not in loaded


def test_household_features_answer_on_the_board_and_the_cli(run):
    import requests
    from homelab import RUN_DIR_PREFIX, RUN_ROOT
    s = requests.Session()
    ca = str(RUN_ROOT / f"{RUN_DIR_PREFIX}{run['run_id']}" / "web" / "tls" / "server.crt")
    base = run["url"] + "ws.v1/"
    r = s.post(base + "login", json={"password": run["password"]}, timeout=10, verify=ca)
    assert r.status_code == 200, r.text
    for path in ("usage", "usage/limits", "usage/cap", "schedules", "qos", "blocklists", "webhooks",
                 "notifications", "metrics", "devices", "dns-rules/household", "dns/queries", "local-names",
                 "system", "dns/safe-search"):
        r = s.get(base + path, timeout=20, verify=ca)
        assert r.status_code == 200, f"{path}: {r.status_code} {r.text[:200]}"
    assert "homework_" in s.get(base + "metrics", timeout=20, verify=ca).text
    out = cli(run, "--json", "usage")
    assert json.loads(out.stdout) is not None
    for args in (("usage-limits",), ("schedule", "list"), ("webhooks",), ("notifications",),
                 ("blocklist", "list"), ("qos",), ("names",)):
        res = cli(run, *args, check=False)
        assert res.returncode == 0, f"homework {' '.join(args)}: {res.stderr}"


def test_mqtt_hears_the_devices(run):
    router_ns = run["run_id"] + "-r"
    out = sh(["ip", "netns", "exec", router_ns, "mosquitto_sub", "-h", "127.0.0.1", "-t", "homework/#", "-v",
              "-C", "3", "-W", "30"], check=False, timeout=40).stdout
    assert "homework/" in out, out


def test_the_isp_link_is_the_slow_one(run):
    qdisc = sh(["ip", "netns", "exec", run["run_id"] + "-i", "tc", "qdisc", "show", "dev", "isp0"]).stdout
    assert re.search(r"tbf .*rate 20Mbit", qdisc), qdisc


def test_a_permitted_device_downloads_and_streams_and_usage_counts_it(run):
    mac = "02:68:77:01:00:02"        # udhcpc2: renews on a signal-free 30 s lease, quick to get its hour
    cli(run, "permit", mac)
    ns = run["ns"].rsplit("-", 1)[0] + "-d2"
    size = 6 << 20

    def fetch(url):
        res = sh(["ip", "netns", "exec", ns, "curl", "-s", "-o", "/dev/null", "-m", "20", "-w",
                  "%{http_code} %{size_download}", url], check=False, timeout=30)
        return res.stdout.split() if res.returncode == 0 else ["0", "0"]

    assert wait_until(lambda: fetch(f"http://{WEB_ADDR}/download/6M") == ["200", str(size)], 40,
                      "a 6 MB download over IPv4")
    assert fetch(f"http://[{WEB6_ADDR}]/download/6M") == ["200", str(size)]
    code, got = fetch(f"http://{WEB_ADDR}/stream/2000?seconds=2")
    assert code == "200" and int(got) > 0

    # the only device let out: the day's total is its traffic (the book is written each minute)
    wait_until(lambda: json.loads(cli(run, "--json", "usage", "day").stdout)["total"] >= 2 * size, 150,
               "usage to count both downloads")


def test_ctrl_c_ends_the_run_with_every_device_addressed(run):
    proc = run["proc"]
    assert proc.poll() is None, "the run ended before Ctrl-C:\n" + run["text"]()[-3000:]
    proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 90
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert proc.returncode == 0, run["text"]()[-3000:]
    assert "Ctrl-C: tearing down" in run["text"]() and "3 of 3 devices hold a /30" in run["text"]()
