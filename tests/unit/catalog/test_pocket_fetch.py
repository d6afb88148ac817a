"""``fetch pocket-tts`` (tts_app.models.pocket_tts.fetch) against the local fake hub holding tiny weights in the released
layout, and the hub's answers for the gated voice-cloning repository: with a token that has access the cloning release
is fetched (hashes checked) and clones; with no token (401 GatedRepo), a token whose account has not accepted the terms
(403 GatedRepo), a bare 403 or a 404, the no-cloning release is fetched, says why in one line (never the token), and
refuses a clip; an unreachable hub is one line within seconds. No internet."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_hub import FakeHub
from tests.support.paths import REPO
from tests.support.pocket_tts_tiny import released_widths, write_released_repos
from tts_app.models.capabilities import NO_CLONING, UnsupportedParameter
from tts_app.models.hub_fetch import FetchError
from tts_app.models.pocket_tts.fetch import fetch_pocket

CLONING_REPO = "kyutai/pocket-tts"
TOKEN = "hf_h47TestTokenWithAccess000000000"
OTHER_TOKEN = "hf_h47TestTokenWithoutAccess00000"


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_released_repos(tmp_path_factory.mktemp("released"))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repos: dict[str, Path]) -> Path:
    from huggingface_hub import constants

    import tts_app.models.pocket_tts.fetch as fetch

    monkeypatch.setattr(fetch, "POCKET_ENGLISH_CONFIG", released_widths(repos))  # the tiny release's widths

    hub = tmp_path / "hf" / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))  # no saved token of this machine
    return hub


def _backend(folder: Path):
    from tts_app.backends.pocket_tts import PocketBackend

    return PocketBackend.from_pretrained(str(folder))


def _clip_params():
    from tts_app.engine import SpeechParams
    from tts_app.engine.input_processing import resolve_params

    return resolve_params(SpeechParams(seed=1, voice=str(REPO / "assets" / "voices" / "lj_female_us.wav")))


def test_a_token_with_access_fetches_the_cloning_release(repos, cache, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with FakeHub(repos, refuse={CLONING_REPO: (401, "GatedRepo")}, tokens={TOKEN}) as hub:
        plans = []
        got = fetch_pocket(str(tmp_path / "out"), endpoint=hub.url, on_plan=plans.append)
    assert got.cloning and got.refused == ""
    assert (got.folder / "model.safetensors").read_bytes() == (repos[CLONING_REPO] / "languages/english/model.safetensors").read_bytes()
    assert plans and plans[-1].bytes_on_disk() == plans[-1].total_bytes > 0  # the page's progress reads the cache
    assert TOKEN not in (got.folder / "config.yaml").read_text()
    backend = _backend(got.folder)
    assert backend.model.cloning and backend.capabilities.voice_clips
    backend.capabilities.check(_clip_params(), ["Hello."], "pocket-tts")  # a clip is honoured


@pytest.mark.parametrize("answer, token, says", [
    ((401, "GatedRepo"), None, "kyutai/pocket-tts is gated and no HF_TOKEN is set: accept the terms of kyutai/pocket-tts"),
    ((403, "GatedRepo"), OTHER_TOKEN, "kyutai/pocket-tts refused HF_TOKEN (403: its account has not accepted the terms)"),
    ((403, ""), OTHER_TOKEN, "kyutai/pocket-tts refused HF_TOKEN (403"),
    ((404, "RepoNotFound"), OTHER_TOKEN, "kyutai/pocket-tts is not visible to the account of HF_TOKEN (404)"),
    ((401, ""), None, "kyutai/pocket-tts is gated and no HF_TOKEN is set"),
], ids=["401-gated-no-token", "403-gated-token", "403-bare", "404", "401-bare"])
def test_a_refused_cloning_release_serves_saved_voices_and_refuses_a_clip(repos, cache, tmp_path, monkeypatch, answer, token, says) -> None:
    if token:
        monkeypatch.setenv("HF_TOKEN", token)
    with FakeHub(repos, refuse={CLONING_REPO: answer}, tokens={TOKEN}) as hub:
        got = fetch_pocket(str(tmp_path / "out"), endpoint=hub.url)
    assert not got.cloning and got.refused.startswith(says), got.refused
    assert "\n" not in got.refused and "restart" in got.refused and OTHER_TOKEN not in got.refused
    backend = _backend(got.folder)
    assert not backend.model.cloning and backend.voice_names == ["alba", "cosette", "fantine", "javert", "jean", "marius"]
    with pytest.raises(UnsupportedParameter) as refused:
        backend.capabilities.check(_clip_params(), ["Hello."], "pocket-tts")
    assert refused.value.param == "voice" and NO_CLONING in str(refused.value) and "\n" not in str(refused.value)


def test_a_file_whose_hash_differs_is_one_line(repos, cache, tmp_path) -> None:
    with FakeHub(repos, corrupt={"languages/english/tokenizer.json"}) as hub:
        with pytest.raises(FetchError) as caught:
            fetch_pocket(str(tmp_path / "out"), endpoint=hub.url)
    assert str(caught.value).endswith("does not match the hub's hash after the download; it was removed")


def test_an_unreachable_hub_is_one_line_and_a_fetched_folder_serves_on(repos, cache, tmp_path) -> None:
    with FakeHub(repos) as hub:
        fetch_pocket(str(tmp_path / "out"), endpoint=hub.url)
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with pytest.raises(FetchError) as caught:
            fetch_pocket(str(tmp_path / "empty"), endpoint=url)
        again = fetch_pocket(str(tmp_path / "out"), endpoint=url)
    assert "\n" not in str(caught.value) and "ConnectError" in str(caught.value)
    assert again.cloning and again.folder == tmp_path / "out"


def test_the_cli_says_an_unreachable_hub_in_one_line_within_5_s(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        env = {"HF_ENDPOINT": f"http://127.0.0.1:{sock.getsockname()[1]}", "HF_HOME": str(tmp_path / "hf"),
               "PATH": "/usr/bin:/bin", "HF_HUB_DISABLE_XET": "1"}
        for model in ("pocket-tts", "qwen3-0.6b"):
            t = time.monotonic()
            r = subprocess.run([sys.executable, "-m", "tts_app", "fetch", model, "--dir", str(tmp_path / model)],
                               cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
            took = time.monotonic() - t
            assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
            assert r.stderr.startswith("error: cannot download ") and "ConnectError" in r.stderr
            assert took < 5.0, took  # a bound, not a benchmark: huggingface_hub's retries took 23 s
