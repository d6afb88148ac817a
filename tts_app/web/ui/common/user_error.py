"""The error a handler raises for a visitor's mistake: shown on the page, one line in the log, no traceback."""

from __future__ import annotations

import logging

import gradio as gr

logger = logging.getLogger(__name__)
_MAX_MESSAGE_CHARS = 1000  # Gradio's own message lists the choices too; a long list is cut, not sent whole


class UserError(gr.Error):
    """``gr.Error`` for expected bad input: Gradio prints no traceback for it; this logs one line."""

    def __init__(self, message: str, **kwargs: object) -> None:
        super().__init__(message, print_exception=False, **kwargs)
        logger.info("user error: %s", message)


def _bounded(message: str, payload: object) -> str:
    """Gradio's message with the refused value shortened (it quotes it whole: a 60,000-character voice name)."""
    from tts_app.voice.errors import SHOWN_NAME_CHARS, shown_name  # start-up: the voice package loads its DSP stack on first use

    if isinstance(payload, str) and len(payload) > SHOWN_NAME_CHARS:
        message = message.replace(repr(payload), shown_name(payload)).replace(payload, shown_name(payload))
    return message if len(message) <= _MAX_MESSAGE_CHARS else message[:_MAX_MESSAGE_CHARS] + "…"


def quiet_input_validation(blocks: gr.Blocks) -> int:
    """Turn the input checks of Gradio's own components (a slider value out of range, a choice
    not offered) into UserError: the same message for the visitor, one log line instead of a
    traceback. Returns how many components were wrapped."""
    wrapped = 0
    for block in blocks.blocks.values():
        preprocess = getattr(block, "preprocess", None)
        if not callable(preprocess) or getattr(preprocess, "_quiet", False):
            continue

        def checked(payload: object, _preprocess=preprocess) -> object:
            try:
                return _preprocess(payload)
            except UserError:
                raise
            except gr.Error as exc:
                raise UserError(_bounded(str(exc.message), payload)) from exc

        checked._quiet = True  # type: ignore[attr-defined]
        block.preprocess = checked
        wrapped += 1
    return wrapped
