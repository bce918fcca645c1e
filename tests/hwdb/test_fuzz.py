"""Property-based bad input against the real daemon: random datagrams and random
statements. The daemon must answer statements (with an error if need be), ignore
garbage datagrams, and keep serving. 1500 + 1500 generated cases per run."""

import socket
import struct

import hwdb_client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DATAGRAM_CASES = 1500
STATEMENT_CASES = 1500

words = st.sampled_from([
    "select", "*", "from", "Links", "Flows", "where", "and", "or", "(", ")", "[", "]", "range", "rows", "since",
    "interval", "last", "now", "10", "-1", "99999999999999999999", "seconds", "hours", "'x'", "@ff@", "=", "!=",
    "<", ">=", "contains", "group", "by", "order", "mac", "count(*)", "insert", "into", "values", ",", "update",
    "set", "+=", "delete", "create", "table", "persistenttable", "varchar(3)", "save", "as", "exec", "subscribe",
    "'unterminated", "\x00", "é", "<|>", ";",
])


@settings(max_examples=STATEMENT_CASES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.lists(words, max_size=20).map(" ".join), st.text(max_size=200)))
def _statements(client, stmt):
    try:
        r = client.query(stmt)
        assert r.status == 0
    except hwdb_client.HwdbError as e:
        assert not isinstance(e, hwdb_client.HwdbTimeout), stmt
        assert e.message


def test_random_statements_get_answers(client):
    _statements(client)
    assert client.query("select count(*) from Links").status == 0


HEADER = struct.Struct("!IIHBB")
datagrams = st.one_of(
    st.binary(max_size=1500),
    st.builds(lambda sp, seq, cmd, f, n, body: HEADER.pack(sp, seq, cmd, f, n) + body,
              st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 20),
              st.integers(0, 255), st.integers(0, 255), st.binary(max_size=64)),
    # extended data headers with absurd counts and lengths
    st.builds(lambda seq, fnum, nfrags, tlen, flen: HEADER.pack(7, seq, 9, 0, 0)
              + struct.pack("!IIIH", fnum, nfrags, tlen, flen) + b"x" * min(flen, 1100),
              st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1),
              st.integers(0, 2**32 - 1), st.integers(0, 65535)),
)


def test_random_datagrams_are_survived(daemon, client):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.sendto(HEADER.pack(7, 1, 1, 0, 0) + b"HWDB\0", ("127.0.0.1", daemon.port))
    count = {"n": 0}

    @settings(max_examples=DATAGRAM_CASES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(datagrams)
    def send(d):
        sock.sendto(d, ("127.0.0.1", daemon.port))
        count["n"] += 1
        if count["n"] % 250 == 0:
            assert client.query("show tables").status == 0

    send()
    sock.close()
    assert count["n"] >= DATAGRAM_CASES // 2
    assert client.query("select count(*) from Flows").rows[0]["count(*)"] == 0
