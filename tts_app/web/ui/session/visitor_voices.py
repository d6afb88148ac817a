"""Voices a visitor saved on the page: theirs alone, kept in memory, forgotten with their session.

The server-wide library (``TTS_APP_VOICES_DIR``) is the operator's, written from the command
line (``python -m tts_app voice save ...``); the page never writes it. A visitor's voice is
seen and used by that visitor's session only, so it never changes what another visitor or an
API caller gets for a name, and it may not take the name of a built-in voice, an operator's
voice or an OpenAI voice (``alloy``, ...).
"""

from __future__ import annotations

import threading
from typing import Any

from tts_app import settings

PER_VISITOR_ENV = "TTS_APP_VISITOR_VOICES"
TOTAL_ENV = "TTS_APP_VISITOR_VOICES_TOTAL"


def taken_names() -> set[str]:
    """Lower-cased names no visitor may use: built-in and operator voices, OpenAI voices and aliases, reserved words."""
    from tts_app.catalog.voice_aliases import OPENAI_VOICES, VoiceAliasError, voice_aliases  # start-up: the API side loads on first use
    from tts_app.voice.library import RESERVED_NAMES  # start-up: the voice package loads its DSP stack on first use
    from tts_app.catalog.voices import voice_names  # start-up: the voice library loads on first use

    try:
        aliases = set(voice_aliases())
    except VoiceAliasError:  # a broken alias file is the operator's to fix; the shipped names stay taken
        aliases = set()
    return {n.lower() for n in (*voice_names(), *OPENAI_VOICES, *aliases, *RESERVED_NAMES)}


class VisitorVoices:
    """Thread-safe map: session -> {name: VoiceProfile}, with a cap per visitor and in total."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_owner: dict[str, dict[str, Any]] = {}

    def names(self, owner: str | None) -> list[str]:
        with self._lock:
            return sorted(self._by_owner.get(owner or "", {}))

    def get(self, owner: str | None, name: str | None) -> Any | None:
        """``owner``'s profile called ``name``, or None (another visitor's voices are never found)."""
        with self._lock:
            return self._by_owner.get(owner or "", {}).get(name or "")

    def check_new(self, owner: str | None, name: str) -> None:
        """ValueError (one line) unless ``owner`` may save a new voice called ``name``."""
        from tts_app.voice.library import check_name  # start-up: the voice package loads its DSP stack on first use

        check_name(name)
        if not owner:
            raise ValueError("saved voices belong to a page session; open the page to save one")
        if name.lower() in taken_names():
            raise ValueError(f"{name!r} is the name of a server voice or an OpenAI voice; choose another name")
        per_visitor, total = settings.value(PER_VISITOR_ENV), settings.value(TOTAL_ENV)
        with self._lock:
            mine = self._by_owner.get(owner, {})
            if name in mine:
                raise ValueError(f"you already have a voice named {name!r}; delete it first or choose another name")
            if len(mine) >= per_visitor:
                raise ValueError(f"you have {per_visitor} saved voices, the most a visitor can keep; delete one first")
            if sum(len(v) for v in self._by_owner.values()) >= total:
                raise ValueError("the server holds as many visitors' voices as it can; try again later")

    def add(self, owner: str, name: str, profile: Any) -> None:
        """Keep ``profile`` as ``owner``'s voice ``name`` (checked again: the analysis took a while)."""
        self.check_new(owner, name)
        with self._lock:
            self._by_owner.setdefault(owner, {})[name] = profile

    def remove(self, owner: str | None, name: str) -> None:
        """Delete ``owner``'s voice ``name``; ValueError when ``owner`` has none of that name."""
        from tts_app.voice.errors import shown_name  # start-up: the voice package loads its DSP stack on first use

        with self._lock:
            mine = self._by_owner.get(owner or "", {})
            if name not in mine:
                raise ValueError(f"{shown_name(name)} is not one of your saved voices")
            del mine[name]
            if not mine:
                self._by_owner.pop(owner or "", None)

    def forget(self, owner: str | None) -> None:
        with self._lock:
            self._by_owner.pop(owner or "", None)


VISITOR_VOICES = VisitorVoices()
