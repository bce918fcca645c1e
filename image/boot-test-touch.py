#!/usr/bin/env python3
"""A touch screen for the router's VM in the image boot test (run inside the guest):

    boot-test-touch.py drag X1 Y1 X2 Y2 W H   a finger on a WxH touch screen from (X1,Y1) to
                                              (X2,Y2): down, moving there in steps, up

QEMU 7.2 has no touch screen to offer (usb-tablet is a pointer: the compositor sees a mouse,
the page mouse events), so the finger comes from a touch screen the kernel makes (uinput)
with the properties of a real one (direct, multi-touch, BTN_TOUCH): udev, libinput, cage,
cog and WebKit take it as they would a panel's USB or I2C touch controller, and the page
gets what a finger gives it there. The device exists only while this runs.
"""
import fcntl
import glob
import os
import struct
import sys
import time

EV_SYN, EV_KEY, EV_ABS = 0, 1, 3
SYN_REPORT, BTN_TOUCH = 0, 0x14A
ABS_X, ABS_Y, ABS_MT_SLOT, ABS_MT_POSITION_X, ABS_MT_POSITION_Y, ABS_MT_TRACKING_ID = 0, 1, 0x2F, 0x35, 0x36, 0x39
INPUT_PROP_DIRECT = 1
UI_SET_EVBIT, UI_SET_KEYBIT, UI_SET_ABSBIT, UI_SET_PROPBIT = 0x40045564, 0x40045565, 0x40045567, 0x4004556E
UI_DEV_SETUP, UI_ABS_SETUP, UI_DEV_CREATE, UI_DEV_DESTROY = 0x405C5503, 0x401C5504, 0x5501, 0x5502
NAME = b"Homework boot test touch screen"


def create(w: int, h: int) -> int:
    fd = os.open("/dev/uinput", os.O_WRONLY | os.O_NONBLOCK)
    fcntl.ioctl(fd, UI_SET_EVBIT, EV_KEY)
    fcntl.ioctl(fd, UI_SET_KEYBIT, BTN_TOUCH)
    fcntl.ioctl(fd, UI_SET_EVBIT, EV_ABS)
    fcntl.ioctl(fd, UI_SET_PROPBIT, INPUT_PROP_DIRECT)
    for code, top in ((ABS_X, w - 1), (ABS_Y, h - 1), (ABS_MT_SLOT, 9), (ABS_MT_TRACKING_ID, 65535),
                      (ABS_MT_POSITION_X, w - 1), (ABS_MT_POSITION_Y, h - 1)):
        fcntl.ioctl(fd, UI_SET_ABSBIT, code)
        resolution = 0 if code in (ABS_MT_SLOT, ABS_MT_TRACKING_ID) else 6     # units per mm: a 7" panel
        # struct uinput_abs_setup: code, then input_absinfo (value, min, max, fuzz, flat, resolution)
        fcntl.ioctl(fd, UI_ABS_SETUP, struct.pack("<H2x6i", code, 0, 0, top, 0, 0, resolution))
    # struct uinput_setup: input_id (bustype USB, vendor, product, version), name[80], ff_effects_max
    fcntl.ioctl(fd, UI_DEV_SETUP, struct.pack("<4H80sI", 0x03, 0x1D6B, 0x0104, 1, NAME, 0))
    fcntl.ioctl(fd, UI_DEV_CREATE)
    return fd


def event_node() -> str | None:
    for name in glob.glob("/sys/class/input/input*/name"):
        with open(name, "rb") as f:
            if f.read().strip() == NAME:
                nodes = glob.glob(os.path.join(os.path.dirname(name), "event*"))
                return "/dev/input/" + os.path.basename(nodes[0]) if nodes else None
    return None


def compositor_has(node: str) -> bool:
    """cage holds the screen's input devices open (seatd opened them for it)."""
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "cage":
                    continue
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == node:
                    return True
        except OSError:
            continue
    return False


def emit(fd: int, *events: tuple[int, int, int]) -> None:
    now = time.time()
    data = b"".join(struct.pack("<qqHHi", int(now), int(now % 1 * 1e6), t, c, v) for t, c, v in events)
    os.write(fd, data + struct.pack("<qqHHi", int(now), int(now % 1 * 1e6), EV_SYN, SYN_REPORT, 0))


def drag(x1: int, y1: int, x2: int, y2: int, w: int, h: int, steps: int = 16) -> int:
    fd = create(w, h)
    try:
        deadline = time.monotonic() + 60
        node = None
        while time.monotonic() < deadline:
            node = node or event_node()
            if node and compositor_has(node):
                break
            time.sleep(0.2)
        else:
            print(f"the compositor did not open the touch screen ({node or 'no event node'}) within 60 s")
            return 1
        print(f"touch screen {node}, open in cage")
        time.sleep(3)       # cage tells cog of the seat's new touch capability; cog binds its wl_touch
        emit(fd, (EV_ABS, ABS_MT_SLOT, 0), (EV_ABS, ABS_MT_TRACKING_ID, 1), (EV_ABS, ABS_MT_POSITION_X, x1),
             (EV_ABS, ABS_MT_POSITION_Y, y1), (EV_KEY, BTN_TOUCH, 1), (EV_ABS, ABS_X, x1), (EV_ABS, ABS_Y, y1))
        time.sleep(0.3)
        for i in range(1, steps + 1):
            x, y = round(x1 + (x2 - x1) * i / steps), round(y1 + (y2 - y1) * i / steps)
            emit(fd, (EV_ABS, ABS_MT_POSITION_X, x), (EV_ABS, ABS_MT_POSITION_Y, y),
                 (EV_ABS, ABS_X, x), (EV_ABS, ABS_Y, y))
            time.sleep(0.1)
        time.sleep(0.3)
        emit(fd, (EV_ABS, ABS_MT_TRACKING_ID, -1), (EV_KEY, BTN_TOUCH, 0))
        time.sleep(1)       # the release reaches the page before the device goes
        print(f"dragged ({x1},{y1}) -> ({x2},{y2}) in {steps} steps")
        return 0
    finally:
        fcntl.ioctl(fd, UI_DEV_DESTROY)
        os.close(fd)


def main(argv: list[str]) -> int:
    if len(argv) == 8 and argv[1] == "drag":
        return drag(*(int(float(a)) for a in argv[2:8]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
