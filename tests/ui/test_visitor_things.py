"""What a visitor makes is theirs: file folders that name nothing but themselves, voices and a cleanup
that act for their owner only (issue 24, items 4 and 5; the real server's side is test_ownership.py)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from tts_app.web import session_sweeper
from tts_app.web.ui.session import files as session_files
from tts_app.web.ui.session import owner
from tts_app.web.ui.session.active_runs import ActiveRuns
from tts_app.web.ui.session.visitor_voices import PER_VISITOR_ENV, TOTAL_ENV, VisitorVoices

PROFILE = SimpleNamespace(name="x")  # the store keeps profiles as given; no analysis needed here


def test_each_file_gets_its_own_unguessable_folder_that_names_no_session() -> None:
    session = "visitor-a-hash"
    paths = [session_files.new_file(session, "line-01", ".wav") for _ in range(3)]
    try:
        folders = [p.parent for p in paths]
        assert len(set(folders)) == 3
        for folder in folders:
            assert re.fullmatch(r"[A-Za-z0-9_-]{22}", folder.name)  # 128 random bits
            assert session not in str(folder)
        session_files.remove_session("visitor-b-hash")  # another session's cleanup leaves them
        assert all(folder.is_dir() for folder in folders)
    finally:
        session_files.remove_session(session)
    assert not any(folder.exists() for folder in folders)


def test_a_session_ends_only_its_own_files() -> None:
    mine = session_files.new_file("visitor-a", "take", ".wav")
    theirs = session_files.new_file("visitor-b", "take", ".wav")
    mine.write_bytes(b"a")
    theirs.write_bytes(b"b")
    session_files.remove_session("visitor-a")
    session_files.remove_session(theirs.parent.name)  # a "session" named like B's folder
    assert not mine.exists() and theirs.exists()
    session_files.remove_session("visitor-b")
    assert not theirs.exists()


class _Request:
    """An engine request handle as far as the page's run registry sees it."""

    def __init__(self) -> None:
        self.cancelled = False

    done = False  # a request still running: Stop counts it

    @property
    def cancel_asked(self) -> bool:
        return self.cancelled

    def cancel(self) -> None:
        self.cancelled = True


def test_a_page_that_still_holds_its_heartbeat_is_not_cleaned_up() -> None:
    path = session_files.new_file("held-page", "take", ".wav")
    path.write_bytes(b"a")
    runs, mine, other = ActiveRuns(), _Request(), _Request()
    runs.add("held-page", [mine])
    runs.add("other-page", [other])
    session_sweeper._open_heartbeats["held-page"] += 1
    try:
        assert owner.page_closed("held-page", runs) is False
        assert path.exists() and not mine.cancelled
    finally:
        del session_sweeper._open_heartbeats["held-page"]
    assert owner.page_closed("held-page", runs) is True
    assert not path.exists()
    assert mine.cancelled and not other.cancelled  # the closed page's run only


@pytest.mark.parametrize("name", ["alloy", "ALLOY", "shimmer", "lj_female_us", "default", "None"])
def test_no_visitor_voice_takes_a_server_or_openai_name(name: str) -> None:
    with pytest.raises(ValueError, match="name|reserved"):
        VisitorVoices().check_new("visitor-a", name)


def test_visitor_voices_are_their_owners_alone_and_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PER_VISITOR_ENV, "2")
    monkeypatch.setenv(TOTAL_ENV, "3")
    voices = VisitorVoices()
    voices.add("a", "one", PROFILE)
    voices.add("a", "two", PROFILE)
    with pytest.raises(ValueError, match="2 saved voices"):
        voices.add("a", "three", PROFILE)
    with pytest.raises(ValueError, match="already have"):
        voices.check_new("a", "one")
    voices.add("b", "one", PROFILE)  # B's "one" is B's own
    with pytest.raises(ValueError, match="as many visitors' voices"):
        voices.add("c", "four", PROFILE)
    assert voices.names("a") == ["one", "two"] and voices.names("b") == ["one"] and voices.get("c", "one") is None
    with pytest.raises(ValueError, match="not one of your saved voices"):
        voices.remove("c", "two")
    assert voices.get("a", "two") is PROFILE
    voices.forget("a")
    assert voices.names("a") == [] and voices.names("b") == ["one"]
    with pytest.raises(ValueError, match="page session"):
        voices.check_new(None, "mine")
