"""A lexicon file with a bad entry (edited by hand) is served: the entry is skipped with one warning naming it.

Through the real server (``python app.py``): every request is answered, whether its text has the bad
word, a good word of the file, or neither; the good entry is still used; the warning comes once
for the file, not once per request.
"""

from __future__ import annotations

import io
import json

import httpx
import numpy as np
import pytest
import soundfile as sf

from tests.support.app_server import serve_app

pytestmark = pytest.mark.slow


def _speak(http: httpx.Client, text: str, lexicon: dict | None = None) -> np.ndarray:
    body = {"model": "tts-1", "voice": "default", "input": text, "response_format": "wav", "seed": 1}
    if lexicon:
        body["lexicon"] = lexicon
    response = http.post("/v1/audio/speech", json=body)
    assert response.status_code == 200, response.text
    return sf.read(io.BytesIO(response.content), dtype="float32")[0]


def test_a_bad_entry_in_the_servers_file_is_skipped_once_and_every_request_is_served(tmp_path):
    voices = tmp_path / "voices"
    voices.mkdir()
    (voices / "lexicon.json").write_text(json.dumps({"Snowman": "/ʃ☃n/", "tomato": "tomahto", "7up": 5}), encoding="utf-8")
    log = tmp_path / "server.log"
    with serve_app(log, {"TTS_APP_VOICES_DIR": str(voices)}) as (base, _process):
        with httpx.Client(base_url=base, timeout=120) as http:
            plain = _speak(http, "A quiet evening.")
            assert _speak(http, "A quiet evening.").size == plain.size  # served again, same text
            _speak(http, "The snowman melted.")  # the bad word itself is read as written
            with_file = _speak(http, "I like tomato soup.")
            as_written = _speak(http, "I like tomato soup.", {"tomato": "tomato"})  # the request's own word wins
            assert with_file.shape != as_written.shape or np.abs(with_file - as_written).max() > 0.01
            # A request's own bad entry is its own ask: refused in one line, the server's file untouched.
            refused = http.post("/v1/audio/speech", json={"model": "tts-1", "voice": "default", "input": "Hi.", "lexicon": {"x": "/☃/"}})
            assert refused.status_code == 400 and "U+2603" in refused.json()["error"]["message"]
            assert _speak(http, "Still served.").size > 0
    text = log.read_text(encoding="utf-8", errors="replace")
    warnings = [line for line in text.splitlines() if "skipped lexicon" in line]
    assert len(warnings) == 2, warnings  # Snowman and 7up, once each for the whole run
    assert any("'Snowman'" in w and "U+2603" in w for w in warnings)
    assert "Traceback" not in text
