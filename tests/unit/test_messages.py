"""Every message the household reads (alerts, notifications, what webhooks and MQTT carry)
names the device by its name, gives amounts in units and is made of whole sentences;
the machine fields travel beside the words."""
import re

import pytest

from homework import wording
from homework.events import Alert
from routingkit import join, routing_core

A, B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
MAC = re.compile(r"\b[0-9a-f]{2}(:[0-9a-f]{2}){5}\b")


def whole_sentences(text: str) -> bool:
    return bool(text) and text[0].isupper() and text.rstrip()[-1] in ".!?"


def test_sizes_rates_and_names():
    assert wording.size(0) == "0 B" and wording.size(999) == "999 B" and wording.size(1500) == "1.5 kB"
    assert wording.size(28_615_719) == "28.6 MB" and wording.size(26_000_000) == "26 MB"
    assert wording.size(500 * 10 ** 9) == "500 GB" and wording.size(3 * 10 ** 12) == "3 TB"
    assert wording.size(123_456_789_012) == "123 GB"
    assert wording.rate(1000) == "1 Mbit/s" and wording.rate(1500) == "1.5 Mbit/s" and wording.rate(512) == "512 kbit/s"
    assert wording.rate(20000) == "20 Mbit/s"
    assert wording.sentence("the line is down") == "The line is down."
    assert wording.label("00:17:88:00:00:01", "", "") == ("Philips Lighting BV device", "vendor") or \
        wording.label("00:17:88:00:00:01", "", "")[1] in ("vendor", "mac")
    assert wording.label(A, "Tom's laptop", "tom-lt") == ("Tom's laptop", "name")
    assert wording.label(A, "", "tom-lt") == ("tom-lt", "hostname")


@pytest.fixture
def home(tmp_path, clock):
    core = routing_core(tmp_path, clock, components=("dhcp", "routing", "usage", "notify", "mqtt"),
                        usage_timezone="Europe/London", mqtt_host="")
    for mac, port in ((A, 1), (B, 2)):
        join(core, mac, port)
        core.commands.call("permit", mac=mac)
    core.commands.call("set-meta", mac=A, name="Tom's laptop")
    return core


def notifications(core):
    return core.commands.call("notifications")["notifications"]


def test_a_usage_limit_is_told_by_name_with_units_and_its_numbers_in_data(home):
    notes = []
    home.bus.subscribe("notification", lambda t, ev: notes.append(ev))
    home.commands.call("usage-limit", mac=A, allowance="25M", period="day", action="block")
    home.bus.publish("bandwidth", mac=A, ip="", bytes=28_615_719, up=0, down=28_615_719)
    [note] = [n for n in notes if n.kind == "alert-usage-limit"]
    assert note.title == "Tom's laptop has used up its allowance."
    assert note.detail.startswith("Tom's laptop has used up today's allowance (28.6 MB of 25 MB).")
    assert "Its internet is off and comes back at midnight." in note.detail
    assert not MAC.search(note.title + note.detail) and note.mac == A
    assert note.data["used_bytes"] == 28_615_719 and note.data["allowance_bytes"] == 25_000_000
    assert note.data["period"] == "day" and note.data["action"] == "block"


def test_every_notification_is_whole_sentences_without_a_mac(home):
    home.ctx.devices.seen("02:00:00:00:00:0c", "kitchen-radio")
    home.commands.call("set-meta", mac=B, name="Guest phone")
    home.commands.call("blacklist", mac=B)
    home.commands.call("usage-cap", cap="100M")
    home.bus.publish("bandwidth", mac=A, ip="", bytes=90_000_000, up=0, down=90_000_000)
    home.bus.publish(Alert(mac=A, kind="flow-limit", detail="Tom's laptop opened 1200 connections at once.",
                           data={"flows": 1200}))
    home.commands.call("notify-test")
    got = notifications(home)
    assert {n["kind"] for n in got} >= {"device-joining", "device-blacklisted", "alert-usage-80", "test"}
    for n in got:
        assert whole_sentences(n["title"]) and whole_sentences(n["detail"]), n
        if not (n["kind"] == "device-joining" and n["mac"] in (A, B)):     # those joined with no name at all
            assert not MAC.search(n["title"]), n
    joining = next(n for n in got if n["kind"] == "device-joining")
    assert joining["title"] == "Kitchen-radio asks to join the home network."
    assert next(n for n in got if n["kind"] == "device-blacklisted")["title"] == "Guest phone is blacklisted."
    cap = next(n for n in got if n["kind"] == "alert-usage-80")
    assert cap["detail"] == "The household has used 80% of its data for this billing period (90 MB of 100 MB)."
    flows = next(n for n in got if n["kind"] == "alert-flow-limit")
    assert flows["title"] == "Tom's laptop is opening very many connections."


def test_alert_words_of_every_publisher_are_sentences():
    """The alert sites the household reads, by kind, as their publishers word them."""
    import ast
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "nox-modules" / "homework"
    found = 0
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Alert"):
                detail = next((k.value for k in node.keywords if k.arg == "detail"), None)
                if detail is None:
                    continue
                found += 1
                text = ast.unparse(detail)
                # a literal starts with a capital, or the words go through wording.sentence / a method
                assert "data" in [k.arg for k in node.keywords], f"{path.name}:{node.lineno}: no machine fields"
                first = detail.values[0] if isinstance(detail, ast.JoinedStr) else detail
                if isinstance(first, ast.Constant):         # a literal start: a capital
                    assert str(first.value)[:1].isupper(), f"{path.name}:{node.lineno}: {text[:60]}"
                elif not isinstance(first, ast.Name):        # a helper's parameter: its callers word it
                    assert "sentence" in text or "words" in text or "what" in text, \
                        f"{path.name}:{node.lineno}: {text[:60]}"
    assert found >= 8
