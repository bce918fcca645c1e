"""Declared dependencies: a component gets what it uses at construction, through the
interfaces its manifest names (interfaces.py); it never looks a sibling up or imports a
sibling's component module; the core's modules import no component and not the adapter;
and nothing the core gives on the context is patched later by a component."""
from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from conftest import make_core
from homework import manifest
from homework.config import KNOWN_COMPONENTS
from homework.core import construction_order
from homework.leases import NoLeases
from homework.manifest import Manifest

SOURCE = Path(__file__).resolve().parents[2] / "nox-modules" / "homework"
COMPONENTS = SOURCE / "components"
# The top: the processes' entry points, which wire the adapter and the core together, and
# the CLI; the satellite agent is a program of its own (on the satellite), which reuses
# eapol's hostapd deny-list writer.
TOP = {"main.py", "__main__.py"}
NOT_CORE = {"components", "adapter", "satellite_agent"}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a file of the homework package."""
    package = ".".join(("homework",) + path.relative_to(SOURCE).parent.parts)
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            out += [(node.lineno, base)] + [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return out


def test_the_core_imports_no_component_and_not_the_adapter():
    lower = [p for p in SOURCE.rglob("*.py")
             if not (NOT_CORE & set(p.relative_to(SOURCE).parts))
             and p.name not in TOP and not p.name.startswith("cli")]
    assert len(lower) > 40
    for path in lower:
        for line, module in imported_modules(path):
            assert not module.startswith(("homework.components", "homework.adapter")), \
                f"{path.relative_to(SOURCE)}:{line} imports {module}"


def component_module(name: str) -> str:
    return importlib.import_module(f"homework.components.{name}").COMPONENT.__module__


@pytest.mark.parametrize("name", KNOWN_COMPONENTS)
def test_a_component_never_looks_a_sibling_up_nor_imports_its_component(name):
    siblings = {f"homework.components.{other}" for other in KNOWN_COMPONENTS if other != name}
    forbidden = siblings | {component_module(other) for other in KNOWN_COMPONENTS if other != name}
    for path in sorted((COMPONENTS / name).rglob("*.py")):
        text = path.read_text()
        for line, module in imported_modules(path):
            assert module not in forbidden, f"{path.relative_to(SOURCE)}:{line} imports {module}"
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("component", "components", "_components") \
                    and ast.unparse(node.value).endswith("ctx"):
                pytest.fail(f"{path.relative_to(SOURCE)}:{node.lineno}: {ast.unparse(node)}: "
                            "take the sibling's interface at construction (manifest `needs`)")
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr" and node.args \
                    and "component" in ast.unparse(node.args[0]):
                pytest.fail(f"{path.relative_to(SOURCE)}:{node.lineno}: {ast.unparse(node)}")


def test_every_need_is_offered_and_taken_by_the_constructor():
    offered = {i for m in manifest.every() for i in m.offers}
    for m in manifest.every():
        if m.component == "core":
            continue
        cls = importlib.import_module(f"homework.components.{m.component}").COMPONENT
        if m.offers:
            assert "offer" in vars(cls), f"{m.component} offers {m.offers} but has no offer()"
        parameters = inspect.signature(cls.__init__).parameters
        for arg, interface in m.needs.items():
            assert interface in offered, f"{m.component} needs {interface.__name__}, which no component offers"
            assert arg in parameters and parameters[arg].default is None, \
                f"{m.component}.__init__ takes {arg}=None (the interface, or None when nobody offers it)"
            assert interface.__module__ in ("homework.interfaces", "homework.leases")


def test_the_construction_order_puts_offers_first_and_refuses_a_circle():
    class A:
        pass

    class B:
        pass
    ms = {"user": Manifest("user", needs={"a": A}), "plain": Manifest("plain"),
          "offerer": Manifest("offerer", offers=(A,))}
    assert construction_order(ms) == ["offerer", "user", "plain"]
    ms = {"x": Manifest("x", offers=(A,), needs={"b": B}), "y": Manifest("y", offers=(B,), needs={"a": A})}
    with pytest.raises(ValueError, match="circle"):
        construction_order(ms)


def test_the_core_hands_over_what_is_offered(tmp_path, clock):
    core = make_core(tmp_path, components=("blocklists", "notify", "linksim", "dns", "dhcp", "radio", "mqtt"),
                     clock=clock)
    dns_lists = core.ctx.component("blocklists").dns
    assert type(dns_lists).__name__ == "DnsListsOffer" and not hasattr(dns_lists, "policy")   # not DNS itself
    assert core.ctx.component("notify").broker is core.ctx.component("mqtt")
    assert core.ctx.component("linksim").radio is core.ctx.component("radio")
    assert core.components == [core.ctx.component(n) for n in ("blocklists", "notify", "linksim", "dns", "dhcp",
                                                                 "radio", "mqtt")]     # started in the config's order
    # the lease reader is dhcp's from before any other component was made; nothing replaces it
    assert core.ctx.leases is core.ctx.component("dhcp")
    alone = make_core(tmp_path / "alone", components=("blocklists", "notify"), clock=clock)
    assert alone.ctx.component("blocklists").dns is None and alone.ctx.component("notify").broker is None
    assert isinstance(alone.ctx.leases, NoLeases)


def test_no_component_patches_the_context_or_the_core_s_objects():
    """What the context holds is given at construction; a component adds to its registries
    (ctx.health[...], ctx.device_facts) but never replaces one of its attributes, nor one
    of an object it holds (ctx.devices.x = ...)."""
    for path in COMPONENTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in targets:
                if isinstance(target, ast.Attribute) and ".ctx" in f".{ast.unparse(target.value)}":
                    pytest.fail(f"{path.relative_to(SOURCE)}:{node.lineno}: {ast.unparse(target)} = ...: "
                                "the context is the core's")
