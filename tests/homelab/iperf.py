"""One iperf3 run from a device to a server in the emulated internet, to completion.

The server takes one test at a time and may still be closing the previous one when the
next client connects: iperf3 then exits at once with "the server is busy", or with
"Connection refused" (between two tests the server closes its listening socket and opens
a new one), or with "unable to receive control message" (it reset the control connection
it had just accepted), and moves no data, which a test would otherwise see as too few bytes counted
somewhere. Such an attempt is made again; any other failure fails the test with iperf3's
own words."""
from __future__ import annotations

import subprocess
import time

ATTEMPTS = 10
# the server is not ready for the next test yet (a reset control connection moved no data)
# (a connection queued on the listening socket the server is closing is reset, not refused)
BETWEEN_TESTS = ("busy", "Connection refused", "unable to receive control message",
                 "unable to connect to server: Connection reset by peer")


def transfer(dev, addr: str, port: int, seconds: int = 2, reverse: bool = False, streams: int = 2,
             omit: int = 0) -> str:
    """iperf3 from `dev` to addr:port (reverse: the server sends); its output. `omit`: the
    first seconds (TCP's slow start, and on a loaded machine transfers started together
    that did not start at the same instant) are left out of the figures (iperf3 -O)."""
    args = ["iperf3", "-c", addr, "-p", str(port), "-t", str(seconds), "-P", str(streams)]
    if omit:
        args += ["-O", str(omit)]
    for attempt in range(1, ATTEMPTS + 1):
        proc = dev.popen(args + (["-R"] if reverse else []), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
        try:
            out, _ = proc.communicate(timeout=seconds + 28)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        if proc.returncode != 0 and any(s in out for s in BETWEEN_TESTS) and attempt < ATTEMPTS:
            time.sleep(0.5)
            continue
        assert proc.returncode == 0, f"iperf3 {' '.join(args[1:])} exited {proc.returncode}: {out[-1500:]}"
        return out
    raise AssertionError("not reached")
