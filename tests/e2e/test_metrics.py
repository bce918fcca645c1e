"""End to end: Debian's Prometheus, running in the router namespace, scrapes
`/ws.v1/metrics` over HTTPS through lighttpd with a read-only bearer token; its query API
returns a device's received-bytes counter matching a known download from the emulated
internet; the page passes `promtool check metrics`."""
from __future__ import annotations

import json
import os
import subprocess

import pytest
import requests

from homelab import WEB_ADDR
from homelab.routing import curl, permitted_device, wait_until
from homelab.web import Web, web_home

PROM_PORT = 19090


@pytest.fixture(scope="module")
def home():
    config = {"controller": {"components": ["dhcp", "routing", "metrics"]},
              "routing": {"flow_stats_interval": 1}}
    with web_home(config=config) as h:
        h.web = Web(h).start()
        yield h


def start_prometheus(home, web: Web) -> None:
    pdir = home.dir / "prometheus"
    pdir.mkdir(exist_ok=True)
    token_file = pdir / "token"
    token_file.write_text(web.token("read-only"))
    token_file.chmod(0o600)
    config = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
              "scrape_configs": [{
                  "job_name": "homework", "scheme": "https", "metrics_path": "/ws.v1/metrics",
                  "authorization": {"type": "Bearer", "credentials_file": str(token_file)},
                  "tls_config": {"ca_file": web.ca},
                  "static_configs": [{"targets": [f"{web.router_addr}:443"]}]}]}
    conf = pdir / "prometheus.yml"
    conf.write_text(json.dumps(config))        # JSON is YAML
    log = open(pdir / "prometheus.log", "ab")
    home.router_popen(["prometheus", f"--config.file={conf}", f"--storage.tsdb.path={pdir / 'data'}",
                       f"--web.listen-address=127.0.0.1:{PROM_PORT}"],
                      stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def prom_query(home, expr: str) -> list[dict]:
    out = home.router(["curl", "-s", "-m", "3", "-G", f"http://127.0.0.1:{PROM_PORT}/api/v1/query",
                       "--data-urlencode", f"query={expr}"], check=False)
    try:
        body = json.loads(out.stdout)
    except ValueError:
        return []
    return body.get("data", {}).get("result", []) if body.get("status") == "success" else []


def test_prometheus_scrapes_a_devices_download(home):
    web = home.web
    start_prometheus(home, web)
    wait_until(lambda: prom_query(home, 'up{job="homework"} == 1'), 30, "Prometheus scraping /ws.v1/metrics")
    dev = permitted_device(home)
    size = 1_000_000
    (home.dir / "www" / "blob.bin").write_bytes(os.urandom(size))
    sent_before = home.isp_sent_bytes()
    assert curl(dev, f"http://{WEB_ADDR}/blob.bin", timeout=10).stdout == "200"
    expr = f'homework_device_receive_bytes_total{{mac="{dev.mac}"}}'

    def received():
        result = prom_query(home, expr)
        return float(result[0]["value"][1]) if result else 0.0
    # the learned entries report once removed (2 s after FIN) and flow stats poll every 1 s
    wait_until(lambda: received() >= size, 40, "Prometheus seeing the download")
    got = received()
    print(f"Prometheus: {got:.0f} bytes received for a {size} byte download")
    # Counted once, never twice: no more than the internet's side sent meanwhile (payload,
    # headers, the segments a loaded machine sends again) plus the router's own answers to
    # the device (DNS, pings to the gateway).
    wire = home.isp_sent_bytes() - sent_before
    assert size <= got <= wire + 50_000, (got, wire)
    [health] = prom_query(home, "homework_dhcp_active_leases")
    assert float(health["value"][1]) >= 1


def test_metrics_need_a_token_and_pass_promtool(home):
    web = home.web
    url = f"{web.url}ws.v1/metrics"
    assert requests.get(url, verify=web.ca, timeout=10).status_code == 401
    r = requests.get(url, headers=web.bearer("read-only"), verify=web.ca, timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert "homework_dhcp_acks_total" in r.text
    check = subprocess.run(["promtool", "check", "metrics"], input=r.content, capture_output=True)
    assert check.returncode == 0, check.stdout + check.stderr
