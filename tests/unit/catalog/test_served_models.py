"""The operator chooses which models are in memory; a request only finds them (issue 46, hole 5)."""

from pathlib import Path

import pytest

from tests.support.qwen3_tiny import tiny_backend, write_checkpoint
from tts_app.catalog import engines, fetch_jobs
from tts_app.catalog.fetch_jobs import FetchStatus, add_job
from tts_app.models.available import EMBEDDED_FAST_ID, EMBEDDED_ID


@pytest.fixture
def no_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Nothing loaded, no start-up jobs; every model creator records its call instead of loading."""
    made: list[str] = []
    monkeypatch.setattr(engines, "_engines", {})
    monkeypatch.setattr(engines, "_failed", {})
    monkeypatch.setattr(fetch_jobs, "_jobs", {})
    monkeypatch.setattr(engines, "_create_fast", lambda: made.append(EMBEDDED_FAST_ID) or "fast engine")
    monkeypatch.setattr(engines, "_create", lambda path: made.append(str(path)) or "qwen3 engine")
    for name in ("TTS_APP_LOAD_MODELS", "TTS_APP_MODELS", "TTS_APP_QWEN3_PATH", "TTS_APP_CHATTERBOX_PATH", "TTS_APP_POCKET_TTS_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", "/nonexistent")
    return made


def test_the_operators_models_are_the_embedded_voice_what_is_given_and_what_is_named(no_loads, monkeypatch, tmp_path: Path) -> None:
    assert engines.served_ids() == [EMBEDDED_ID]
    write_checkpoint(tiny_backend(), tmp_path)
    monkeypatch.setenv("TTS_APP_QWEN3_PATH", str(tmp_path))
    monkeypatch.setenv("TTS_APP_MODELS", "chatterbox")
    monkeypatch.setenv("TTS_APP_LOAD_MODELS", f"{EMBEDDED_FAST_ID},qwen3-local")
    assert engines.served_ids() == [EMBEDDED_ID, "qwen3-local", "chatterbox", EMBEDDED_FAST_ID]


def test_a_request_for_the_fast_variant_never_loads_it(no_loads, monkeypatch) -> None:
    from tts_app.models import available

    for module in (available, engines):  # offered, as on a CPU with bf16 (this test runs on any)
        monkeypatch.setattr(module, "fast_variant_offered", lambda env=None: True)
    with pytest.raises(engines.ModelNotLoaded, match="is not loaded on this server .*TTS_APP_LOAD_MODELS"):
        engines.engine_for(EMBEDDED_FAST_ID)
    assert no_loads == [] and not engines.model_loaded(EMBEDDED_FAST_ID)
    assert engines.load_model(EMBEDDED_FAST_ID) == "fast engine"  # the operator's load (at start)
    assert engines.engine_for(EMBEDDED_FAST_ID) == "fast engine" and no_loads == [EMBEDDED_FAST_ID]


def test_a_checkpoint_here_but_not_chosen_is_refused_and_one_loading_is_a_503(no_loads, monkeypatch, tmp_path: Path) -> None:
    write_checkpoint(tiny_backend(), tmp_path)
    monkeypatch.setenv("TTS_APP_QWEN3_PATH", str(tmp_path))
    loading = add_job("qwen3-local")
    loading.stage = "loading"
    with pytest.raises(engines.ModelLoading, match="qwen3-local: loading"):
        engines.engine_for("qwen3-local")
    loading.status = FetchStatus.READY  # (its load not actually run: the engine is still absent)
    with pytest.raises(engines.ModelNotLoaded):
        engines.engine_for("qwen3-local")
    engines._failed["qwen3-local"] = (0.0, "Qwen3-TTS cannot be loaded on this server (RuntimeError); the operator must check its files")
    with pytest.raises(engines.ModelLoadFailed, match="cannot be loaded"):
        engines.engine_for("qwen3-local")
    assert no_loads == []
    with pytest.raises(engines.ModelUnavailable, match="not served here"):
        engines.engine_for("no-such-model")


def test_the_start_up_thread_loads_each_chosen_model_once(no_loads, monkeypatch, tmp_path: Path) -> None:
    from tts_app.catalog import model_fetch

    write_checkpoint(tiny_backend(), tmp_path)
    monkeypatch.setenv("TTS_APP_QWEN3_PATH", str(tmp_path))
    monkeypatch.setattr(engines, "_load", lambda model_id, label, path: no_loads.append(model_id) or f"{model_id} engine")
    thread = model_fetch.start_model_loads()
    assert thread is not None
    thread.join(30)
    assert no_loads == ["qwen3-local"] and fetch_jobs.job("qwen3-local").status is FetchStatus.READY
    assert engines.engine_for("qwen3-local") == "qwen3-local engine"
