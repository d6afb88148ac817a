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
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

COOKIE = "tts_page"
COOKIE_PATTERN = re.compile(r"[A-Za-z0-9_-]{32}")
HASH_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,128}")  # Gradio's page (base 36) and gradio_client (uuid4) fit
MAX_BOUND_SESSIONS = 100_000  # 31 MB measured (tracemalloc, a distinct cookie each); the sweeper prunes every few seconds
TOKEN_BYTES = 16  # 128 random bits per stream token
# One visitor's bound hashes at once (gradio_client makes one per call; idle ones are pruned after
# TTS_APP_IDLE_SESSION_S): one address cannot fill the table for everyone (its new hash past this: 429).
MAX_PER_VISITOR = 1_000
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
    """This visitor has ``MAX_PER_VISITOR`` hashes bound already: its new one is refused (for it only)."""


class SessionBindings:
    """Session hash -> the page it belongs to (see the module doc). Thread-safe."""

    def __init__(self, max_entries: int = MAX_BOUND_SESSIONS, max_per_visitor: int = MAX_PER_VISITOR) -> None:
        self.max_entries, self.max_per_visitor = max_entries, max_per_visitor
        self._bound: OrderedDict[str, Binding] = OrderedDict()
        self._per_visitor: Counter[str] = Counter()  # bound hashes by the visitor that first used them
        self._lock = threading.Lock()

    def admit(self, session: str, cookie: str | None, visitor: str) -> bool | None:
        """True when ``session`` is (now) bound to this cookie/visitor, False when to another page,
        None when it is new and the table is full."""
        now = time.monotonic()
        with self._lock:
            bound = self._bound.get(session)
            if bound is None:
                if self._per_visitor[visitor] >= self.max_per_visitor:
                    raise VisitorSessionsFull(f"{self._per_visitor[visitor]} page sessions are open from your address")
                if len(self._bound) >= self.max_entries:
                    return None
                self._bound[session] = Binding(cookie, visitor, now)
                self._per_visitor[visitor] += 1
                return True
            if bound.cookie is not None:
                ok = cookie is not None and hmac.compare_digest(cookie, bound.cookie)
            else:
                ok = hmac.compare_digest(visitor, bound.visitor)
            if ok:
                bound.last_used = now
                self._bound.move_to_end(session)
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

    def _drop(self, session: str) -> None:
        """Unbind ``session`` (lock held)."""
        bound = self._bound.pop(session, None)
        if bound is not None:
            self._per_visitor[bound.visitor] -= 1
            if self._per_visitor[bound.visitor] <= 0:
                del self._per_visitor[bound.visitor]  # no key left behind per visitor ever seen

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
