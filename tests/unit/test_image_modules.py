"""The controller as the image installs it (image/install-overlay.sh leaves some packages
out of the image): every component it can load still imports, since the manifests
(homework/manifest.py) import every known component's manifest, loaded or not (a missing
one stopped the image's controller at start: the backup component reads every manifest)."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OVERLAY = ROOT / "image" / "install-overlay.sh"


def test_the_images_controller_imports_every_component(tmp_path):
    tree = tmp_path / "nox-modules"
    shutil.copytree(ROOT / "nox-modules", tree, ignore=shutil.ignore_patterns("__pycache__"))
    # what the overlay removes from the installed tree ("$R/usr/lib/homework/nox-modules/<path>")
    for rel in re.findall(r'rm -rf? "\$R/usr/lib/homework/nox-modules/([^"]+)"', OVERLAY.read_text()):
        shutil.rmtree(tree / rel, ignore_errors=True)
    code = ("import importlib\nfrom homework import config, manifest\nmanifest.every()\n"
            "for name in config.KNOWN_COMPONENTS:\n    importlib.import_module('homework.components.' + name)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": f"{tree}:{ROOT / 'hwdb' / 'python'}", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr[-2000:]
