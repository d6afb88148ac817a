"""Run ``python app.py`` on a free local port for a test (the ``app_server`` fixture and tests that need their own server)."""

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

from tests.support.paths import REPO

SERVER_START_TIMEOUT_S = 180
SERVER_READY_TIMEOUT_S = 600  # a hang guard: the model loads first (82 s seen on a machine loaded 10x over)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve_app(
    log_path: Path, extra_env: dict[str, str | None] | None = None, args: tuple[str, ...] = (),
    preexec_fn: Callable[[], None] | None = None, repo: Path = REPO, ready: bool = False,
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``python app.py [args]`` on 127.0.0.1 and a free port until the block ends; yields its base URL and process.

    ``extra_env`` overrides the server's environment (e.g. a PATH without ffmpeg; None unsets one); ``preexec_fn``
    runs in the child before app.py (e.g. to lower its resource limits); ``repo`` is the checkout
    whose app.py runs (another revision's, for a before/after comparison); ``ready``: also wait for /readyz to say
    200 (the embedded voice and every model the operator chose loaded: a request never loads one).
    """
    port = free_port()
    env = dict(os.environ)
    env.update({"GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False"})
    env.update(extra_env or {})
    for name in [name for name, value in env.items() if value is None]:  # None: the variable unset
        env.pop(name)
    env.pop("PORT", None)
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "app.py", *args], cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   preexec_fn=preexec_fn)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + (SERVER_READY_TIMEOUT_S if ready else SERVER_START_TIMEOUT_S)
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"app.py exited with {process.returncode}; see {log_path}")
                try:
                    if httpx.get(f"{base}/{'readyz' if ready else 'healthz'}", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"app.py did not answer within {SERVER_READY_TIMEOUT_S if ready else SERVER_START_TIMEOUT_S} s; see {log_path}")
                time.sleep(0.25)
            yield base, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
