"""Word timings by forced alignment (tts_app/captions): against the embedded voice's own durations, words the
dictionary lacks, audio it cannot place, and Qwen3-TTS (which gives no timings) through the engine."""

from __future__ import annotations

import numpy as np
import pytest

from tts_app.captions import WordAligner
from tts_app.captions.pronounce import dictionary_key, guess_phones, phones_for
from tts_app.engine import Engine
from tts_app.text.words import written_words
from tts_app.backends.params import SpeechParams

pytestmark = pytest.mark.slow

CLAUSES = "The birch canoe slid on the smooth planks, and glue the sheet to the dark blue background."
PHONES = frozenset("AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W Y Z ZH".split())


@pytest.fixture(scope="module")
def piper_engine(piper_backend):
    e = Engine(piper_backend, max_batch_size=1)
    yield e
    e.close()


def _speak(engine: Engine, text: str):
    """(audio, the model's own word timings, the audio's pieces as the engine streamed them)."""
    handle = engine.submit(text, SpeechParams(seed=0))
    pieces = [c.audio for c in handle.chunks()]
    return np.concatenate(pieces), handle.words, pieces


def _feed(text: str, pieces: list[np.ndarray], rate: int) -> tuple[list, list[int]]:
    """Every word the aligner gives, and how many it had given before the last piece."""
    aligner, words, before_last = WordAligner(text, rate), [], []
    for i, piece in enumerate(pieces):
        words += aligner.feed(piece, i == len(pieces) - 1)
        before_last.append(len(words))
    return words, before_last


def _check_structure(words, text: str, audio_s: float) -> None:
    assert [w.word for w in words] == written_words(text)
    starts = [w.start for w in words]
    assert starts == sorted(starts) and all(w.start <= w.end for w in words)
    assert all(a.end <= b.start + 1e-9 for a, b in zip(words, words[1:]))
    assert 0 <= starts[0] and words[-1].end <= audio_s + 0.011  # PocketSphinx's last frame may round up 10 ms


def test_aligned_starts_match_the_models_own_durations_clause_by_clause(piper_engine) -> None:
    audio, model, pieces = _speak(piper_engine, CLAUSES)
    rate = piper_engine.sample_rate
    words, before_last = _feed(CLAUSES, pieces, rate)
    _check_structure(words, CLAUSES, audio.size / rate)
    assert all(w.source == "aligned" for w in words) and all(m.source == "model" for m in model)
    errors = np.abs([w.start - m.start for w, m in zip(words, model)])
    assert errors.mean() <= 0.06 and errors.max() <= 0.15, errors
    # The first clause was aligned at the comma's pause, before the audio ended. Fed in half-second pieces: the
    # engine's own pieces grow with what its listener holds, so a fast CPU sends the pause inside the last one.
    half = rate // 2
    _, early = _feed(CLAUSES, [audio[i:i + half] for i in range(0, audio.size, half)], rate)
    assert early[-2] >= written_words(CLAUSES).index("planks,") + 1


def test_words_out_of_the_dictionary_are_placed(piper_engine) -> None:
    text = "Professor Zorblefax sold 12 quixotlers to Mrs. Vanderwoogen."
    audio, model, pieces = _speak(piper_engine, text)
    words, _ = _feed(text, pieces, piper_engine.sample_rate)
    _check_structure(words, text, audio.size / piper_engine.sample_rate)
    assert all(w.source == "aligned" for w in words)
    said = {m.word.strip("."): m for m in model}  # the model's words are as spoken ("twelve", "Missus")
    for name in ("Zorblefax", "quixotlers"):
        (w,) = [w for w in words if w.word.startswith(name)]
        assert abs(w.start - said[name].start) <= 0.1 and w.end - w.start >= 0.2


def test_pronunciations_for_words_the_dictionary_lacks() -> None:
    lookup = {"five": "F AY V", "twelve": "T W EH L V", "pm": None}.get
    assert dictionary_key('"Planks,"') == "planks" and dictionary_key("$5pm.") == "5 pm" and dictionary_key("北京") == ""
    assert phones_for("5", lookup) == ("F AY V", True)
    phones, known = phones_for("12 pm", lookup)
    assert phones.startswith("T W EH L V ") and not known
    for word in ("zorblefax", "quixotlers", "xyzzy", "thoughtfulness"):
        guessed = guess_phones(word).split()
        assert guessed and set(guessed) <= PHONES
    assert phones_for("9" * 400, lookup)[0]  # a huge number is read digit by digit, not refused


def test_audio_the_aligner_cannot_place_is_shared_out_by_length() -> None:
    rate = 24000
    text = "Far too many words for a twentieth of a second, 北京 included."
    blip = np.sin(np.arange(rate // 20) / 3.0).astype(np.float32) * 0.3
    words = WordAligner(text, rate).feed(blip, True)
    _check_structure(words, text, blip.size / rate)
    assert {w.source for w in words} == {"even"}
    assert words[2].end - words[2].start > words[0].end - words[0].start  # by letters: "many" outlasts "Far"


def test_alignment_time_grows_linearly_with_hostile_text() -> None:
    """Made-up words (each added to the dictionary) and audio the aligner cannot place, 1000 then 2000 words."""
    import time

    rng = np.random.default_rng(0)

    def cost(n: int) -> float:
        text = " ".join("".join(chr(97 + c) for c in rng.integers(0, 26, 9)) for _ in range(n))
        audio = (np.sin(np.arange(24000 * n // 25) / 5.0) * 0.3).astype(np.float32)  # a tone, n / 25 seconds
        t = time.perf_counter()
        words = WordAligner(text, 24000).feed(audio, True)
        assert len(words) == n
        return time.perf_counter() - t

    small = min(cost(1000) for _ in range(3))
    large = min(cost(2000) for _ in range(3))
    assert large <= 2.5 * small, (small, large)


def test_a_long_stretch_without_pauses_is_cut_at_its_quietest(piper_engine, monkeypatch) -> None:
    import tts_app.captions.stream as stream

    monkeypatch.setattr(stream, "_MAX_STRETCH_S", 1.0)  # a 1 s stretch counts as long; and no pause is long enough
    audio, model, pieces = _speak(piper_engine, CLAUSES)
    rate = piper_engine.sample_rate
    aligner, words, before_last = WordAligner(CLAUSES, rate, min_pause_s=10.0), [], 0
    for i, piece in enumerate(pieces):
        words += aligner.feed(piece, i == len(pieces) - 1)
        before_last = len(words) if i < len(pieces) - 1 else before_last
    _check_structure(words, CLAUSES, audio.size / rate)
    assert before_last >= 3 and all(w.source == "aligned" for w in words)
    errors = np.abs([w.start - m.start for w, m in zip(words, model)])
    assert errors.mean() <= 0.06, errors


def test_aligned_words_carry_their_span_of_the_raw_text() -> None:
    """Qwen3-TTS reads the text raw: each aligned word is a written token and says where it is (fails before: no span)."""
    text = "Dr. Lee  paid $5 on\nJan. 3rd."
    blip = np.sin(np.arange(24000 // 20) / 3.0).astype(np.float32) * 0.3
    words = WordAligner(text, 24000).feed(blip, True)
    assert [w.written for w in words] == ["Dr.", "Lee", "paid", "$5", "on", "Jan.", "3rd."]
    assert all(text[w.text_start : w.text_end] == w.written == w.word for w in words)
