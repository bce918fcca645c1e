"""The router's own names are never a device's: a DHCP host name that claims one gives no
local name and is marked on the board; a name the household types is refused."""
import pytest

from conftest import make_core
from homework import routernames
from homework.components.localnames.labels import candidate, dns_label
from homework.flows import Datapath
from test_api import Api
from test_dhcp_server import join

A, B = "02:00:00:00:00:01", "02:00:00:00:00:02"


@pytest.mark.parametrize("claimed", ["homework", "HomeWork", "router", "_gateway", "gateway", "wpad", "localhost",
                                     "isatap", "satellite-1", "satellite 12", "sat0", "homework-satellite",
                                     "satellite"])
def test_a_claimed_router_name_gives_no_local_name(claimed):
    assert routernames.reserved(routernames.label_of(claimed)), claimed
    assert dns_label(claimed) is None
    assert candidate(A, "", claimed, 1) is None           # a DHCP host name claiming it: no name at all


@pytest.mark.parametrize("fine", ["homework-laptop", "routers-are-fun", "saturn", "tv", "satellite-tv"])
def test_names_that_only_look_alike_are_fine(fine):
    assert dns_label(fine) == routernames.label_of(fine)


def test_the_household_cannot_give_a_device_the_routers_name_and_the_board_marks_a_claim(tmp_path, clock):
    core = make_core(tmp_path, components=("dhcp", "routing", "api", "localnames"), clock=clock,
                     localnames_hosts_dir=tmp_path / "hosts.d")
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    join(core, A, 1, hostname=b"homework")
    join(core, B, 2, hostname=b"tv")
    core.devices.permit(A)
    core.devices.permit(B)
    core.ctx.component("localnames").refresh()
    text = (tmp_path / "hosts.d" / "homework").read_text()
    assert " homework." not in text and " tv.home.arpa" in text, text
    api = Api(core)
    tok = api.token("admin")
    r = api.call("POST", f"meta/{B}", {"name": "Router"}, token=tok)
    assert r.status_int == 400 and "router's own names" in r.json["error"], r.json
    assert api.call("POST", f"meta/{B}", {"name": "Satellite 2"}, token=tok).status_int == 400
    assert api.call("POST", f"meta/{B}", {"name": "Living room TV"}, token=tok).status_int == 200
    view = api.call("GET", f"devices/{A}", token=tok).json
    assert view["label_source"] == "hostname-reserved" and "calling itself “homework”" in view["label"], view
