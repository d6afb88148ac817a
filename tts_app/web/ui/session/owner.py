"""Who owns what a page event makes: the event's session, and the cleanup when a session ends."""

from __future__ import annotations

import logging
from typing import Any

from tts_app.web.session_sweeper import add_session_end_hook, heartbeat_open
from tts_app.web.ui.session.active_runs import ActiveRuns
from tts_app.web.ui.session.files import forget_session, remove_session
from tts_app.web.ui.session.visitor_lexicon import VISITOR_LEXICONS
from tts_app.web.ui.session.visitor_voices import VISITOR_VOICES

logger = logging.getLogger(__name__)


def owner_of(request: Any) -> str | None:
    """The session an event belongs to (Gradio's session hash), or None outside a session.

    The hash is the session's key in Gradio (its state, events and heartbeat): it never leaves
    the server in a URL or a page element, so only the page that chose it holds it.
    """
    return getattr(request, "session_hash", None) or None


def forget_visitor(session: str) -> None:
    """A session is over: its voices and pronunciations go, and the record of its files (they age out)."""
    VISITOR_VOICES.forget(session)
    VISITOR_LEXICONS.forget(session)
    forget_session(session)


def page_closed(session: str | None, runs: ActiveRuns) -> bool:
    """The page of ``session`` went away: its runs in ``runs`` are cancelled, its files and things removed.

    Gradio runs unload when any heartbeat of the hash closes; one opened by someone else who
    learnt the hash must end nothing while the page's own heartbeat is still open. Returns
    whether the cleanup ran.
    """
    if not session or heartbeat_open(session):
        logger.debug("unload of a session whose page is still connected: nothing removed")
        return False
    runs.cancel(session)
    remove_session(session)
    forget_visitor(session)
    return True


def watch_session_ends() -> None:
    """Forget a visitor's things when the session sweeper forgets the session (API callers have no unload)."""
    add_session_end_hook(forget_visitor)
