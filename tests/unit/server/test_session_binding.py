"""The session binding table and the stream tokens (issue 32, item 7; through the real server: tests/e2e/test_session_binding.py)."""

from __future__ import annotations

import re

from tts_app.web.guards.session_binding import (
    MAX_TOKENS_PER_SESSION, SessionBindings, StreamTokens, cookie_value, new_cookie_value,
)
from tts_app.web.guards.session_guard import STREAM_ID

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
    table = SessionBindings(max_entries=2)
    assert table.admit("a", None, "v") and table.admit("b", None, "v")
    assert table.admit("c", None, "v") is None  # full: a new hash is refused, no bound one is evicted
    assert table.prune(0.0, alive=["a"]) == 1 and len(table) == 1
    assert table.admit("c", None, "v") is True
    table.forget("a")
    assert table.admit("a", None, "w") is True  # a forgotten hash binds afresh


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


def test_the_cookie_parser_takes_well_formed_values_only() -> None:
    assert cookie_value(f"x=1; tts_page={COOKIE_A}; y=2") == COOKIE_A
    assert cookie_value("tts_page=short") is None and cookie_value(None) is None
    assert cookie_value("tts_page=" + "a" * 10_000) is None


def test_stream_ids_are_found_in_paths_and_urls_only() -> None:
    run = "ab" * 16
    text = f'{{"path":"abc-1/{run}/7/playlist.m3u8","url":"http://h/gradio_api/stream/abc-1/{run}/7/playlist.m3u8"}}'
    assert [m[1] for m in STREAM_ID.finditer(text.encode())] == [b"abc-1", b"abc-1"]
    assert not STREAM_ID.search(f"abc/{run}/7/other.wav".encode())
