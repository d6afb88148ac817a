"""The session binding table and the stream tokens (issue 32, item 7; through the real server: tests/e2e/test_session_binding.py)."""

from __future__ import annotations

import datetime
import re
import threading
from types import SimpleNamespace

import pytest

from tts_app.web.guards.session_binding import (
    MAX_TOKENS_PER_SESSION, SESSION_BINDINGS, STREAM_TOKENS, SessionBindings, VisitorSessionsFull, StreamTokens, cookie_value,
    new_cookie_value,
)
from tts_app.web.guards.session_guard import STREAM_ID
from tts_app.web.session_sweeper import sweep_sessions

COOKIE_A, COOKIE_B = new_cookie_value(), new_cookie_value()


def test_a_hash_is_its_first_pages_alone() -> None:
    table = SessionBindings()
    assert table.admit("s1", COOKIE_A, "addr:1.1.1.1") is True
    assert table.admit("s1", COOKIE_A, "addr:2.2.2.2") is True  # the same browser, moved
    assert table.admit("s1", COOKIE_B, "addr:1.1.1.1") is False  # another browser, same address
    assert table.admit("s1", None, "addr:1.1.1.1") is False  # the cookie withheld
    assert table.admit("s2", None, "addr:1.1.1.1") is True  # an API caller: bound to its visitor
    assert table.admit("s2", COOKIE_A, "addr:1.1.1.1") is True
    assert table.admit("s2", None, "addr:2.2.2.2") is False


def test_the_table_is_bounded_and_pruned() -> None:
    table = SessionBindings(max_entries=2, max_per_visitor=10)
    assert table.admit("a", None, "v") and table.admit("b", None, "v")
    with pytest.raises(VisitorSessionsFull):  # full, and v holds the most: v is refused
        table.admit("c", None, "v")
    assert table.prune(0.0, alive=["a"]) == 1 and len(table) == 1
    assert table.admit("c", None, "v") is True
    table.forget("a")
    assert table.admit("a", None, "w") is True  # a forgotten hash binds afresh


def test_a_full_table_takes_from_the_heaviest_holder_never_refuses_a_newcomer() -> None:
    table = SessionBindings(max_entries=10, max_per_visitor=6)
    for n in range(6):
        assert table.admit(f"heavy{n}", None, "heavy")
    for n in range(4):
        assert table.admit(f"mid{n}", None, "mid")
    assert table.admit("heavy0", None, "heavy")  # used again: heavy1 is now its least recently used
    for n in range(2):  # each newcomer takes one of the heaviest holder's places
        assert table.admit(f"new{n}", None, f"newcomer{n}") is True
    assert len(table) == 10 and table.held_by("heavy") == 4 and table.held_by("mid") == 4
    assert table.admit("heavy0", None, "heavy") is True  # its recently used one stays bound
    assert table.admit("heavy1", None, "stranger") is True  # heavy1, its least recently used, went first: unbound
    assert table.held_by("heavy") + table.held_by("mid") == 7  # a tie at 4: either gave a place
    top = "heavy" if table.held_by("heavy") == 4 else "mid"
    with pytest.raises(VisitorSessionsFull):  # the one holding the most: its new hash is refused
        table.admit("more", None, top)
    assert len(table) == 10


def test_stream_tokens_map_back_and_end_with_their_session() -> None:
    tokens = StreamTokens()
    token = tokens.token("sess", "0" * 32)
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", token) and "sess" not in token
    assert tokens.token("sess", "0" * 32) == token and tokens.run_of(token) == ("sess", "0" * 32)
    for n in range(MAX_TOKENS_PER_SESSION + 5):
        tokens.token("sess", f"{n:032x}")
    assert len(tokens) == MAX_TOKENS_PER_SESSION
    tokens.forget("sess")
    assert len(tokens) == 0 and tokens.run_of(token) is None


def test_the_token_table_is_capped_in_all_and_a_full_one_takes_from_the_heaviest_session() -> None:
    tokens = StreamTokens(per_session=4, total=6)
    for n in range(4):
        tokens.token("heavy", f"{n:032x}")
    light = tokens.token("light", "a" * 32)
    tokens.token("light", "b" * 32)
    assert len(tokens) == 6
    newcomer = tokens.token("new", "c" * 32)  # full: the heavy session's oldest token goes, not the newcomer's
    assert len(tokens) == 6 and tokens.run_of(newcomer) == ("new", "c" * 32) and tokens.run_of(light) is not None
    assert tokens.prune(lambda session, run: session != "heavy") == 3  # runs Gradio dropped lose their tokens
    assert len(tokens) == 3 and tokens.token("new", "c" * 32) == newcomer


def test_the_cookie_parser_takes_well_formed_values_only() -> None:
    assert cookie_value(f"x=1; tts_page={COOKIE_A}; y=2") == COOKIE_A
    assert cookie_value("tts_page=short") is None and cookie_value(None) is None
    assert cookie_value("tts_page=" + "a" * 10_000) is None


def test_stream_ids_are_found_in_paths_and_urls_only() -> None:
    run = "ab" * 16
    text = f'{{"path":"abc-1/{run}/7/playlist.m3u8","url":"http://h/gradio_api/stream/abc-1/{run}/7/playlist.m3u8"}}'
    assert [m[1] for m in STREAM_ID.finditer(text.encode())] == [b"abc-1", b"abc-1"]
    assert not STREAM_ID.search(f"abc/{run}/7/other.wav".encode())


def test_the_sweeper_drops_bindings_with_their_sessions_and_prunes_bare_hashes() -> None:
    old = datetime.datetime.now() - datetime.timedelta(seconds=600)
    holder = SimpleNamespace(session_data={"over": object(), "live": object()},
                             time_last_used={"over": old, "live": datetime.datetime.now()}, lock=threading.Lock())
    queue = SimpleNamespace(pending_event_ids_session={"live": {"event-1"}}, pending_messages_per_session={})
    blocks = SimpleNamespace(state_holder=holder, _queue=queue, pending_streams={}, pending_diff_streams={})
    for session in ("over", "live", "bare"):  # "bare": a hash that never made a session (a heartbeat alone)
        assert SESSION_BINDINGS.admit(session, None, "addr:192.0.2.1")
    token = STREAM_TOKENS.token("over", "0" * 32)
    sweep_sessions(blocks, idle_s=0)  # "live" runs an event: kept
    assert STREAM_TOKENS.run_of(token) is None
    assert SESSION_BINDINGS.admit("live", None, "addr:192.0.2.9") is False  # still bound to its page
    for session in ("over", "bare"):  # forgotten: a later request binds afresh
        assert SESSION_BINDINGS.admit(session, None, "addr:192.0.2.9") is True
        SESSION_BINDINGS.forget(session)
    SESSION_BINDINGS.forget("live")


def test_one_visitor_cannot_fill_the_table() -> None:
    table = SessionBindings(max_entries=10, max_per_visitor=2)
    assert table.admit("a", None, "v") and table.admit("b", None, "v")
    with pytest.raises(VisitorSessionsFull):
        table.admit("c", None, "v")
    assert table.admit("a", None, "v") is True  # its bound hashes still work
    assert table.admit("d", None, "w") is True  # another visitor binds
    table.forget("a")
    assert table.admit("c", None, "v") is True  # a freed place is the visitor's again
