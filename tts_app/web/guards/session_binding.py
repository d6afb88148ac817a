"""Which page owns a session hash, and the opaque tokens that stand for it in stream URLs.

A Gradio session hash is chosen by the page and is the key to its state, its events (Stop, the
history zip) and its streams. Knowing one must grant nothing: the first request that names a
hash binds it to the page's browser (the ``tts_page`` cookie, HttpOnly, set with the page's HTML)
or, when the request carries no such cookie (an API client, a page in a third-party iframe whose
cookies are blocked), to its visitor (``visitor_key``). Any later request naming the hash must
come from the same binding. The table is bounded: the session sweeper drops a hash with its
session, and prunes hashes that never got one.

The live player's HLS stream is served by Gradio from ``/gradio_api/stream/<hash>/<run>/...``;
its URL is built on the server (the event output's ``path`` and ``url``), so the guard replaces
``<hash>/<run>`` there with a random per-run token and maps the token back on the way in.
"""

from __future__ import annotations

import hmac
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tts_app import settings
from tts_app.web.guards.holdings import Holdings

COOKIE = "tts_page"
COOKIE_PATTERN = re.compile(r"[A-Za-z0-9_-]{32}")
HASH_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,128}")  # Gradio's page (base 36) and gradio_client (uuid4) fit
# Bound hashes in all and per visitor (gradio_client makes one per call; idle ones are pruned after
# TTS_APP_IDLE_SESSION_S): one address cannot fill the table, and a full one takes from its heaviest holder.
TOTAL_ENV = "TTS_APP_SESSION_BINDINGS"
PER_VISITOR_ENV = "TTS_APP_SESSIONS_PER_VISITOR"
TOKEN_BYTES = 16  # 128 random bits per stream token
MAX_TOKENS_PER_SESSION = 256  # a session's older runs' streams lose their token (long finished by then)
MAX_TOKENS = 16_384  # tokens in all (a few MB); only live streamed runs get one


def new_cookie_value() -> str:
    """A fresh per-browser secret (192 random bits, 32 characters)."""
    return secrets.token_urlsafe(24)


def cookie_value(header: str | None) -> str | None:
    """The ``tts_page`` value of a Cookie header when it is well formed, else None."""
    for part in (header or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and COOKIE_PATTERN.fullmatch(value):
            return value
    return None


def set_cookie_header(value: str, secure: bool) -> bytes:
    """The Set-Cookie header value for ``value``.

    SameSite=Lax, not Strict: a Strict cookie is withheld when the page is opened from a link on
    another site, the page would get a fresh secret, and every other open tab of the browser,
    bound to the old one, would be refused. Lax still keeps it off cross-site POSTs and fetches.
    """
    return f"{COOKIE}={value}; Path=/; HttpOnly; SameSite=Lax{'; Secure' if secure else ''}".encode()


@dataclass(slots=True)  # 100,000 of them: no per-instance dict
class Binding:
    cookie: str | None  # the page's browser secret; None: bound to the visitor alone
    visitor: str
    last_used: float


class VisitorSessionsFull(RuntimeError):
    """This visitor holds its cap of bound hashes, or, the table being full, as many as anyone: its new one
    is refused (for it only)."""


class SessionBindings:
    """Session hash -> the page it belongs to (see the module doc). Thread-safe.

    Capped per visitor (``max_per_visitor``) and in all (``max_entries``). A full table never refuses
    a newcomer (``Holdings``): a new hash from a visitor holding fewer than the heaviest holder takes
    the place of that holder's least recently used binding (its page, if still open, binds it again on
    its next request); a visitor holding as many as anyone is refused instead.
    """

    def __init__(self, max_entries: int | None = None, max_per_visitor: int | None = None) -> None:
        self._max_entries, self._max_per_visitor = max_entries, max_per_visitor  # None: the setting, read when used
        self._bound: dict[str, Binding] = {}
        self._holdings = Holdings()  # each visitor's hashes, least recently used first
        self._lock = threading.Lock()

    @property
    def max_entries(self) -> int:
        return self._max_entries if self._max_entries is not None else settings.value(TOTAL_ENV)

    @property
    def max_per_visitor(self) -> int:
        return self._max_per_visitor if self._max_per_visitor is not None else settings.value(PER_VISITOR_ENV)

    def admit(self, session: str, cookie: str | None, visitor: str) -> bool:
        """True when ``session`` is (now) bound to this cookie/visitor, False when to another page.
        VisitorSessionsFull when it is new and this visitor may bind no more."""
        now = time.monotonic()
        with self._lock:
            bound = self._bound.get(session)
            if bound is None:
                held = self._holdings.count(visitor)
                if held >= self.max_per_visitor:
                    raise VisitorSessionsFull(f"{held} page sessions are open from your address")
                if len(self._bound) >= self.max_entries:
                    evicted = self._holdings.heaviest(visitor)
                    if evicted is None:  # it holds as many as anyone: it is refused, nobody else
                        raise VisitorSessionsFull(f"{held} page sessions are open from your address, and the server is full")
                    self._drop(str(evicted[1]))
                self._bound[session] = Binding(cookie, visitor, now)
                self._holdings.add(visitor, session)
                return True
            if bound.cookie is not None:
                ok = cookie is not None and hmac.compare_digest(cookie, bound.cookie)
            else:
                ok = hmac.compare_digest(visitor, bound.visitor)
            if ok:
                bound.last_used = now
                self._holdings.touch(bound.visitor, session)
            return ok

    def forget(self, session: str) -> None:
        with self._lock:
            self._drop(session)

    def prune(self, idle_s: float, alive: Iterable[str]) -> int:
        """Drop hashes unused for ``idle_s`` seconds that are not in ``alive``; returns how many."""
        cutoff = time.monotonic() - idle_s
        keep = set(alive)
        with self._lock:
            stale = [s for s, b in self._bound.items() if b.last_used < cutoff and s not in keep]
            for session in stale:
                self._drop(session)
        return len(stale)

    def held_by(self, visitor: str) -> int:
        with self._lock:
            return self._holdings.count(visitor)

    def _drop(self, session: str) -> None:
        """Unbind ``session`` (lock held)."""
        bound = self._bound.pop(session, None)
        if bound is not None:
            self._holdings.remove(bound.visitor, session)

    def __len__(self) -> int:
        return len(self._bound)


class StreamTokens:
    """Opaque per-run tokens for Gradio's stream URLs: token <-> (session hash, run). Thread-safe.

    The guard asks for one only for a run Gradio really streams for the request's own session, so
    the table holds at most one token per live run; it is capped anyway, per session
    (``per_session``: the session's oldest token goes) and in all (``total``: the oldest token of
    the session holding the most goes, never a newcomer's), and ``prune`` drops the tokens of runs
    Gradio no longer holds.
    """

    def __init__(self, per_session: int = MAX_TOKENS_PER_SESSION, total: int = MAX_TOKENS) -> None:
        self.per_session, self.total = per_session, total
        self._runs: dict[tuple[str, str], str] = {}
        self._tokens: dict[str, tuple[str, str]] = {}
        self._by_session: dict[str, list[str]] = {}  # oldest first
        self._lock = threading.Lock()

    def token(self, session: str, run: str) -> str:
        with self._lock:
            token = self._runs.get((session, run))
            if token is not None:
                return token
            mine = self._by_session.get(session, [])
            if len(mine) >= self.per_session:
                self._drop(mine[0])
            elif len(self._tokens) >= self.total:  # rare (only live runs get one): a scan is fine
                heaviest = max(self._by_session.values(), key=len)
                self._drop(heaviest[0])
            token = secrets.token_urlsafe(TOKEN_BYTES)
            self._runs[(session, run)] = token
            self._tokens[token] = (session, run)
            self._by_session.setdefault(session, []).append(token)
            return token

    def run_of(self, token: str) -> tuple[str, str] | None:
        with self._lock:
            return self._tokens.get(token)

    def forget(self, session: str) -> None:
        with self._lock:
            for token in list(self._by_session.get(session, [])):
                self._drop(token)

    def prune(self, live: Callable[[str, str], bool]) -> int:
        """Drop every token whose (session, run) ``live`` says is gone; returns how many."""
        with self._lock:
            gone = [token for token, run in self._tokens.items() if not live(*run)]
            for token in gone:
                self._drop(token)
        return len(gone)

    def _drop(self, token: str) -> None:
        """Forget ``token`` (lock held)."""
        run = self._tokens.pop(token)
        self._runs.pop(run, None)
        tokens = self._by_session[run[0]]
        tokens.remove(token)
        if not tokens:
            del self._by_session[run[0]]  # no key left behind per session ever seen

    def __len__(self) -> int:
        return len(self._tokens)


SESSION_BINDINGS = SessionBindings()
STREAM_TOKENS = StreamTokens()


def forget_session(session: str) -> None:
    """A session is over: its binding and its stream tokens go."""
    SESSION_BINDINGS.forget(session)
    STREAM_TOKENS.forget(session)
