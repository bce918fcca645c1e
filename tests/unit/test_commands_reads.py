"""A command that only reads runs without the scopes and settlers a change needs: the
board's view reads usage-today on every device event, and a settle there waited for
homework-dnsd and the captive sets once per event (a crowd's bookings, about ten a second)."""
import contextlib

import pytest

from homework.commands import CommandError, Commands


@pytest.fixture
def commands():
    cmds = Commands()
    cmds.log = []

    @contextlib.contextmanager
    def scope():
        cmds.log.append("enter")
        yield
        cmds.log.append("leave")

    cmds.scopes.append(scope)
    cmds.settlers.append(lambda: cmds.log.append("settle"))
    cmds.register("change", lambda mac: cmds.log.append(f"change {mac}") or "changed")
    cmds.register("today", lambda mac: len(mac), reads_only=True)
    return cmds


def test_a_change_is_scoped_and_settled(commands):
    assert commands.call("change", mac="aa") == "changed"
    assert commands.log == ["enter", "change aa", "leave", "settle"]


def test_a_read_neither_scopes_nor_settles(commands):
    assert commands.call("today", mac="abc") == 3
    assert commands.log == []


def test_a_read_with_bad_arguments_is_a_clear_error(commands):
    with pytest.raises(CommandError, match="today"):
        commands.call("today", device="abc")
    assert commands.log == []


def test_the_usage_reads_are_declared_reads(tmp_path, clock):
    from test_usage_cap import new_core
    core = new_core(tmp_path, clock, components=("dhcp", "routing", "usage"))
    settled = []
    core.commands.settlers.append(lambda: settled.append(1))
    core.commands.call("usage-today", mac="02:00:00:00:00:01")
    core.commands.call("usage-device-sums", mac="02:00:00:00:00:01")
    assert settled == []
