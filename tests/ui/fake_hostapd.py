"""A stand-in for hostapd's control socket in the UI tests (nearby devices):
binds a unix datagram socket at argv[1], answers ATTACH/DETACH with OK like hostapd and
sends every line read from stdin to the attached monitors as an event. Prints
"attached" when a monitor attaches. Run in the controller's network namespace: the
controller's socket has an abstract address, and those are per namespace."""
import os
import select
import socket
import sys


def main(path: str) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if os.path.exists(path):
        os.unlink(path)
    sock.bind(path)
    monitors = set()
    pending = b""
    try:
        while True:
            ready, _, _ = select.select([sock, sys.stdin], [], [])
            if sock in ready:
                data, addr = sock.recvfrom(4096)
                # hostapd 2.10 sends RX-PROBE-REQUEST only to monitors that ask for it
                if data == b"ATTACH probe_rx_events=1":
                    monitors.add(addr)
                    print("attached", flush=True)
                elif data == b"DETACH":
                    monitors.discard(addr)
                try:
                    sock.sendto(b"OK\n", addr)
                except OSError:
                    monitors.discard(addr)
            if sys.stdin in ready:
                chunk = os.read(sys.stdin.fileno(), 65536)     # not readline: its buffer hides lines from select
                if not chunk:
                    return
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    for addr in list(monitors):
                        try:
                            sock.sendto(line.strip(), addr)
                        except OSError:
                            monitors.discard(addr)
    finally:
        sock.close()
        os.unlink(path)


if __name__ == "__main__":
    main(sys.argv[1])
