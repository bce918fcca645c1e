"""Python client for hwdbd, the Homework stream database.

Pure standard library. Speaks SRPC over UDP (the original Homework RPC: 12-byte
header, 1024-byte fragments, acknowledgements and retransmission with backoff) and
the `<|>` response format, and returns typed rows.

    c = hwdb_client.Client(port=987)
    c.insert('Links', ('aa:bb:cc:dd:ee:ff', -41.5, 0, 10, 1200))
    for row in c.query('select mac, avg(rssi) from Links [range 10 seconds] group by mac'):
        print(row['mac'], row['avg(rssi)'])
    sub = c.subscribe('NewLinks', lambda result: print(len(result), 'rows'))

Every call is bounded by the client's timeout: a dead daemon raises HwdbTimeout
(a subclass of HwdbError) instead of hanging. A Client may be shared by threads.
"""

from __future__ import annotations

import os
import queue
import socket
import struct
import threading
import time
from typing import Any
from collections.abc import Callable, Iterable, Sequence

__all__ = ["Client", "Result", "HwdbError", "HwdbTimeout", "Subscription", "quote", "parse_response"]

# --- wire constants (see hwdb/README.md) -------------------------------------------------

CONNECT, CACK, QUERY, QACK, RESPONSE, RACK, DISCONNECT, DACK = 1, 2, 3, 4, 5, 6, 7, 8
FRAGMENT, FACK, PING, PACK, SEQNO, SACK = 9, 10, 11, 12, 13, 14

HEADER = struct.Struct("!IIHBB")  # subport, seqno, command, fnum, nfrags
FRAGMENT_SIZE = 1024
MAX_MESSAGE = 64 << 20
SEQNO_LIMIT = 1_000_000_000
TICK = 0.020
FIRST_RETRY = 2 * TICK
ATTEMPTS = 7
SEP = "<|>"

_subport_lock = threading.Lock()
_subport_counter = 0


def _new_subport() -> int:
    """(pid & 0xffff) << 16 | counter, as the original did."""
    global _subport_counter
    with _subport_lock:
        _subport_counter = (_subport_counter + 1) & 0xFFFF
        return ((os.getpid() & 0xFFFF) << 16) | _subport_counter


class HwdbError(Exception):
    """The daemon answered with an error (status 1), or the transport failed."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class HwdbTimeout(HwdbError):
    """No answer within the client's timeout."""


# --- packets -----------------------------------------------------------------------------


class _Packet:
    __slots__ = ("subport", "seqno", "command", "fnum", "nfrags", "tlen", "data")

    def __init__(self, subport, seqno, command, fnum, nfrags, tlen=0, data=b""):
        self.subport, self.seqno, self.command = subport, seqno, command
        self.fnum, self.nfrags, self.tlen, self.data = fnum, nfrags, tlen, data


def _control(subport: int, seqno: int, command: int) -> bytes:
    return HEADER.pack(subport, seqno, command, 0, 0)


def _fack(subport: int, seqno: int, fnum: int, nfrags: int) -> bytes:
    if fnum > 255 or nfrags > 255:
        return HEADER.pack(subport, seqno, FACK, 0, 0) + struct.pack("!II", fnum, nfrags)
    return HEADER.pack(subport, seqno, FACK, fnum, nfrags)


def _split(subport: int, seqno: int, last: int, msg: bytes) -> list[bytes]:
    """FRAGMENT 1..n-1 then `last` (QUERY/RESPONSE); extended headers above 64 KiB."""
    n = max(1, -(-len(msg) // FRAGMENT_SIZE))
    extended = len(msg) > 0xFFFF
    out = []
    for i in range(n):
        chunk = msg[i * FRAGMENT_SIZE:(i + 1) * FRAGMENT_SIZE]
        cmd = last if i + 1 == n else FRAGMENT
        if extended:
            head = HEADER.pack(subport, seqno, cmd, 0, 0) + struct.pack("!IIIH", i + 1, n, len(msg), len(chunk))
        else:
            head = HEADER.pack(subport, seqno, cmd, i + 1, n) + struct.pack("!HH", len(msg), len(chunk))
        out.append(head + chunk)
    return out


def _decode(d: bytes) -> _Packet | None:
    """Parse a datagram; None if it is malformed."""
    if len(d) < HEADER.size:
        return None
    subport, seqno, cmd, fnum, nfrags = HEADER.unpack_from(d)
    p = _Packet(subport, seqno, cmd, fnum, nfrags)
    body = d[HEADER.size:]
    if cmd == CONNECT:
        p.data = body.split(b"\0", 1)[0]
    elif cmd == FACK and nfrags == 0 and len(body) >= 8:
        p.fnum, p.nfrags = struct.unpack_from("!II", body)
    elif cmd in (QUERY, RESPONSE, FRAGMENT):
        if nfrags == 0:
            if len(body) < 14:
                return None
            p.fnum, p.nfrags, p.tlen, flen = struct.unpack_from("!IIIH", body)
            data = body[14:]
        else:
            if len(body) < 4:
                return None
            p.tlen, flen = struct.unpack_from("!HH", body)
            data = body[4:]
        if flen != len(data) or flen > FRAGMENT_SIZE or not (1 <= p.fnum <= p.nfrags) or p.tlen > MAX_MESSAGE:
            return None
        if max(1, -(-p.tlen // FRAGMENT_SIZE)) != p.nfrags:
            return None
        p.data = data
    elif cmd < 1 or cmd > 14:
        return None
    return p


class _Reassembly:
    def __init__(self, seqno: int, nfrags: int, tlen: int):
        self.seqno, self.nfrags, self.tlen = seqno, nfrags, tlen
        self.parts: dict[int, bytes] = {}

    def matches(self, p: _Packet) -> bool:
        return (self.seqno, self.nfrags, self.tlen) == (p.seqno, p.nfrags, p.tlen)

    def ready_for_last(self) -> bool:
        return len([f for f in self.parts if f < self.nfrags]) == self.nfrags - 1

    def data(self) -> bytes:
        return b"".join(self.parts[i] for i in range(1, self.nfrags + 1))[: self.tlen]


# --- results -----------------------------------------------------------------------------


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            out.append({"n": "\n", "r": "\r"}.get(n, n))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _convert(ty: str, text: str) -> Any:
    if ty in ("varchar", "character", "blob"):
        return _unescape(text)
    if text == "":
        return None
    if ty in ("integer", "tinyint", "smallint"):
        return int(text)
    if ty == "real":
        return float(text)
    if ty == "boolean":
        return text == "true"
    if ty == "tstamp":
        if text.startswith("@") and text.endswith("@"):
            v = int(text[1:-1], 16)
            return v - (1 << 64) if v >= 1 << 63 else v
        return int(text)
    return _unescape(text)


class Result:
    """A response: `status`, `message`, `columns` (names), `types`, and `rows`
    (a list of dicts with typed values; timestamps are int nanoseconds)."""

    def __init__(self, status: int, message: str, columns: list[str], types: list[str], rows: list[dict]):
        self.status, self.message, self.columns, self.types, self.rows = status, message, columns, types, rows

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]

    def __repr__(self) -> str:
        return f"Result(status={self.status}, message={self.message!r}, columns={self.columns}, rows={len(self.rows)})"


def parse_response(text: str) -> Result:
    """Parse the `<|>` response format."""
    lines = text.split("\n")
    head = lines[0].split(SEP)
    if len(head) < 4:
        raise HwdbError(f"malformed response header: {lines[0][:80]!r}")
    try:
        status, ncols, nrows = int(head[0]), int(head[2]), int(head[3])
    except ValueError:
        raise HwdbError(f"malformed response header: {lines[0][:80]!r}") from None
    message = head[1]
    columns: list[str] = []
    types: list[str] = []
    at = 1
    if ncols > 0:
        for desc in lines[1].split(SEP)[:ncols]:
            ty, _, name = desc.partition(":")
            types.append(ty)
            columns.append(name)
        at = 2
    rows = []
    for line in lines[at:at + nrows]:
        fields = line.split(SEP)[:ncols]
        # a short row (fewer fields than columns): the rest are absent
        rows.append({c: _convert(t, f) for c, t, f in zip(columns, types, fields, strict=False)})
    return Result(status, message, columns, types, rows)


def quote(v: Any) -> str:
    """A literal for an insert statement: strings quoted, bools/numbers bare."""
    if type(v) is int:      # the most common value first (flow rows are mostly numbers)
        return str(v)
    if v is None:
        raise ValueError("hwdb has no NULL values to insert")
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if v == v and v not in (float("inf"), float("-inf")) else f"'{v!r}'"
    s = str(v).replace("\\", "\\\\").replace("'", "''").replace("\n", "\\n").replace("\r", "\\r")
    return f"'{s}'"


# --- the client connection ---------------------------------------------------------------


class _Connection:
    """One SRPC connection; not thread-safe by itself (Client holds the lock)."""

    def __init__(self, host: str, port: int, service: str, timeout: float):
        self.addr = (host, port)
        self.service = service
        self.timeout = timeout
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.connect(self.addr)
        self.subport = _new_subport()
        self.seqno = 1
        self._handshake(time.monotonic() + timeout)

    def close(self) -> None:
        try:
            self.sock.send(_control(self.subport, self.seqno, DISCONNECT))
        except OSError:
            pass
        self.sock.close()

    def _recv(self, until: float) -> _Packet | None:
        """One packet of this connection, or None when `until` passes."""
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(max(left, 0.0001))
            try:
                d = self.sock.recv(65536)
            except (TimeoutError, BlockingIOError):
                return None
            except ConnectionRefusedError:
                time.sleep(0.005)  # nobody on the port yet; keep waiting until the deadline
                continue
            p = _decode(d)
            if p is not None and p.subport == self.subport:
                return p

    def _exchange(self, pkt: bytes, want: int, deadline: float) -> None:
        rto = FIRST_RETRY
        for _ in range(ATTEMPTS):
            self._send(pkt)
            until = min(time.monotonic() + rto, deadline)
            while True:
                p = self._recv(until)
                if p is None:
                    break
                if p.command == want and p.seqno == self.seqno:
                    return
                if p.command == PING:
                    self._send(_control(self.subport, p.seqno, PACK))
            if time.monotonic() >= deadline:
                break
            rto *= 2
        raise HwdbTimeout(f"hwdbd at {self.addr[0]}:{self.addr[1]} did not answer (is it running?)")

    def _send(self, pkt: bytes) -> None:
        try:
            self.sock.send(pkt)
        except OSError:
            pass  # handled like a lost datagram

    def _handshake(self, deadline: float) -> None:
        self.seqno = 1
        self._exchange(HEADER.pack(self.subport, 1, CONNECT, 0, 0) + self.service.encode() + b"\0", CACK, deadline)

    def call(self, payload: bytes) -> bytes:
        deadline = time.monotonic() + self.timeout
        for _ in range(3):
            out = self._call_once(payload, deadline)
            if out is not None:
                return out
            # The daemon forgot us (restart or purge): reconnect and send again.
            self.subport = _new_subport()
            self._handshake(deadline)
        raise HwdbError("hwdbd keeps dropping the connection")

    def _call_once(self, payload: bytes, deadline: float) -> bytes | None:
        if self.seqno >= SEQNO_LIMIT:
            self.seqno = 1
            self._exchange(_control(self.subport, 1, SEQNO), SACK, deadline)
        self.seqno += 1
        s = self.seqno
        pkts = _split(self.subport, s, QUERY, payload)
        # Stop-and-wait: each fragment is FACKed before the next goes out.
        idx, rto, attempts = 0, FIRST_RETRY, 1
        next_retry = time.monotonic() + rto
        delivered = False
        resp: _Reassembly | None = None
        self._send(pkts[0])
        while True:
            now = time.monotonic()
            if now >= deadline:
                raise HwdbTimeout(f"no answer from hwdbd at {self.addr[0]}:{self.addr[1]} within {self.timeout}s")
            p = self._recv(deadline if delivered else min(next_retry, deadline))
            if p is None:
                if not delivered and time.monotonic() >= next_retry:
                    if attempts >= ATTEMPTS:
                        raise HwdbTimeout(f"hwdbd at {self.addr[0]}:{self.addr[1]} is not acknowledging (down?)")
                    attempts += 1
                    rto *= 2
                    next_retry = time.monotonic() + rto
                    self._send(pkts[idx])
                continue
            cmd = p.command
            if cmd == PING:
                self._send(_control(self.subport, p.seqno, PACK))
                continue
            if cmd == DISCONNECT and not delivered:
                return None
            if p.seqno != s:
                # Leftovers of an earlier call whose acknowledgement was lost.
                if p.seqno < s and cmd == RESPONSE:
                    self._send(_control(self.subport, p.seqno, RACK))
                elif p.seqno < s and cmd == FRAGMENT:
                    self._send(_fack(self.subport, p.seqno, p.fnum, p.nfrags))
                continue
            if cmd == FACK and not delivered and idx < len(pkts) - 1 and p.fnum == idx + 1:
                idx += 1
                rto, attempts = FIRST_RETRY, 1
                next_retry = time.monotonic() + rto
                self._send(pkts[idx])
            elif cmd == QACK and idx == len(pkts) - 1:
                delivered = True
            elif cmd in (FRAGMENT, RESPONSE) and idx == len(pkts) - 1:
                delivered = True
                if resp is None or not resp.matches(p):
                    resp = _Reassembly(p.seqno, p.nfrags, p.tlen)
                if cmd == FRAGMENT:
                    resp.parts.setdefault(p.fnum, p.data)
                    self._send(_fack(self.subport, s, p.fnum, p.nfrags))
                elif resp.ready_for_last():
                    resp.parts[p.fnum] = p.data
                    self._send(_control(self.subport, s, RACK))
                    return resp.data()


class Client:
    """A connection to hwdbd. Thread-safe: calls are serialised by a lock."""

    def __init__(self, host: str = "127.0.0.1", port: int = 987, timeout: float = 5.0, service: str = "HWDB"):
        self.host, self.port, self.timeout, self.service = host, port, timeout, service
        self._lock = threading.Lock()
        self._conn: _Connection | None = _Connection(host, port, service, timeout)
        self._subscriptions: list[Subscription] = []

    def _request(self, payload: str) -> Result:
        with self._lock:
            if self._conn is None:
                raise HwdbError("client is closed")
            raw = self._conn.call(payload.encode("utf-8"))
        result = parse_response(raw.decode("utf-8", errors="replace"))
        if result.status != 0:
            raise HwdbError(result.message)
        return result

    def query(self, sql: str) -> Result:
        """Run one statement; raises HwdbError with the daemon's message on error."""
        return self._request("SQL:" + sql.strip().rstrip(";") + "\n")

    def bulk_insert(self, statements: Sequence[str]) -> Result:
        """Insert statements sent together (BULK:n); all or nothing."""
        stmts = [s.strip().rstrip(";") for s in statements]
        if not stmts:
            return Result(0, "Success", [], [], [])
        if any("\n" in s for s in stmts):
            raise ValueError("a BULK statement cannot contain a newline (use quote())")
        return self._request(f"BULK:{len(stmts)}\n" + "\n".join(stmts) + "\n")

    def insert(self, table: str, values: Iterable[Any], upsert: bool = False) -> Result:
        """`insert into table values (...)` with each value quoted for its Python type."""
        return self.query(insert_statement(table, values, upsert))

    def subscribe(self, query_name: str, callback: Callable[[Result], None]) -> Subscription:
        """Call `callback(result)` (on a background thread) each time the daemon re-runs
        the saved query `query_name` after an insert into its table."""
        sub = Subscription(self, query_name, callback)
        self._subscriptions.append(sub)
        return sub

    def close(self) -> None:
        for s in list(self._subscriptions):
            s.close()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def insert_statement(table: str, values: Iterable[Any], upsert: bool = False) -> str:
    # a list rather than a generator, and plain ints without a call: a router renders
    # thousands of these a second (two flow rows per connection)
    literals = ", ".join([str(v) if type(v) is int else quote(v) for v in values])
    stmt = f"insert into {table} values ({literals})"
    return stmt + (" on duplicate key update" if upsert else "")


# --- subscriptions: a small SRPC server that receives callbacks --------------------------


class Subscription:
    """A running subscription; `close()` unsubscribes and stops the listener."""

    SERVICE = "HWDBPY"

    def __init__(self, client: Client, query_name: str, callback: Callable[[Result], None]):
        self.client, self.query_name, self.callback = client, query_name, callback
        family = socket.AF_INET6 if ":" in client.host else socket.AF_INET
        # Listen on the address our packets to the daemon come from.
        probe = socket.socket(family, socket.SOCK_DGRAM)
        probe.connect((client.host, client.port))
        self.ip = probe.getsockname()[0]
        probe.close()
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.bind((self.ip, 0))
        self.sock.settimeout(TICK)
        self.port = self.sock.getsockname()[1]
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        # per (addr, subport): [last_seqno, reassembly, pending_response, next_retry, rto, attempts, cached]
        self._conns: dict[tuple, dict] = {}
        # Callbacks run on their own thread, in order, so a slow callback never delays the
        # protocol (the daemon gets its "OK" at once and does not time us out).
        self._results: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name=f"hwdb-sub-{query_name}", daemon=True)
        self._worker = threading.Thread(target=self._deliver, name=f"hwdb-cb-{query_name}", daemon=True)
        self._thread.start()
        self._worker.start()
        self._target = f"{query_name} {self.ip} {self.port} {self.SERVICE}"
        try:
            client.query(f"subscribe {self._target}")
        except BaseException:
            self._shutdown()
            raise

    def close(self) -> None:
        if self._stop.is_set():
            return
        try:
            self.client.query(f"unsubscribe {self._target}")
        except HwdbError:
            pass
        self._shutdown()
        if self in self.client._subscriptions:
            self.client._subscriptions.remove(self)

    def _shutdown(self) -> None:
        self._stop.set()
        self._results.put(None)
        self._thread.join(timeout=2)
        self._worker.join(timeout=2)
        self.sock.close()

    def _deliver(self) -> None:
        while True:
            result = self._results.get()
            if result is None:
                return
            try:
                self.callback(result)
            except BaseException as e:  # a failing callback must not stop later ones
                self.errors.append(e)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                d, addr = self.sock.recvfrom(65536)
            except TimeoutError:
                d = None
            except OSError:
                return
            if d is not None:
                p = _decode(d)
                if p is not None:
                    self._on_packet(p, addr)
            self._timers()

    def _on_packet(self, p: _Packet, addr) -> None:
        key = (addr, p.subport)
        send = lambda pkt: self.sock.sendto(pkt, addr)  # noqa: E731
        if p.command == CONNECT:
            if p.data.decode(errors="replace") == self.SERVICE:
                if key not in self._conns:  # a repeated CONNECT must not forget state
                    self._conns[key] = {"last": p.seqno, "inc": None, "pending": None, "cached": None}
                send(_control(p.subport, p.seqno, CACK))
            return
        c = self._conns.get(key)
        if c is None:
            if p.command in (QUERY, FRAGMENT, PING):
                send(_control(p.subport, p.seqno, DISCONNECT))
            return
        if p.command == PING:
            send(_control(p.subport, p.seqno, PACK))
        elif p.command == DISCONNECT:
            self._conns.pop(key, None)
            send(_control(p.subport, p.seqno, DACK))
        elif p.command == SEQNO:
            c["last"] = p.seqno
            send(_control(p.subport, p.seqno, SACK))
        elif p.command == RACK:
            if c["pending"] and c["pending"]["seqno"] == p.seqno:
                c["pending"] = None
        elif p.command in (FRAGMENT, QUERY):
            if p.seqno <= c["last"]:
                if p.command == FRAGMENT:
                    send(_fack(p.subport, p.seqno, p.fnum, p.nfrags))
                elif c["cached"] and c["cached"][0] == p.seqno:
                    send(c["cached"][1])
                return
            inc = c["inc"]
            if inc is None or not inc.matches(p):
                inc = c["inc"] = _Reassembly(p.seqno, p.nfrags, p.tlen)
            if p.command == FRAGMENT:
                inc.parts.setdefault(p.fnum, p.data)
                send(_fack(p.subport, p.seqno, p.fnum, p.nfrags))
                return
            if not inc.ready_for_last():
                return
            inc.parts[p.fnum] = p.data
            c["inc"], c["last"] = None, p.seqno
            try:
                self._results.put(parse_response(inc.data().decode("utf-8", errors="replace")))
            except HwdbError as e:
                self.errors.append(e)
            pkt = _split(p.subport, p.seqno, RESPONSE, b"OK")[0]
            c["cached"] = (p.seqno, pkt)
            c["pending"] = {"seqno": p.seqno, "pkt": pkt, "addr": addr, "rto": FIRST_RETRY,
                            "next": time.monotonic() + FIRST_RETRY, "attempts": 1}
            send(pkt)

    def _timers(self) -> None:
        now = time.monotonic()
        for c in self._conns.values():
            pend = c["pending"]
            if pend and now >= pend["next"]:
                if pend["attempts"] >= ATTEMPTS:
                    c["pending"] = None
                    continue
                pend["attempts"] += 1
                pend["rto"] *= 2
                pend["next"] = now + pend["rto"]
                try:
                    self.sock.sendto(pend["pkt"], pend["addr"])
                except OSError:
                    pass
