"""End-to-end smoke test of the built binary on `lo`, in a private network namespace so
no frame leaves it:  unshare -n python3 dhcpd/tools/smoke.py  (root, from /work/main,
with PYTHONPATH=nox-modules). Checks a reply on the wire against the controller's bytes,
a punt, a note, stats, and a clean exit on EOF and on SIGTERM."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import fixtures as fx  # noqa: E402

BIN = os.path.join(os.path.dirname(__file__), "..", "target", "release", "homework-dhcpd")
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


def start():
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    proc = subprocess.Popen([BIN, "--interface", "lo", "--control-fd", str(theirs.fileno())],
                            pass_fds=[theirs.fileno()])
    theirs.close()
    ours.settimeout(2)
    return proc, ours


def stats(ctl):
    ctl.send(b'{"op":"stats"}')
    return json.loads(ctl.recv(65536))


proc, ctl = start()
time.sleep(0.3)
ctl.send(json.dumps({"op": "set", "mac": "02:00:00:00:00:05", "port": 3, "ip": "10.2.0.6",
                     "router": "10.2.0.5", "broadcast": "10.2.0.7", "lease_time": 3600,
                     "hostname": "laptop"}).encode())
ctl.send(b"garbage")
wire = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
wire.bind(("lo", 0))
wire.settimeout(2)

for name, req, kind, _host in fx.CASES[:2] + fx.CASES[3:4] + fx.CASES[5:6]:
    wire.send(req)
    note = json.loads(ctl.recv(65536))
    assert note["op"] == ("offered" if kind == fx.m.OFFER else "acked") and note["mac"] == "02:00:00:00:00:05" and note["port"] == 3, note
    expected = fx.reply(req, kind, "laptop")
    while True:                      # our own request comes back first on lo
        frame = wire.recv(65536)
        if frame[6:10] == bytes.fromhex("0e687700"):
            break
    assert frame == expected, (name, frame.hex(), expected.hex())
    print("reply ok:", name, note)

# Unknown MAC: punted, unchanged.
other = bytearray(fx.CASES[0][1])
other[6:12] = bytes.fromhex("020000000009")
other[42 + 28:42 + 34] = bytes.fromhex("020000000009")
wire.send(bytes(other))
punt = ctl.recv(65536)
assert punt[:1] == b"P" and punt[1:1 + len(other)] == bytes(other), punt[:20]
print("punt ok")
s = stats(ctl)
print(s)
assert (s["frames"], s["answered"], s["offers"], s["acks"], s["punted"], s["entries"], s["bad_control"]) == (5, 4, 2, 2, 1, 1, 1), s

ctl.close()
assert proc.wait(timeout=3) == 0
print("EOF -> exit 0")
proc, ctl = start()
time.sleep(0.3)
proc.send_signal(signal.SIGTERM)
assert proc.wait(timeout=3) == 0
print("SIGTERM -> exit 0")
