"""The ws.v1 API as a WSGI application over a real core (DHCP, routing, state), driven
with WebOb requests: every method, its errors, and every access rule."""
import json

import pytest
from webob import Request

from conftest import make_core
from homework.flows import Datapath
from test_dhcp_server import join

MAC = "02:00:00:00:00:01"      # a device that joined by DHCP (10.2.0.2)
MAC2 = "02:00:00:00:00:02"     # another one (10.2.0.6)
PROXY = "127.0.0.1"
PASSWORD = "correct horse battery"


@pytest.fixture
def core(tmp_path, clock):
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    core = make_core(tmp_path, components=("dhcp", "routing", "api"), clock=clock,
                     api_admin_password_file=str(pwfile))
    core.datapath_up(Datapath(dpid=1, ports={"br0": 0xFFFFFFFE, "d1": 1, "d2": 2}))
    join(core, MAC, 1)
    join(core, MAC2, 2, hostname=b"phone")
    return core


@pytest.fixture
def api(core):
    return Api(core)


class Api:
    """Calls the WSGI app as lighttpd would (from 127.0.0.1 with X-Forwarded-For)."""

    def __init__(self, core):
        self.core = core
        self.app = core.ctx.component("api").app
        self.cookies = {}
        self.csrf = None

    def call(self, method, path, body=None, token=None, client="192.0.2.10", csrf=None, cookies=True,
             headers=None):
        req = Request.blank(f"/ws.v1/{path}", method=method, remote_addr=PROXY)
        req.headers["X-Forwarded-For"] = client
        req.headers["X-Forwarded-Proto"] = "https"
        if body is not None:
            req.body = json.dumps(body).encode() if not isinstance(body, bytes) else body
            req.content_type = "application/json"
        if token:
            req.headers["Authorization"] = f"Bearer {token}"
        if cookies and self.cookies:
            req.headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if csrf or (cookies and self.csrf and method == "POST" and csrf is None):
            req.headers["X-CSRF-Token"] = csrf or self.csrf
        for k, v in (headers or {}).items():
            req.headers[k] = v
        resp = req.get_response(self.app)
        return resp

    def login(self, password=PASSWORD, client="192.0.2.10"):
        resp = self.call("POST", "login", {"password": password}, client=client, cookies=False)
        if resp.status_int == 200:
            cookie = resp.headers["Set-Cookie"]
            name, _, rest = cookie.partition("=")
            self.cookies[name] = rest.split(";")[0]
            self.csrf = resp.json["csrf"]
        return resp

    def token(self, role):
        return self.core.commands.call("token-create", name=f"test {role}", role=role)["token"]


# -- the methods of seed Table 4.1 ---------------------------------------------------------------
def test_permit_deny_status_with_admin_token(api, core):
    tok = api.token("admin")
    r = api.call("POST", f"permit/{MAC.upper().replace(':', '-')}", token=tok)
    assert r.status_int == 200, r.text
    assert r.json["mac"] == MAC and r.json["state"] == "permitted"
    assert core.state.get_device(MAC).state == "permitted"
    r = api.call("GET", "status/", token=tok)
    assert [d["mac"] for d in r.json] == [MAC]
    r = api.call("GET", f"status/{MAC}", token=tok)
    assert r.json["state"] == "permitted" and r.json["lease"]["ip"] == "10.2.0.2"
    r = api.call("POST", f"deny/{MAC}", token=tok)
    assert r.json["state"] == "denied"
    assert api.call("GET", "status", token=tok).json == []


def test_blacklist_whitelist_and_status(api, core):
    tok = api.token("admin")
    assert api.call("POST", f"blacklist/{MAC2}", token=tok).json["state"] == "blacklisted"
    r = api.call("GET", "blacklist-status/", token=tok)
    assert [d["mac"] for d in r.json] == [MAC2]
    assert api.call("POST", f"whitelist/{MAC2}", token=tok).json["state"] == "pending"
    assert api.call("GET", "blacklist-status", token=tok).json == []


def test_dhcp_status_lists_mac_ip_mappings(api):
    r = api.call("GET", "dhcp-status/", token=api.token("read-only"))
    assert r.status_int == 200
    assert sorted((lease["mac"], lease["ip"]) for lease in r.json) == [(MAC, "10.2.0.2"), (MAC2, "10.2.0.6")]


def test_meta_names_a_device(api, core):
    tok = api.token("admin")
    r = api.call("POST", f"meta/{MAC}", {"name": "Tom's laptop", "owner": "Tom", "type": "laptop"}, token=tok)
    assert r.status_int == 200, r.text
    d = core.state.get_device(MAC)
    assert (d.name, d.owner, d.type) == ("Tom's laptop", "Tom", "laptop")
    assert api.call("POST", f"meta/{MAC}", {"colour": "red"}, token=tok).status_int == 400
    assert api.call("POST", f"meta/{MAC}", {"name": 5}, token=tok).status_int == 400
    assert api.call("POST", f"meta/{MAC}", {"name": "x" * 65}, token=tok).status_int == 400
    assert api.call("POST", f"meta/{MAC}", b"{not json", token=tok).status_int == 400


@pytest.mark.parametrize("path,status,words", [
    ("permit/01:00:00:00:00:99", 400, "multicast"),    # an unseen unicast MAC is pre-approved
    ("permit/not-a-mac", 400, "not a MAC address"),
    ("deny/02:00:00:00:00", 400, "not a MAC address"),
    ("blacklist/zz:00:00:00:00:01", 400, "not a MAC address"),
    ("whitelist/02:00:00:00:00:99", 404, "no device"),
])
def test_bad_or_unknown_mac_is_named(api, path, status, words):
    r = api.call("POST", path, token=api.token("admin"))
    assert r.status_int == status
    assert words in r.json["error"] and r.json["status"] == status


def test_dns_methods_say_503_without_the_dns_component(api):
    tok = api.token("admin")
    r = api.call("POST", f"deny-dns/{MAC}/example.com", token=tok)
    assert r.status_int == 503 and "dns component" in r.json["error"]
    assert api.call("GET", f"dns-rules/{MAC}", token=tok).status_int == 503


@pytest.mark.parametrize("method,path,body", [
    ("GET", "dns/dnssec", None), ("POST", "dns/dnssec", {"enabled": False}),
    ("POST", "dns/dnssec/insecure", {"domain": "example.com"}),
    ("POST", "dns/dnssec/insecure/example.com/remove", None),
    ("GET", "dns/upstream", None), ("POST", "dns/upstream", {"provider": "quad9"}),
])
def test_the_resolvers_routes_say_503_without_the_dns_component(api, method, path, body):
    r = api.call(method, path, body, token=api.token("admin"))
    assert r.status_int == 503, r.text
    assert r.json["status"] == 503
    assert r.json["error"].startswith("The resolver's settings are not available: the dns component is not loaded")


def test_dns_methods_call_the_dns_commands(api, core):
    rules = {}
    core.commands.register("deny-dns",
                           lambda mac, domain: rules.setdefault(mac, []).append(("deny", domain)) or {"ok": 1})
    core.commands.register("permit-dns",
                           lambda mac, domain: rules.setdefault(mac, []).append(("permit", domain)) or {"ok": 1})
    core.commands.register("remove-dns-rule", lambda mac, domain: {"removed": domain})
    core.commands.register("dns-rules", lambda mac: rules.get(mac, []))
    tok = api.token("admin")
    assert api.call("POST", f"deny-dns/{MAC}/Example.COM", token=tok).status_int == 200
    assert api.call("POST", f"permit-dns/{MAC}/school.example", token=tok).status_int == 200
    assert api.call("GET", f"dns-rules/{MAC}", token=tok).json == [["deny", "example.com"],
                                                                   ["permit", "school.example"]]
    assert api.call("POST", f"remove-dns-rule/{MAC}/example.com", token=tok).json == {"removed": "example.com"}
    for bad in ("exa mple.com", "-bad-.com", "a..b", "x" * 300):
        r = api.call("POST", f"deny-dns/{MAC}/{bad}", token=tok)
        assert r.status_int == 400 and "not a domain name" in r.json["error"], bad
    assert api.call("POST", "deny-dns/02:00:00:00:00:99/example.com", token=tok).status_int == 404


# -- access rules ---------------------------------------------------------------------------------
@pytest.mark.parametrize("method,path", [("GET", "status"), ("GET", "dhcp-status"), ("POST", f"permit/{MAC}"),
                                         ("GET", "devices"), ("GET", "events"), ("GET", "tokens")])
def test_no_credentials_is_401(api, method, path):
    r = api.call(method, path)
    assert r.status_int == 401
    assert "WWW-Authenticate" in r.headers


def test_bad_token_is_401_even_with_a_session(api):
    api.login()
    r = api.call("GET", "status", token="hwk_deadbeef_nope")
    assert r.status_int == 401


def test_read_only_token_reads_but_cannot_change(api, core):
    tok = api.token("read-only")
    assert api.call("GET", "status", token=tok).status_int == 200
    r = api.call("POST", f"permit/{MAC}", token=tok)
    assert r.status_int == 403 and "admin role" in r.json["error"]
    assert core.state.get_device(MAC).state == "pending"
    assert api.call("GET", "tokens", token=tok).status_int == 403


def test_revoked_token_stops_working(api, core):
    created = core.commands.call("token-create", name="script", role="admin")
    assert api.call("GET", "status", token=created["token"]).status_int == 200
    admin = api.token("admin")
    r = api.call("POST", f"tokens/{created['id']}/revoke", token=admin)
    assert r.status_int == 200 and r.json["revoked"]
    assert api.call("GET", "status", token=created["token"]).status_int == 401
    assert api.call("POST", "tokens/nope/revoke", token=admin).status_int == 404


def test_tokens_created_listed_by_api_and_secret_shown_once(api):
    admin = api.token("admin")
    r = api.call("POST", "tokens", {"name": "grafana", "role": "read-only"}, token=admin)
    assert r.status_int == 201 and r.json["token"].startswith("hwk_")
    listed = api.call("GET", "tokens", token=admin).json
    assert {t["name"] for t in listed} >= {"grafana"}
    assert all("token" not in t and "token_hash" not in t for t in listed)
    assert api.call("POST", "tokens", {"name": "x", "role": "root"}, token=admin).status_int == 400
    assert api.call("POST", "tokens", {"name": ""}, token=admin).status_int == 400


def test_session_login_csrf_and_logout(api, core):
    r = api.login()
    assert r.status_int == 200
    cookie = r.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower() and "secure" in cookie.lower()
    assert api.call("GET", "session").json["role"] == "admin"
    r = api.call("POST", f"permit/{MAC}", csrf="wrong")
    assert r.status_int == 403 and "CSRF" in r.json["error"]
    req_without = api.call("POST", f"permit/{MAC}", headers={"X-CSRF-Token": ""}, csrf="")
    assert req_without.status_int == 403
    assert core.state.get_device(MAC).state == "pending"
    assert api.call("POST", f"permit/{MAC}").status_int == 200
    assert api.call("POST", "logout").status_int == 200
    assert api.call("GET", "status").status_int == 401


def test_wrong_passwords_are_rate_limited(api, core, clock):
    for _ in range(5):
        assert api.login("wrong password", client="192.0.2.66").status_int == 401
    r = api.login(PASSWORD, client="192.0.2.66")
    assert r.status_int == 429 and int(r.headers["Retry-After"]) > 0
    assert api.login(PASSWORD, client="192.0.2.67").status_int == 200  # others are not locked out
    clock.advance(301)
    assert api.login(PASSWORD, client="192.0.2.66").status_int == 200


def test_pending_device_cannot_use_the_api_at_all(api, core):
    tok = api.token("admin")
    # 10.2.0.2 is MAC's address; it is pending.
    for path in ("openapi.json", "status"):
        r = api.call("GET", path, token=tok, client="10.2.0.2")
        assert r.status_int == 403 and "not permitted" in r.json["error"]
    assert api.login(client="10.2.0.2").status_int == 403
    # an address of the pool nobody holds
    assert api.call("GET", "status", token=tok, client="10.2.9.2").status_int == 403


def test_a_device_cannot_permit_itself_even_with_credentials(api, core):
    tok = api.token("admin")
    core.devices.permit(MAC2)
    core.devices.deny(MAC)
    # MAC2 (permitted, 10.2.0.6) may permit MAC, but MAC (denied, 10.2.0.2) may not.
    r = api.call("POST", f"permit/{MAC}", token=tok, client="10.2.0.2")
    assert r.status_int == 403
    assert core.state.get_device(MAC).state == "denied"
    r = api.call("POST", f"deny/{MAC2}", token=tok, client="10.2.0.6")
    assert r.status_int == 403 and "its own access" in r.json["error"]
    assert api.call("POST", f"permit/{MAC}", token=tok, client="10.2.0.6").status_int == 200


def test_permitted_device_without_credentials_gets_401(api, core):
    core.devices.permit(MAC)
    assert api.call("POST", f"permit/{MAC2}", client="10.2.0.2").status_int == 401


def test_forwarded_for_is_only_trusted_from_the_proxy(api, core):
    tok = api.token("admin")
    req = Request.blank("/ws.v1/status", remote_addr="10.2.0.2", headers={
        "X-Forwarded-For": "192.0.2.1", "Authorization": f"Bearer {tok}"})
    assert req.get_response(api.app).status_int == 403


def test_mutations_are_post_only(api):
    tok = api.token("admin")
    r = api.call("GET", f"permit/{MAC}", token=tok)
    assert r.status_int == 405 and r.headers["Allow"] == "POST"
    assert api.call("POST", "status", token=tok).status_int == 405
    assert api.call("GET", "nothing-here", token=tok).status_int == 404


def test_openapi_is_public_and_matches_the_route_table_both_ways(api):
    """Every route the server has is documented, and every documented operation is served
    (checked against the app's own route table, not a list kept by hand)."""
    import re
    r = api.call("GET", "openapi.json")
    assert r.status_int == 200
    prefix = "/ws.v1"
    documented = {(method.upper(), prefix + re.sub(r"\{(\w+)\}", r"x\1x", path))
                  for path, ops in r.json["paths"].items() for method in ops if method != "parameters"}
    routes = api.app.routes
    for method, url in documented:
        assert any(rt.method == method and rt.pattern.match(url) for rt in routes), \
            f"documented, not served: {method} {url}"
    for rt in routes:
        assert any(rt.method == method and rt.pattern.match(url) for method, url in documented), \
            f"served, not documented: {rt.method} {rt.pattern.pattern}"


def test_hwdb_endpoint_only_selects(api, core):
    tok = api.token("read-only")
    assert api.call("GET", "hwdb?query=select+*+from+Links", token=tok).status_int == 503
    for q in ("insert+into+Links+values+(1)", "select+1%3B+insert+into+x", ""):
        r = api.call("GET", f"hwdb?query={q}", token=tok)
        assert r.status_int == 400, q


def test_hwdb_endpoint_returns_rows(api, core):
    class Result:
        columns, types, rows = ["mac", "rssi"], ["varchar", "real"], [{"mac": MAC, "rssi": -50.0}]
    seen = []

    class Client:
        def query(self, sql):
            seen.append(sql)
            return Result()
    app = api.app
    app.hwdb_client_factory = Client
    object.__setattr__(core.config, "hwdb_enabled", True)
    r = api.call("GET", "hwdb?query=SELECT+mac,rssi+FROM+Links+[rows+1]%3B", token=api.token("read-only"))
    assert r.status_int == 200, r.text
    assert r.json["rows"] == [{"mac": MAC, "rssi": -50.0}]
    assert seen == ["SELECT mac,rssi FROM Links [rows 1]"]


def test_devices_view_for_the_board(api, core):
    core.devices.set_meta(MAC2, name="Anna's phone")
    views = {v["mac"]: v for v in api.call("GET", "devices", token=api.token("read-only")).json}
    assert views[MAC]["zone"] == "asking" and views[MAC]["label"] == "laptop"
    assert views[MAC2]["label"] == "Anna's phone" and views[MAC2]["label_source"] == "name"
    assert views[MAC]["private"] is True
    core.devices.permit(MAC)
    core.devices.blacklist(MAC2)
    views = {v["mac"]: v for v in api.call("GET", "devices", token=api.token("read-only")).json}
    assert views[MAC]["zone"] == "permitted" and views[MAC2]["zone"] == "outside"


def test_event_stream_sends_snapshot_then_live_device_events(api, core):
    api.login()
    app = api.app
    req = Request.blank("/ws.v1/events", remote_addr=PROXY,
                        headers={"Cookie": "; ".join(f"{k}={v}" for k, v in api.cookies.items())})
    # Call the WSGI app by hand so the body stays a live generator.
    status = {}
    body = app(req.environ, lambda s, h: status.update(status=s, headers=dict(h)))
    assert status["status"].startswith("200")
    assert status["headers"]["Content-Type"].startswith("text/event-stream")
    it = iter(body)
    assert next(it).startswith(b"retry:")
    snap = next(it).decode()
    assert snap.startswith("event: snapshot") and MAC in snap
    core.devices.permit(MAC)
    ev = next(it).decode()
    assert ev.startswith("event: device")
    data = json.loads(ev.split("data: ", 1)[1])
    assert data["mac"] == MAC and data["state"] == "permitted" and data["view"]["zone"] == "permitted"
    core.bus.publish("alert", mac=MAC, kind="flow-limit", detail="1000 flows")
    ev = next(it).decode()
    assert ev.startswith("event: alert") and "flow-limit" in ev
    body.close()
    assert app.stream.clients() == 0


def test_a_cut_off_beginning_or_ending_sends_the_devices_view_to_the_board(api, core):
    from homework.events import CutOffChanged
    sent = []
    api.app.stream.publish = lambda event, data: sent.append((event, data))
    core.devices.permit(MAC)
    sent.clear()
    core.bus.publish(CutOffChanged(mac=MAC, kind="allowance", until=0))
    core.bus.publish(CutOffChanged(mac=MAC, kind=""))          # the allowance was lifted
    assert [(e, d["mac"], d["reason"], d["view"]["zone"]) for e, d in sent] == [
        ("device", MAC, "cutoff", "permitted")] * 2
    sent.clear()
    core.bus.publish(CutOffChanged(mac=MAC2, kind="pending"))   # its join's device event says so
    assert sent == []


def test_pairing_requests_are_limited_per_address_apart_from_logins(api):
    """the public pairing call has a limiter of its own (10 per address in 10
    minutes): a box asking again and again is held back, and that address may still log in."""
    body = {"dpid": "00000000000000a1", "csr": "not a request"}
    codes = [api.call("POST", "satellites/pair", body, client="192.0.2.77").status_int for _ in range(11)]
    assert codes[:10] == [404] * 10 and codes[10] == 429     # not listed here: 404 until the limit
    assert api.call("POST", "satellites/pair", body, client="192.0.2.78").status_int == 404   # another address
    assert api.login(client="192.0.2.77").status_int == 200
