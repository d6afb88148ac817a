"""The model selector of the Speak and A/B tabs: the embedded voice, plus each model the operator loaded
(catalog/engines.served_ids: the fast variant, Qwen3-TTS, Chatterbox or Pocket TTS).

Choices are read again on every page load (``refresh``), so `python app.py --model-path DIR`
(which sets $TTS_APP_QWEN3_PATH after the page was built) and a checkpoint fetched while the
server runs both show up. The page's value is checked against that list on every run: a value
from a hostile request gets a one-line error, never a path or a load.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from tts_app.catalog.engines import LOAD_ENV, served_ids
from tts_app.catalog.clone_route import default_model
from tts_app.catalog.fetch_jobs import job, settled_or_absent
from tts_app.models.available import CHATTERBOX_ID, EMBEDDED_FAST_ID, EMBEDDED_ID, EMBEDDED_IDS, POCKET_MODEL_IDS, find_models
from tts_app.web.ui.common.user_error import UserError

# What a CPU user should expect from Qwen3-TTS (docs/benchmarks-log.md, "CPU speed of the 0.6B model"): the
# 0.6B model with full-size random weights ran at RTF 9.2 (17.8 CPU s per s of speech) on an idle
# 2-core Zen 4, and took 45.7 CPU s per s on a heavily loaded 2-core Zen 3.
CPU_NOTE = "Qwen3-TTS is a GPU model: on a 2-core CPU expect about 10-25 s of waiting per second of speech."
# docs/benchmarks-log.md, "Chatterbox on CPU": one request costs about 9.5 s of compute per second of speech on a 2-core Zen 4.
CHATTERBOX_CPU_NOTE = "Chatterbox is a GPU model: on a 2-core CPU expect about 10 s of waiting per second of speech."
POCKET_NOTE = "Pocket TTS clones the uploaded clip on a CPU, streaming as it speaks (each model one language: write in it)."


def model_choices() -> list[tuple[str, str]]:
    """(label, id) of every model the operator loads here, the embedded voice first (each once its load is over)."""
    served = set(served_ids())
    return [(c.label, c.id) for c in find_models() if c.available and c.id in served and settled_or_absent(c.id)]


# Issue 26 measured the first request for the fast voice: ~7 s longer, ~540 MB more resident memory.
FAST_NOTE = ("Fast: the embedded voice with bfloat16 arithmetic, same words and voice, about 1.7x the throughput "
             "(a second model in memory, about 540 MB).")


def model_help() -> str:
    """One line under the selector: how to get a cloning model when none is here, else what to expect on
    CPU from those that are; what the fast embedded voice is, when it is offered."""
    served = set(served_ids())
    choices = [c for c in find_models() if c.id in served]
    fast = " " + FAST_NOTE if any(c.id == EMBEDDED_FAST_ID for c in choices) else ""
    others = {c.id for c in choices if c.available and c.id not in EMBEDDED_IDS}
    if not others:  # only the embedded voice is here
        return ("For Qwen3-TTS or Chatterbox: `pip install -r requirements-gpu.txt` (torch; the embedded voice needs none), "
                "`python -m tts_app fetch qwen3-0.6b --dir DIR` (or `fetch chatterbox`), "
                "then `python app.py --model-path DIR`." + fast)
    notes = ([CPU_NOTE] if others - {CHATTERBOX_ID, *POCKET_MODEL_IDS} else []) + ([CHATTERBOX_CPU_NOTE] if CHATTERBOX_ID in others else [])
    notes += [POCKET_NOTE] if others & set(POCKET_MODEL_IDS) else []
    return " ".join(notes) + fast


def model_dropdown(elem_id: str) -> gr.Dropdown:
    """The selector (its choices are refreshed on page load)."""
    return gr.Dropdown(
        model_choices(),
        value=default_model(),  # a ready cloning model: a clip given on the page is cloned by default
        label="Model",
        info=model_help(),
        allow_custom_value=True,  # checked by check_model on every run (choices change after the build)
        elem_id=elem_id,
    )


def refresh(current: str | None) -> Any:
    """The selector's update for a page load: today's choices, the current value kept if still there."""
    choices = model_choices()
    here = {model_id for _label, model_id in choices}
    # The embedded voice (the first default) gives way to a cloning model once one is ready.
    value = current if current in here and current != EMBEDDED_ID else default_model()
    return gr.update(choices=choices, value=value, info=model_help())


def check_model(value: str | None) -> str:
    """The model id a run asked for, if it can run here; raises UserError (one line) otherwise."""
    model_id = (value or EMBEDDED_ID).strip()
    if model_id in {model_id for _label, model_id in model_choices()}:
        return model_id
    fetching = job(model_id)
    if fetching is not None:  # named in $TTS_APP_MODELS and not loaded yet, or failed: its one line says which
        raise UserError(fetching.line())
    choice = next((c for c in find_models() if c.id == model_id), None)
    if choice is not None and choice.available:  # here, but not loaded: no visitor's run loads a model
        raise UserError(f"{choice.label} is not loaded on this server (the operator loads models at start: {LOAD_ENV}).")
    if choice is not None:
        raise UserError(choice.how_to_get)
    raise UserError(f"Unknown model {model_id[:60]!r}: pick one from the list.")


def model_label(model_id: str) -> str:
    """The selector's label for ``model_id`` (the id itself if unknown)."""
    return next((c.label for c in find_models() if c.id == model_id), model_id)
