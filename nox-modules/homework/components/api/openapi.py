"""The OpenAPI document, generated from the route declarations (routes.py) and their models
(model.py): nothing in it is written by hand. `make openapi` writes it to openapi.json,
which the API serves at /ws.v1/openapi.json; a unit test fails while the file is not what
the declarations give.

    python -m homework.components.api.openapi            # print the document
    python -m homework.components.api.openapi --write    # openapi.json, the board's js/routes.js and
                                                         # the changelog's unnamed additions (changelog.py)

`surface()` lists what a client can rely on, one line per operation, request field and
answer field (with its type); the changelog check (tests/unit/test_api_contract.py)
compares it with the surface of the last released version.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from . import boardroutes, changelog
from .catalog import GROUPS
from .model import Schemas, _doc, is_model
from .routes import Access, Operation, param
from .sessions import OPENAPI
from .views import Error

VERSION = "1.1"
SURFACE = Path(__file__).with_name("surface.txt")
TITLE = "Homework ws.v1"
DESCRIPTION = ("The Homework router's control API (seed Table 4.1 plus what the Guest Board needs). Changes are "
               "POST (and DELETE to remove an application or an agent); answers and errors are JSON. Every "
               "method calls the same controller commands as the `homework` CLI. LAN devices that are not "
               "permitted cannot use it at all. Generated from the "
               "route declarations: x-access says who may call an operation (public, asking: public and a pending "
               "LAN device too, read, admin), x-csrf that a session's call carries X-CSRF-Token, x-own-access "
               "which parameter names the device a LAN device may not change itself.")
SECURITY_SCHEMES = {
    "bearerAuth": {"type": "http", "scheme": "bearer",
                   "description": "API token with role admin or read-only (`homework token create`)"},
    "cookieAuth": {"type": "apiKey", "in": "cookie", "name": "hw_session",
                   "description": "Guest Board session from /login; changes also need X-CSRF-Token"},
}
STORAGE_FULL = ("the router's storage is full (or cannot be written): the change was not saved; reading still "
                "works; see Retry-After")


def document(groups=GROUPS) -> dict:
    schemas = Schemas()
    schemas.ref(Error)
    paths: dict[str, dict] = {}
    tags: dict[str, str] = {}
    for group in groups:
        tags.setdefault(group.tag, group.description or _doc(group) or "")
        for op in group.operations():
            paths.setdefault(op.path, {})[op.method.lower()] = operation(op, schemas)
    return {
        "openapi": "3.0.3",
        "info": {"title": TITLE, "version": VERSION, "description": DESCRIPTION},
        "servers": [{"url": "/ws.v1"}],
        "security": [{"bearerAuth": []}, {"cookieAuth": []}],
        "tags": [{"name": name, **({"description": text} if text else {})} for name, text in tags.items()],
        "paths": paths,
        "components": {"securitySchemes": SECURITY_SCHEMES, "schemas": dict(sorted(schemas.named.items()))},
    }


def operation(op: Operation, schemas: Schemas) -> dict:
    assert op.group is not None             # set when its group's operations are listed
    out: dict = {"summary": op.summary, "operationId": op.name, "tags": [op.group.tag]}
    if op.description:
        out["description"] = op.description
    parameters = []
    for name in op.path_names():
        p = param(name, op)
        item: dict[str, Any] = {"name": name, "in": "path", "required": True, "description": p.doc,
                                "schema": schemas.of(p.schema)}
        if p.example is not None:
            item["example"] = p.example
        parameters.append(item)
    if op.query is not None:
        for _attr, (tp, spec) in op.query.fields().items():
            item = {"name": spec.key, "in": "query", "required": spec.required, "schema": schemas.of(tp, spec)}
            if spec.doc:
                item["description"] = item["schema"].pop("description")
            parameters.append(item)
    if parameters:
        out["parameters"] = parameters
    if op.body is not None or op.request_type != "application/json":
        schema = {"type": "string", "format": "binary"} if op.body is None else schemas.of(op.body)
        out["requestBody"] = {"required": op.body_required or op.body is None,
                              "content": {op.request_type: {"schema": schema}}}
    answer: dict[str, Any] = {"description": _answer_text(op)}
    if op.answer is not None:
        answer["content"] = {op.content_type: {"schema": schemas.of(op.answer)}}
        if op.also:
            answer["content"][op.also] = {"schema": {"type": "string"}}
    responses = {str(op.status): answer}
    for status, text in sorted(errors(op).items()):
        responses[str(status)] = {"description": text,
                                  "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    out["responses"] = responses
    if op.access in (Access.PUBLIC, Access.ASKING, Access.CALLER):
        out["security"] = []
    out["x-access"] = op.access.value
    if op.access in (Access.READ, Access.PANEL, Access.ADMIN) and op.method not in ("GET", "HEAD"):
        out["x-csrf"] = True
    if op.own_access:
        out["x-own-access"] = op.own_access
    if op.events:
        out["x-events"] = {name: schemas.of(model) for name, model in op.events.items()}
    return out


def _answer_text(op: Operation) -> str:
    tp = op.answer
    if is_model(tp) and _doc(tp):
        return _doc(tp)
    return {"text/csv": "CSV", "text/plain": "text", "text/event-stream": "an endless event stream"}.get(
        op.content_type, "the answer")


def errors(op: Operation) -> dict[int, str]:
    """The failures an operation may answer with: those every route of its kind has, then
    its own (which say more)."""
    out: dict[int, str] = {}
    if op.body is not None or op.query is not None or op.path_names():
        out[400] = "the request does not fit: the message says what and how"
    if op.access in (Access.READ, Access.PANEL, Access.ADMIN):
        out[401] = "no credentials, or an invalid or revoked token"
        out[403] = ("not allowed: a LAN device that is not permitted, a read-only token on a change, a wrong "
                    "CSRF token" + (", or a device changing its own access" if op.own_access else ""))
    elif op.access is not Access.CALLER:       # the caller's own answer, in any state
        out[403] = "a LAN device that is not permitted" + (" (a pending one may ask)" if op.access is Access.ASKING
                                                             else "")
    if op.body is not None or op.request_type != "application/json":
        limit = op.max_body if isinstance(op.max_body, int) else None
        out[413] = f"request body larger than {limit} bytes" if limit else "request body larger than allowed"
    if op.access is Access.ADMIN and op.method != "GET":
        out[503] = STORAGE_FULL
    if op.needs is not None:
        out[503] = op.needs.message + (f"; or {STORAGE_FULL}" if 503 in out else "")
    out.update(op.errors)
    # Every call may meet these from lighttpd in front, in JSON too, while the controller
    # restarts or does not answer (conf/lighttpd.conf's error files).
    out[500] = "an internal error (the controller's log has it)"
    out[502] = "the controller's API did not answer properly"
    out[503] = (out[503] + "; or " if 503 in out else "") + "the controller's API is not reachable (restarting?)"
    out[504] = "the controller's API took too long to answer"
    return out


# -- the surface a client relies on --------------------------------------------------------------
def surface(doc: dict) -> list[str]:
    """One line per operation ("op GET /devices/{mac}"), request field ("in POST /x .f:
    type, required") and answer field ("out GET /x .f.g: type"), sorted."""
    schemas = doc["components"]["schemas"]
    lines = set()
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            where = f"{method.upper()} {path}"
            lines.add(f"op {where} [{op['x-access']}]")
            for p in op.get("parameters", []):
                lines.add(f"in {where} {p['in']} {p['name']}: {_kind(p['schema'], schemas)}"
                          f"{', required' if p.get('required') else ''}")
            body = op.get("requestBody", {}).get("content", {})
            for media in body.values():
                _walk(media["schema"], schemas, f"in {where} body", "", lines, set(), request=True)
            for status, answer in op["responses"].items():
                if status.startswith("2"):
                    for kind, media in answer.get("content", {}).items():
                        _walk(media["schema"], schemas, f"out {where} {status} {kind}", "", lines, set())
            for event, schema in op.get("x-events", {}).items():
                lines.add(f"op {where} event {event}")
                _walk(schema, schemas, f"out {where} event {event}", "", lines, set())
    return sorted(lines)


def _resolve(schema: dict, schemas: dict) -> dict:
    while "$ref" in schema:
        schema = schemas[schema["$ref"].rsplit("/", 1)[1]]
    if "allOf" in schema and len(schema["allOf"]) == 1:
        merged = {**_resolve(schema["allOf"][0], schemas), **{k: v for k, v in schema.items() if k != "allOf"}}
        return merged
    return schema


def _kind(schema: dict, schemas: dict) -> str:
    s = _resolve(schema, schemas)
    if "anyOf" in s:
        kind = "|".join(sorted(_kind(a, schemas) for a in s["anyOf"]))
    elif "enum" in s:
        kind = "enum(" + ",".join(json.dumps(v) for v in s["enum"]) + ")"
    else:
        kind = s.get("type", "any")
    return kind + ("|null" if s.get("nullable") else "")


def _walk(schema: dict, schemas: dict, prefix: str, at: str, lines: set, seen: set, request: bool = False) -> None:
    ref = schema.get("$ref") or (schema.get("allOf") or [{}])[0].get("$ref")
    if ref in seen:
        return
    seen = seen | {ref} if ref else seen
    s = _resolve(schema, schemas)
    for alt in s.get("anyOf", []):
        _walk(alt, schemas, prefix, at, lines, seen, request)
    if s.get("type") == "object":
        required = set(s.get("required", ()))
        for name, sub in s.get("properties", {}).items():
            mark = (", required" if name in required else "") if request else ("" if name in required else ", optional")
            lines.add(f"{prefix} {at}.{name}: {_kind(sub, schemas)}{mark}")
            _walk(sub, schemas, prefix, f"{at}.{name}", lines, seen, request)
        extra = s.get("additionalProperties")
        if isinstance(extra, dict):
            _walk(extra, schemas, prefix, f"{at}.*", lines, seen, request)
    if s.get("type") == "array" and "items" in s:
        _walk(s["items"], schemas, prefix, f"{at}[]", lines, seen, request)


def _key(line: str) -> tuple[str, str]:
    """A surface line as (what it is about, what is said of it): the op or field, and its
    kind with the marks."""
    head, _, tail = line.partition(": ") if not line.startswith("op ") else (line.rsplit(" [", 1)[0], "", line)
    return head, tail


def breaking(released: list[str], current: list[str]) -> list[str]:
    """What a client of the released version relies on and no longer gets."""
    now = dict(_key(line) for line in current)
    out = []
    for line in released:
        head, tail = _key(line)
        if head not in now:
            out.append(f"gone: {line}")
            continue
        new = now[head]
        if new == tail:
            continue
        if line.startswith("out ") and tail.endswith(", optional") and new == tail[:-len(", optional")]:
            continue      # an answer field that is now always there
        if line.startswith("in ") and tail.endswith(", required") and new == tail[:-len(", required")]:
            continue      # a request field that may now be left out
        if _widened(tail, new):
            continue      # more values than it had (named in the changelog: unnamed_additions)
        if line.startswith("op ") and _access_looser(tail, new):
            continue      # more callers than it had (a panel's session besides the admin's)
        out.append(f"changed: {line} -> {new}")
    return out


# how much an operation's access asks of its caller: a change to a smaller rank lets
# everyone in who was let in before (and more)
ACCESS_RANK = {"public": 0, "asking": 0, "caller": 0, "read": 1, "panel": 2, "admin": 3}


def _access_looser(old: str, new: str) -> bool:
    """`op METHOD /path [access]` lines whose access asks less than it did."""
    pick = re.compile(r"\[([a-z-]+)\]$")
    a, b = pick.search(old), pick.search(new)
    return bool(a and b and a.group(1) in ACCESS_RANK and b.group(1) in ACCESS_RANK
                and old.rsplit(" [", 1)[0] == new.rsplit(" [", 1)[0]
                and ACCESS_RANK[b.group(1)] < ACCESS_RANK[a.group(1)])


def _widened(old: str, new: str) -> bool:
    """A field's kind that takes everything it did and more: more alternatives (a request's,
    null too), or more values of an enum (an answer's new value, such as a new state)."""
    marks = (", required", ", optional")
    if any(old.endswith(m) != new.endswith(m) for m in marks):
        return False
    strip = lambda k: k.replace(", required", "").replace(", optional", "")    # noqa: E731
    old_kinds, new_kinds = set(strip(old).split("|")), set(strip(new).split("|"))
    if old_kinds <= new_kinds and old_kinds != new_kinds:
        return True
    enum = re.compile(r"^enum\((.*)\)$")
    a, b = enum.match(strip(old).split("|")[0]), enum.match(strip(new).split("|")[0])
    return bool(a and b and set(a.group(1).split(",")) < set(b.group(1).split(","))
                and strip(old).split("|")[1:] == strip(new).split("|")[1:])


def unnamed_additions(released: list[str], current: list[str], changelog: str) -> list[str]:
    """Lines added (or widened) since the release that the changelog's Unreleased section
    does not name: an operation by its method and path, a stream's event or a field by its
    name, in a `code span`. A field within a named new field or a new operation needs no
    naming of its own."""
    section = changelog.split("## Unreleased", 1)[-1].split("\n## ", 1)[0]
    spans = [_placeholders(s) for s in re.findall(r"`([^`]+)`", section)]
    words = {w for s in spans for w in re.findall(r"[A-Za-z0-9_.-]+", s)}
    known = dict(_key(line) for line in released)
    changed = {_key(line)[0] for line in current if known.get(_key(line)[0]) != _key(line)[1]}
    new_ops = {_op(h) for h in changed if h.startswith("op ")}
    missing = []
    for line in current:
        head, tail = _key(line)
        if head not in changed:
            continue
        if line.startswith("op ") and " event " in head:
            if head.rsplit(" ", 1)[-1] not in words:          # a stream's new event, by its name
                missing.append(line)
        elif line.startswith("op "):
            method, path = head.split()[1], _placeholders(head.split(" ", 2)[2])
            if not any(method in span and (path in span or "/ws.v1" + path in span) for span in spans):
                missing.append(line)
        elif _op(head) in new_ops:
            continue          # the fields of a new operation or event come with it
        elif not _named(head, changed, words):
            missing.append(line)
    return missing


def _placeholders(text: str) -> str:
    return re.sub(r"\{\w*\}", "{}", text)


def _named(head: str, changed: set[str], words: set[str]) -> bool:
    """Whether the field, or a new field it is within, is named."""
    prefix, _, path = head.rpartition(" ")
    parts = path.split(".")
    for i in range(len(parts), 1, -1):
        at = ".".join(parts[:i])
        name = parts[i - 1].replace("[]", "")
        if name in words and (i == len(parts) or f"{prefix} {at}" in changed):
            return True
    return False


def _op(head: str) -> str:
    """The operation (or stream event) a surface line is about: "GET /events event device"."""
    parts = head.split(" ")
    if len(parts) > 4 and parts[3] == "event":
        return " ".join(parts[1:5])
    return " ".join(parts[1:3])


def text(doc: dict) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    doc = document()
    if "--write" in argv:
        OPENAPI.write_text(text(doc))
        boardroutes.ROUTES_JS.write_text(boardroutes.text(doc))
        released = [line for line in SURFACE.read_text().splitlines() if line and not line.startswith("#")]
        log = changelog.CHANGELOG.read_text()
        changelog.CHANGELOG.write_text(changelog.with_additions(log, released, surface(doc), doc))
        print(f"wrote {OPENAPI}, {boardroutes.ROUTES_JS} and {changelog.CHANGELOG}'s additions")
        return 0
    if "--release" in argv:       # a release: its surface becomes what later 1.x versions keep
        SURFACE.write_text(f"# ws.v1 {VERSION}: what a client of this version may rely on (openapi.py surface())\n"
                           + "".join(line + "\n" for line in surface(doc)))
        print(f"wrote {SURFACE}")
        return 0
    sys.stdout.write(text(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
