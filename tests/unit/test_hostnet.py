"""HostNet hands address changes to one long-lived `ip -batch` process (a fake here)."""
import sys
import time

from homework.hostnet import HostNet

FAKE_IP = """
import sys
for line in sys.stdin:
    with open(sys.argv[1], "a") as out:
        out.write(line)
"""


def fake_host(tmp_path, idle=5.0):
    log = tmp_path / "applied"
    host = HostNet("br0")
    host.IP_BATCH = (sys.executable, "-c", FAKE_IP, str(log))
    host.IDLE_SECONDS = idle
    return host, log


def wait_lines(path, n, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= n:
            return lines
        time.sleep(0.02)
    raise AssertionError(f"only {path.read_text() if path.exists() else ''!r}")


def test_changes_reach_one_ip_process_in_order(tmp_path):
    host, log = fake_host(tmp_path)
    for i in range(1, 4):
        host.add_router_address(f"10.2.0.{4 * i + 1}")
    host.flush()
    host.remove_router_address("10.2.0.5")
    host.flush()
    assert wait_lines(log, 4) == ["addr replace 10.2.0.5/30 dev br0", "addr replace 10.2.0.9/30 dev br0",
                                  "addr replace 10.2.0.13/30 dev br0", "addr del 10.2.0.5/30 dev br0"]
    assert host.processes_started == 1


def test_an_idle_ip_process_is_let_go_and_a_new_one_started(tmp_path):
    host, log = fake_host(tmp_path, idle=0.1)
    host.add_router_address("10.2.0.1")
    wait_lines(log, 1)
    time.sleep(0.5)
    host.add_router_address("10.2.0.5")
    assert wait_lines(log, 2)[-1] == "addr replace 10.2.0.5/30 dev br0"
    assert host.processes_started == 2


def test_a_dead_ip_process_is_replaced(tmp_path):
    host, log = fake_host(tmp_path)
    host.add_router_address("10.2.0.1")
    wait_lines(log, 1)
    host._proc.kill()           # the fake ip we started dies behind the worker's back
    host._proc.wait()
    host.add_router_address("10.2.0.5")
    assert wait_lines(log, 2)[-1] == "addr replace 10.2.0.5/30 dev br0"
    assert host.processes_started == 2


def test_changes_close_together_go_in_one_write_and_the_first_after_a_quiet_spell_at_once(tmp_path):
    host, log = fake_host(tmp_path)
    # A long coalescing window (that does not grow), so "at once" means "well before the
    # window ends" on any machine, however loaded, rather than a guess at its speed.
    host.COALESCE_SECONDS = host.COALESCE_MAX_SECONDS = 6.0
    t0 = time.monotonic()
    host.add_router_address("10.2.0.1")
    wait_lines(log, 1)
    assert time.monotonic() - t0 < host.COALESCE_SECONDS / 2   # nothing written before: at once
    for i in range(1, 21):                          # a burst right after: one more write
        host.add_router_address(f"10.2.{i}.1")
    host.flush()
    assert len(wait_lines(log, 21)) == 21
    assert host.writes == 2
    time.sleep(host.COALESCE_SECONDS + 0.2)          # quiet again: at once
    t1 = time.monotonic()
    host.add_router_address("10.2.99.1")
    wait_lines(log, 22)
    assert time.monotonic() - t1 < host.COALESCE_SECONDS / 2 and host.writes == 3


def test_while_changes_keep_coming_the_window_grows_so_writes_do_not_follow_each_change(tmp_path):
    host, log = fake_host(tmp_path)
    host.COALESCE_SECONDS, host.COALESCE_MAX_SECONDS = 0.02, 0.32
    for i in range(100):                 # a crowd: a new device every 10 ms for a second
        host.add_router_address(f"10.2.{i // 64}.{(i % 64) * 4 + 1}")
        time.sleep(0.01)
    host.flush()
    assert len(wait_lines(log, 100)) == 100          # every change, in order
    assert host.writes <= 12                         # a 20 ms window throughout: about 50 writes
    time.sleep(0.5)                                  # quiet for longer than the window: at once again
    writes = host.writes
    host.add_router_address("10.2.99.1")
    wait_lines(log, 101)
    assert host.writes == writes + 1 and host._window == host.COALESCE_SECONDS


def test_spares_go_on_ahead_and_a_taken_spare_costs_no_change(tmp_path):
    host, log = fake_host(tmp_path)
    assert host.reserve_router_addresses(["10.2.0.1", "10.2.0.5"]) == 2
    host.flush()
    assert host.add_router_address("10.2.0.1") is False       # a spare: nothing to write
    assert host.reserve_router_addresses(["10.2.0.5", "10.2.0.9"]) == 1
    assert host.add_router_address("10.2.0.13") is True
    host.release_spare_router_address("10.2.0.9")
    host.release_spare_router_address("10.2.0.77")             # not a spare: nothing
    host.flush()
    assert wait_lines(log, 5) == ["addr replace 10.2.0.1/30 dev br0", "addr replace 10.2.0.5/30 dev br0",
                                  "addr replace 10.2.0.9/30 dev br0", "addr replace 10.2.0.13/30 dev br0",
                                  "addr del 10.2.0.9/30 dev br0"]
    assert host.spare_router_addresses() == {"10.2.0.5"}
    # a spare no longer wanted comes off the bridge
    assert host.reserve_router_addresses([]) == 1
    host.flush()
    assert wait_lines(log, 6)[-1] == "addr del 10.2.0.5/30 dev br0"
