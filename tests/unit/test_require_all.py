"""Under CI=true or HOMEWORK_REQUIRE_ALL=1 every kind of skip fails the run."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parents[1]

SKIPPING = {
    "test_in_test.py": "import pytest\ndef test_x():\n    pytest.skip('no root')\n",
    "test_mark.py": "import pytest\n@pytest.mark.skipif(True, reason='no ovs')\ndef test_x():\n    pass\n",
    "test_fixture.py": ("import pytest\n@pytest.fixture(scope='module')\ndef home():\n    pytest.skip('no root')\n"
                        "def test_a(home):\n    pass\ndef test_b(home):\n    pass\n"),
    "test_module.py": "import pytest\npytest.skip('no tool', allow_module_level=True)\ndef test_x():\n    pass\n",
    "test_importorskip.py": "import pytest\npytest.importorskip('no_such_module_here')\ndef test_x():\n    pass\n",
}


def run_pytest(tmp_path, name, **env):
    (tmp_path / name).write_text(SKIPPING[name])
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "HOMEWORK_REQUIRE_ALL")}
    clean["PYTHONPATH"] = f"{TESTS}{os.pathsep}{clean.get('PYTHONPATH', '')}"
    clean["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"     # only the plugin under test: fast
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "require_all",
                           "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path / name)],
                          env={**clean, **env}, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name", sorted(SKIPPING))
def test_a_skip_fails_under_ci(tmp_path, name):
    proc = run_pytest(tmp_path, name, CI="true")
    assert proc.returncode != 0, proc.stdout
    assert "skip is a failure" in proc.stdout, proc.stdout
    assert " skipped" not in proc.stdout.splitlines()[-1]


def test_require_all_variable_does_the_same(tmp_path):
    proc = run_pytest(tmp_path, "test_fixture.py", HOMEWORK_REQUIRE_ALL="1")
    assert proc.returncode != 0 and "2 errors" in proc.stdout.splitlines()[-1], proc.stdout   # setup failed


def test_outside_ci_a_skip_is_still_a_skip(tmp_path):
    proc = run_pytest(tmp_path, "test_mark.py")
    assert proc.returncode == 0 and "1 skipped" in proc.stdout.splitlines()[-1], proc.stdout
