"""The API's contract: the OpenAPI document is what the route declarations give, it is a
valid OpenAPI 3.0 document, no change takes away what a released client relies on, every
addition is in the changelog, and the routes are declared the one way (a public registry,
no route module importing the app)."""
import ast
import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest
import schemathesis

from contract import Contract, json_schema
from homework.components.api import catalog, changelog, openapi
from homework.components.api.model import Invalid, Model, check_answer, field, parse
from homework.components.api.routes import Access
from homework.components.api.views import DevicePanel

REPO = Path(__file__).resolve().parents[2]
API = REPO / "nox-modules" / "homework" / "components" / "api"
CHANGELOG = REPO / "docs" / "api-changelog.md"


def released() -> list[str]:
    return [line for line in (API / "surface.txt").read_text().splitlines() if line and not line.startswith("#")]


def test_the_checked_in_document_is_what_the_declarations_give():
    on_disk = (API / "openapi.json").read_text()
    assert on_disk == openapi.text(openapi.document()), \
        "openapi.json is not what the route declarations give: run `make openapi` and commit it"


def test_the_document_is_valid_openapi_3():
    schema = schemathesis.from_dict(openapi.document(), validate_schema=True)
    assert len(list(schema.get_all_operations())) == sum(len(g.operations()) for g in catalog.GROUPS)


def test_no_change_takes_away_what_a_released_client_relies_on():
    problems = openapi.breaking(released(), openapi.surface(openapi.document()))
    assert not problems, ("1.x only adds: these were in the released surface (surface.txt) and are gone or "
                          "changed:\n" + "\n".join(problems[:30]))


def test_every_addition_since_the_release_is_named_in_the_changelog():
    missing = openapi.unnamed_additions(released(), openapi.surface(openapi.document()), CHANGELOG.read_text())
    assert not missing, ("docs/api-changelog.md's Unreleased section does not name these additions (an "
                         "operation as METHOD /path, a field by its name in backticks):\n" + "\n".join(missing[:30]))


def surface_with(model_change) -> list[str]:
    """The surface after `model_change(DevicePanel's fields)`, the declarations restored after."""
    saved = copy.copy(DevicePanel._declared)
    try:
        fields = dict(DevicePanel.fields())
        model_change(fields)
        DevicePanel._declared = fields
        return openapi.surface(openapi.document())
    finally:
        DevicePanel._declared = saved


def test_a_renamed_answer_field_is_caught_as_breaking():
    def rename(fields):
        tp, spec = fields.pop("dns_rules")
        fields["website_rules"] = (tp, replace(spec, key="website_rules"))
    problems = openapi.breaking(released(), surface_with(rename))
    assert any(".dns_rules" in p and p.startswith("gone:") for p in problems), problems
    added = openapi.unnamed_additions(released(), surface_with(rename), CHANGELOG.read_text())
    assert any(".website_rules" in line for line in added)


def test_make_openapi_names_an_unnamed_addition_in_the_changelog():
    """changelog.with_additions (run by `make openapi`) adds a line for what Unreleased does
    not name, in its generated section, and changes nothing once everything is named."""
    def rename(fields):
        tp, spec = fields.pop("dns_rules")
        fields["website_rules"] = (tp, replace(spec, key="website_rules"))
    current, text, doc = surface_with(rename), CHANGELOG.read_text(), openapi.document()
    assert openapi.unnamed_additions(released(), current, text)
    written = changelog.with_additions(text, released(), current, doc)
    assert not openapi.unnamed_additions(released(), current, written)
    section = written.split(changelog.SECTION, 1)[1].split("\n\n### ", 1)[0]
    assert "`website_rules` in the answer of `GET /ws.v1/devices/{mac}`" in section
    assert written.count(changelog.SECTION) == 1 and written.startswith(text.split(changelog.SECTION)[0])
    assert changelog.with_additions(written, released(), current, doc) == written
    assert changelog.with_additions(text, released(), openapi.surface(doc), doc) == text
    # and the section as it stands is what the declarations give, made from nothing
    generated = changelog.SECTION + text.split(changelog.SECTION, 1)[1].split("\n\n", 1)[0] + "\n\n"
    bare = text.replace(generated, "")
    assert changelog.SECTION not in bare
    assert changelog.with_additions(bare, released(), openapi.surface(doc), doc) == text


def test_an_answer_field_made_optional_is_breaking_and_one_made_required_is_not():
    def optional(fields):
        tp, spec = fields["alerts"]
        fields["alerts"] = (tp, replace(spec, optional=True))
    assert any(".alerts:" in p for p in openapi.breaking(released(), surface_with(optional)))
    now_required = [line.replace(".dns_name: string|null, optional", ".dns_name: string|null")
                    for line in openapi.surface(openapi.document())]
    assert not openapi.breaking(released(), now_required)


def test_stricter_access_is_breaking():
    current = [line.replace("op GET /devices [read]", "op GET /devices [admin]")
               for line in openapi.surface(openapi.document())]
    assert openapi.breaking(released(), current) == ["changed: op GET /devices [read] -> op GET /devices [admin]"]


def test_every_route_declares_its_access_answer_and_summary():
    for group in catalog.GROUPS:
        assert group.tag, group
        for op in group.operations():
            assert isinstance(op.access, Access) and op.summary and op.name, (op.method, op.path)
            assert op.answer is not None, f"{op.method} {op.path} declares no answer"
            if op.method != "GET" and op.access is not Access.PUBLIC:
                assert op.access in (Access.ADMIN, Access.PANEL, Access.ASKING, Access.READ), (op.method, op.path)


def test_changes_are_admin_only_except_the_few_that_say_why():
    open_changes = {(op.method, op.path) for g in catalog.GROUPS for op in g.operations()
                    if op.method != "GET" and op.access is not Access.ADMIN}
    assert open_changes == {("POST", "/login"), ("POST", "/logout"), ("POST", "/satellites/pair"),
                            ("POST", "/setup"), ("POST", "/setup/session"), ("POST", "/panels/session"),
                            # a panel (the router's screen, a wall tablet) lets devices in or out and names them
                            ("POST", "/permit/{mac}"), ("POST", "/deny/{mac}"), ("POST", "/meta/{mac}"),
                            # a computer's agent: its own secret, from its own address (qos/hostapps.py)
                            ("POST", "/agent/report")}


def test_every_route_that_changes_a_device_declares_the_own_access_rule():
    changes_a_device = [op for g in catalog.GROUPS for op in g.operations()
                        if op.method != "GET" and "mac" in op.path_names() and not op.path.startswith("/meta")]
    assert len(changes_a_device) >= 12
    for op in changes_a_device:
        assert op.own_access == "mac", f"{op.method} {op.path} changes a device: declare own_access"
    in_body = {op.path: op.own_access for g in catalog.GROUPS for op in g.operations()
               if op.own_access and op.own_access.startswith("body.")}
    assert set(in_body) >= {"/permit", "/deny", "/blacklist", "/forget", "/usage/limits", "/usage/lift"}


def route_modules() -> list[Path]:
    return sorted({Path(g.__module__.replace(".", "/") + ".py").name for g in catalog.GROUPS})


@pytest.mark.parametrize("name", route_modules())
def test_route_modules_do_not_import_the_app_nor_import_inside_functions(name):
    tree = ast.parse((API / name).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("app", "homework.components.api.app"):
            pytest.fail(f"{name} imports the app: routes reach it through RouteGroup.api")
    for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        for node in ast.walk(fn):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names]
                assert names == ["hwdb_client"], f"{name}: {fn.name} imports {names} inside a function"


def test_no_private_route_registration_is_left():
    for path in API.glob("*.py"):
        text = path.read_text()
        assert "app._add(" not in text and "def add_routes" not in text, path.name


# -- the model kit -----------------------------------------------------------------------------
class Window(Model):
    days: list[str]
    from_: str = field(key="from")


class Body(Model):
    usage = '{"n": 1}'
    n: int = field(5, minimum=1, maximum=10)
    name: str | None = field(optional=True, max_length=3)
    secret: str = field("", secret=True)
    window: Window | None = field(optional=True)


def test_a_body_is_parsed_with_defaults_and_json_names():
    body = Body.parse({"window": {"days": ["mon"], "from": "21:00"}})
    assert (body.n, body.name, body.window.from_) == (5, None, "21:00") and body.given() == {"window"}


@pytest.mark.parametrize("data,words", [
    ({"n": "5"}, "n must be a whole number, not '5'"), ({"n": True}, "n must be a whole number"),
    ({"n": 11}, "n must be from 1 to 10, not 11"), ({"name": "abcd"}, "name must be at most 3 characters"),
    ({"colour": 1}, "unknown field(s) colour"),
    ({"window": {"days": "mon", "from": "x"}}, "window.days must be a list"),
    ({"window": {"days": []}}, "window.from is required"), ({"secret": 12345678}, "secret must be a string"),
])
def test_what_does_not_fit_is_named(data, words):
    with pytest.raises(Invalid) as exc:
        Body.parse(data)
    assert words in str(exc.value)
    assert "12345678" not in str(exc.value)


def test_answers_are_checked_strictly():
    assert check_answer(list[Window], [{"days": [], "from": "x"}]) is None
    assert "unknown field(s) [0].extra" in check_answer(list[Window], [{"days": [], "from": "x", "extra": 1}]) \
        or "extra" in check_answer(list[Window], [{"days": [], "from": "x", "extra": 1}])
    assert "is required" in check_answer(Window, {"days": []})
    assert parse(int | str, "x") == "x"


def test_the_document_reads_as_json_schema_with_nullable():
    assert json_schema({"type": "string", "nullable": True}) == {"type": ["string", "null"]}
    assert json_schema({"allOf": [{"$ref": "#/x"}], "nullable": True}) == \
        {"anyOf": [{"allOf": [{"$ref": "#/x"}]}, {"type": "null"}]}


def test_the_contract_checker_names_the_field_that_does_not_fit(tmp_path):
    contract = Contract()
    good = {"rules": [], "mode": "denylist"}
    assert contract.check("GET", "/ws.v1/dns-rules/household", 200, "application/json", json.dumps(good)) is None
    problem = contract.check("GET", "https://x/ws.v1/dns-rules/aa:bb:cc:dd:ee:ff", 200, "application/json",
                             json.dumps({"rule": []}))
    assert problem and "GET /dns-rules/{mac}" in problem
    assert "which the document does not list" in contract.check("GET", "/ws.v1/status", 418, "application/json", "{}")
    assert contract.check("GET", "/ws.v1/nothing-here", 404, "application/json", "{}") is None


def test_the_captive_page_a_cut_off_device_gets_for_an_api_path_is_not_the_operations_answer():
    from homework import cutoff_pages
    contract = Contract()
    page = cutoff_pages.render_not_cut("household-laptop")
    assert contract.check("GET", "/ws.v1/webhooks/deliveries", 200, "text/html; charset=utf-8", page) is None
    # any other HTML where JSON is declared is still a problem
    assert "the document says application/json" in contract.check(
        "GET", "/ws.v1/webhooks/deliveries", 200, "text/html", "<html><main>hello</main></html>")
