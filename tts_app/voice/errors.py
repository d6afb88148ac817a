"""The one exception the voice package raises for bad references and voice names."""

from __future__ import annotations


class VoiceError(ValueError):
    """A reference clip or voice name was refused; ``str(err)`` is one line fit to show a user."""


SHOWN_NAME_CHARS = 40  # a name echoed in an error: a 60,000-character one is not sent back whole


def shown_name(name: object) -> str:
    """``name`` as an error message quotes it: repr() of its first SHOWN_NAME_CHARS characters, "…" after."""
    text = name if isinstance(name, str) else str(name)
    return repr(text[:SHOWN_NAME_CHARS]) + ("…" if len(text) > SHOWN_NAME_CHARS else "")
