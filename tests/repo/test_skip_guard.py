"""tests/skip_guard.py: with TTS_APP_FAIL_ON_SKIP=1 a skip not on the allow-list fails the session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

SKIPPING_TESTS = '''
import pytest

def test_runs():
    assert True

def test_needs_a_tool():
    pytest.skip("the frobnicator is not installed")
'''
BROKEN_IMPORT = '''
import pytest

broken = pytest.importorskip("broken_pkg")

def test_uses_it():
    assert broken
'''


def _run(tmp_path: Path, tests: str, fail_on_skip: bool, allowed: str = "") -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(
        "from skip_guard import pytest_collectreport, pytest_runtest_logreport, pytest_sessionfinish, "
        "pytest_sessionstart, pytest_terminal_summary  # noqa: F401\n"
        f"import skip_guard\nskip_guard.ALLOWED_SKIPS.update({{{allowed!r}: 'why'}} if {allowed!r} else {{}})\n"
    )
    (tmp_path / "test_it.py").write_text(tests)
    (tmp_path / "broken_pkg.py").write_text("raise ImportError('its native library is missing')\n")
    env = dict(os.environ, PYTHONPATH=f"{REPO / 'tests' / 'support'}{os.pathsep}{tmp_path}")
    env.pop("TTS_APP_FAIL_ON_SKIP", None)
    if fail_on_skip:
        env["TTS_APP_FAIL_ON_SKIP"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_an_unexpected_skip_fails_the_session_and_says_why(tmp_path: Path) -> None:
    run = _run(tmp_path, SKIPPING_TESTS, fail_on_skip=True)
    assert run.returncode == pytest.ExitCode.TESTS_FAILED, run.stdout
    assert "unexpected skips" in run.stdout and "the frobnicator is not installed" in run.stdout, run.stdout


def test_a_broken_package_behind_importorskip_fails_too(tmp_path: Path) -> None:
    run = _run(tmp_path, BROKEN_IMPORT, fail_on_skip=True)
    assert run.returncode == pytest.ExitCode.TESTS_FAILED, run.stdout
    assert "broken_pkg" in run.stdout, run.stdout


def test_an_allowed_skip_passes(tmp_path: Path) -> None:
    run = _run(tmp_path, SKIPPING_TESTS, fail_on_skip=True, allowed="frobnicator is not installed")
    assert run.returncode == pytest.ExitCode.OK, run.stdout
    assert "the frobnicator is not installed" in run.stdout, run.stdout  # still printed


def test_without_the_variable_skips_pass_but_are_printed(tmp_path: Path) -> None:
    run = _run(tmp_path, SKIPPING_TESTS, fail_on_skip=False)
    assert run.returncode == pytest.ExitCode.OK, run.stdout
    assert "skip reasons" in run.stdout and "the frobnicator is not installed" in run.stdout, run.stdout


@pytest.mark.slow  # two pytest runs of the API tests' imports
def test_a_missing_system_tool_skips_in_one_line_naming_its_package_and_ci_fails(tmp_path: Path) -> None:
    """The real mpg123 test, run with a PATH that lacks mpg123: one skip line naming the apt package (before the
    app server starts); with TTS_APP_FAIL_ON_SKIP=1 (CI) the same run fails."""
    from tests.support.system_tools import missing_reason

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if os.path.isdir(directory):
            for entry in os.scandir(directory):
                target = bin_dir / entry.name
                if entry.name != "mpg123" and not target.exists() and entry.is_file() and os.access(entry.path, os.X_OK):
                    target.symlink_to(entry.path)
    test = "tests/api/test_openai_formats.py::test_openai_client_default_mp3_reads_at_full_length_in_mpg123"
    for fail_on_skip in (False, True):
        env = {k: v for k, v in os.environ.items() if k != "TTS_APP_FAIL_ON_SKIP"} | {"PATH": str(bin_dir)}
        if fail_on_skip:
            env["TTS_APP_FAIL_ON_SKIP"] = "1"
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", test],
                             cwd=REPO, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        skip_lines = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED") and "mpg123" in line]
        assert skip_lines and all(line.endswith(missing_reason("mpg123")) for line in skip_lines), run.stdout
        assert "app.py" not in run.stdout and "Traceback" not in run.stdout
        assert run.returncode == (pytest.ExitCode.TESTS_FAILED if fail_on_skip else pytest.ExitCode.OK), run.stdout
