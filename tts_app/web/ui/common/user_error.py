"""The error a handler raises for a visitor's mistake: shown on the page, one line in the log, no traceback."""

from __future__ import annotations

import logging
from collections.abc import Callable

import gradio as gr

from tts_app.framework import wrap_component_checks

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
    return wrap_component_checks(blocks, _quiet)


def _quiet(preprocess: Callable[[object], object]) -> Callable[[object], object]:
    """``preprocess`` (a component's input check) raising UserError where it raised gr.Error."""

    def checked(payload: object) -> object:
        try:
            return preprocess(payload)
        except UserError:
            raise
        except gr.Error as exc:
            raise UserError(_bounded(str(exc.message), payload)) from exc

    return checked
