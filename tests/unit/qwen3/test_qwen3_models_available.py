"""Finding Qwen3-TTS checkpoints (path, env var, Hugging Face cache), the how-to line, and the opt-in fetch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO
from tts_app.models.available import (
    CHATTERBOX_ENV,
    CHATTERBOX_FILES,
    CHATTERBOX_ID,
    EMBEDDED_FAST_ID,
    EMBEDDED_ID,
    ENV_VAR,
    LOCAL_ID,
    POCKET_ENV,
    POCKET_ID,
    find_models,
    unknown_model_message,
)



def _checkpoint(path: Path, hidden: int) -> Path:
    """The files that make a folder a checkpoint (contents are not read by the finder beyond config.json)."""
    (path / "speech_tokenizer").mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"talker_config": {"hidden_size": hidden}}))
    (path / "speech_tokenizer" / "config.json").write_text("{}")
    (path / "model.safetensors").write_bytes(b"")
    return path


def _by_id(choices):
    return {c.id: c for c in choices}


def test_nothing_found_lists_every_size_with_how_to_get(tmp_path):
    env = {"HF_HUB_CACHE": str(tmp_path), "TTS_APP_CACHE_DIR": str(tmp_path / "cache")}
    choices = [c for c in find_models(None, env=env) if c.id != EMBEDDED_FAST_ID]
    assert [c.id for c in choices] == [EMBEDDED_ID, "qwen3-0.6b", "qwen3-1.7b", CHATTERBOX_ID, POCKET_ID]
    assert choices[0].available and not choices[1].available and not choices[3].available
    line = choices[1].how_to_get
    assert "python -m tts_app fetch qwen3-0.6b" in line and ENV_VAR in line and "\n" not in line
    line = choices[3].how_to_get
    assert "python -m tts_app fetch chatterbox" in line and CHATTERBOX_ENV in line and "install_chatterbox.sh" in line
    assert "\n" not in line
    line = choices[4].how_to_get
    assert not choices[4].available and "python -m tts_app fetch pocket-tts" in line and POCKET_ENV in line and "\n" not in line


def test_model_path_env_and_hf_cache(tmp_path):
    small = _checkpoint(tmp_path / "small", 1024)
    tiny = _checkpoint(tmp_path / "tiny", 32)
    snap = _checkpoint(tmp_path / "hub" / "models--Qwen--Qwen3-TTS-12Hz-1.7B-Base" / "snapshots" / "abc", 2048)
    found = _by_id(find_models(str(small), env={ENV_VAR: str(tiny), "HF_HUB_CACHE": str(tmp_path / "hub")}))
    assert found["qwen3-0.6b"].path == small
    assert found["qwen3-1.7b"].path == snap
    assert found[LOCAL_ID].path == tiny and found[LOCAL_ID].available


def _chatterbox_checkpoint(path, missing: str = ""):
    path.mkdir(parents=True)
    for name in CHATTERBOX_FILES:
        if name != missing:
            (path / name).write_bytes(b"")
    return path


def test_chatterbox_from_model_path_env_and_hf_cache(tmp_path):
    given = _chatterbox_checkpoint(tmp_path / "given")
    by_env = _chatterbox_checkpoint(tmp_path / "env")
    snap = _chatterbox_checkpoint(tmp_path / "hub" / "models--ResembleAI--chatterbox" / "snapshots" / "abc")
    hub = {"HF_HUB_CACHE": str(tmp_path / "hub")}
    assert _by_id(find_models(str(given), env={CHATTERBOX_ENV: str(by_env), **hub}))[CHATTERBOX_ID].path == given
    assert _by_id(find_models(None, env={CHATTERBOX_ENV: str(by_env), **hub}))[CHATTERBOX_ID].path == by_env
    assert _by_id(find_models(None, env=hub))[CHATTERBOX_ID].path == snap
    # A Chatterbox folder given as the Qwen3 path is not taken for either.
    found = _by_id(find_models(None, env={ENV_VAR: str(given), "HF_HUB_CACHE": str(tmp_path / "none")}))
    assert not found[CHATTERBOX_ID].available and LOCAL_ID not in found
    incomplete = _chatterbox_checkpoint(tmp_path / "partial", missing="conds.pt")
    assert not _by_id(find_models(str(incomplete), env={"HF_HUB_CACHE": str(tmp_path / "none")}))[CHATTERBOX_ID].available


def test_incomplete_folder_is_not_a_checkpoint(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{}")
    found = _by_id(find_models(str(bad), env={"HF_HUB_CACHE": str(tmp_path)}))
    assert not found["qwen3-0.6b"].available and LOCAL_ID not in found


def test_unknown_model_message(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert "fetch qwen3-1.7b" in unknown_model_message("qwen3-1.7b", EMBEDDED_ID)
    msg = unknown_model_message("no-such-model", EMBEDDED_ID)
    assert "not served" in msg and "qwen3-0.6b" in msg


def test_fetch_without_hub_exits_2_with_one_line(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(REPO)}
    for args in (["qwen3-0.6b", "--dir", str(tmp_path / "d")], ["chatterbox", "--dir", str(tmp_path / "c")], ["qwen3-9b"]):
        r = subprocess.run([sys.executable, "-m", "tts_app", "fetch", *args], capture_output=True, text=True,
                           env=env, timeout=120, stdin=subprocess.DEVNULL)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr


def test_the_fast_embedded_voice_is_offered_only_where_it_is_bf16(tmp_path, monkeypatch):
    import tts_app.models.piper.precision as precision

    env = {"HF_HUB_CACHE": str(tmp_path)}
    monkeypatch.setattr(precision, "usable_flags", lambda flags=None: frozenset({"avx2", "avx512f", "avx512_bf16"}))
    ids = [c.id for c in find_models(None, env=env)]
    assert ids[:2] == [EMBEDDED_ID, EMBEDDED_FAST_ID] and _by_id(find_models(None, env=env))[EMBEDDED_FAST_ID].available
    assert EMBEDDED_FAST_ID not in [c.id for c in find_models(None, env=env | {"TTS_APP_PRECISION": "fast"})]  # already fast
    monkeypatch.setattr(precision, "usable_flags", lambda flags=None: frozenset({"avx2", "fma"}))  # fast would be float32, the exact voice again
    assert EMBEDDED_FAST_ID not in [c.id for c in find_models(None, env=env)]
