#!/usr/bin/env python3
"""Security bench: what twelve devices guessing the admin password in parallel cost the
household. The board's `GET /ws.v1/status` (HTTPS through lighttpd, from the management
link) and the CLI's `status` (timed on the control socket itself, so a CLI process's
start-up is not counted) are timed while twelve permitted devices each send five wrong
passwords at once (60 scrypt checks), with the checks where the controller makes them
(a worker thread, `[api] hash_off_loop = true`) and, as the peer, on the event loop as
before (`false`). Same run, same router and devices, the order alternating by round;
idle latency for reference. Medians of ROUNDS rounds.

The first hostile run, with the checks on the loop and no per-device limit, saw GET
/status take 2 s and `homework status` 5 s. Aim: off the loop, p50 at most 0.1x the
peer's (the rest is two cores shared with 60 scrypt checks and twelve curl/TLS clients)."""
from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests"), str(Path(__file__).resolve().parents[1] / "nox-modules")]

from homelab.routing import permitted_device  # noqa: E402
from homelab.web import Web, api, web_home  # noqa: E402

ROUNDS = 3
GUESSERS = 12
GUESSES = 5
IDLE_PROBES = 30


def guess(dev, n: int) -> None:
    gw = dev.default_gateway()
    for i in range(n):
        dev.run(["curl", "-sk", "-m", "60", "-o", "/dev/null", "-X", "POST", "-H", "Content-Type: application/json",
                 "-d", f'{{"password": "wrong guess {i} {time.monotonic()}"}}', f"https://{gw}/ws.v1/login"],
                check=False, timeout=90)


def probe(home) -> tuple[float, float]:
    t = time.monotonic()
    api(home.web, "GET", "status", role="read-only", timeout=60)
    board = time.monotonic() - t
    t = time.monotonic()
    home.control("status", timeout=60)
    return board, time.monotonic() - t


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def restart(home, off_loop: bool) -> None:
    """The controller again (its limiter forgets the guesses) with the checks where asked."""
    home.config_overrides.setdefault("api", {})["hash_off_loop"] = off_loop
    home._write_config()
    home.restart_controller()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if api(home.web, "GET", "status", role="read-only", timeout=5).status_code == 200:
                return
        except Exception:       # noqa: BLE001 - not listening yet
            pass
        time.sleep(0.2)
    raise RuntimeError("the controller did not come back")


def under_guessing(home, devices) -> list[tuple[float, float]]:
    threads = [threading.Thread(target=guess, args=(d, GUESSES)) for d in devices]
    for t in threads:
        t.start()
    probes = []
    while any(t.is_alive() for t in threads):
        probes.append(probe(home))
    for t in threads:
        t.join()
    return probes


def main() -> None:
    with web_home({"controller": {"components": ["dhcp", "routing"]}}) as home:
        home.web = Web(home).start()
        devices = [permitted_device(home, f"g{i}") for i in range(GUESSERS)]
        api(home.web, "GET", "status", role="read-only")       # the token made before timing
        runs: dict[bool, list] = {True: [], False: []}
        idle: list[tuple[float, float]] = []
        for rnd in range(ROUNDS):
            for off_loop in ((True, False) if rnd % 2 == 0 else (False, True)):
                restart(home, off_loop)
                idle += [probe(home) for _ in range(IDLE_PROBES // 2)]
                runs[off_loop].append(under_guessing(home, devices))
            print(f"round {rnd + 1}: probes while guessing: off the loop {len(runs[True][-1])}, "
                  f"on the loop {len(runs[False][-1])}", flush=True)
        restart(home, True)

        def med(rounds: list, which: int) -> float:
            return statistics.median(statistics.median(p[which] for p in r) for r in rounds)

        def tail(rounds: list, which: int) -> float:
            return statistics.median(p95([p[which] for p in r]) for r in rounds)

        print(f"\n{GUESSERS} devices x {GUESSES} wrong passwords at once; medians of {ROUNDS} rounds, ms:")
        print(f"  {'':28} {'idle':>6} {'off loop p50':>13} {'on loop p50':>12} {'off/on':>7} "
              f"{'off loop p95':>13} {'on loop p95':>12}")
        for which, name in ((0, "GET /ws.v1/status (board)"), (1, "control socket status (CLI)")):
            i50 = statistics.median(p[which] for p in idle)
            o50, n50 = med(runs[True], which), med(runs[False], which)
            o95, n95 = tail(runs[True], which), tail(runs[False], which)
            print(f"  {name:28} {i50 * 1000:6.1f} {o50 * 1000:13.1f} {n50 * 1000:12.1f} {o50 / n50:6.2f}x "
                  f"{o95 * 1000:13.1f} {n95 * 1000:12.1f}")
        print("  off loop: [api] hash_off_loop = true (the default); on loop: the peer, as before. "
              "Aim: off/on at most 0.1x")


if __name__ == "__main__":
    main()
