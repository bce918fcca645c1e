#!/usr/bin/env python3
"""QEMU's monitor (QMP) for the image boot test:

    boot-test-qmp.py SOCKET snapshot DRIVE FILE   the disk as a power cut now would leave it

`snapshot` is an external snapshot (blockdev-snapshot-sync): QEMU finishes the writes in
flight, the drive's current qcow2 file is frozen from then on, and the VM goes on writing
to FILE (a new layer on top of it). The frozen file is then exactly what the disk held at
that instant: everything the guest had written, nothing it still had only in its page
cache. A recovery VM boots a throwaway layer on top of it (the power came back).
"""
import json
import socket
import sys


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


def main(argv: list[str]) -> int:
    if len(argv) == 5 and argv[2] == "snapshot":
        qmp(argv[1], "blockdev-snapshot-sync",
            {"device": argv[3], "snapshot-file": argv[4], "format": "qcow2", "mode": "absolute-paths"})
        print(f"snapshot: {argv[3]} frozen; writes go to {argv[4]}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
