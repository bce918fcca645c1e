#!/usr/bin/env python3
"""QEMU's monitor (QMP) for the image boot test:

    boot-test-qmp.py SOCKET snapshot DRIVE FILE   the disk as a power cut now would leave it
    boot-test-qmp.py SOCKET run COMMAND [JSON]    any QMP command (netdev_add, device_add, ...)
    boot-test-qmp.py SOCKET screendump FILE       the screen as a PPM image
    boot-test-qmp.py SOCKET drag X1 Y1 X2 Y2 W H  a finger on the touch screen (QEMU's absolute
                                                  pointer: usb-tablet) from (X1,Y1) to (X2,Y2) of a WxH
                                                  screen; X2 Y2 = X1 Y1 is a tap

`snapshot` is an external snapshot (blockdev-snapshot-sync): QEMU finishes the writes in
flight, the drive's current qcow2 file is frozen from then on, and the VM goes on writing
to FILE (a new layer on top of it). The frozen file is then exactly what the disk held at
that instant: everything the guest had written, nothing it still had only in its page
cache. A recovery VM boots a throwaway layer on top of it (the power came back).
"""
import json
import socket
import sys
import time


def qmp(path: str, command: str, arguments: dict | None = None, timeout: float = 60) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        f = s.makefile("rwb", buffering=0)

        def reply() -> dict:
            while True:     # skip asynchronous events
                msg = json.loads(f.readline())
                if "return" in msg or "error" in msg or "QMP" in msg:
                    return msg

        reply()                                   # the greeting
        for cmd, args in (("qmp_capabilities", None), (command, arguments)):
            f.write(json.dumps({"execute": cmd, **({"arguments": args} if args else {})}).encode() + b"\n")
            msg = reply()
            if "error" in msg:
                raise RuntimeError(f"{cmd}: {msg['error'].get('desc', msg['error'])}")
        return msg


def pointer(path: str, events: list[dict]) -> None:
    qmp(path, "input-send-event", {"events": events})


def drag(path: str, x1: int, y1: int, x2: int, y2: int, w: int, h: int, steps: int = 12) -> None:
    """Press at (x1, y1), move there in steps (so the page sees a drag, or a tap when they
    are the same point), release. QEMU's absolute axes run 0..0x7fff across the screen."""
    def at(x, y):
        return [{"type": "abs", "data": {"axis": "x", "value": round(x * 0x7FFF / (w - 1))}},
                {"type": "abs", "data": {"axis": "y", "value": round(y * 0x7FFF / (h - 1))}}]
    pointer(path, at(x1, y1))
    time.sleep(0.3)
    pointer(path, [{"type": "btn", "data": {"down": True, "button": "left"}}])
    time.sleep(0.3)
    if (x1, y1) != (x2, y2):
        for i in range(1, steps + 1):
            pointer(path, at(x1 + (x2 - x1) * i / steps, y1 + (y2 - y1) * i / steps))
            time.sleep(0.15)
        time.sleep(0.3)
    pointer(path, [{"type": "btn", "data": {"down": False, "button": "left"}}])


def main(argv: list[str]) -> int:
    if len(argv) >= 4 and argv[2] == "run":
        reply = qmp(argv[1], argv[3], json.loads(argv[4]) if len(argv) > 4 else None)
        print(json.dumps(reply.get("return")))
        return 0
    if len(argv) == 4 and argv[2] == "screendump":
        qmp(argv[1], "screendump", {"filename": argv[3]})
        return 0
    if len(argv) == 9 and argv[2] == "drag":
        drag(argv[1], *(int(float(a)) for a in argv[3:9]))
        return 0
    if len(argv) == 5 and argv[2] == "snapshot":
        qmp(argv[1], "blockdev-snapshot-sync",
            {"device": argv[3], "snapshot-file": argv[4], "format": "qcow2", "mode": "absolute-paths"})
        print(f"snapshot: {argv[3]} frozen; writes go to {argv[4]}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
