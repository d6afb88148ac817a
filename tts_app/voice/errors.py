"""The one exception the voice package raises for bad references and voice names."""

from __future__ import annotations


class VoiceError(ValueError):
    """A reference clip or voice name was refused; ``str(err)`` is one line fit to show a user."""
