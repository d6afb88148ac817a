"""Finding a Pocket TTS folder (--model-path, $TTS_APP_POCKET_TTS_PATH, the fetch's default folder), its
capabilities, and the opt-in fetch's one-line refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from tts_app.models.available import (
    POCKET_ENV,
    POCKET_ID,
    capabilities_of,
    find_models,
    find_pocket_checkpoint,
)
from tts_app.cli.commands import main
from tts_app.models.capabilities import POCKET_TTS
from tts_app.models.pocket_tts.fetch import fetch_pocket


def _folder(path: Path) -> Path:
    path.mkdir(parents=True)
    for name in ("config.yaml", "model.safetensors", "tokenizer.json"):
        (path / name).write_text("")
    return path


def _found(model_path, env) -> Path | None:
    return next(c.path for c in find_models(model_path, env=env) if c.id == POCKET_ID)


def test_found_by_path_env_and_default_folder(tmp_path):
    env = {"HF_HUB_CACHE": str(tmp_path / "hub"), "TTS_APP_CACHE_DIR": str(tmp_path / "cache")}
    assert _found(None, env) is None
    default = _folder(tmp_path / "cache" / "pocket-tts")
    assert _found(None, env) == default == find_pocket_checkpoint(None, env)
    named = _folder(tmp_path / "named")
    assert _found(None, {**env, POCKET_ENV: str(named)}) == named
    given = _folder(tmp_path / "given")
    assert _found(str(given), {**env, POCKET_ENV: str(named)}) == given


def test_a_folder_without_the_config_is_not_one(tmp_path):
    folder = _folder(tmp_path / "ckpt")
    (folder / "config.yaml").unlink()
    env = {"HF_HUB_CACHE": str(tmp_path / "hub"), "TTS_APP_CACHE_DIR": str(tmp_path / "cache"), POCKET_ENV: str(folder)}
    assert _found(None, env) is None
    with pytest.raises(ValueError, match="fetch pocket-tts"):
        find_pocket_checkpoint(None, env)


def test_capabilities_are_declared_without_loading():
    assert capabilities_of(POCKET_ID) is POCKET_TTS and POCKET_TTS.languages == ("en",)


def test_fetch_without_the_hub_is_one_line(tmp_path, offline_hub):
    with pytest.raises(ValueError) as err:
        fetch_pocket(str(tmp_path / "out"))
    assert "cannot download kyutai/pocket-tts" in str(err.value) and "\n" not in str(err.value)


def test_the_fetch_command_reaches_the_pocket_fetch_and_says_one_line(tmp_path, offline_hub, capsys):
    assert main(["fetch", POCKET_ID, "--dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot download kyutai/pocket-tts") and err.count("\n") == 1, err
