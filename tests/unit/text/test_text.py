"""The text side runs without a model."""

import pytest

from tts_app.text import TextError, chunk_sentences, normalize_text, phonemize


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("   \n\t ", "empty"),
        ("?!... ---", "nothing to speak"),
        ("😀🎉", "nothing to speak"),
        ("Привет мир", "Latin-script"),
        ("你好世界", "Latin-script"),
    ],
)
def test_unspeakable_text_gives_one_line_error(text, message):
    with pytest.raises(TextError, match=message) as info:
        normalize_text(text)
    assert "\n" not in str(info.value)


def test_control_characters_and_emoji_are_dropped():
    assert normalize_text("a\x00b\x07c 😀 done\r\nnext") == "abc done next"


def test_mixed_scripts_keep_the_latin_words():
    assert normalize_text("Hello Привет world") == "Hello world"


def test_sentences_split_with_pauses_and_last_has_none():
    chunks = chunk_sentences(phonemize("One two. Three four? Five six!", "en-us"))
    assert len(chunks) == 3
    assert [c.pause_after_s for c in chunks] == [0.25, 0.25, 0.0]


def test_long_sentence_splits_at_clauses_under_the_limit():
    sentence = ", ".join(["the quick brown fox jumps over the lazy dog"] * 20) + "."
    chunks = chunk_sentences(phonemize(sentence, "en-us"), max_phonemes=120)
    assert len(chunks) > 3
    assert all(len(c.phonemes) <= 120 for c in chunks)
    # Cuts fall after a comma, so each piece but the last ends on one.
    assert all(c.phonemes[-1] in ",;: " or c.phonemes[-2] == "," for c in chunks[:-1])
    assert sum(len(c.phonemes) for c in chunks) == len(phonemize(sentence, "en-us")[0])


def test_two_thousand_character_line_phonemizes():
    line = ("This is a sentence of moderate length, with a clause. " * 40)[:2000]
    chunks = chunk_sentences(phonemize(normalize_text(line), "en-us"))
    assert len(chunks) >= 30
