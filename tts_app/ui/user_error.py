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
