"""scripts/router-net.sh: `up` is idempotent and `down` removes what `up` made."""
from __future__ import annotations


import pytest

from homelab import BRIDGE, ROUTER_HWADDR, Home


@pytest.fixture
def bare_home():
    with Home(controller=False) as h:   # OVS + router-net.sh up, no controller
        yield h


def sysctls(h: Home) -> str:
    return h.router(["sysctl", "net.ipv4.ip_forward", "net.ipv4.conf.all.send_redirects",
                     "net.ipv4.conf.default.send_redirects", "net.ipv4.conf.all.accept_redirects"]).stdout


def test_up_is_idempotent_and_down_cleans_up(bare_home: Home):
    h = bare_home
    assert h.router(["sysctl", "-n", "net.ipv4.ip_forward"]).stdout.strip() == "1"
    assert h.router(["sysctl", "-n", f"net.ipv4.conf.{BRIDGE}.send_redirects"]).stdout.strip() == "0"
    assert "masquerade" in h.router(["nft", "list", "table", "inet", "homework"]).stdout
    assert h.vsctl("get", "bridge", BRIDGE, "other-config:hwaddr").strip().strip('"') == ROUTER_HWADDR
    assert "actions=NORMAL" in h.dump_flows()            # CONTROLLER=none: standalone baseline
    dev = h.add_device()
    before = (h.vsctl("list-ports", BRIDGE), sysctls(h))
    h.router_net("up")                                   # again: nothing changes, nothing breaks
    h.router_net("up", LAN_PORTS=dev.port_name)          # an already-added port is fine too
    assert (h.vsctl("list-ports", BRIDGE), sysctls(h)) == before
    assert h.router(["nft", "list", "table", "inet", "homework"]).stdout.count("masquerade") == 1
    h.router_net("down")
    assert BRIDGE not in h.vsctl("list-br")
    assert h.router(["nft", "list", "table", "inet", "homework"], check=False).returncode != 0
    assert h.router(["sysctl", "-n", "net.ipv4.ip_forward"]).stdout.strip() == "0"  # as before `up`
    h.router_net("down")                                 # idempotent as well
    h.router_net("up")                                   # and back
    assert BRIDGE in h.vsctl("list-br")


def test_secure_bridge_with_controller_target(bare_home: Home):
    h = bare_home
    h.router_net("up", CONTROLLER="tcp:127.0.0.1:6653")
    assert h.vsctl("get", "bridge", BRIDGE, "fail_mode").strip() == "secure"
    assert h.vsctl("get-controller", BRIDGE).strip() == "tcp:127.0.0.1:6653"
    assert "OpenFlow13" in h.vsctl("get", "bridge", BRIDGE, "protocols")


def test_wan_side_cannot_reach_router_services(bare_home: Home):
    """The Guest Board, API and DNS listen on all router addresses; the WAN must not reach them,
    while connections the router makes outwards still get their answers."""
    import subprocess
    import time
    h = bare_home
    server = h.router_popen(["python3", "-m", "http.server", "--bind", "0.0.0.0", "8443"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            curl = ["curl", "-s", "-o", "/dev/null", "-m", "2", "http://127.0.0.1:8443/"]
            if h.router(curl, check=False).returncode == 0:
                break
            time.sleep(0.2)
        else:
            pytest.fail("test server in the router namespace did not start")
        # the server is up and listening on the WAN address too ...
        assert h.router(["curl", "-s", "-o", "/dev/null", "-m", "2", "http://198.51.100.2:8443/"],
                        check=False).returncode == 0
        # ... but from the internet side nothing gets through
        blocked = h.internet(["curl", "-s", "-o", "/dev/null", "-m", "3", "http://198.51.100.2:8443/"], check=False)
        assert blocked.returncode != 0
        # while the router's own outbound connections are answered (established traffic accepted)
        assert h.router(["curl", "-s", "-o", "/dev/null", "-m", "5", "http://203.0.113.10/"],
                        check=False).returncode == 0
    finally:
        server.terminate()
        server.wait(timeout=5)
