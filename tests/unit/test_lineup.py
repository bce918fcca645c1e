"""One component list and one set of defaults: the image's config template, the reference
config (conf/homework.toml) and the emulated home all come from homework.lineup."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from homework import config, lineup

REPO = Path(__file__).resolve().parents[2]


def _image_template() -> tuple[dict, set[str]]:
    """conf/image/homework.toml.in, and the keys whose values the image fills in at boot
    (@...@ placeholders: this box's ports, components, datapath)."""
    doc, filled, section = [], set(), ""
    for line in (REPO / "conf" / "image" / "homework.toml.in").read_text().splitlines():
        if line.startswith("["):
            section = line.strip("[] ")
        elif "@" in line.split("#")[0] and "=" in line:
            filled.add(f"{section}.{line.split('=')[0].strip()}")
            continue
        doc.append(line)
    return tomllib.loads("\n".join(doc)), filled


def test_every_component_of_the_lineup_exists_and_is_known():
    for part in lineup.LINEUP:
        assert part.name in config.KNOWN_COMPONENTS
        assert (REPO / "nox-modules" / "homework" / "components" / part.name).is_dir()
    for stand_in in lineup.STAND_INS.values():
        assert stand_in in config.KNOWN_COMPONENTS


def test_needs_leave_out_what_a_box_lacks():
    everything = lineup.components()
    assert everything[:2] == ["dhcp", "routing"] and "satlink" in everything
    bare = lineup.components(set())
    assert "dns" not in bare and "localnames" not in bare and "hwdb_sync" not in bare and "radio" not in bare
    assert "api" in bare and "qos" in bare and "backup" in bare
    lab = lineup.components({"dnsd", "hwdbd", "wan", "mqtt-broker"}, stand_ins=True)
    assert "linksim" in lab and "radio" not in lab and lab.index("linksim") == everything.index("radio")


def test_reference_config_runs_the_lineup_with_the_shipped_settings():
    doc = tomllib.loads((REPO / "conf" / "homework.toml").read_text())
    assert doc["controller"]["components"] == lineup.components()
    for section, table in lineup.SHIPPED.items():
        for key, value in table.items():
            assert doc[section][key] == value, f"conf/homework.toml {section}.{key}"


def test_shipped_settings_are_the_defaults():
    defaults = {k.name: k.default for k in config.KEYS}
    for section, table in lineup.SHIPPED.items():
        for key, value in table.items():
            assert defaults[f"{section}.{key}"] == value, f"{section}.{key}: KEYS default differs"


def test_image_and_reference_config_agree_where_both_say():
    (image, filled), ref = _image_template(), tomllib.loads((REPO / "conf" / "homework.toml").read_text())
    assert "controller.components" in filled
    compared = 0
    for section, table in image.items():
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            if section in ref and key in ref[section]:
                compared += 1
                assert ref[section][key] == value, \
                    f"{section}.{key}: image {value!r}, conf/homework.toml {ref[section][key]!r}"
    assert compared >= 10
    for section, table in lineup.SHIPPED.items():
        for key, value in table.items():
            assert image[section][key] == value, f"image template {section}.{key}"


def test_the_image_reads_the_lineup_lines():
    out = subprocess.run([sys.executable, "-m", "homework.lineup", "--needs"], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    rows = [line.split(" ") for line in out if line]
    assert [r[0] for r in rows] == [p.name for p in lineup.LINEUP]
    script = (REPO / "image" / "guest" / "homework-net").read_text()
    for need in lineup.NEEDS:
        assert f"      {need})" in script, f"homework-net does not check the need {need!r}"
    assert "/usr/share/homework/lineup" in script
    assert "homework.lineup --needs" in (REPO / "image" / "install-overlay.sh").read_text()


def test_have_is_checked():
    res = subprocess.run([sys.executable, "-m", "homework.lineup", "--have", "dnsd,wifi"], capture_output=True,
                         text=True)
    assert res.returncode != 0 and "unknown need(s): wifi" in res.stderr
    out = subprocess.run([sys.executable, "-m", "homework.lineup", "--have", "dnsd"], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out.startswith('"dhcp", "routing", "dns", "localnames", "blocklists", "eapol", "api"')
