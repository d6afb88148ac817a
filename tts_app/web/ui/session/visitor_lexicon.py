"""A visitor's own pronunciation entries: applied to that visitor's runs only, forgotten with the session.

The server's lexicon (``lexicon.json`` beside the operator's voices) is the operator's, edited
from the command line (``python -m tts_app lexicon ...``); it applies to every request, and a
visitor's entries are laid over it for that visitor's page runs.
"""

from __future__ import annotations

import threading
from typing import Any

from tts_app import settings

ENTRIES_ENV = "TTS_APP_VISITOR_LEXICON_ENTRIES"
TOTAL_ENV = "TTS_APP_VISITOR_LEXICONS"


def max_entries() -> int:
    return settings.value(ENTRIES_ENV)


class VisitorLexicons:
    """Thread-safe map: session -> its validated Lexicon."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_owner: dict[str, Any] = {}

    def get(self, owner: str | None) -> Any | None:
        with self._lock:
            return self._by_owner.get(owner or "")

    def put(self, owner: str | None, lexicon: Any) -> None:
        """Replace ``owner``'s entries (an empty lexicon clears them); ValueError (one line) over a cap."""
        if not owner:
            raise ValueError("pronunciations belong to a page session; open the page to add some")
        if len(lexicon) > max_entries():
            raise ValueError(f"a visitor keeps at most {max_entries()} entries; this table has {len(lexicon)}")
        with self._lock:
            if not len(lexicon):
                self._by_owner.pop(owner, None)
                return
            if owner not in self._by_owner and len(self._by_owner) >= settings.value(TOTAL_ENV):
                raise ValueError("the server holds as many visitors' lexicons as it can; try again later")
            self._by_owner[owner] = lexicon

    def forget(self, owner: str | None) -> None:
        with self._lock:
            self._by_owner.pop(owner or "", None)


VISITOR_LEXICONS = VisitorLexicons()


def lexicon_for(owner: str | None) -> Any | None:
    """The lexicon of ``owner``'s runs: the server's, with the visitor's entries laid over it."""
    from tts_app.catalog.server_lexicon import server_lexicon  # start-up: the text stack (espeak, lexicons) loads on first use
    from tts_app.text import Lexicon  # start-up: the text stack (espeak, lexicons) loads on first use

    server, mine = server_lexicon(), VISITOR_LEXICONS.get(owner)
    if mine is None or server is None:
        return mine if mine is not None else server
    # Both are validated already: a word of the visitor's replaces the server's, whichever kind either is.
    respell = {w: p for w, p in server.respell.items() if w not in mine.ipa} | dict(mine.respell)
    ipa = {w: p for w, p in server.ipa.items() if w not in mine.respell} | dict(mine.ipa)
    return Lexicon(respell, ipa)
