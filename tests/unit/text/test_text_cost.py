"""Issue 32 items 2 and 3: what a text may cost is bounded before synthesis, and every number reads or refuses.

Pauses (SSML <break>s in all), audio per character of text at the request's speed, and num2words kept to
numbers it can say: a huge ordinal was a 500 with a traceback (OverflowError), a 5,000-digit one a
ValueError from int(); 214 ten-second breaks made 8,561 s of audio from one request.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tts_app.text import TextError, TextOptions, prepare_text
from tts_app.text.cost import MAX_AUDIO_PER_CHAR_ENV, MAX_PAUSE_ENV, check_audio_length, check_pauses, max_audio_s, max_pause_s
from tts_app.text.expand import expand_text
from tts_app.text.number_words import MAX_WORDED_DIGITS, cardinal, ordinal, year
from tts_app.text.ssml import parse_ssml

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
BREAKS_214 = "<speak>a" + '<break time="10s"/>' * 214 + "</speak>"  # the 4,082 characters


def _words(text: str) -> int:
    return len(text.split())


# --- numbers ----------------------------------------------------------------------------------


@FUZZ
@given(st.text("0123456789", min_size=1, max_size=5000))
@example("9" * 4000)
@example("9" * 37)  # past num2words' range (10**36)
@example("0" * 4400)  # past int()'s 4,300 digits
def test_every_number_word_reads_any_digit_run_in_at_most_its_digits(run: str) -> None:
    for say in (cardinal, ordinal, year):
        words = say(run)
        assert words and "\n" not in words
        if len(run) > MAX_WORDED_DIGITS:  # read digit by digit: never more words than digits
            assert _words(words) <= len(run)


def test_a_huge_ordinal_is_read_digit_by_digit_ending_in_its_ordinal() -> None:
    assert ordinal("9" * 4000).endswith("nine nine ninth") and _words(ordinal("9" * 4000)) == 4000
    assert ordinal("22") == "twenty second"  # within range: as before
    assert expand_text("9" * 40 + "th").endswith("nine ninth")
    assert expand_text("1" * 20 + "/" + "7" * 20).count(" over ") == 1


_NUMBER_SHAPES = st.sampled_from(["{n}th", "{n}", "${n}", "${n}.05", "{n} {n}/{n}", "{n}/{n}", "{n}%", "{n}km", "in {n}",
                                  "{n}-{n}", "£{n}m", "{n}¢", "March {n}, {n}", "{n}:{n}", "v{n}.{n}.{n}", "{n}s"])  # fmt: skip


@FUZZ
@given(_NUMBER_SHAPES, st.integers(1, 5000), st.sampled_from("0179"))
@example("{n}th", 4000, "9")
@example("{n} {n}/{n}", 4400, "1")
@example("${n}", 4400, "1")
def test_normalisation_of_huge_numbers_in_any_shape_never_raises(shape: str, digits: int, digit: str) -> None:
    text = shape.format(n=digit * digits)
    spoken = expand_text(text)  # no OverflowError, no ValueError from int()
    assert _words(spoken) <= len(text) + 10  # a long number costs a word a digit at most, never num2words' dozens


@FUZZ
@given(st.sampled_from(["ordinal", "cardinal", "number", "year", "date", "telephone", "characters"]), st.integers(1, 5000))
@example("ordinal", 400)  # the reproduction
@example("date", 4400)
def test_say_as_reads_or_refuses_any_number_in_one_line(kind: str, digits: int) -> None:
    ssml = f"<speak><say-as interpret-as='{kind}'>{'9' * digits}</say-as></speak>"
    try:
        parsed = parse_ssml(ssml)
    except TextError as exc:  # a one-line refusal is an answer; anything else (OverflowError, ValueError) is not
        assert type(exc) is TextError and "\n" not in str(exc)
        return
    assert parsed.segments and not re.search(r"\d", parsed.segments[0].text)


# --- pauses and audio length --------------------------------------------------------------------


def test_breaks_past_the_pause_cap_are_refused_before_any_phonemes(monkeypatch: pytest.MonkeyPatch) -> None:
    options = TextOptions(max_pause_s=60.0)
    with pytest.raises(TextError, match=r"add up to 2,140 s; the limit is 60 s") as info:
        prepare_text(BREAKS_214, "en-us", {}, options)  # an empty id map: refused before it is looked at
    assert "\n" not in str(info.value)
    ok = prepare_text("<speak>a" + '<break time="10s"/>' * 6 + "b</speak>", "en-us", {}, options)
    assert ok.break_s == 60.0 and sum(c.pause_after_s for c in ok.chunks) >= 60.0
    with pytest.raises(TextError, match="limit is 60 s"):
        prepare_text("<speak>a" + '<break time="10s"/>' * 6 + '<break time="1ms"/>b</speak>', "en-us", {}, options)


def test_pause_and_audio_settings_are_read_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_PAUSE_ENV, "5")
    assert max_pause_s() == 5.0
    check_pauses(5.0, max_pause_s())
    with pytest.raises(TextError, match="limit is 5 s"):
        check_pauses(5.5, max_pause_s())
    monkeypatch.setenv(MAX_AUDIO_PER_CHAR_ENV, "0.5")
    assert max_audio_s(1000) == 500.0 and max_audio_s(10) == 60.0  # the floor for short texts


def test_audio_over_its_text_allowance_is_a_one_line_refusal_naming_the_limit() -> None:
    check_audio_length(0.25 * 4096 / 1.0, 4096, 1.0)  # 0.25 s a character at speed 1: fits
    with pytest.raises(TextError, match=r"about 4,096 s of audio at speed 0.25; the limit for 4,096 characters is 1,638 s") as info:
        check_audio_length(1024.0, 4096, 0.25)
    assert "\n" not in str(info.value)
    check_audio_length(14.0, 20, 0.25)  # 56 s: a short text always may give a minute
