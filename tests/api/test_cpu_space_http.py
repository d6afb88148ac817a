"""The CPU Space of spaces/cpu/ started as the Space starts it: ``app.py`` with the recipe's ``TTS_APP_MODELS``
(pocket-tts), ``SPACE_ID``, an empty cache and ``HF_TOKEN`` as its secret, against the local fake hub holding tiny
random Pocket TTS weights in the released layout, whose gated repository answers as the hub's does.

- A token with access: /readyz is 503 until Pocket TTS is fetched and loaded, then it clones a clip through
  /v1/audio/speech and through the page's Generate event (gradio_client).
- No token (401 GatedRepo) and a token whose account has not accepted the terms (403 GatedRepo): one line, the same on
  the page, in the log (once) and in /v1/models, says why and how to fix it; the no-cloning release's saved voices
  speak; a clip is refused in that line (API and page), never spoken in another voice.
- The token appears nowhere: not in the log, /v1/models, the page, an error, or a file the app wrote.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from tests.support.app_server import serve_app
from tests.support.fake_hub import FakeHub
from tests.support.paths import REPO
from tests.support.pocket_tts_tiny import released_widths, widths_hook, write_released_repos
from tests.support.space_recipe import CPU_RECIPE, header, recipe_models
from tts_app.models.capabilities import NO_CLONING

pytestmark = pytest.mark.slow  # starts three servers, each fetching and loading a tiny Pocket TTS

MODEL = "pocket-tts"
CLONING_REPO = "kyutai/pocket-tts"
TOKEN = "hf_h47SpaceSecretWithAccess0000000"
NOT_ACCEPTED = "hf_h47SpaceSecretNotAccepted00000"
READY_TIMEOUT_S = 600
CLIP = REPO / "assets" / "voices" / "lj_female_us.wav"
TEXT = "Hello there, how are you today?"


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_released_repos(tmp_path_factory.mktemp("released"))


def _start(tmp: Path, repos: dict[str, Path], token: str | None) -> Iterator[tuple[httpx.Client, Path, list[dict]]]:
    assert recipe_models(CPU_RECIPE) == [MODEL] and header(CPU_RECIPE / "README.md")["app_file"] == "app.py"
    hook = widths_hook(tmp / "hook", released_widths(repos))  # the fetch writes the tiny release's widths
    with FakeHub(repos, refuse={CLONING_REPO: (403 if token else 401, "GatedRepo")}, tokens={TOKEN}) as hub:
        env = {"TTS_APP_MODELS": ",".join(recipe_models(CPU_RECIPE)), "HF_ENDPOINT": hub.url, "SPACE_ID": "someone/tts-app-cpu",
               "HF_HOME": str(tmp / "hf"), "TTS_APP_CACHE_DIR": str(tmp / "cache"), "HF_HUB_OFFLINE": "0",
               "HF_HUB_DISABLE_XET": "1", "TTS_APP_MAX_SECONDS": "2", "TTS_APP_POCKET_TTS_PATH": "", "PYTHONPATH": f"{hook}:{REPO}",
               "HF_TOKEN": token or ""}
        with serve_app(tmp / "app.log", env) as (base, _process), httpx.Client(base_url=base, timeout=300) as http:
            yield http, tmp, _wait_ready(http)


def _wait_ready(http: httpx.Client) -> list[dict]:
    import time

    seen, deadline = [], time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        r = http.get("/readyz")
        seen.append(r.json() | {"code": r.status_code})
        if r.status_code == 200:
            return seen
        time.sleep(0.5)
    raise AssertionError(f"/readyz not 200 within {READY_TIMEOUT_S} s: {seen[-1]}")


@pytest.fixture(scope="module")
def with_access(repos, tmp_path_factory) -> Iterator[tuple[httpx.Client, Path, list[dict]]]:
    yield from _start(tmp_path_factory.mktemp("access"), repos, TOKEN)


@pytest.fixture(scope="module", params=[None, NOT_ACCEPTED], ids=["no-token", "token-not-accepted"])
def refused(repos, tmp_path_factory, request) -> Iterator[tuple[httpx.Client, Path, list[dict], str | None]]:
    for started in _start(tmp_path_factory.mktemp("refused"), repos, request.param):
        yield (*started, request.param)


def _models(http: httpx.Client) -> dict[str, dict]:
    return {m["id"]: m for m in http.get("/v1/models").json()["data"]}


def _speak(http: httpx.Client, **body) -> httpx.Response:
    return http.post("/v1/audio/speech", json={"model": MODEL, "input": TEXT, "response_format": "wav", "seed": 3, **body})


def _audio(r: httpx.Response) -> np.ndarray:
    assert r.status_code == 200, r.text
    audio, rate = sf.read(io.BytesIO(r.content), dtype="float32")
    assert rate == 24000 and audio.size > 0 and np.isfinite(audio).all()
    return audio


def _page(http: httpx.Client, mode: str, clip: Path | None, model: str = MODEL):
    client = Client(str(http.base_url).rstrip("/") + "/", verbose=False)
    return client.predict(TEXT, mode, None, handle_file(str(clip)) if clip else None, 1.0, 1.0, 3, False,
                          None, True, model, False, api_name="/generate")


def _no_token_anywhere(tmp: Path, http: httpx.Client, token: str) -> None:
    assert token not in (tmp / "app.log").read_text(errors="replace")
    assert token not in http.get("/v1/models").text and token not in http.get("/readyz").text
    assert token not in http.get("/").text and token not in http.get("/config").text
    for path in (tmp / "cache").rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert token.encode() not in path.read_bytes(), path


def test_a_token_with_access_fetches_and_clones(with_access) -> None:
    http, tmp, seen = with_access
    assert seen[0]["code"] == 503 and seen[-1]["models"] == {MODEL: "ready"}
    listed = _models(http)[MODEL]
    assert listed["status"] == "ready" and listed["loaded"] and "reason" not in listed
    assert listed["capabilities"]["voice_clips"] is True
    own = _audio(_speak(http))
    cloned = _audio(_speak(http, voice="lj_female_us"))  # a library clip, cloned
    assert cloned.shape != own.shape or not np.allclose(cloned, own)
    _no_token_anywhere(tmp, http, TOKEN)


def test_the_page_clones_an_uploaded_clip(with_access) -> None:
    http, tmp, _seen = with_access
    _stream, full, files, status, *_rest = _page(http, "Upload or record", CLIP)
    assert status.startswith("✓") and status.endswith("· voice: cloned by Pocket TTS"), status
    assert _models(http)[MODEL]["voice_clip"] == "cloned by Pocket TTS"
    audio, rate = sf.read(full, dtype="float32")
    assert rate == 24000 and audio.size > 0
    _no_token_anywhere(tmp, http, TOKEN)


def test_a_refused_token_is_one_line_everywhere_and_saved_voices_speak(refused) -> None:
    http, tmp, seen, token = refused
    assert seen[-1]["models"] == {MODEL: "ready"}
    listed = _models(http)[MODEL]
    reason = listed["reason"]
    fix = "accept the terms of kyutai/pocket-tts on the Hugging Face hub"
    assert reason.startswith(f"{MODEL} is ready with {NO_CLONING}: ") and fix in reason and "\n" not in reason
    assert ("no HF_TOKEN is set" in reason) == (token is None)
    assert listed["capabilities"]["voice_clips"] is False
    log = [line for line in (tmp / "app.log").read_text().splitlines() if NO_CLONING in line and "ready" in line]
    assert len(log) == 1 and log[0].endswith(reason), log
    _audio(_speak(http))  # its default saved voice
    _audio(_speak(http, voice="alba"))
    r = _speak(http, voice="lj_female_us")  # a clip: refused, never spoken in a saved voice
    assert r.status_code == 400 and r.json()["error"]["param"] == "voice", r.text
    message = r.json()["error"]["message"]
    assert NO_CLONING in message and fix in message and "\n" not in message
    with pytest.raises(AppError) as page:
        _page(http, "Upload or record", CLIP)
    assert NO_CLONING in str(page.value) and "\n" not in str(page.value).strip()
    _stream, full, _files, done, *_rest = _page(http, "Model's own voice", None)
    assert done.startswith("✓") and done.endswith("· voice: Pocket TTS's own voice"), done
    assert listed["voice_clip"].startswith(f"refused by Pocket TTS ({NO_CLONING}")
    if token:
        _no_token_anywhere(tmp, http, token)
