"""A run's file that the output store has swept answers a one-line 404 through the real server, not a 500
with a traceback (seen in a server log: a stopped run's line-01.wav asked for after the sweep). Paths
outside the store keep Gradio's own answers, so the reply says nothing about files elsewhere."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import numpy as np
import pytest

from tts_app.audio.wav_io import wav_bytes
from tts_app.storage.output_store import store_root

GONE = "this file is no longer kept by the server; generate it again"


def _get(base: str, path: str, method: str = "GET") -> httpx.Response:
    return httpx.request(method, f"{base}/gradio_api/file={quote(path)}", timeout=30)


def test_a_swept_output_file_is_a_one_line_404_and_no_traceback(app_server: str, artifacts_dir: Path) -> None:
    log = artifacts_dir / "app_server.log"
    before = log.stat().st_size
    folder = store_root() / secrets.token_urlsafe(16)
    folder.mkdir(parents=True)
    wav = folder / "line-01.wav"
    wav.write_bytes(wav_bytes(np.zeros(2205, np.float32), 22050))
    served = _get(app_server, str(wav))
    assert served.status_code == 200 and served.content[:4] == b"RIFF", served.status_code
    wav.unlink()  # the sweep came
    for method in ("GET", "HEAD"):
        gone = _get(app_server, str(wav), method)
        assert gone.status_code == 404, (method, gone.status_code, gone.text[:200])
    assert _get(app_server, str(wav)).json() == {"error": GONE, "detail": GONE}  # the one error shape of every route
    assert _get(app_server, str(folder / "never-made.wav")).status_code == 404
    time.sleep(0.5)  # the server's log line lands after the reply
    with log.open("rb") as handle:
        handle.seek(before)
        new = handle.read().decode(errors="replace")
    assert "Traceback" not in new and "does not exist" not in new, new[-2000:]


@pytest.mark.parametrize("path", ["/etc/passwd", "/etc/no-such-file.wav", "{store}/../../etc/passwd", "{store}/../no-such.wav"])
def test_paths_outside_the_store_keep_gradio_s_answer(app_server: str, path: str) -> None:
    reply = _get(app_server, path.format(store=store_root()))
    assert reply.status_code in (400, 403, 404), reply.status_code
    assert GONE not in reply.text  # the store's answer only for the store's own files
