"""Every answer the tests get from the ws.v1 API, checked against the checked-in OpenAPI
document: the file clients read, generated from the route declarations.

    from contract import CONTRACT
    problem = CONTRACT.check("GET", "/ws.v1/devices/02:..", 200, "application/json", body_bytes)

None when the answer fits; otherwise a sentence naming the operation and the field. Used by
the e2e tests (every requests call to /ws.v1/, homelab.web.api), by the browser tests
(every answer Chromium received, through tests/ui/home_driver.py) and by unit tests.

The document is OpenAPI 3.0 (`nullable`); it is read as JSON Schema 2020-12 with
`nullable` turned into a null alternative, and checked with the jsonschema package.
"""
from __future__ import annotations

import json
import re
from functools import cached_property
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema

DOCUMENT = Path(__file__).resolve().parents[1] / "nox-modules" / "homework" / "components" / "api" / "openapi.json"
PREFIX = "/ws.v1"
# The page saying why a device is cut off (homework/cutoff_pages.py): the captive pages'
# server (conf/lighttpd-captive.conf) answers every URL of a cut-off device with it, the
# API's paths too, so the request never reached the operation it names.
CAPTIVE_PAGE = re.compile(r'<main data-reason="[\w-]*">')


def json_schema(schema):
    """An OpenAPI 3.0 schema as JSON Schema: `nullable: true` becomes a null alternative."""
    if isinstance(schema, list):
        return [json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: json_schema(v) for k, v in schema.items() if k not in ("nullable", "example")}
    if schema.get("nullable"):
        if "type" in out and not any(k in out for k in ("allOf", "anyOf", "$ref")):
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


class Contract:
    def __init__(self, path: Path = DOCUMENT):
        self.path = path

    @cached_property
    def doc(self) -> dict:
        return json.loads(self.path.read_text())

    @cached_property
    def _routes(self) -> list[tuple[re.Pattern, str]]:
        out = []
        for path in self.doc["paths"]:
            regex = re.sub(r"\\\{(\w+)\\\}", r"[^/]+", re.escape(path))
            out.append((re.compile(f"^{regex}/?$"), path))
        return out

    @cached_property
    def _components(self) -> dict:
        return json_schema(self.doc["components"])

    def operation(self, method: str, url: str) -> tuple[str, dict] | None:
        """The documented operation an URL (or path) and method are served by."""
        path = urlsplit(url).path
        if not path.startswith(PREFIX):
            return None
        path = path[len(PREFIX):]
        for pattern, template in self._routes:
            if pattern.match(path):
                op = self.doc["paths"][template].get(method.lower())
                if op is not None:
                    return template, op
        return None

    def check(self, method: str, url: str, status: int, content_type: str, body: bytes | str) -> str | None:
        """Answers that do not come from the API itself are not its contract's: lighttpd's
        redirects and its own error pages (the API answers every error in JSON), and the
        captive pages' server's page for a cut-off device."""
        if 300 <= status < 400 or (status >= 400 and "json" not in (content_type or "")):
            return None
        if status == 200 and (content_type or "").startswith("text/html") and CAPTIVE_PAGE.search(
                body.decode(errors="replace") if isinstance(body, bytes) else body):
            return None     # the captive pages' server's, for a cut-off device
        method = method.upper()
        if method == "HEAD":
            method = "GET"
        found = self.operation(method, url)
        if found is None:
            # The API's own answer to a path or method it does not serve is documented nowhere.
            return None if status in (404, 405) else f"{method} {urlsplit(url).path} is not in the document"
        template, op = found
        where = f"{method} {template}"
        answer = op["responses"].get(str(status))
        if answer is None:
            return f"{where} answered {status}, which the document does not list ({', '.join(op['responses'])})"
        media = (content_type or "").split(";")[0].strip().lower()
        content = answer.get("content")
        if not content:
            return None
        if media not in content:
            return f"{where} answered {status} as {media or 'no type'}, the document says {', '.join(content)}"
        if media != "application/json":
            return None
        try:
            data = json.loads(body)
        except ValueError as exc:
            return f"{where} answered {status} with a body that is not JSON ({exc})"
        schema = {**json_schema(content[media]["schema"]), "components": self._components}
        validator = jsonschema.Draft202012Validator(schema)
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        if not errors:
            return None
        first = errors[0]
        at = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.absolute_path) or "the body"
        return f"{where} answered {status}: {at}: {first.message}" + (f" (and {len(errors) - 1} more)"
                                                                      if len(errors) > 1 else "")

    def check_event(self, name: str, data) -> str | None:
        """One event of GET /ws.v1/events against the document's x-events."""
        events = self.doc["paths"]["/events"]["get"].get("x-events", {})
        if name in ("end",):       # the stream's own last word (credentials ended, client too slow)
            return None
        if name not in events:
            return f"GET /events sent an event {name!r} that the document does not declare"
        schema = {**json_schema(events[name]), "components": self._components}
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
        if not errors:
            return None
        at = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in errors[0].absolute_path) or "the data"
        return f"GET /events event {name}: {at}: {errors[0].message}"

    def check_response(self, resp) -> str | None:
        """A requests.Response from the API (a stream's body is not read). Answers that do
        not come from the API itself are not its contract's: lighttpd's redirects and its
        own error pages (the API answers every error in JSON)."""
        req = resp.request
        kind = resp.headers.get("Content-Type", "")
        if PREFIX + "/" not in urlsplit(req.url).path:
            return None
        body = resp.content if "json" in kind or kind.startswith("text/html") else b""
        return self.check(req.method, req.url, resp.status_code, kind, body)


CONTRACT = Contract()


class ContractViolation(AssertionError):
    pass


def require(problem: str | None) -> None:
    if problem:
        raise ContractViolation(f"API answer outside its contract: {problem}")
