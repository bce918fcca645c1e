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
EXPECTED_FAILURES = {
    "test_xfail.py": "import pytest\n@pytest.mark.xfail(reason='later')\ndef test_x():\n    assert False\n",
    "test_xpass.py": "import pytest\n@pytest.mark.xfail(reason='later')\ndef test_x():\n    pass\n",
    "test_xfail_call.py": "import pytest\ndef test_x():\n    pytest.xfail('later')\n",
}
SKIPPING_NODE = ("import { test } from 'node:test';\n"
                 "test('runs', () => {});\n"
                 "test('skipped', { skip: 'no chromium' }, () => {});\n"
                 "test('inside', (t) => { t.skip('later'); });\n"
                 "test('todo', { todo: 'later' }, () => {});\n")


def run_pytest(tmp_path, name, **env):
    (tmp_path / name).write_text({**SKIPPING, **EXPECTED_FAILURES}[name])
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


@pytest.mark.parametrize("name", sorted(EXPECTED_FAILURES))
def test_an_expected_failure_fails_under_ci(tmp_path, name):
    proc = run_pytest(tmp_path, name, CI="true")
    assert proc.returncode != 0, proc.stdout
    assert "expected failure is a failure" in proc.stdout, proc.stdout
    assert "1 failed" in proc.stdout.splitlines()[-1], proc.stdout


def test_outside_ci_an_expected_failure_is_still_one(tmp_path):
    proc = run_pytest(tmp_path, "test_xfail.py")
    assert proc.returncode == 0 and "1 xfailed" in proc.stdout.splitlines()[-1], proc.stdout


def run_ui(tmp_path, **env):
    """tests/ui/run.sh, the browser tests' runner, on one test file of node's test runner."""
    test = tmp_path / "skipping.test.mjs"
    test.write_text(SKIPPING_NODE)
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "HOMEWORK_REQUIRE_ALL")}
    return subprocess.run(["bash", str(TESTS / "ui" / "run.sh"), str(test)], env={**clean, **env},
                          capture_output=True, text=True, timeout=120)


def test_the_browser_tests_runner_fails_a_skip_under_ci(tmp_path):
    proc = run_ui(tmp_path, CI="true")
    assert proc.returncode != 0, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    for name in ("skipped", "inside", "todo"):
        assert f"skipped under CI: {name} " in out, out


def test_outside_ci_the_browser_tests_runner_lets_a_skip_pass(tmp_path):
    proc = run_ui(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped under CI" not in proc.stdout + proc.stderr
