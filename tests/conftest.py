"""Fixtures every test folder may use: the embedded model and its backend, the evaluation sentences, and the app server.

Keep this file small: a fixture one folder needs goes in that folder's conftest.py; plain helpers
(serve_app, the fake backend, paths) are modules of tests/support, imported by name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

# CI (TTS_APP_FAIL_ON_SKIP=1) fails on a skip not on skip_guard's allow-list; every skip's reason is printed.
from tests.support.skip_guard import (  # noqa: F401  (pytest hooks, registered with this conftest)
    pytest_collectreport,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_sessionstart,
    pytest_terminal_summary,
)
from tests.support.app_server import serve_app
from tests.support.paths import ARTIFACTS, DATA

# --- the model (tests of tts_app/models/piper, tts_app/backends, tts_app/engine) ----------------


@pytest.fixture(scope="session")
def sentences() -> list[str]:
    """The evaluation sentences (Harvard lists 1 and 2), one per line of tests/data/sentences.txt."""
    text = (DATA / "sentences.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def vits():
    """The embedded Piper VITS voice, loaded once."""
    from tts_app.models.piper.loader import load_default_voice

    return load_default_voice()


@pytest.fixture(scope="session")
def piper_backend(vits):
    """The Piper backend over the embedded voice."""
    from tts_app.backends.piper import PiperBackend

    return PiperBackend(vits)


# --- the app server (tests of app.py, tts_app/web/ui, tts_app/web/api) ----------------------------


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """tests/artifacts/ (ignored by git), for screenshots and measurements."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def app_server(artifacts_dir: Path) -> Iterator[str]:
    """``python app.py`` on 127.0.0.1 and a free port, started once per test session; yields its base URL."""
    with serve_app(artifacts_dir / "app_server.log") as (base, _process):
        yield base
