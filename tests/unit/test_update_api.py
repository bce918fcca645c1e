"""The update routes of the ws.v1 API called as lighttpd would: a good upload is
202 and written, a refused one 400 with the reason, read-only and CSRF-less sessions are
refused, a body over [update] max_upload_mb is 413, updates off is 409, one at a time."""
from __future__ import annotations

import time

import pytest

from conftest import make_core
from test_api import PASSWORD, Api
from update_lab import UpdateLab


def api_for(tmp_path, clock, **update):
    lab = UpdateLab(tmp_path / "lab")
    pwfile = tmp_path / "admin-password"
    pwfile.write_text(PASSWORD + "\n")
    cfg = {f"update_{k}": v for k, v in {**lab.config(), **update}.items()}
    core = make_core(tmp_path / "router", components=("dhcp", "routing", "api"), clock=clock,
                     api_admin_password_file=str(pwfile), **cfg)
    return Api(core), lab


@pytest.fixture
def api(tmp_path, clock):
    return api_for(tmp_path, clock)


def upload(api, path_or_bytes, token=None, **kw):
    body = path_or_bytes if isinstance(path_or_bytes, bytes) else path_or_bytes.read_bytes()
    return api.call("POST", "system/update", body, token=token, headers={"Content-Type": "application/octet-stream"},
                    **kw)


def wait_ready(api, token):
    for _ in range(300):
        status = api.call("GET", "system/update", token=token).json
        if status["state"] not in ("verifying", "writing"):
            return status
        time.sleep(0.05)
    raise AssertionError(status)


def test_good_upload_is_202_and_ready_and_the_upload_is_not_kept(api):
    api, lab = api
    token = api.token("admin")
    r = upload(api, lab.make("good.hwup"), token)
    assert r.status_int == 202 and r.json == {"state": "writing", "version": "v2", "slot": "b"}, r.text
    assert wait_ready(api, token)["state"] == "ready-to-reboot"
    assert (lab.dir / "hw-root-b").read_bytes()[:len(lab.root_image)] == lab.root_image
    work = api.core.config.state_dir / "update"
    assert list(work.iterdir()) == []
    assert api.call("GET", "system", token=token).json["update_slot"] == "A (updates go to B)"


def test_refusals_roles_and_csrf(api):
    api, lab = api
    before = lab.snapshot()
    r = upload(api, lab.make("arm.hwup", arch="arm64"), api.token("admin"))
    assert r.status_int == 400 and r.json["error"].startswith("update refused: wrong architecture"), r.text
    assert upload(api, b"", api.token("admin")).status_int == 400
    assert upload(api, lab.dir / "seed.hwup", api.token("read-only")).status_int == 403
    assert api.call("POST", "system/reboot", token=api.token("read-only")).status_int == 403
    api.login(PASSWORD)
    assert upload(api, lab.dir / "seed.hwup", csrf="wrong").status_int == 403          # a session needs its token
    r = api.call("POST", "system/update", b"{}", headers={"Content-Type": "application/json"})
    assert r.status_int == 400 and "octet-stream" in r.json["error"]
    assert lab.snapshot() == before


def test_too_large_busy_and_off(tmp_path, clock):
    api, lab = api_for(tmp_path, clock, max_upload_mb=1)
    token = api.token("admin")
    r = upload(api, lab.make("good.hwup"), token)          # ~5 MiB
    assert r.status_int == 413
    api.core.ctx.updater.claim()
    r = upload(api, b"x" * 1000, token)
    assert r.status_int == 409 and "already" in r.json["error"]
    assert api.call("POST", "system/reboot", token=token).status_int == 409
    api.core.ctx.updater.release()
    assert api.call("POST", "system/reboot", token=token).json == {"rebooting": True}


def test_off_by_default(tmp_path, clock):
    api, lab = api_for(tmp_path, clock, enabled=False)
    r = upload(api, lab.dir / "seed.hwup", api.token("admin"))
    assert r.status_int == 409 and "enabled = false" in r.json["error"]
    assert api.call("GET", "system/update", token=api.token("read-only")).json["enabled"] is False
    # a controller on a development machine never reboots its host
    r = api.call("POST", "system/reboot", token=api.token("admin"))
    assert r.status_int == 409 and "enabled = false" in r.json["error"]
