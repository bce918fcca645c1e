"""The controller's side of homework-dhcpd ([dhcp] answerer = "dhcpd"): the table
it keeps in the daemon (live leases on our ports, not blacklisted; the lease time of the
device's state), the bookkeeping of an answer the daemon gave (as if the controller had
given it), and punted requests handled as before. The daemon itself is faked here; it
is tested by cargo (dhcpd/) and end to end (tests/e2e/test_dhcp_fastpath.py)."""
import contextlib
import ipaddress

import pytest

from homework.components.dhcp import dhcpd_link
from homework.components.dhcp import fastpath as fp
from homework.components.dhcp import message as m
from homework.flows import LOCAL, Datapath
from conftest import make_core, quarantined
from dhcpframes import dhcp_frame, opt_ip

MAC = "02:00:00:00:00:0a"
PORTS = {"br0": LOCAL, "d1": 1, "d2": 2}


class FakeLink:
    """Records what the server keeps in the daemon's table, the MACs it names as its own
    to decide, and the blocks it reserves for the daemon's offers to never-seen devices."""
    instances: list["FakeLink"] = []

    def __init__(self, binary, interface, on_punt, on_note, table, count, setup=list, extra_args=()):
        self.on_punt, self.on_note, self.table_fn, self.setup_fn = on_punt, on_note, table, setup
        self.extra_args = extra_args
        self.table: dict[str, dict] = {}
        self.setup: list[dict] = []
        self.known: set[str] = set()
        self.reserved: list[str] = []
        self.gatherings: list[str] = []
        FakeLink.instances.append(self)

    def start(self):
        self.setup = self.setup_fn()
        for message in self.setup:
            if message["op"] == "known":
                self.known.update(message["macs"])
            elif message["op"] == "reserve":
                self.reserved += message["ips"]
        self.table = {e["mac"]: e for e in self.table_fn()}

    def know(self, macs):
        self.known.update(macs)

    def unknown(self, mac):
        self.known.discard(mac)

    def reserve(self, ips):
        assert ips and not set(ips) & set(self.reserved), "a block reserved twice"
        self.reserved += ips

    def set(self, entry):
        self.table[entry["mac"]] = entry

    def delete(self, mac):
        self.table.pop(mac, None)

    def close(self):
        pass

    @contextlib.contextmanager
    def gathered(self):
        self.gatherings.append("in")
        yield
        self.gatherings.append("out")


class FakeSocket:
    def __init__(self, sent):
        self.sent = sent

    def send(self, frame):
        self.sent.append(frame)
        return len(frame)

    def close(self):
        pass


def dhcpd_core(tmp_path, clock, monkeypatch, **overrides):
    """A core whose DHCP server answers through a faked homework-dhcpd."""
    FakeLink.instances.clear()
    sent = []
    monkeypatch.setattr(dhcpd_link, "DhcpdLink", FakeLink)
    monkeypatch.setattr("homework.components.dhcp.server.DhcpdLink", FakeLink)
    monkeypatch.setattr("homework.components.dhcp.server.find_binary", lambda name: "/usr/bin/homework-dhcpd")
    monkeypatch.setattr(fp, "open_send_socket", lambda ifname: FakeSocket(sent))
    monkeypatch.setattr(fp, "open_socket", lambda ifname: pytest.fail("the daemon reads the requests"))
    # the controller deciding every new device, unless a test gives the daemon blocks to offer
    overrides.setdefault("daemon_new_offers", 0)
    c = make_core(tmp_path, clock=clock, dhcp_answerer="dhcpd", **overrides)
    c.ctx.switch_is_real = True
    c.datapath_up(Datapath(dpid=1, ports=dict(PORTS)))
    c.sent = sent
    return c


@pytest.fixture
def core(tmp_path, clock, monkeypatch):
    return dhcpd_core(tmp_path, clock, monkeypatch)


def link(core) -> FakeLink:
    return core.ctx.component("dhcp").dhcpd


def punt(core, frame, port):
    link(core).on_punt(fp.marker(port) + frame[6:])


def join(core, port=1):
    punt(core, dhcp_frame(MAC, m.DISCOVER), port)
    punt(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, "10.2.0.2"), opt_ip(54, "10.2.0.1")]), port)


def entry(offer: bool) -> dict:
    return {"mac": MAC, "port": 1, "ip": "10.2.0.2", "router": "10.2.0.1", "broadcast": "10.2.0.3",
            "lease_time": 30, "hostname": "", "relay": "", "offer": offer}


def test_a_new_device_is_decided_by_the_controller_then_answered_by_the_daemon(core):
    assert link(core).table == {}                      # nobody has a lease yet
    punt(core, dhcp_frame(MAC, m.DISCOVER), 1)
    assert len(core.sent) == 1                         # the controller's OFFER, on the socket
    # the offer is in the daemon: it may answer the REQUEST that takes it
    assert link(core).table == {MAC: entry(offer=True)}
    assert core.ctx.leases.get(MAC).active is False
    # a REQUEST that reaches the controller all the same (the daemon restarting) is answered
    punt(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, "10.2.0.2"), opt_ip(54, "10.2.0.1")]), 1)
    assert len(core.sent) == 2
    assert link(core).table == {MAC: entry(offer=False)}


def test_the_daemons_ack_of_our_offer_grants_the_lease(core):
    events = []
    core.ctx.bus.subscribe("lease", lambda topic, ev: events.append(ev["action"]))
    punt(core, dhcp_frame(MAC, m.DISCOVER), 1)
    link(core).on_note({"op": "acked", "mac": MAC, "port": 1, "hostname": "tablet", "xid": 5,
                        "counts": {"offered": 0, "acked": 1}, "first": True})
    lease = core.ctx.leases.get(MAC)
    assert lease.active and lease.hostname == "tablet"
    assert events == ["granted"]                       # routing gives it its flows on this event
    assert core.ctx.state.leases()[0]["mac"] == MAC    # persisted
    assert link(core).table == {MAC: {**entry(offer=False), "hostname": "tablet"}}
    assert core.counters.get("dhcp.acks") == 1 and core.counters.get("dhcp.offers") == 1
    assert core.counters.get("dhcp.dhcpd_offers_taken") == 1


def test_an_offer_to_a_client_that_chose_another_server_is_withdrawn(core):
    punt(core, dhcp_frame(MAC, m.DISCOVER), 1)
    assert link(core).table[MAC]["offer"] is True
    punt(core, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, "192.168.1.50"), opt_ip(54, "192.168.1.1")]), 1)
    assert MAC not in link(core).table and MAC not in core.ctx.component("dhcp").offers


def test_no_offer_in_the_daemon_for_a_relayed_client(tmp_path, clock, monkeypatch):
    relay = "10.2.0.2"
    core = dhcpd_core(tmp_path, clock, monkeypatch, dhcp_relays=(relay,))
    punt(core, dhcp_frame(MAC, m.DISCOVER, src_ip=relay, ciaddr="0.0.0.0", giaddr=relay), 1)
    assert len(core.sent) == 1                  # offered, to the relay
    assert MAC not in link(core).table          # its REQUEST comes to the controller


def test_an_offer_whose_block_goes_to_another_device_leaves_the_table(tmp_path, clock, monkeypatch):
    core = dhcpd_core(tmp_path, clock, monkeypatch, pool=ipaddress.IPv4Network("10.9.0.0/30"))   # one block
    punt(core, dhcp_frame(MAC, m.DISCOVER), 1)
    assert MAC in link(core).table
    other = "02:00:00:00:00:0b"
    punt(core, dhcp_frame(other, m.DISCOVER), 2)     # no fresh block: the untaken offer is reclaimed
    assert MAC not in link(core).table and MAC not in core.ctx.component("dhcp").offers
    assert link(core).table[other]["ip"] == "10.9.0.2" and link(core).table[other]["offer"] is True


def test_an_answer_the_daemon_gave_is_booked_as_the_controllers_own(core, clock):
    join(core)
    expiry = core.ctx.leases.get(MAC).expires
    events = []
    core.ctx.bus.subscribe("lease", lambda topic, ev: events.append(ev["action"]))
    clock.advance(10)
    link(core).on_note({"op": "acked", "mac": MAC, "port": 1, "hostname": "console", "xid": 5})
    lease = core.ctx.leases.get(MAC)
    assert lease.expires == pytest.approx(expiry + 10) and lease.hostname == "console"
    assert events == ["renewed"]
    assert core.ctx.state.leases()[0]["hostname"] == "console"          # persisted
    assert link(core).table[MAC]["hostname"] == "console"
    assert core.counters.get("dhcp.acks") == 2


def test_a_decision_changes_the_lease_time_the_daemon_gives_and_a_blacklist_takes_the_entry_away(core):
    join(core)
    core.ctx.devices.permit(MAC)
    assert link(core).table[MAC]["lease_time"] == 3600
    core.ctx.devices.blacklist(MAC)
    assert MAC not in link(core).table
    # an answer already on its way when the entry went: not booked
    link(core).on_note({"op": "acked", "mac": MAC, "port": 1, "hostname": "", "xid": 6})
    assert core.counters.get("dhcp.dhcpd_late") == 1


def test_an_ended_or_forgotten_lease_leaves_the_table(core, clock):
    join(core)
    clock.advance(31)
    core.ctx.component("dhcp").expire_leases()
    assert MAC not in link(core).table
    join(core)
    assert MAC in link(core).table
    core.ctx.devices.forget(MAC)
    assert MAC not in link(core).table
    link(core).on_note({"op": "acked", "mac": MAC, "port": 1, "hostname": "", "xid": 7})
    assert core.ctx.leases.get(MAC) is None                # forgotten stays forgotten


def test_a_restarted_daemon_gets_the_whole_table(core):
    join(core)
    assert link(core).table_fn() == [link(core).table[MAC]]


def test_binary_lookup(tmp_path):
    exe = tmp_path / "homework-dhcpd"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert dhcpd_link.find_binary(str(exe)) == str(exe)
    assert dhcpd_link.find_binary(str(tmp_path / "missing")) is None


def test_the_daemons_answers_are_booked_once_per_device_per_batch():
    import json
    booked, punted, counted = [], [], []
    link = dhcpd_link.DhcpdLink("/bin/false", "br0", punted.append, booked.append, lambda: [],
                                lambda name, n=1: counted.append(name))
    note = {"mac": MAC, "port": 1, "hostname": "", "xid": 1}
    for op in ("offered", "acked", "offered", "acked"):
        link._dispatch(json.dumps({**note, "op": op}).encode())
    link._dispatch(json.dumps({**note, "op": "offered", "mac": "02:00:00:00:00:0b"}).encode())
    link._dispatch(b"P" + b"\x0e\x68\x77\x00\x00\x01" + b"frame")          # a punt goes at once
    link._dispatch(b"not json")
    link._dispatch(b'{"op": "acked"}')                                      # no MAC
    assert punted == [b"\x0e\x68\x77\x00\x00\x01frame"] and booked == []
    assert counted.count("dhcp.dhcpd_bad_message") == 2
    link.book()
    assert [(b["mac"], b["op"], b["counts"]) for b in booked] == [
        (MAC, "acked", {"offered": 2, "acked": 2}), ("02:00:00:00:00:0b", "offered", {"offered": 1, "acked": 0})]
    link.book()
    assert len(booked) == 2                                                  # nothing twice
    # the daemon's own batches carry their counts
    link._dispatch(json.dumps({**note, "op": "acked", "counts": {"offered": 3, "acked": 4}}).encode())
    link._dispatch(json.dumps({**note, "op": "offered", "counts": {"offered": 1, "acked": 0}}).encode())
    link.book()
    assert (booked[-1]["op"], booked[-1]["counts"]) == ("acked", {"offered": 4, "acked": 4})


def test_the_first_ack_of_an_offer_is_booked_at_once_with_what_was_waiting():
    import json
    booked = []
    link = dhcpd_link.DhcpdLink("/bin/false", "br0", lambda f: None, booked.append, lambda: [],
                                lambda name, n=1: None)
    note = {"mac": MAC, "port": 1, "hostname": "", "xid": 1}
    link._dispatch(json.dumps({**note, "op": "offered"}).encode())
    link._dispatch(json.dumps({**note, "op": "offered", "mac": "02:00:00:00:00:0b"}).encode())
    assert booked == []
    link._dispatch(json.dumps({**note, "op": "acked", "counts": {"offered": 0, "acked": 1},
                               "first": True}).encode())
    assert [(b["mac"], b["op"], b["counts"]) for b in booked] == [(MAC, "acked", {"offered": 1, "acked": 1})]
    link.book()                     # the other device's answer waited for the batch; MAC's is not booked twice
    assert [b["mac"] for b in booked] == [MAC, "02:00:00:00:00:0b"]
    # "first" on an OFFER means nothing: it waits like any other
    link._dispatch(json.dumps({**note, "op": "offered", "first": True}).encode())
    assert len(booked) == 2


def test_a_batch_counts_every_answer_it_folds(core):
    join(core)
    acks = core.counters.get("dhcp.acks")
    link(core).on_note({"op": "acked", "mac": MAC, "port": 1, "hostname": "", "xid": 9,
                        "counts": {"acked": 5, "offered": 2}})
    assert core.counters.get("dhcp.acks") == acks + 5


def test_an_entry_the_daemon_already_holds_is_not_sent_again():
    """Booking a renewal the daemon answered leaves its entry as it was: nothing goes back
    (at thousands of renewals a second those messages were 40 % of the booking's CPU)."""
    import json
    import socket
    link = dhcpd_link.DhcpdLink("/bin/false", "br0", lambda f: None, lambda n: None, lambda: [],
                                lambda name, n=1: None)
    ours, daemon = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    daemon.setblocking(False)
    link.sock = ours

    def received():
        got = []
        while True:
            try:
                got.append(json.loads(daemon.recv(65536)))
            except BlockingIOError:
                return got
    entry = {"mac": MAC, "port": 1, "ip": "10.2.0.2", "router": "10.2.0.1", "broadcast": "10.2.0.3",
             "lease_time": 30, "hostname": "", "relay": ""}
    link.set(entry)
    link.set(dict(entry))
    assert received() == [{"op": "set", **entry}]
    link.set({**entry, "lease_time": 3600})                 # a decision changes it: sent
    assert [m["lease_time"] for m in received()] == [3600]
    link.delete(MAC)
    link.set({**entry, "lease_time": 3600})                 # gone from the daemon: sent again
    assert [m["op"] for m in received()] == ["del", "set"]
    ours.close()
    daemon.close()


# -- the daemon's own offers to never-seen devices (dhcpd/src/newdev.rs) ------------------------
NEW = "02:00:00:00:00:0c"


@pytest.fixture
def offering(tmp_path, clock, monkeypatch):
    """A core whose daemon holds 4 reserved blocks; a port may bring 2 new MACs at once."""
    return dhcpd_core(tmp_path, clock, monkeypatch, daemon_new_offers=4, new_macs_burst=2)


def test_a_started_daemon_learns_whom_the_controller_decides_and_which_blocks_it_may_offer(tmp_path, clock,
                                                                                           monkeypatch):
    # a lease from before (a MAC holding a block), a blacklisted MAC never seen, a pre-approved one
    first = dhcpd_core(tmp_path, clock, monkeypatch)
    join(first)
    first.ctx.devices.blacklist("02:00:00:00:00:66")
    first.ctx.devices.permit("02:00:00:00:00:77", allow_unknown=True)
    first.stop()
    core = dhcpd_core(tmp_path, clock, monkeypatch, daemon_new_offers=4, new_macs_burst=2)
    setup = link(core).setup
    assert [msg["op"] for msg in setup] == ["known", "reserve", "new_macs"]   # offers only once all is known
    assert set(setup[0]["macs"]) == {MAC, "02:00:00:00:00:66", "02:00:00:00:00:77"}
    # the next free blocks, none held by a device: MAC keeps 10.2.0.2
    assert setup[1]["ips"] == ["10.2.0.6", "10.2.0.10", "10.2.0.14", "10.2.0.18"]
    assert setup[2] == {"op": "new_macs", "burst": 2, "per_second": 1.0, "lease_time": 30}
    # the controller's own offers come from other blocks
    punt(core, dhcp_frame("02:00:00:00:00:0d", m.DISCOVER), 2)
    assert link(core).table["02:00:00:00:00:0d"]["ip"] == "10.2.0.22"
    assert "02:00:00:00:00:0d" in link(core).known


def test_the_daemons_offer_of_a_reserved_block_is_claimed_and_booked(offering):
    events = []
    offering.ctx.bus.subscribe("device", lambda topic, ev: events.append((ev["mac"], ev["reason"])))
    link(offering).on_note({"op": "offered", "mac": NEW, "port": 1, "hostname": "phone", "xid": 3,
                            "reserved": "10.2.0.6"})
    lease = offering.ctx.leases.get(NEW)
    assert (lease.ip, lease.active, lease.port, lease.hostname) == ("10.2.0.6", False, 1, "phone")
    assert events == [(NEW, "seen")]                          # on the Guest Board, pending
    assert offering.ctx.state.device_state(NEW) == "pending" and NEW in link(offering).known
    # the entry is the controller's own offer now, and the reserve is topped up
    assert link(offering).table[NEW] == {**entry(offer=True), "mac": NEW, "ip": "10.2.0.6", "router": "10.2.0.5",
                                         "broadcast": "10.2.0.7", "hostname": "phone"}
    assert link(offering).reserved == ["10.2.0.2", "10.2.0.6", "10.2.0.10", "10.2.0.14", "10.2.0.18"]
    assert offering.counters.get("dhcp.dhcpd_new_offers") == 1
    # the ACK on it (still naming the block) grants the lease on that block
    link(offering).on_note({"op": "acked", "mac": NEW, "port": 1, "hostname": "phone", "xid": 4,
                            "reserved": "10.2.0.6", "first": True})
    lease = offering.ctx.leases.get(NEW)
    assert lease.active and lease.ip == "10.2.0.6"
    assert offering.counters.get("dhcp.dhcpd_new_offers") == 1 and len(link(offering).reserved) == 5


def test_an_ack_on_a_reserved_block_told_first_grants_the_lease(offering):
    leases = []
    offering.ctx.bus.subscribe("lease", lambda topic, ev: leases.append((ev["action"], ev["lease"].ip)))
    link(offering).on_note({"op": "acked", "mac": NEW, "port": 2, "hostname": "", "xid": 4,
                            "reserved": "10.2.0.10", "first": True, "counts": {"offered": 1, "acked": 1}})
    assert leases == [("granted", "10.2.0.10")]
    assert link(offering).table[NEW]["offer"] is False and link(offering).table[NEW]["port"] == 2
    assert offering.ctx.state.leases()[0]["mac"] == NEW          # persisted


def test_a_claim_the_controller_decided_otherwise_is_not_kept(offering):
    # the controller offered the MAC a block of its own meanwhile (its DISCOVER came here)
    punt(offering, dhcp_frame(MAC, m.DISCOVER), 1)
    own = offering.ctx.leases.get(MAC).ip
    link(offering).on_note({"op": "acked", "mac": MAC, "port": 1, "hostname": "", "xid": 4,
                            "reserved": "10.2.0.2", "first": True})
    assert offering.ctx.leases.get(MAC).ip == own and own != "10.2.0.2"
    assert link(offering).table[MAC]["ip"] == own            # the daemon's entry is the controller's again
    assert offering.counters.get("dhcp.dhcpd_claim_refused") == 1
    # the block a device may believe it holds is offered to nobody else; another takes its place
    alloc = offering.ctx.component("dhcp").alloc
    assert alloc.owner(0) is None and 0 not in alloc.reserved()
    assert link(offering).reserved.count("10.2.0.2") == 1 and len(alloc.reserved()) == 4
    # a MAC blacklisted meanwhile gets nothing: no lease, no entry
    offering.ctx.devices.blacklist(NEW)
    link(offering).on_note({"op": "acked", "mac": NEW, "port": 1, "hostname": "", "xid": 5,
                            "reserved": "10.2.0.6", "first": True})
    assert offering.ctx.leases.get(NEW) is None and NEW not in link(offering).table
    # a claim of what is no reserved block's device address books nothing
    for bogus in ("10.2.0.5", "192.168.1.2", 7):
        link(offering).on_note({"op": "offered", "mac": "02:00:00:00:00:0e", "port": 1, "hostname": "",
                                "xid": 6, "reserved": bogus})
    assert offering.ctx.leases.get("02:00:00:00:00:0e") is None
    assert offering.counters.get("dhcp.dhcpd_bad_claim") == 3 and offering.counters.get("dhcp.dhcpd_claim_refused") == 2


def test_a_request_for_the_daemons_offer_the_controller_did_not_keep_is_naked(offering):
    """The daemon offered a reserved block while the controller offered the same MAC one of
    its own (a DISCOVER punted while the reserve was empty): the client that takes the
    daemon's offer is told no, by the server it chose, and starts over."""
    punt(offering, dhcp_frame(MAC, m.DISCOVER), 1)
    own = offering.ctx.leases.get(MAC).ip
    link(offering).on_note({"op": "offered", "mac": MAC, "port": 1, "hostname": "", "xid": 4, "reserved": "10.2.0.2"})
    assert offering.counters.get("dhcp.dhcpd_claim_refused") == 1 and own != "10.2.0.2"
    sent = len(offering.sent)
    punt(offering, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, "10.2.0.2"), opt_ip(54, "10.2.0.1")]), 1)
    [nak] = [m.parse(frame[42:]) for frame in offering.sent[sent:]]
    assert nak.msg_type == m.NAK and nak.server_id == "10.2.0.1"
    assert offering.counters.get("dhcp.withdrawn_offer_naks") == 1
    # it starts over and takes the controller's offer
    punt(offering, dhcp_frame(MAC, m.DISCOVER), 1)
    [offer] = [m.parse(frame[42:]) for frame in offering.sent[sent + 1:]]
    assert offer.msg_type == m.OFFER and offer.yiaddr == own
    # a REQUEST for another server's offer is still left alone
    punt(offering, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, "192.0.2.2"), opt_ip(54, "192.0.2.1")]), 1)
    assert len(offering.sent) == sent + 2


def test_the_daemons_new_devices_spend_their_ports_allowance(offering):
    for i, ip in enumerate(("10.2.0.2", "10.2.0.6")):
        link(offering).on_note({"op": "offered", "mac": f"02:00:00:00:01:0{i}", "port": 1, "hostname": "",
                                "xid": i, "reserved": ip})
    # port 1 brought its burst of 2 through the daemon: the controller lets in no third
    punt(offering, dhcp_frame("02:00:00:00:01:09", m.DISCOVER), 1)
    assert offering.ctx.leases.get("02:00:00:00:01:09") is None
    assert offering.counters.get("dhcp.new_mac_limited") == 1
    punt(offering, dhcp_frame("02:00:00:00:01:0a", m.DISCOVER), 2)     # another port has its own
    assert offering.ctx.leases.get("02:00:00:00:01:0a") is not None


def test_a_forgotten_device_is_new_again_to_the_daemon(offering):
    link(offering).on_note({"op": "acked", "mac": NEW, "port": 1, "hostname": "", "xid": 4,
                            "reserved": "10.2.0.2", "first": True})
    assert NEW in link(offering).known
    offering.ctx.devices.forget(NEW)
    assert NEW not in link(offering).known and NEW not in link(offering).table


def test_a_restarted_daemon_is_given_fresh_blocks_and_the_old_ones_are_held_back(offering, clock):
    fake = link(offering)
    old = list(fake.reserved)
    fake.reserved = []
    fake.start()            # the daemon exited and is started again: it may have offered any of `old`
    assert len(fake.reserved) == 4 and not set(fake.reserved) & set(old)
    # the old daemon's ACK on one of them, told late: that device keeps it; the rest stay held back
    fake.on_note({"op": "acked", "mac": NEW, "port": 1, "hostname": "", "xid": 4, "reserved": old[0],
                  "first": True})
    assert offering.ctx.leases.get(NEW).ip == old[0] and offering.ctx.leases.get(NEW).active
    alloc = offering.ctx.component("dhcp").alloc
    held = alloc.block_of_address(old[1]).index
    assert alloc.owner(held) is None and quarantined(alloc, held, offering.ctx.now())
    clock.advance(31)       # the pending lease it may have given has ended
    assert not quarantined(alloc, held, offering.ctx.now())


def test_a_restarted_controller_holds_the_reserve_of_the_run_before(tmp_path, clock, monkeypatch):
    """The daemon goes with the controller, and may have ACKed a reserved block it did not
    live to tell of: after the restart no reserved block of the run before goes to anyone
    for a pending lease, and the new daemon gets fresh ones."""
    first = dhcpd_core(tmp_path, clock, monkeypatch, daemon_new_offers=4, new_macs_burst=2)
    old = list(link(first).reserved)
    first.stop()
    clock.advance(3600)         # a reservation has no end of its own: the hold counts from the restart
    core = dhcpd_core(tmp_path, clock, monkeypatch, daemon_new_offers=4, new_macs_burst=2)
    assert len(link(core).reserved) == 4 and not set(link(core).reserved) & set(old)
    alloc = core.ctx.component("dhcp").alloc
    held = [alloc.block_of_address(ip).index for ip in old]
    assert all(alloc.owner(i) is None and quarantined(alloc, i, core.ctx.now()) for i in held)
    punt(core, dhcp_frame("02:00:00:00:00:0d", m.DISCOVER), 2)     # the controller's own offer too
    assert link(core).table["02:00:00:00:00:0d"]["ip"] not in old
    clock.advance(31)           # such a lease would have ended
    assert not any(quarantined(alloc, i, core.ctx.now()) for i in held)


def test_a_device_forgotten_between_its_offer_and_its_ack_keeps_the_block_it_was_acked(offering):
    """A flood of new MACs can push a real guest out by the pending cap after the daemon's
    offer is booked and before its ACK is: the ACK brings it back, on the same block."""
    link(offering).on_note({"op": "offered", "mac": NEW, "port": 1, "hostname": "", "xid": 3,
                            "reserved": "10.2.0.6"})
    offering.ctx.devices.forget(NEW)
    assert offering.ctx.leases.get(NEW) is None
    link(offering).on_note({"op": "acked", "mac": NEW, "port": 1, "hostname": "", "xid": 4,
                            "reserved": "10.2.0.6", "first": True})
    lease = offering.ctx.leases.get(NEW)
    assert lease.active and lease.ip == "10.2.0.6"
    assert offering.ctx.state.device_state(NEW) == "pending" and link(offering).table[NEW]["ip"] == "10.2.0.6"
    # but not a block someone else holds by then
    other = "02:00:00:00:00:0f"
    link(offering).on_note({"op": "offered", "mac": other, "port": 1, "hostname": "", "xid": 5,
                            "reserved": "10.2.0.10"})
    offering.ctx.devices.forget(other)
    alloc = offering.ctx.component("dhcp").alloc
    index = alloc.block_of_address("10.2.0.10").index
    assert alloc.take("02:00:00:00:00:11", index) is not None       # someone takes it meanwhile
    link(offering).on_note({"op": "acked", "mac": other, "port": 1, "hostname": "", "xid": 7,
                            "reserved": "10.2.0.10", "first": True})
    assert offering.ctx.leases.get(other) is None
    assert offering.counters.get("dhcp.dhcpd_claim_refused") == 1


def test_a_reserved_block_stays_named_when_answers_are_merged():
    import json
    booked = []
    link = dhcpd_link.DhcpdLink("/bin/false", "br0", lambda f: None, booked.append, lambda: [],
                                lambda name, n=1: None)
    note = {"mac": NEW, "port": 1, "hostname": "", "xid": 1}
    link._dispatch(json.dumps({**note, "op": "offered", "reserved": "10.2.0.6"}).encode())
    link._dispatch(json.dumps({**note, "op": "acked"}).encode())
    link.book()
    assert [(b["op"], b.get("reserved")) for b in booked] == [("acked", "10.2.0.6")]


def test_the_daemon_is_told_the_routers_encrypted_dns_for_option_162(core):
    from homework import dnr
    args = link(core).extra_args
    assert list(args) == dnr.Endpoints.of(core.ctx.config).dhcpd_args() and args[0] == "--dnr"
def test_settle_books_every_answer_the_daemon_gave_before_the_device_list_is_read():
    """A device that has its ACK is on the board: what the daemon sent, read or not yet read
    by the link's thread, is booked before the list is made (Board.all_views settles)."""
    import json
    import socket
    booked = []
    link = dhcpd_link.DhcpdLink("homework-dhcpd", "br0", on_punt=lambda f: None, on_note=booked.append,
                                table=list, count=lambda *a, **k: None)
    ours, daemon = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    link.sock = ours
    try:
        for mac, op, first in (("02:00:00:00:00:21", "offered", False), ("02:00:00:00:00:22", "acked", True),
                               ("02:00:00:00:00:23", "acked", False)):
            daemon.send(json.dumps({"op": op, "mac": mac, "port": 1, "first": first}).encode())
        assert booked == []                       # sent, not read: the link's thread is busy elsewhere
        assert link.settle() == 3
        assert [n["mac"] for n in booked] == ["02:00:00:00:00:22", "02:00:00:00:00:21", "02:00:00:00:00:23"]
        assert link.settle() == 0 and len(booked) == 3       # nothing twice
    finally:
        ours.close()
        daemon.close()


def test_the_board_settles_the_leases_before_listing(core):
    settled = []
    core.ctx.leases.settle = lambda: settled.append(True)
    from homework.components.api.board import Board
    Board(core.ctx).all_views()
    assert settled == [True]


def test_gathered_messages_go_out_together_in_order():
    """A group decision's entries reach the daemon as arrays of messages, in the order they
    were made, a few hundred to a packet; outside a gathering each goes out at once."""
    import json
    import socket
    import threading
    link = dhcpd_link.DhcpdLink("/bin/false", "br0", lambda f: None, lambda n: None, lambda: [],
                                lambda name, n=1: None)
    ours, daemon = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    daemon.setblocking(False)
    link.sock = ours

    def packets():
        got = []
        while True:
            try:
                got.append(json.loads(daemon.recv(65536)))
            except BlockingIOError:
                return got

    def entry(i):
        return {"mac": f"02:00:00:00:{i >> 8:02x}:{i & 255:02x}", "port": 1, "ip": "10.2.0.2",
                "router": "10.2.0.1", "broadcast": "10.2.0.3", "lease_time": 3600, "hostname": "", "relay": ""}
    link.set(entry(0))
    assert packets() == [{"op": "set", **entry(0)}]             # at once, as itself
    with link.gathered():
        for i in range(1, 400):
            link.set(entry(i))
        link.delete(entry(1)["mac"])
        with link.gathered():                                   # nested: still one gathering
            link.set(entry(400))
        assert packets() == []
        # another thread's message goes out at once, after those gathered before it
        other = threading.Thread(target=link.delete, args=(entry(2)["mac"],))
        other.start()
        other.join()
        link.set(entry(401))
        with link._ungathered():             # a punt's reply may need its entry first: at once
            link.set(entry(402))
            got = packets()
            assert got[-1] == {"op": "set", **entry(402)}
        link.set(entry(403))
    got += packets()
    assert all(len(json.dumps(p, separators=(",", ":"))) <= dhcpd_link.GATHER_BYTES for p in got)
    assert 2 < len(got) < 20 and isinstance(got[0], list)
    flat = [m for p in got[:-2] for m in (p if isinstance(p, list) else [p])]
    assert [(m["op"], m["mac"]) for m in flat] == (
        [("set", entry(i)["mac"]) for i in range(1, 400)] + [("del", entry(1)["mac"]), ("set", entry(400)["mac"]),
                                                           ("del", entry(2)["mac"]), ("set", entry(401)["mac"])])
    assert got[-1] == {"op": "set", **entry(403)}
    ours.close()
    daemon.close()


def test_a_commands_changes_to_the_daemon_are_gathered(core):
    """Every command runs inside DHCP's gathering: a group decision's entries go out together."""
    gatherings = link(core).gatherings
    core.ctx.commands.register("probe", lambda: gatherings.append("ran"))
    core.ctx.commands.call("probe")
    assert gatherings == ["in", "ran", "out"]


def test_the_daemon_may_hold_thousands_of_notes_for_a_busy_controller():
    """The daemon drops a note rather than wait: its end holds a crowd's worth of them."""
    import os
    ours, theirs = dhcpd_link.control_socketpair()
    theirs.setblocking(False)
    note = b'{"op":"acked","mac":"02:5c:00:00:00:01","port":1,"hostname":"","xid":1,"first":true}'
    held = 0
    try:
        while held < 5000:
            theirs.send(note)
            held += 1
    except BlockingIOError:
        pass
    assert held >= (2000 if os.geteuid() == 0 else 200), held
    assert ours.recv(65536) == note
    ours.close()
    theirs.close()


def test_a_clients_waiting_answer_is_booked_before_its_punted_request():
    """A renewal the daemon answered sits in the batch; the client's RELEASE, punted a
    moment later, must find it booked, or the renewal would be booked after the release
    and give the lease back its life."""
    import json
    order = []
    link = dhcpd_link.DhcpdLink("/bin/false", "br0", lambda f: order.append(("punt", fp.request_client(f))),
                                lambda n: order.append(("book", n["mac"])), lambda: [], lambda name, n=1: None)
    note = {"mac": MAC, "port": 1, "hostname": "", "xid": 1, "op": "acked"}
    link._dispatch(json.dumps(note).encode())
    link._dispatch(json.dumps({**note, "mac": "02:00:00:00:00:0b"}).encode())
    release = fp.marker(1) + dhcp_frame(MAC, m.RELEASE)[6:]
    link._dispatch(b"P" + release)
    assert order == [("book", MAC), ("punt", MAC)]
    link.book()                                   # the other device waited for the batch, MAC is not booked twice
    assert order[2:] == [("book", "02:00:00:00:00:0b")]
    link._dispatch(b"P" + b"\x0e\x68\x77\x00\x00\x01" + b"short")   # too short to name a client: punted as it is
    assert order[-1] == ("punt", None)


def test_a_forgotten_devices_renewal_naked_makes_it_the_controllers_again(offering, clock):
    # forgotten while it believes in its hour, the device renews: NAKed, its old block is
    # kept for its DISCOVER, so the daemon must not answer that DISCOVER from its reserve
    punt(offering, dhcp_frame(MAC, m.DISCOVER), 1)
    ip = offering.ctx.leases.get(MAC).ip
    router = offering.ctx.leases.get(MAC).router
    punt(offering, dhcp_frame(MAC, m.REQUEST, options=[opt_ip(50, ip), opt_ip(54, router)]), 1)
    offering.ctx.devices.permit(MAC)
    assert offering.ctx.leases.get(MAC).active
    offering.ctx.devices.forget(MAC)
    assert MAC not in link(offering).known
    sent = len(offering.sent)
    punt(offering, dhcp_frame(MAC, m.REQUEST, src_ip=ip, dst_ip="10.2.0.1"), 1)
    [nak] = [m.parse(f[42:]) for f in offering.sent[sent:]]
    assert nak.msg_type == m.NAK
    assert MAC in link(offering).known
    clock.advance(60)        # the port's allowance of new MACs (this fixture's is small) refills
    punt(offering, dhcp_frame(MAC, m.DISCOVER), 1)
    offer = m.parse(offering.sent[-1][42:])
    assert offer.msg_type == m.OFFER and offer.yiaddr == ip
