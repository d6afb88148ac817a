"""One engine per served model: the embedded voice's shared engine, plus the embedded voice in the fast precision
where that is bf16, a Qwen3-TTS engine per checkpoint, a Chatterbox engine and a Pocket TTS engine.

Which models are in memory is the operator's choice, never a visitor's (issue 46: one anonymous request naming
the fast variant loaded a second copy of the voice, +632 MB for the life of the process). ``served_ids`` reads it
from the settings: the embedded voice, the checkpoints given by path, those of $TTS_APP_MODELS and those of
$TTS_APP_LOAD_MODELS. Each is loaded at start (``load_model``, from catalog/model_fetch.py's thread); a request
only looks an engine up (``engine_for``): a model still loading is ModelLoading (503), one here but not chosen
ModelNotLoaded (400), one whose load failed ModelLoadFailed (503)."""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tts_app import settings
from tts_app.models.available import (
    CHATTERBOX_ID,
    POCKET_MODEL_IDS,
    EMBEDDED_FAST_ID,
    EMBEDDED_ID,
    capabilities_of,
    fast_variant_offered,
    find_models,
    given_models,
    pocket_clones,
    unknown_model_message,
)
from tts_app.models.pocket_tts.voice_files import saved_voice_files
from tts_app.catalog.clone_route import clip_route
from tts_app.catalog.fetch_jobs import FetchStatus, job, jobs, requested_models
from tts_app.catalog.shared_engine import create_lowered, engine_loaded, get_engine

if TYPE_CHECKING:
    from tts_app.engine import Engine

logger = logging.getLogger(__name__)

LOAD_ENV = "TTS_APP_LOAD_MODELS"

# Longest audio one request may produce (a public server must bound a generation that never says EOS).
MAX_SECONDS_ENV = "TTS_APP_MAX_SECONDS"
FRAMES_PER_SECOND = 12.5  # the 12 Hz codec: 24 kHz / 1,920 samples per frame
CHATTERBOX_TOKENS_PER_SECOND = 25.0  # S3 speech tokens

# A model whose weights failed to load is not read again for this long: each try reads gigabytes,
# and requests for it would otherwise queue behind one another on the load lock.
LOAD_RETRY_S = 60.0

_lock = threading.Lock()
_engines: dict[str, "Engine"] = {}
_failed: dict[str, tuple[float, str]] = {}  # model id -> (when its load failed, the one-line reason)


class ModelUnavailable(ValueError):
    """The requested model is not on this machine; the message says how to get it (one line)."""


class ModelNotLoaded(ModelUnavailable):
    """The model is on this machine but the operator did not load it (a request never loads one); one line."""


class ModelLoading(ModelUnavailable):
    """The requested model is still downloading ($TTS_APP_MODELS); the message says how far it is (one line)."""


# How long a client is asked to wait for a model that is still downloading.
LOADING_RETRY_S = 30.0


class ModelLoadFailed(RuntimeError):
    """The model's files are here but could not be loaded (damaged or incomplete weights, too little
    memory): the server's problem, not the request's. The message is one line."""


def _create_fast() -> "Engine":
    """The embedded voice in the fast precision: a second model in memory, with its own batches."""
    from tts_app.engine import Engine, app_policy  # start-up: the engine and its model runtime load on first use

    return create_lowered(lambda: Engine(precision="fast", policy=app_policy()), "fast-engine-create")


def _max_seconds() -> float:
    return settings.value(MAX_SECONDS_ENV)


def _create(path: Path) -> "Engine":
    from tts_app.backends.qwen3 import Qwen3Backend  # torch: imported only when a Qwen3 model is requested
    from tts_app.engine import Engine, app_policy
    from tts_app.models.qwen3.sampling import SamplingParams

    sampling = SamplingParams(max_new_tokens=max(2, math.ceil(_max_seconds() * FRAMES_PER_SECOND)))

    def make() -> "Engine":
        backend = Qwen3Backend.from_pretrained(str(path), sampling=sampling)
        backend.capture_graphs()  # on CUDA every bucket, before the engine takes a request (nothing on CPU)
        return Engine(backend=backend, policy=app_policy())

    # Same priority rule as the embedded engine (see shared_engine): created on a lowered thread.
    return create_lowered(make, "qwen3-engine-create")


def _create_chatterbox(path: Path) -> "Engine":
    from tts_app.backends.chatterbox import ChatterboxBackend  # torch + the official modules: only when asked for
    from tts_app.models.chatterbox.config import ChatterboxSampling
    from tts_app.engine import Engine, app_policy

    sampling = ChatterboxSampling(max_new_tokens=max(2, math.ceil(_max_seconds() * CHATTERBOX_TOKENS_PER_SECOND)))

    def make() -> "Engine":
        backend = ChatterboxBackend.from_pretrained(str(path), sampling=sampling)
        backend.capture_graphs()  # on CUDA every bucket, before the engine takes a request (nothing on CPU)
        return Engine(backend=backend, policy=app_policy())  # its slots: $TTS_APP_ENGINE_SLOTS, at most its pool's

    return create_lowered(make, "chatterbox-engine-create")


def _create_pocket(path: Path) -> "Engine":
    from tts_app.backends.pocket_tts import PocketBackend  # torch: imported only when Pocket TTS is requested
    from tts_app.engine import Engine, app_policy

    def make() -> "Engine":
        backend = PocketBackend.from_pretrained(str(path), max_seconds=_max_seconds())
        return Engine(backend=backend, policy=app_policy())  # its slots: $TTS_APP_ENGINE_SLOTS, at most its pool's

    return create_lowered(make, "pocket-tts-engine-create")


def served_ids() -> list[str]:
    """The models this server loads, in order (the operator's choice, from the settings): the embedded voice, the
    checkpoints given by path, those of $TTS_APP_MODELS, those of $TTS_APP_LOAD_MODELS."""
    named = [name.strip().lower() for name in settings.value(LOAD_ENV)]
    return list(dict.fromkeys([EMBEDDED_ID, *given_models(), *requested_models(), *named]))


def engine_for(model_id: str) -> "Engine":
    """The engine serving ``model_id``, as loaded by the operator (the embedded voice's is created on first use);
    never a load. Raises ModelLoading while its start-up load runs, ModelLoadFailed when that load failed,
    ModelNotLoaded for a model here that the operator did not choose, ModelUnavailable for one not here."""
    if model_id == EMBEDDED_ID:
        return get_engine()
    with _lock:
        engine = _engines.get(model_id)
        failed = _failed.get(model_id)
    if engine is not None:
        return engine
    loading = job(model_id)
    if loading is not None and loading.status is FetchStatus.LOADING:
        raise ModelLoading(loading.line())
    if failed is not None:
        raise ModelLoadFailed(failed[1])
    if loading is not None and loading.status is FetchStatus.UNAVAILABLE:
        raise ModelUnavailable(loading.line())  # why its download failed (a partial download is not loaded)
    raise not_loaded(model_id)


def not_loaded(model_id: str) -> ModelUnavailable:
    """The one-line refusal for a model that is not in memory: ModelNotLoaded when it is here, else how to get it."""
    choice = next((c for c in find_models() if c.id == model_id), None)
    if model_id == EMBEDDED_FAST_ID and choice is None:
        return ModelUnavailable(f"{EMBEDDED_FAST_ID!r} needs a CPU with bfloat16 instructions (AVX512-BF16 or AMX); use {EMBEDDED_ID!r}")
    if choice is not None and choice.available:
        return ModelNotLoaded(f"model {model_id!r} is not loaded on this server (the operator loads models at start: "
                              f"{LOAD_ENV}); use {EMBEDDED_ID!r}")
    return ModelUnavailable(unknown_model_message(model_id, EMBEDDED_ID))


def load_model(model_id: str) -> "Engine":
    """The operator's load of ``model_id`` (at start): its engine, created once and kept. Raises ModelUnavailable
    (one line) for a model not on this machine, ModelLoadFailed when its files do not load."""
    if model_id == EMBEDDED_ID:
        return get_engine()
    with _lock:
        if model_id in _engines:
            return _engines[model_id]
        if model_id == EMBEDDED_FAST_ID:
            if not fast_variant_offered():
                raise not_loaded(model_id)
            logger.info("loading the embedded voice in the fast precision")
            _engines[model_id] = _create_fast()
            return _engines[model_id]
        choice = next((c for c in find_models() if c.id == model_id and c.id != EMBEDDED_ID), None)
        if choice is None or choice.path is None:
            raise ModelUnavailable(unknown_model_message(model_id, EMBEDDED_ID))
        _engines[model_id] = _load(model_id, choice.label, choice.path)
        return _engines[model_id]


def _load(model_id: str, label: str, path: Path) -> "Engine":
    """Create the engine for a found checkpoint (the caller holds ``_lock``); a load that fails raises
    ModelLoadFailed, and the same one-line reason for LOAD_RETRY_S without reading the files again."""
    failed = _failed.get(model_id)
    if failed is not None and time.monotonic() - failed[0] < LOAD_RETRY_S:
        raise ModelLoadFailed(failed[1])
    logger.info("loading %s from %s", label, path)
    try:
        create = _create_pocket if model_id in POCKET_MODEL_IDS else {CHATTERBOX_ID: _create_chatterbox}.get(model_id, _create)
        engine = create(path)
    except Exception as exc:  # noqa: BLE001 - any loader error (safetensors, torch, a missing module) is one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        # The caller learns the kind of error; the details (paths on this machine) go to the log only.
        reason = f"{label} cannot be loaded on this server ({type(exc).__name__}); the operator must check its files"
        logger.warning("%s from %s: %s: %s", label, path, type(exc).__name__, first[:500])
        _failed[model_id] = (time.monotonic(), reason)
        raise ModelLoadFailed(reason) from exc
    _failed.pop(model_id, None)
    return engine


def loaded_engines() -> dict[str, "Engine"]:
    """Every engine created so far, by model id (the embedded voice's once it has loaded)."""
    with _lock:
        engines = dict(_engines)
    if engine_loaded():
        engines[EMBEDDED_ID] = get_engine()
    return engines


def model_loaded(model_id: str) -> bool:
    """True once the engine serving ``model_id`` has been created (its model is in memory)."""
    if model_id == EMBEDDED_ID:
        return engine_loaded()
    with _lock:
        return model_id in _engines


def _model_row(model_id: str, engine: "Engine | None") -> dict[str, Any]:
    """One entry; a loaded model's capabilities are its checkpoint's (a Qwen3-TTS fine-tune may read
    fewer languages than the model declares before it is loaded)."""
    capabilities = engine.backend.capabilities if engine is not None else capabilities_of(model_id)
    path = next((c.path for c in find_models() if c.id == model_id), None) if model_id in POCKET_MODEL_IDS else None
    if engine is None and capabilities is not None and path is not None and not pocket_clones(path):
        capabilities = replace(capabilities, voice_clips=False)  # the no-cloning release: saved voices only
    row = {"id": model_id, "object": "model", "owned_by": "tts_app", "loaded": engine is not None, "status": "ready"}
    fetching = job(model_id)
    if fetching is not None:  # named in $TTS_APP_MODELS: loading, ready or unavailable (and why)
        row |= fetching.as_json()
    elif model_id == EMBEDDED_ID and engine is None:
        row["status"] = "loading"
    voices = model_voice_names(model_id)  # what OpenAI's route may name besides the library's voices
    row["voice_clip"] = clip_route(model_id)  # what a clip given to it becomes, in the page's words
    return row | ({"capabilities": capabilities.as_json()} if capabilities is not None else {}) | ({"voices": voices} if voices else {})


def model_voice_names(model_id: str) -> list[str]:
    """The saved voices of the model itself that a request to it may name (a Pocket TTS checkpoint's; [] for the
    others): a loaded model's are those its backend read, before that the names its checkpoint folder lists."""
    if model_id not in POCKET_MODEL_IDS:
        return []
    engine = _engines.get(model_id)
    if engine is not None:
        return list(engine.backend.voice_names)
    path = next((c.path for c in find_models() if c.id == model_id and c.path is not None), None)
    return sorted(saved_voice_files(path)) if path is not None else []


def served_models() -> list[dict[str, Any]]:
    """OpenAI's model-list entries: the embedded voice and each model the operator loads (``served_ids``), with
    ``loaded``, ``status`` (loading, ready or unavailable, with its ``reason``) and ``capabilities`` (what each
    honours of a request). A model found here but not loaded is not listed: no request can use it."""
    rows = [_model_row(EMBEDDED_ID, get_engine() if engine_loaded() else None)]
    served = set(served_ids()) | {j.model_id for j in jobs()}
    for c in find_models():
        if c.id != EMBEDDED_ID and c.id in served:
            rows.append(_model_row(c.id, _engines.get(c.id)))
    return rows


def close_model_engines() -> None:
    """Close the engines made on request (server shutdown; the embedded one has ``close_engine``)."""
    with _lock:
        for engine in _engines.values():
            engine.close()
        _engines.clear()
