"""EAPOL component on a fake switch: forwarding to hostapd, learning, blacklist flows and
hostapd's deny list."""
from homework.flows import CONTROLLER, LOCAL, Datapath, PacketIn
from homework.packets import build_ethernet
from conftest import make_core

A = "02:00:00:00:00:0a"
B = "02:00:00:00:00:0b"
PAE = "01:80:c2:00:00:03"
HOSTAPD = 9


def raw(mac):
    return bytes.fromhex(mac.replace(":", ""))


def eapol(src, dst=PAE):
    return build_ethernet(raw(dst), raw(src), 0x888E, b"\x01\x01\x00\x00")   # EAPOL-Start


def make(tmp_path, **kw):
    core = make_core(tmp_path, components=("dhcp", "routing", "eapol"), hostapd_port="ap-port",
                     hostapd_deny_file=str(tmp_path / "deny"), **kw)
    core.datapath_up(Datapath(dpid=1, ports={"br0": LOCAL, "d1": 1, "d2": 2, "ap-port": HOSTAPD}))
    return core, core.ctx.component("eapol")


def pkt(src, dst=PAE, port=1):
    return {"in_port": port, "eth_src": src, "eth_dst": dst, "eth_type": 0x888E}


def test_eapol_reaches_hostapd_and_comes_back_to_the_right_port(tmp_path):
    core, eapol_c = make(tmp_path)
    assert core.switch.outputs(pkt(A, port=1)) == [HOSTAPD, CONTROLLER]
    # the copy to the controller teaches it A's port
    core.packet_in(PacketIn(in_port=1, data=eapol(A)))
    assert core.switch.outputs(pkt(PAE, A, port=HOSTAPD) | {"eth_src": "02:00:00:00:00:ff"}) == [1]
    # hostapd -> an unlearned device goes through the controller, which knows nothing: dropped
    assert core.switch.outputs(pkt("02:00:00:00:00:ff", B, port=HOSTAPD)) == [CONTROLLER]
    core.packet_in(PacketIn(in_port=HOSTAPD, data=eapol("02:00:00:00:00:ff", B)))
    assert core.switch.take_packet_outs() == []
    # hostapd -> learned device before its flow exists: packet-out
    eapol_c.ports[B] = 2
    core.packet_in(PacketIn(in_port=HOSTAPD, data=eapol("02:00:00:00:00:ff", B)))
    [out] = core.switch.take_packet_outs()
    assert out.actions[0].port == 2


def test_hostapd_port_appearing_later_gets_its_flows(tmp_path):
    core = make_core(tmp_path, components=("eapol",), hostapd_port="ap-port")
    core.datapath_up(Datapath(dpid=1, ports={"br0": LOCAL, "d1": 1}))
    assert core.switch.outputs(pkt(A)) == []
    core.port_status("ap-port", 7, True)
    assert core.switch.outputs(pkt(A)) == [7, CONTROLLER]


def test_blacklist_drops_everything_both_ways_and_whitelist_restores(tmp_path):
    core, eapol_c = make(tmp_path)
    core.packet_in(PacketIn(in_port=1, data=eapol(A)))
    core.devices.blacklist(A)
    assert core.switch.outputs(pkt(A)) == []
    assert core.switch.outputs(pkt(PAE, A, port=HOSTAPD) | {"eth_src": "02:00:00:00:00:ff"}) == []
    assert core.switch.outputs({"in_port": 1, "eth_src": A, "eth_type": 0x0800, "ip_proto": 17, "udp_dst": 67}) == []
    assert core.switch.lookup({"in_port": 1, "eth_src": A, "eth_type": 0x0800}).priority == 65000
    assert core.switch.outputs(pkt(B, port=2)) == [HOSTAPD, CONTROLLER]    # others unaffected
    eapol_c.deny.flush()
    assert A in (tmp_path / "deny").read_text()
    core.devices.whitelist(A)
    assert core.switch.outputs(pkt(A)) == [HOSTAPD, CONTROLLER]
    assert not [f for f in core.switch.flows if f.priority == 65000]
    eapol_c.deny.flush()
    assert A not in (tmp_path / "deny").read_text()


def test_blacklist_survives_a_restart(tmp_path):
    core, _ = make(tmp_path)
    core.devices.blacklist(B)          # never seen: blacklisting a known troublemaker is allowed
    core.state.close()
    core2, eapol2 = make(tmp_path)
    assert eapol2.blacklisted == {B}
    assert core2.switch.outputs(pkt(B, port=2)) == []
