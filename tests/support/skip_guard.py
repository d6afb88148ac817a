"""With ``TTS_APP_FAIL_ON_SKIP=1`` (CI sets it), a skip that is not on the allow-list fails the session.

A test that skips proves nothing, and with pytest 9 an installed-but-broken package skips through
``importorskip`` as a missing one does: CI must not pass by skipping. Every skip's reason is printed
in the summary (as ``-rs`` would), those not allowed under "unexpected skips", and the exit status
becomes 1. tests/conftest.py imports these hooks.
"""

from __future__ import annotations

import os

import pytest

# Skips CI may take, each with why. Empty: CI installs every optional package and tool the tests use
# (requirements-dev.txt, chromium, the reference venvs) and runs as root, so none is expected there.
ALLOWED_SKIPS: dict[str, str] = {}

_skipped: list[tuple[str, str]] = []


def fail_on_skip() -> bool:
    return os.environ.get("TTS_APP_FAIL_ON_SKIP") == "1"


def _reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, line, "Skipped: reason")
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def unexpected(reason: str) -> bool:
    return not any(allowed in reason for allowed in ALLOWED_SKIPS)


def _note(report: pytest.CollectReport | pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append((report.nodeid, _reason(report)))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _note(report)  # a module-level importorskip skips at collection


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _note(report)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _skipped:
        return
    terminalreporter.section("skip reasons")
    for nodeid, reason in _skipped:
        terminalreporter.line(f"SKIPPED {nodeid}: {reason}")
    bad = [(nodeid, reason) for nodeid, reason in _skipped if unexpected(reason)]
    if bad and fail_on_skip():
        terminalreporter.section("unexpected skips (TTS_APP_FAIL_ON_SKIP=1): failing the session", red=True)
        for nodeid, reason in bad:
            terminalreporter.line(f"{nodeid}: {reason}", red=True)


def pytest_sessionstart(session: pytest.Session) -> None:
    _skipped.clear()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    passing = exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
    if passing and fail_on_skip() and any(unexpected(reason) for _nodeid, reason in _skipped):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
