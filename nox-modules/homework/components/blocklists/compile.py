"""A downloaded list -> the names file homework-dnsd reads, in a process of its own.

    python3 -m homework.components.blocklists.compile RAW OUT --max-names N
    -> one JSON line {"rules", "exceptions", "skipped"}, exit 0; or {"error"}, exit 2

Why a process: a 60 MiB list has millions of lines. Parsed in the controller it cost 650
MB of Python sets and held its loop for seconds. Here the lines are streamed through
parse.classify, the names written as they come to a scratch file, sorted and made unique
by sort(1) (coreutils: an external merge sort with a bounded buffer), and written in
dnsd's form (`@@exception` lines, then the names sorted, one per line: store.py's
SortedNames reads the same file by binary search). Memory stays flat whatever the list's
size, and the controller only waits for the answer (a green wait under eventlet).

A list with more than `max_names` distinct names is refused, with the count it reached:
parsing stops once twice that many lines named something (duplicates are common)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from .parse import ListError, classify
from .store import SortedNames

MAX_EXCEPTIONS = 100_000
SORT_BUFFER = "32M"


@dataclass(frozen=True)
class Compiled:
    rules: int          # distinct names blocked
    exceptions: int     # @@ exceptions kept (each under a listed name)
    skipped: int        # lines a resolver cannot enforce


def compile_file(raw: Path, out: Path, max_names: int) -> Compiled:
    raw, out = Path(raw), Path(out)
    scratch, ordered = out.with_name(out.name + ".unsorted"), out.with_name(out.name + ".sorted")
    try:
        with open(raw, "rb") as f:
            if b"\x00" in f.read(65536):
                raise ListError("this is a binary file, not a blocklist")
        emitted, skipped = 0, 0
        exceptions: set[str] = set()
        with open(raw, "rb") as src, open(scratch, "w", encoding="ascii") as names:
            for line in src:
                found, exception, skip = classify(line.decode("utf-8", errors="replace"))
                skipped += skip
                if exception is not None and len(exceptions) < MAX_EXCEPTIONS:
                    exceptions.add(exception)
                for name in found:
                    names.write(name + "\n")
                emitted += len(found)
                if emitted > 2 * max_names:
                    raise ListError(f"the list has more than {max_names:,} names, the most one list may have "
                                    "([blocklists] max_names)")
        subprocess.run(["sort", "-u", "-S", SORT_BUFFER, "-T", str(out.parent), "-o", str(ordered), str(scratch)],
                       check=True, env={**os.environ, "LC_ALL": "C"}, capture_output=True)
        sorted_names = SortedNames(ordered)
        rules = len(sorted_names)
        if rules == 0:
            raise ListError(f"no hosts-file, ||domain^ or plain domain lines found ({skipped} other lines): "
                            "not a blocklist")
        if rules > max_names:
            raise ListError(f"the list has {rules:,} names, more than the {max_names:,} one list may have "
                            "([blocklists] max_names)")
        kept = sorted(e for e in exceptions if _covered(e, sorted_names))
        tmp = out.with_name(out.name + ".tmp")
        with open(tmp, "wb") as dest:
            dest.writelines(f"@@{e}\n".encode() for e in kept)
            with open(ordered, "rb") as names_file:
                while chunk := names_file.read(1 << 20):
                    dest.write(chunk)
            dest.flush()
            os.fsync(dest.fileno())
        os.replace(tmp, out)
        return Compiled(rules, len(kept), skipped)
    finally:
        for path in (scratch, ordered):
            path.unlink(missing_ok=True)


def _covered(name: str, names: SortedNames) -> bool:
    """Does a listed name cover `name` (itself or a parent)?"""
    parts = name.split(".")
    return any(".".join(parts[i:]) in names for i in range(len(parts)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("raw", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--max-names", type=int, required=True)
    args = p.parse_args(argv)
    try:
        result = compile_file(args.raw, args.out, args.max_names)
    except (ListError, OSError, subprocess.CalledProcessError) as exc:
        print(json.dumps({"error": str(exc)}))
        return 2
    print(json.dumps(asdict(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
