#!/usr/bin/env python3
"""`make bench` section for the Guest Board: p50/p99 over 20 devices of
  - first DHCPDISCOVER -> the device's label in the page: live board (Server-Sent Events)
    vs the same board polling every 3 s, as the research board did (peer);
  - drop on "On the network" -> the device's first successful HTTP fetch to the internet
    namespace's web server, vs `homework permit` on the admin CLI (peer: the same change
    without browser, lighttpd and the HTTP API).
Both in the same run, on the same emulated home. Samples come from tests/ui/bench_board.mjs
(Debian's Chromium driven by playwright-core); fetches are polled with curl every ~50 ms,
so the permit figures carry that resolution on both sides."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def main() -> int:
    if not (REPO / "tests" / "node_modules" / "playwright-core").exists():
        print("bench_ui: playwright-core missing (make deps)", file=sys.stderr)
        return 1
    proc = subprocess.run(["node", str(REPO / "tests" / "ui" / "bench_board.mjs")], cwd=REPO / "tests",
                          capture_output=True, text=True, timeout=1200, env=dict(os.environ))
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        return 1
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = [("DHCPDISCOVER -> label on the board", "label_sse_ms", f"board polling every {data['poll_seconds']} s",
             "label_poll_ms"),
            ("drop on 'permitted' -> first HTTP fetch", "permit_drop_ms", "CLI `homework permit`", "permit_cli_ms")]
    print(f"Guest Board, {data['devices']} devices each (ratio = peer / ours, > 1 means we are faster)")
    print(f"{'what':42} {'ours p50':>9} {'p99':>8} | {'peer':28} {'p50':>8} {'p99':>8} | {'ratio p50':>9}")
    for what, ours, peer_name, peer in rows:
        a, b = data[ours], data[peer]
        a50, a99, b50, b99 = statistics.median(a), pct(a, 99), statistics.median(b), pct(b, 99)
        print(f"{what:42} {a50:7.0f}ms {a99:6.0f}ms | {peer_name:28} {b50:6.0f}ms {b99:6.0f}ms | "
              f"{b50 / max(a50, 0.001):8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
