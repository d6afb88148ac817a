"""The buttons of the page's audio players: download always, share only where it works.

Gradio's share button posts the audio to the Space's discussions; off a Space it only errors ("Must
be on Spaces to share"), and Gradio shows it on every player by default. ``SPACE_ID`` is set by
Hugging Face on every Space (read when the page is built, never at import).
"""

from __future__ import annotations

import os


def on_space() -> bool:
    """Whether this server runs on a Hugging Face Space."""
    return bool(os.environ.get("SPACE_ID"))


def player_buttons(download: bool = True) -> list[str]:
    """A player's buttons: ``download`` (unless off), and ``share`` on a Space only."""
    return (["download"] if download else []) + (["share"] if on_space() else [])
