"""Shared fixtures: the embedded model and its backend, the evaluation sentences, and the app server.

Keep this file small; add fixtures other test files need here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

# CI (TTS_APP_FAIL_ON_SKIP=1) fails on a skip not on skip_guard's allow-list; every skip's reason is printed.
from skip_guard import (  # noqa: F401  (pytest hooks, registered with this conftest)
    pytest_collectreport,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_sessionstart,
    pytest_terminal_summary,
)

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
ARTIFACTS = REPO / "tests" / "artifacts"
SERVER_START_TIMEOUT_S = 180


# --- the model (tests of tts_app/model, tts_app/backends, tts_app/engine) ----------------


@pytest.fixture(scope="session")
def sentences() -> list[str]:
    """The evaluation sentences (Harvard lists 1 and 2), one per line of tests/data/sentences.txt."""
    text = (DATA / "sentences.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def vits():
    """The embedded Piper VITS voice, loaded once."""
    from tts_app.model.loader import load_default_voice

    return load_default_voice()


@pytest.fixture(scope="session")
def piper_backend(vits):
    """The Piper backend over the embedded voice."""
    from tts_app.backends.piper import PiperBackend

    return PiperBackend(vits)


# --- the app server (tests of app.py, tts_app/ui, tts_app/api) ----------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """tests/artifacts/ (ignored by git), for screenshots and measurements."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@contextmanager
def serve_app(
    log_path: Path, extra_env: dict[str, str] | None = None, args: tuple[str, ...] = (),
    preexec_fn: Callable[[], None] | None = None,
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``python app.py [args]`` on 127.0.0.1 and a free port until the block ends; yields its base URL and process.

    ``extra_env`` overrides the server's environment (e.g. a PATH without ffmpeg); ``preexec_fn``
    runs in the child before app.py (e.g. to lower its resource limits).
    """
    port = _free_port()
    env = dict(os.environ)
    env.update({"GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False"})
    env.update(extra_env or {})
    env.pop("PORT", None)
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "app.py", *args], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   preexec_fn=preexec_fn)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + SERVER_START_TIMEOUT_S
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"app.py exited with {process.returncode}; see {log_path}")
                try:
                    if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"app.py did not answer within {SERVER_START_TIMEOUT_S} s; see {log_path}")
                time.sleep(0.25)
            yield base, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


@pytest.fixture(scope="session")
def app_server(artifacts_dir: Path) -> Iterator[str]:
    """``python app.py`` on 127.0.0.1 and a free port, started once per test session; yields its base URL."""
    with serve_app(artifacts_dir / "app_server.log") as (base, _process):
        yield base
