"""One rule for every folder the app keeps (tts_app.settings.cache_root): ``$TTS_APP_CACHE_DIR``, else
``$XDG_CACHE_HOME/tts_app``, else ``~/.cache/tts_app``; saved voices and the lexicon in ``voices/`` there
unless ``TTS_APP_VOICES_DIR`` names another folder. Through the CLI and the server as subprocesses, with
HOME pointed at an empty folder so that anything written to ``~/.cache/tts_app`` shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.app_server import serve_app
from tests.support.paths import REPO
from tts_app.assets import BUILTIN_VOICES_DIR

pytestmark = pytest.mark.slow

FOLDER_SETTINGS = ("TTS_APP_CACHE_DIR", "TTS_APP_VOICES_DIR", "XDG_CACHE_HOME")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in FOLDER_SETTINGS}
    return env | {"HOME": str(tmp_path / "home")} | extra


def _cli(env: dict[str, str], *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "tts_app", *args], cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _written_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def test_voice_save_and_lexicon_set_follow_xdg_cache_home_like_the_model_cache(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    env = _env(tmp_path, XDG_CACHE_HOME=str(xdg))
    lexicon = _cli(env, "lexicon", "set", "Nguyen", "win")["path"]
    voice = _cli(env, "voice", "save", "mine", str(BUILTIN_VOICES_DIR / "f5_ref_en.wav"), "--text",
                 "Some call me nature, others call me mother nature.")["path"]  # fmt: skip
    assert Path(lexicon) == xdg / "tts_app" / "voices" / "lexicon.json"
    assert Path(voice).parent == xdg / "tts_app" / "voices"
    assert _written_under(tmp_path / "home") == []
    # The app's own setting moves the whole folder; TTS_APP_VOICES_DIR moves the voices alone.
    moved = _env(tmp_path, XDG_CACHE_HOME=str(xdg), TTS_APP_CACHE_DIR=str(tmp_path / "cache"))
    assert Path(_cli(moved, "lexicon", "set", "Siobhan", "shiv awn")["path"]) == tmp_path / "cache" / "voices" / "lexicon.json"
    own = _env(tmp_path, TTS_APP_VOICES_DIR=str(tmp_path / "voices"))
    assert Path(_cli(own, "lexicon", "set", "GIF", "jiff")["path"]) == tmp_path / "voices" / "lexicon.json"
    # A relative XDG_CACHE_HOME is ignored, as the XDG specification says.
    relative = _env(tmp_path, XDG_CACHE_HOME="relative/cache")
    assert Path(_cli(relative, "lexicon", "set", "a", "ay")["path"]) == (
        tmp_path / "home" / ".cache" / "tts_app" / "voices" / "lexicon.json"
    )


def test_the_server_keeps_its_files_under_xdg_cache_home_and_serves_what_the_cli_saved(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    env = _env(tmp_path, XDG_CACHE_HOME=str(xdg), GRADIO_TEMP_DIR=str(tmp_path / "gradio"))
    _cli(env, "voice", "save", "mine", str(BUILTIN_VOICES_DIR / "f5_ref_en.wav"), "--text",
         "Some call me nature, others call me mother nature.")  # fmt: skip
    overrides = {k: env[k] for k in ("HOME", "XDG_CACHE_HOME", "GRADIO_TEMP_DIR")}
    # serve_app layers these over os.environ: the folder settings of the test's own environment must not leak in.
    for name in ("TTS_APP_CACHE_DIR", "TTS_APP_VOICES_DIR"):
        overrides[name] = ""  # empty counts as unset (tts_app.settings)
    with serve_app(tmp_path / "server.log", overrides) as (base, _process):
        with httpx.Client(base_url=base, timeout=120) as http:
            spoken = http.post("/v1/audio/speech", json={"model": "tts-1", "input": "Hello there.", "voice": "mine"})
            assert spoken.status_code == 200, spoken.text
            assert "mine" in http.get("/v1/audio/voices").json()["voices"]
    assert _written_under(tmp_path / "home" / ".cache" / "tts_app") == []
    kept = _written_under(xdg / "tts_app")
    assert "voices/mine.voice.npz" in kept and any(p.startswith("ov/") for p in kept), kept  # voices and the model cache, together
