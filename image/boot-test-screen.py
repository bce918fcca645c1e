#!/usr/bin/env python3
"""Reading the router's own screen in the image boot test (a QMP screendump, PPM):

    boot-test-screen.py find IMAGE TEXT...   centre "x y" of the first line holding every TEXT
                                             (Tesseract's OCR; case-insensitive), exit 1 if none
    boot-test-screen.py text IMAGE           every line Tesseract reads, with its box
    boot-test-screen.py brightness IMAGE     mean luminance 0..255
    boot-test-screen.py button IMAGE         centre "x y" of the board's green button (Let in), exit 1 if none
    boot-test-screen.py icon IMAGE TEXT      how many coloured pixels the device icon under the label named
                                             TEXT has (its guess line's start), exit 1 if too few for one
    boot-test-screen.py png IMAGE OUT        the screendump as PNG (for the test's record)

Reading the screen the way a person would (words, where they are, how bright it is) tests
what the household sees, not what the page's code thinks it drew.
"""
from __future__ import annotations

import struct
import subprocess
import sys
import zlib


def ppm(path: str) -> tuple[int, int, bytes]:
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P6" or fields[3] != b"255":
        raise ValueError(f"{path}: not an 8-bit PPM (P6)")
    w, h = int(fields[1]), int(fields[2])
    return w, h, data[pos + 1: pos + 1 + w * h * 3]


def lines(path: str) -> list[tuple[str, int, int, int, int]]:
    """(text, left, top, width, height) per line Tesseract reads."""
    out = subprocess.run(["tesseract", path, "stdout", "-l", "eng", "--psm", "11", "tsv"], capture_output=True,
                         text=True, check=True).stdout
    words: dict[tuple, list] = {}
    for row in out.splitlines()[1:]:
        f = row.split("\t")
        if len(f) < 12 or not f[11].strip() or float(f[10]) < 30:
            continue
        key = (f[2], f[3], f[4])              # block, paragraph, line
        words.setdefault(key, []).append((f[11], int(f[6]), int(f[7]), int(f[8]), int(f[9])))
    result = []
    for ws in words.values():
        left = min(w[1] for w in ws)
        top = min(w[2] for w in ws)
        right = max(w[1] + w[3] for w in ws)
        bottom = max(w[2] + w[4] for w in ws)
        result.append((" ".join(w[0] for w in ws), left, top, right - left, bottom - top))
    return result


def main(argv: list[str]) -> int:
    if len(argv) >= 4 and argv[1] == "find":
        wanted = [t.lower() for t in argv[3:]]
        for text, x, y, w, h in lines(argv[2]):
            if all(t in text.lower() for t in wanted):
                print(x + w // 2, y + h // 2)
                return 0
        return 1
    if len(argv) == 3 and argv[1] == "text":
        for text, x, y, w, h in lines(argv[2]):
            print(f"{x},{y} {w}x{h}: {text}")
        return 0
    if len(argv) == 3 and argv[1] == "brightness":
        w, h, px = ppm(argv[2])
        total = sum(px[0::3]) * 299 + sum(px[1::3]) * 587 + sum(px[2::3]) * 114
        print(round(total / 1000 / (w * h), 1))
        return 0
    if len(argv) == 3 and argv[1] == "button":
        # Tesseract does not read the light words on the board's dark buttons; the one green
        # button a decision dialog shows (Let in, #2c6e49) is found by its colour instead.
        w, h, px = ppm(argv[2])
        xs, ys = [], []
        for i in range(0, len(px), 3):
            if abs(px[i] - 0x2C) <= 6 and abs(px[i + 1] - 0x6E) <= 6 and abs(px[i + 2] - 0x49) <= 6:
                xs.append(i // 3 % w)
                ys.append(i // 3 // w)
        if len(xs) < 1000:        # a button of about 100x40 pixels; a few green letters elsewhere are not one
            return 1
        print(sorted(xs)[len(xs) // 2], sorted(ys)[len(ys) // 2])
        return 0
    if len(argv) == 4 and argv[1] == "icon":
        # A label: the name, then the guess line starting with the device's icon (an emoji such
        # as 💡 or 📱). Drawn with a colour emoji font it has saturated pixels; without one the
        # browser draws an empty box in the text's grey, and the label around it is white.
        found = [box for box in lines(argv[2]) if argv[3].lower() in box[0].lower()]
        if not found:
            return 1
        _, x, y, _, h = found[0]
        sw, sh, px = ppm(argv[2])
        coloured = 0
        for row in range(y + h + 1, min(sh, y + h + 21)):
            for col in range(max(0, x - 4), min(sw, x + 22)):
                r, g, b = px[(row * sw + col) * 3:(row * sw + col) * 3 + 3]
                coloured += max(r, g, b) - min(r, g, b) >= 100
        print(coloured)
        return 0 if coloured >= 12 else 1
    if len(argv) == 4 and argv[1] == "png":
        w, h, px = ppm(argv[2])
        raw = b"".join(b"\0" + px[y * w * 3:(y + 1) * w * 3] for y in range(h))

        def chunk(kind, body):
            return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        with open(argv[3], "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                    + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
