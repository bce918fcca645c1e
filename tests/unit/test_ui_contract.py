"""The Guest Board and the API share one contract: the board's routes
(guestboard-ui/js/routes.js) are generated from the route declarations, so every route it
calls is an operation of the OpenAPI document with that method, those parameters and that
answer, and every field the board reads (js/model.js) is a field of the schema it comes
from. A field renamed on the server fails here, in the same run.
The board builds API paths only in routes.js and reads answers only through api.js."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from homework.components.api import boardroutes, openapi
from homework.components.api.routes import Access, RouteGroup, get

REPO = Path(__file__).resolve().parents[2]
UI = REPO / "guestboard-ui"
DOC = json.loads((REPO / "nox-modules/homework/components/api/openapi.json").read_text())
SCHEMAS = DOC["components"]["schemas"]


@pytest.fixture(scope="module")
def board():
    node = shutil.which("node")
    assert node, "node is needed (make deps)"
    out = subprocess.run([node, str(REPO / "tests/ui/declarations.mjs")], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return json.loads(out)


def ref_name(schema: dict) -> str | None:
    """The component a schema is (a $ref, or one wrapped in allOf for nullable/description)."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[1]
    if len(schema.get("allOf", ())) == 1:
        return ref_name(schema["allOf"][0])
    return None


def alternatives(schema: dict) -> list[dict]:
    wrapped = schema.get("allOf", [schema])[0] if len(schema.get("allOf", ())) == 1 else schema
    return wrapped.get("anyOf", [schema])


def matches(declared, schema: dict) -> bool:
    """Whether the board's declaration of a value fits the document's schema of it."""
    if declared is True:
        return True
    if isinstance(declared, str):
        return any(ref_name(alt) == declared for alt in alternatives(schema))
    if isinstance(declared, list):
        return schema.get("type") == "array" and matches(declared[0], schema.get("items", {}))
    if isinstance(declared, dict):
        extra = schema.get("additionalProperties")
        return schema.get("type") == "object" and isinstance(extra, dict) and matches(declared["*"], extra)
    return False


def fields(shapes: dict, name: str) -> dict:
    shape = dict(shapes[name])
    base = shape.pop("_extends", None)
    return {**(fields(shapes, base) if base else {}), **shape}


def operation(route: dict) -> dict:
    ops = DOC["paths"].get("/" + route["path"])
    assert ops and route["method"].lower() in ops, f"{route['method']} /{route['path']} is not in openapi.json"
    return ops[route["method"].lower()]


def test_the_checked_in_routes_js_is_what_the_declarations_give():
    assert boardroutes.ROUTES_JS.read_text() == boardroutes.text(openapi.document()), \
        "guestboard-ui/js/routes.js is not what the route declarations give: run `make openapi` and commit it"


def test_two_routes_the_board_would_call_by_one_name_are_refused():
    class Twice(RouteGroup):
        tag = "twice"

        @get("/one", Access.READ, "one", board="same")
        def one(self, call):
            return {}

        @get("/other", Access.READ, "other", board="same")
        def other(self, call):
            return {}

    with pytest.raises(ValueError, match="same"):
        boardroutes.entries(openapi.document((Twice,)), (Twice,))


def test_every_route_the_board_calls_is_an_operation_with_those_parameters(board):
    for name, route in board["routes"].items():
        op = operation(route)
        params = {p["name"]: p["in"] for p in op.get("parameters", [])}
        for key in re.findall(r"\{(\w+)\}", route["path"]):
            assert params.get(key) == "path", f"{name}: {{{key}}} is no path parameter of {route['path']}"
        for key in route.get("query", []):
            assert params.get(key) == "query", f"{name}: {key} is no query parameter of {route['path']}"


def test_every_answer_the_board_reads_is_the_one_the_document_gives(board):
    for name, route in board["routes"].items():
        if route["answer"] in (None, "raw"):
            continue
        op = operation(route)
        ok = [r for code, r in op["responses"].items() if code.startswith("2")]
        schema = ok[0]["content"]["application/json"]["schema"]
        assert matches(route["answer"], schema), \
            f"{name}: the board reads {route['answer']}, the document says {schema}"


def test_every_field_the_board_reads_is_in_its_schema(board):
    shapes = board["shapes"]
    checked = 0
    for name in shapes:
        if shapes[name] == "raw":       # passed on unread (a backup file)
            assert name in SCHEMAS, f"{name} is in no schema of the document"
            continue
        if name not in SCHEMAS:
            # a base of others (DeviceFacts): its fields are checked through each shape extending it
            assert any(isinstance(s, dict) and s.get("_extends") == name for s in shapes.values()), \
                f"{name} is in no schema of the document"
            continue
        props = SCHEMAS[name]["properties"]
        for field, declared in fields(shapes, name).items():
            assert field in props, f"the board reads {name}.{field}, which openapi.json's {name} has not"
            assert matches(declared, props[field]), f"{name}.{field}: the board reads {declared}, not {props[field]}"
            checked += 1
    assert checked > 150


def test_every_shape_the_board_names_is_declared(board):
    shapes = board["shapes"]
    named = set()

    def collect(value):
        if isinstance(value, str):
            named.add(value)
        elif isinstance(value, list):
            collect(value[0])
        elif isinstance(value, dict):
            collect(value["*"])
    for shape in shapes.values():
        if shape == "raw":
            continue
        for key, value in shape.items():
            if key == "_extends":
                named.add(value)
            elif value is not True:
                collect(value)
    named |= set(board["events"].values())
    assert named <= set(shapes), f"shapes named but not declared in model.js: {sorted(named - set(shapes))}"


def test_the_live_events_are_the_documented_ones(board):
    events = DOC["paths"]["/events"]["get"]["x-events"]
    assert set(board["events"]) == set(events), (sorted(board["events"]), sorted(events))
    for name, shape in board["events"].items():
        assert matches(shape, events[name]), f"event {name}: the board reads {shape}, the document says {events[name]}"


def test_a_renamed_field_fails_here(board):
    """What the checks above catch: the document with DevicePanel.dns_rules renamed."""
    props = dict(SCHEMAS["DevicePanel"]["properties"])
    props["website_rules"] = props.pop("dns_rules")
    assert "dns_rules" in fields(board["shapes"], "DevicePanel") and "dns_rules" not in props


def test_the_board_builds_api_paths_and_reads_answers_in_one_place():
    """routes.js is the only file that writes an API path; api.js the only one that talks to
    the API (no $.ajax, fetch, XMLHttpRequest or EventSource elsewhere)."""
    for path in sorted((UI / "js").glob("*.js")):
        code = re.sub(r"/\*.*?\*/|//[^\n]*", "", path.read_text(), flags=re.S)    # comments may name routes
        if path.name != "routes.js":
            assert "ws.v1" not in code, f"{path.name} writes an API path: add it to routes.js"
        if path.name != "api.js":
            for call in ("$.ajax", "fetch(", "XMLHttpRequest", "EventSource("):
                assert call not in code, f"{path.name} calls the API with {call}: use HW.api.request"
    for page in sorted(UI.glob("*.html")):
        assert "/ws.v1" not in page.read_text(), f"{page.name} links an API path: build it with HW.routes.url"


def test_every_page_uses_the_one_shell():
    for page in sorted(UI.glob("*.html")):
        text = page.read_text()
        assert 'src="js/shell.js"' in text and "data-page=" in text, page.name
        assert "<header" not in text and 'id="login"' not in text, f"{page.name} copies the shell's header or log-in"
