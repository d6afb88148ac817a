"""Which route speaks a clip (issue 47, item 2), said alike on the page, the API tab and /v1/models: with a cloning
Pocket TTS here the Speak tab's Model selector starts on it (a clip is cloned by default) and the voice panel says
so; with none, or with the no-cloning release, the voice panel says in one line that the embedded route is a filter
and how to turn cloning on; the A/B tab's "Cloned vs filter" puts one clip on both routes; every run's status says
the route that spoke it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.pocket_tts_tiny import write_tiny_checkpoint
from tts_app.catalog.clone_route import FILTER, NONE_READY, clip_route, cloning_model, spoken_by, voice_panel_line
from tts_app.catalog.engines import served_models
from tts_app.models.available import EMBEDDED_ID, POCKET_ID
from tts_app.models.capabilities import NO_CLONING
from tts_app.web.ui.ab.tab import PRESET_ROUTES, preset_values
from tts_app.web.ui.api_help.tab import api_help_markdown
from tts_app.web.ui.common.model_picker import refresh
from tts_app.web.ui.speak.run_status import done_status


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("route")
    cloning = write_tiny_checkpoint(root / "cloning")
    plain = write_tiny_checkpoint(root / "plain")
    config = yaml.safe_load((plain / "config.yaml").read_text())
    config["weights_path"] = "hf://kyutai/pocket-tts-without-voice-cloning/languages/english/model.safetensors@a7056f5"
    (plain / "config.yaml").write_text(yaml.safe_dump(config))
    return {"cloning": cloning, "plain": plain, "none": root / "absent"}


@pytest.fixture
def here(folders, tmp_path, monkeypatch):
    """The Pocket TTS folder this machine has: ``here("cloning")``, ``here("plain")`` (no cloning) or ``here("none")``."""
    monkeypatch.setenv("TTS_APP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))

    def use(kind: str) -> None:
        monkeypatch.setenv("TTS_APP_POCKET_TTS_PATH", str(folders[kind]) if kind != "none" else "")
    return use


def test_a_ready_cloning_model_takes_a_clip_by_default(here) -> None:
    here("cloning")
    assert cloning_model() == POCKET_ID and refresh(EMBEDDED_ID)["value"] == POCKET_ID
    assert refresh("piper-joe-medium-fast")["value"] in ("piper-joe-medium-fast", POCKET_ID)  # a choice made is kept
    assert voice_panel_line().startswith("A clip is cloned by Pocket TTS")
    assert clip_route(POCKET_ID) == "cloned by Pocket TTS" and clip_route(EMBEDDED_ID) == FILTER
    assert preset_values(PRESET_ROUTES)[0] == POCKET_ID and preset_values(PRESET_ROUTES)[5] == EMBEDDED_ID
    assert preset_values(PRESET_ROUTES)[1] == preset_values(PRESET_ROUTES)[6]  # the same clip on both routes
    listed = {m["id"]: m for m in served_models()}
    assert listed[POCKET_ID]["voice_clip"] == "cloned by Pocket TTS" and listed[EMBEDDED_ID]["voice_clip"] == FILTER


@pytest.mark.parametrize("kind", ["none", "plain"])
def test_without_a_cloning_model_the_voice_panel_says_the_filter_is_not_a_clone(here, kind) -> None:
    here(kind)
    assert cloning_model() is None and refresh(EMBEDDED_ID)["value"] == EMBEDDED_ID
    line = voice_panel_line()
    assert "\n" not in line and "filter" in line and "not a clone" in line
    assert "TTS_APP_MODELS=pocket-tts" in line and "HF_TOKEN" in line and "CPU" in line
    assert (line == NONE_READY) == (kind == "none") and (NO_CLONING in line) == (kind == "plain")
    assert line in api_help_markdown() and FILTER in api_help_markdown()  # the API tab says the same
    assert preset_values(PRESET_ROUTES)[0] == EMBEDDED_ID
    if kind == "plain":
        assert clip_route(POCKET_ID).startswith(f"refused by Pocket TTS ({NO_CLONING}")
        assert {m["id"]: m for m in served_models()}[POCKET_ID]["voice_clip"] == clip_route(POCKET_ID)


def test_every_run_says_the_route_that_spoke_it(here) -> None:
    here("cloning")
    summary = {"audio_s": 1.0, "total_s": 1.0, "time_to_first_audio_s": 0.1, "rtf": 1.0, "max_batch": 1}
    assert done_status(summary, 1, spoken_by(POCKET_ID, True)).endswith("· voice: cloned by Pocket TTS")
    assert done_status(summary, 1, spoken_by(EMBEDDED_ID, True)).endswith(f"· voice: {FILTER}")
    assert spoken_by(POCKET_ID, False) == "Pocket TTS's own voice" and spoken_by(EMBEDDED_ID, False) == "the embedded voice"
