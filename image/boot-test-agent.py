#!/usr/bin/env python3
"""Host side of the boot-test agent (image/guest/homework-test-agent): run one shell
command inside the guest over the virtio-serial port and print its output.

    boot-test-agent.py SOCKET TIMEOUT COMMAND...     exit status = the command's
"""
import base64
import os
import socket
import sys
import time


def main() -> int:
    sock_path, timeout, cmd = sys.argv[1], float(sys.argv[2]), " ".join(sys.argv[3:])
    ident = f"{os.getpid()}-{time.monotonic_ns()}"
    deadline = time.monotonic() + timeout
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    while True:
        try:
            s.connect(sock_path)
            break
        except OSError:
            if time.monotonic() > deadline:
                print("agent: cannot connect to " + sock_path, file=sys.stderr)
                return 255
            time.sleep(0.5)
    # the guest stops the command 5 s before this wait ends, so its partial output still arrives
    s.sendall(f"{ident} ".encode() + base64.b64encode(cmd.encode()) + f" {timeout:.0f}\n".encode())
    buf = b""
    while time.monotonic() < deadline:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            chunk = s.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            parts = line.decode(errors="replace").split(" ", 2)
            if len(parts) == 3 and parts[0] == ident:
                sys.stdout.write(base64.b64decode(parts[2]).decode(errors="replace"))
                sys.stdout.flush()
                return int(parts[1])
    print(f"agent: no answer within {timeout:.0f}s", file=sys.stderr)
    return 254


if __name__ == "__main__":
    sys.exit(main())
