"""The error a handler raises for a visitor's mistake: shown on the page, one line in the log, no traceback."""

from __future__ import annotations

import logging

import gradio as gr

logger = logging.getLogger(__name__)


class UserError(gr.Error):
    """``gr.Error`` for expected bad input: Gradio prints no traceback for it; this logs one line."""

    def __init__(self, message: str, **kwargs: object) -> None:
        super().__init__(message, print_exception=False, **kwargs)
        logger.info("user error: %s", message)


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
                raise UserError(str(exc.message)) from exc

        checked._quiet = True  # type: ignore[attr-defined]
        block.preprocess = checked
        wrapped += 1
    return wrapped
