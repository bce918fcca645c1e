"""Every event is declared in homework/events.py: the controller publishes only declared
topics and alert kinds, builds the events it publishes, and its subscribers read attributes."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from homework import events
from homework.bus import EventBus

SOURCE = Path(__file__).resolve().parents[2] / "nox-modules" / "homework"


def modules():
    for path in sorted(SOURCE.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def calls(tree, attr):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr:
            yield node


def test_each_topic_has_one_dataclass():
    assert len(events.TOPICS) == len(events.Event.__subclasses__())
    for topic, cls in events.TOPICS.items():
        assert cls.TOPIC == topic and cls.__doc__, cls


def test_the_controller_subscribes_only_to_declared_topics():
    for path, tree in modules():
        for call in calls(tree, "subscribe"):
            if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                topic = call.args[0].value
                if "mqtt" in path.parts:      # the MQTT client's own subscribe(broker topic)
                    continue
                assert topic == "*" or events.declared(topic), f"{path.name}:{call.lineno}: {topic!r}"
            elif call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == "topic":
                continue                      # a loop over literal topics, checked at run time by the bus


def test_the_controller_builds_the_events_it_publishes():
    """`bus.publish("topic", ...)` is for tests; the controller builds events.X(...)."""
    for path, tree in modules():
        for call in calls(tree, "publish"):
            if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                owner = ast.unparse(call.func.value)
                assert "bus" not in owner, f"{path.name}:{call.lineno}: {ast.unparse(call)[:80]}"


def test_alert_kinds_written_in_the_code_are_declared():
    kinds = {k.value for k in events.AlertKind}
    for path, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Alert"):
                for kw in node.keywords:
                    if kw.arg == "kind" and isinstance(kw.value, ast.Constant):
                        assert kw.value.value in kinds, f"{path.name}:{node.lineno}: {kw.value.value!r}"
            if isinstance(node, ast.Attribute) and ast.unparse(node).startswith(("AlertKind.", "events.AlertKind.")):
                assert hasattr(events.AlertKind, node.attr), f"{path.name}:{node.lineno}: {node.attr}"


def _handlers(tree):
    """(function node, name of its event parameter) for every bus handler in a module."""
    methods = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef):
                methods[fn.name] = fn
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for call in calls(tree, "subscribe"):
        if len(call.args) != 2 or "bus" not in ast.unparse(call.func.value):
            continue
        handler = call.args[1]
        if isinstance(handler, ast.Lambda):
            yield handler, handler.args.args[1].arg
        elif isinstance(handler, ast.Attribute) and handler.attr in methods:
            fn = methods[handler.attr]
            yield fn, fn.args.args[2].arg
        elif isinstance(handler, ast.Name) and handler.id in functions:
            fn = functions[handler.id]
            yield fn, fn.args.args[1].arg


def test_subscribers_read_attributes_not_keys():
    seen = 0
    for path, tree in modules():
        for fn, param in _handlers(tree):
            seen += 1
            for node in ast.walk(fn):
                where = f"{path.name}:{getattr(node, 'lineno', '?')}"
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == param:
                    pytest.fail(f"{where}: {param}[...]: read the event's attribute")
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == param
                        and node.attr in ("get", "items", "keys")):
                    pytest.fail(f"{where}: {param}.{node.attr}(): read the event's attribute")
    assert seen > 30, "the scan found the controller's handlers"


def test_the_bus_refuses_what_is_not_declared():
    bus = EventBus()
    with pytest.raises(ValueError):
        bus.subscribe("bandwith", lambda topic, ev: None)
    with pytest.raises(TypeError):
        bus.publish(object())
    with pytest.raises(ValueError):
        events.Alert(mac="", kind="usage-90", detail="")
    alert = events.Alert(mac="", kind="wan-down", detail="no carrier")
    assert alert.kind is events.AlertKind.WAN_DOWN and alert.as_dict()["kind"] == "wan-down"
    assert events.QosDevice(mac="m", class_="high").as_dict() == {"mac": "m", "class": "high"}


def test_architecture_lists_every_event():
    text = (SOURCE.parents[1] / "docs" / "architecture.md").read_text()
    table = text.split("<!-- events:begin -->\n", 1)[1].split("\n<!-- events:end -->", 1)[0]
    assert table == events.markdown(), "docs/architecture.md's Events table is out of date (events.markdown())"
