"""Which route speaks a clip, said the same way on the page, the API tab and /v1/models: cloned by a model that
clones (Pocket TTS on a CPU), or the embedded voice matched by a filter (not a clone), or refused by a Pocket TTS
of the no-cloning release. The Speak tab's Model selector starts on a ready cloning model (``default_model``), so a
clip given there is cloned by default; where none is ready the voice panel says how to turn cloning on."""

from __future__ import annotations

from typing import Optional

from tts_app.catalog.fetch_jobs import settled_or_absent
from tts_app.models.available import CHATTERBOX_ID, EMBEDDED_ID, EMBEDDED_IDS, POCKET_ID, POCKET_MODEL_IDS, find_models, pocket_clones
from tts_app.models.capabilities import NO_CLONING, NO_CLONING_FIX

FILTER = "embedded voice, matched by a filter"
HOW_TO_CLONE = ("To clone on a CPU: start the app with `TTS_APP_MODELS=pocket-tts` and `HF_TOKEN` set to a token of "
                "an account that has accepted the terms of kyutai/pocket-tts on the Hugging Face hub.")
NONE_READY = f"No cloning model is ready here: the embedded voice matches a clip with a filter, it is not a clone. {HOW_TO_CLONE}"


def _family(model_id: str) -> str:
    if model_id in POCKET_MODEL_IDS:
        return "Pocket TTS"
    return "Chatterbox" if model_id == CHATTERBOX_ID else "Qwen3-TTS"


def cloning_model() -> Optional[str]:
    """The ready model a clip goes to by default: Pocket TTS (English first) whose weights clone; None when none is."""
    ready = [c for c in find_models() if c.available and c.id in POCKET_MODEL_IDS and settled_or_absent(c.id)]
    ready.sort(key=lambda c: c.id != POCKET_ID)
    return next((c.id for c in ready if c.path is not None and pocket_clones(c.path)), None)


def default_model() -> str:
    """The Speak tab's Model selector's first value: a ready cloning model, else the embedded voice."""
    return cloning_model() or EMBEDDED_ID


def clip_route(model_id: str) -> str:
    """What ``model_id`` does with a clip, in the words every output uses."""
    if model_id in EMBEDDED_IDS:
        return FILTER
    path = next((c.path for c in find_models() if c.id == model_id), None)
    if model_id in POCKET_MODEL_IDS and path is not None and not pocket_clones(path):
        return f"refused by {_family(model_id)} ({NO_CLONING}: {NO_CLONING_FIX})"
    return f"cloned by {_family(model_id)}"


def spoken_by(model_id: str, has_clip: bool) -> str:
    """The route that spoke an output: the clip's route, or the model's own voice."""
    if not has_clip:
        return "the embedded voice" if model_id in EMBEDDED_IDS else f"{_family(model_id)}'s own voice"
    return clip_route(model_id)


def voice_panel_line() -> str:
    """The voice panel's one line: where a clip goes by default, or that the embedded route is a filter and how to
    turn cloning on."""
    cloning = cloning_model()
    if cloning is not None:
        return f"A clip is cloned by {_family(cloning)} on this CPU (the Model picked below); the embedded voice only matches it with a filter."
    refusing = [c for c in find_models() if c.available and c.id in POCKET_MODEL_IDS and c.path is not None]
    if refusing:
        return f"Pocket TTS here has {NO_CLONING}; the embedded voice matches a clip with a filter, it is not a clone. {HOW_TO_CLONE}"
    return NONE_READY
