#!/usr/bin/env python3
"""The API contract's cost on the request path: reading a request body into its declared
model (components/api/model.py) against the hand-written checks it replaced, and against
the two Debian packages that could do it instead, bookworm's python3-pydantic (1.10, pure
Python) and python3-jsonschema (4.10, validating the body against the generated schema).
Then the share of a whole request through the WSGI app that the model takes, and what the
tests' answer check (api.check_answers, off on a router) costs.

The peers are Debian's own files (apt-get download into out/bench-debs, unpacked, never
installed), run by /usr/bin/python3, as the image would. CPU time of the process, medians
of RUNS runs of N calls. Environment: BENCH_API_N (20000), BENCH_API_RUNS (5).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "nox-modules"), str(REPO / "hwdb" / "python"), str(REPO / "tests" / "unit"), str(REPO / "tests")]

N = int(os.environ.get("BENCH_API_N", "20000"))
RUNS = int(os.environ.get("BENCH_API_RUNS", "5"))
DEBS = REPO / "out" / "bench-debs"
PEER_PACKAGES = ("python3-pydantic", "python3-jsonschema", "python3-attr", "python3-pyrsistent",
                 "python3-typing-extensions")
MACS = [f"02:68:77:01:00:{i:02x}" for i in range(32)]
META = {"name": "Anna's laptop", "owner": "Anna", "type": "laptop"}
BODIES = {
    "schedule": {"mac": "02:68:77:01:00:01", "days": "sun-thu", "from": "21:30", "to": "07:00", "action": "pause"},
    "group of 32 MACs": {"macs": MACS},
    "qos app": {"name": "video calls", "class": "high", "ports": ["udp/3478-3481", "tcp/443"],
                "domains": ["zoom.us"], "window": {"days": ["mon", "tue"], "start": "09:00", "end": "17:00"}},
}


def per_call_us(fn, arg) -> float:
    """Median CPU microseconds per call."""
    runs = []
    for _ in range(RUNS):
        start = time.process_time_ns()
        for _ in range(N):
            fn(arg)
        runs.append((time.process_time_ns() - start) / N / 1000)
    return statistics.median(runs)


# -- ours, and the hand-written checks the routes had ---------------------------------------------
def ours() -> dict[str, float]:
    from homework.components.api.devices import GroupMacs
    from homework.components.api.qos import AppBody
    from homework.components.api.schedules import ScheduleBody
    models = {"schedule": ScheduleBody, "group of 32 MACs": GroupMacs, "qos app": AppBody}
    return {name: per_call_us(models[name].parse, body) for name, body in BODIES.items()}


def fields(data: dict, allowed: set) -> dict:
    unknown = set(data) - allowed
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(sorted(unknown))}")
    return data


def old_schedule(data):
    data = fields(data, {"mac", "owner", "days", "from", "to", "action"})
    for key, value in data.items():
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{key} must be a string")
    return data


def old_group(data):
    data = fields(data, {"macs"}).get("macs")
    if not isinstance(data, list) or not data:
        raise ValueError("macs must be a non-empty list of MAC addresses")
    return data


def old_app(data):
    data = fields(data, {"name", "class", "ports", "domains", "window"})
    for key in ("name", "class"):
        if key not in data:
            raise ValueError(f"{key} is required")
    return data


def hand_written() -> dict[str, float]:
    checks = {"schedule": old_schedule, "group of 32 MACs": old_group, "qos app": old_app}
    return {name: per_call_us(checks[name], body) for name, body in BODIES.items()}


# -- the Debian peers, in /usr/bin/python3 with only Debian's files ---------------------------------
PEER = textwrap.dedent('''
    import json, statistics, sys, time
    sys.path.insert(0, sys.argv[1])
    N, RUNS = int(sys.argv[2]), int(sys.argv[3])
    bodies, schemas = json.loads(sys.argv[4]), json.loads(sys.argv[5])
    from typing import List, Optional, Union
    import pydantic, jsonschema
    from pydantic import BaseModel, Field, StrictStr

    class Strict(BaseModel):
        class Config:
            extra = "forbid"
            allow_population_by_field_name = True

    class Schedule(Strict):
        mac: Optional[StrictStr]
        owner: Optional[StrictStr]
        days: Optional[StrictStr]
        from_: Optional[StrictStr] = Field(None, alias="from")
        to: Optional[StrictStr]
        action: Optional[StrictStr]

    class Group(Strict):
        macs: List[StrictStr] = Field(..., min_items=1)

    class Window(Strict):
        days: Union[List[StrictStr], StrictStr]
        start: StrictStr
        end: StrictStr

    class App(Strict):
        name: StrictStr
        class_: StrictStr = Field(..., alias="class")
        ports: Optional[Union[List[StrictStr], StrictStr]]
        domains: Optional[Union[List[StrictStr], StrictStr]]
        window: Optional[Window]

    def us(fn, arg):
        runs = []
        for _ in range(RUNS):
            start = time.process_time_ns()
            for _ in range(N):
                fn(arg)
            runs.append((time.process_time_ns() - start) / N / 1000)
        return statistics.median(runs)

    models = {"schedule": Schedule, "group of 32 MACs": Group, "qos app": App}
    out = {"versions": {"pydantic": pydantic.VERSION, "compiled": bool(getattr(pydantic, "compiled", False)),
                        "jsonschema": getattr(jsonschema, "__version__", "?")}, "pydantic": {}, "jsonschema": {}}
    for name, body in bodies.items():
        out["pydantic"][name] = us(models[name].parse_obj, body)
        validator = jsonschema.Draft7Validator(schemas[name])
        out["jsonschema"][name] = us(validator.validate, body)
    print(json.dumps(out))
''')


def debian_root() -> Path | None:
    """Debian's pydantic and jsonschema unpacked (not installed) from the archive."""
    root = DEBS / "root" / "usr" / "lib" / "python3" / "dist-packages"
    if (root / "pydantic").is_dir() and (root / "jsonschema").is_dir():
        return root
    DEBS.mkdir(parents=True, exist_ok=True)
    got = subprocess.run(["apt-get", "download", *PEER_PACKAGES], cwd=DEBS, capture_output=True, text=True)
    if got.returncode != 0:
        print(f"  (the Debian peers could not be fetched: {got.stderr.strip()[:200]})")
        return None
    for deb in DEBS.glob("*.deb"):
        subprocess.run(["dpkg", "-x", str(deb), str(DEBS / "root")], check=True)
    return root


def schemas() -> dict[str, dict]:
    """The bodies' JSON Schemas, as the generated OpenAPI document has them (draft 7 form)."""
    from contract import json_schema
    from homework.components.api.devices import GroupMacs
    from homework.components.api.model import Schemas
    from homework.components.api.qos import AppBody
    from homework.components.api.schedules import ScheduleBody
    out = {}
    for name, model in (("schedule", ScheduleBody), ("group of 32 MACs", GroupMacs), ("qos app", AppBody)):
        s = Schemas()
        ref = s.of(model)
        defs = json_schema(s.named)
        body = json.loads(json.dumps({**ref, "definitions": defs}).replace("#/components/schemas/", "#/definitions/"))
        out[name] = body
    return out


def peers() -> dict | None:
    root = debian_root()
    if root is None:
        return None
    got = subprocess.run(["/usr/bin/python3", "-I", "-c", PEER, str(root), str(N // 4), str(RUNS),
                          json.dumps(BODIES), json.dumps(schemas())], capture_output=True, text=True)
    if got.returncode != 0:
        print(f"  (the Debian peers failed: {got.stderr.strip()[-300:]})")
        return None
    return json.loads(got.stdout)


# -- whole requests through the WSGI app ----------------------------------------------------------
def requests_us() -> dict[str, float]:
    from webob import Request

    import importlib.util
    spec = importlib.util.spec_from_file_location("unit_conftest", REPO / "tests" / "unit" / "conftest.py")
    unit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(unit)
    sys.modules.setdefault("conftest", unit)        # what the unit tests' helpers import
    make_core = unit.make_core
    from homework.flows import Datapath
    from test_dhcp_server import join
    with tempfile.TemporaryDirectory() as tmp:
        pw = Path(tmp) / "pw"
        pw.write_text("correct horse battery\n")
        out = {}
        for check in (False, True):
            (Path(tmp) / str(check)).mkdir()
            core = make_core(Path(tmp) / str(check), components=("dhcp", "routing", "api"),
                             api_admin_password_file=str(pw), api_check_answers=check)
            core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, **{f"d{i}": i for i in range(1, 31)}}))
            for i in range(1, 31):
                join(core, MACS[i], i)
            app = core.ctx.component("api").app
            token = core.commands.call("token-create", name="bench", role="admin")["token"]

            def call(req_args, app=app, token=token):
                method, path, body = req_args
                req = Request.blank(f"/ws.v1/{path}", method=method, remote_addr="127.0.0.1")
                req.headers["Authorization"] = f"Bearer {token}"
                if body is not None:
                    req.body = json.dumps(body).encode()
                    req.content_type = "application/json"
                resp = req.get_response(app)
                assert resp.status_int < 300, resp.text
            label = "check_answers on (tests)" if check else "as on a router"
            for name, args in (("POST /meta/{mac}", ("POST", f"meta/{MACS[1]}", META)),
                               ("GET /devices (30 devices)", ("GET", "devices", None))):
                out[(name, label)] = per_call_us_n(call, args, N // 40)
            core.stop()
    return out


def per_call_us_n(fn, arg, n: int) -> float:
    runs = []
    for _ in range(RUNS):
        start = time.process_time_ns()
        for _ in range(n):
            fn(arg)
        runs.append((time.process_time_ns() - start) / n / 1000)
    return statistics.median(runs)


def main() -> None:
    print(f"Reading a request body (CPU µs per body, median of {RUNS} runs of {N} calls; peers {N // 4}):")
    mine, old, other = ours(), hand_written(), peers()
    head = f"  {'body':<18} {'declared model':>15} {'hand-written':>13}"
    if other:
        v = other["versions"]
        head += f" {'pydantic ' + v['pydantic']:>16} {'jsonschema ' + v['jsonschema']:>18}"
    print(head)
    for name in BODIES:
        line = f"  {name:<18} {mine[name]:>15.1f} {old[name]:>13.1f}"
        if other:
            line += f" {other['pydantic'][name]:>16.1f} {other['jsonschema'][name]:>18.1f}"
        print(line)
    if other:
        ratios = [other["pydantic"][n] / mine[n] for n in BODIES] + [other["jsonschema"][n] / mine[n] for n in BODIES]
        print(f"  pydantic is {min(ratios[:3]):.1f}-{max(ratios[:3]):.1f}x and jsonschema "
              f"{min(ratios[3:]):.1f}-{max(ratios[3:]):.1f}x the declared model's time "
              f"(Debian's pydantic compiled: {other['versions']['compiled']})")
    print()
    print(f"A whole request through the WSGI app (CPU µs per request, token auth, {N // 40} requests):")
    whole = requests_us()
    from homework.components.api.devices import Meta
    meta_us = per_call_us(Meta.parse, META)
    for name in ("POST /meta/{mac}", "GET /devices (30 devices)"):
        plain = whole[(name, "as on a router")]
        checked = whole[(name, "check_answers on (tests)")]
        share = f"; its body's model {meta_us:.1f} µs, {meta_us / plain * 100:.1f}% of it" if name.startswith("POST") else ""
        print(f"  {name:<28} {plain:>8.0f} as on a router{share}; {checked:>8.0f} with the tests' answer check "
              f"({checked / plain:.2f}x)")


if __name__ == "__main__":
    main()
