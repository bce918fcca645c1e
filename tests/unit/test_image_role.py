"""The image's role choice and the router's satellite cables (image/guest/lib.sh):
the shell functions homework-firstboot and homework-net use, run by sh with the image's
paths moved into tmp_path."""
from __future__ import annotations

import subprocess
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "image" / "guest" / "lib.sh"


def lib_sh(tmp_path: Path, call: str, cmdline: str = "BOOT_IMAGE=/homework/a/vmlinuz root=PARTLABEL=hw-root-a",
           esp_file: str | None = None, recorded: str | None = None,
           satellites: str = "") -> subprocess.CompletedProcess:
    state, esp = tmp_path / "state", tmp_path / "esp"
    (state / "etc").mkdir(parents=True, exist_ok=True)
    esp.mkdir(exist_ok=True)
    (tmp_path / "cmdline").write_text(cmdline + "\n")
    if esp_file is not None:
        (esp / "homework-role").write_text(esp_file)
    if recorded is not None:
        (state / "etc" / "role").write_text(recorded + "\n")
    lib = LIB.read_text().replace("STATE=/var/lib/homework", f"STATE={state}") \
                         .replace("RUN=/run/homework", f"RUN={tmp_path / 'run'}")
    script = f'{lib}\nCMDLINE={tmp_path / "cmdline"} ESP={esp} SATELLITES="{satellites}"\n{call}\n'
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)


def role(tmp_path: Path, **kw) -> str:
    return lib_sh(tmp_path, "role_choice", **kw).stdout.strip()


def test_a_fresh_image_is_a_router(tmp_path):
    assert role(tmp_path) == "router"


def test_the_esp_file_makes_a_satellite_whatever_a_pc_adds_around_the_word(tmp_path):
    assert role(tmp_path, esp_file="satellite\r\n") == "satellite"      # written on Windows


def test_the_kernel_command_line_comes_before_the_esp_file(tmp_path):
    assert role(tmp_path, cmdline="quiet homework.role=router", esp_file="satellite") == "router"
    assert role(tmp_path, cmdline="quiet homework.role=satellite console=ttyS0") == "satellite"


def test_the_recorded_role_holds_once_the_esp_file_is_gone(tmp_path):
    assert role(tmp_path, recorded="satellite") == "satellite"
    assert role(tmp_path, esp_file="router", recorded="satellite") == "router"


def test_an_unknown_role_boots_a_router_and_says_why(tmp_path):
    res = lib_sh(tmp_path, "role_choice", esp_file="access-point")
    assert res.stdout.strip() == "router"
    assert "unknown role 'accesspoint'" in res.stderr


def test_the_routers_satellite_cables_are_its_own_ports_not_a_parents(tmp_path):
    out = lib_sh(tmp_path, "satellite_cables",
                 satellites="0000525400485711:250:enp0s4 0000525400485799:250:hws1p3 "
                            "00000000000000a1:250:enp3s0").stdout
    assert out.split() == ["enp0s4", "enp3s0"]
