"""A device collapsed by the flow limit is marked where the household looks: the Guest
Board's view of it (API /devices, the SSE snapshot) and a `device` SSE event when it
happens, besides the `alert`."""
from conftest import make_core
from homework.flows import LOCAL, Datapath
from routingkit import ip_pkt
from test_dhcp_server import join
from test_routing_accounting import WEB, count_flows

A = "02:00:00:00:00:0a"


def test_the_board_view_and_an_sse_device_event_carry_the_mark(tmp_path, clock):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text("correct horse battery\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "api"), clock=clock,
                     api_admin_password_file=str(pwfile), per_host_flow_limit=10)
    core.datapath_up(Datapath(dpid=1, ports={"br0": LOCAL, "d1": 1}))
    join(core, A, 1)
    core.commands.call("permit", mac=A)
    api = core.ctx.component("api")
    published = []
    api.stream.publish = lambda event, data: published.append((event, data))
    assert api.board.view(core.state.get_device(A))["flow_limited"] is False
    ip = core.commands.call("status", mac=A)["lease"]["ip"]
    for port in range(11):
        core.switch.outputs(ip_pkt(1, A, ip, WEB, sport=20000 + port))
    count_flows(core)
    assert [e for e, d in published if e == "alert" and d["kind"] == "flow-limit"]
    [device_event] = [d for e, d in published if e == "device"]
    assert device_event["mac"] == A and device_event["view"]["flow_limited"] is True
    assert api.board.view(core.state.get_device(A))["flow_limited"] is True
