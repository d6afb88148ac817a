"""Even loudness (issue 47, item 5): the level keeper alone on synthetic speech-like signals, then through the engine
on the embedded voice (its own and matched with a shared voice's filter) and on Pocket TTS (cloned and its own voice,
tiny random weights): every line of a take within 2 dB of the take's median active-speech level, peaks at most
-1 dBFS; a "Say it" preview (the Pronunciation tab's one short line) within 2 dB of the take's median too.
(benchmarks/loudness_lovo.py chooses the constants leaving one shared voice out, and measures every shared
voice and the embedded voice's own.)"""

from __future__ import annotations

import statistics
from types import SimpleNamespace

import numpy as np
import pytest

from tests.support.paths import REPO
from tts_app.audio.loudness import CEILING_DBFS, LevelKeeper, active_level_dbfs

RATE = 24000
LINES = [t for t in (REPO / "tests" / "data" / "sentences.txt").read_text().splitlines() if t.strip()][:6]


def _speechlike(seconds: float, level_dbfs: float, seed: int) -> np.ndarray:
    """Noise in syllable-like bursts with pauses, at about ``level_dbfs`` active level and a speech-like crest."""
    g = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    envelope = np.clip(np.sin(2 * np.pi * 3.1 * t + g.uniform(0, 6)), 0, None) ** 2
    envelope *= np.repeat(g.uniform(0.4, 1.0, int(seconds * 4) + 1), RATE // 4)[: t.size]
    x = g.standard_normal(t.size) * envelope
    x *= 10 ** (level_dbfs / 20) / 10 ** (active_level_dbfs(x, RATE) / 20)
    return x.astype(np.float32)


def _take_spread(take: list[np.ndarray], rate: int) -> tuple[float, float]:
    levels = [active_level_dbfs(a, rate) for a in take]
    median = statistics.median(levels)
    return max(abs(x - median) for x in levels), max(20 * np.log10(float(np.abs(a).max())) for a in take)


def test_the_gain_does_not_depend_on_the_chunks() -> None:
    line = _speechlike(3.0, -27, 5)
    whole = LevelKeeper(RATE).process(line)
    keeper = LevelKeeper(RATE)
    cut = np.concatenate([keeper.process(line[i:i + n]) for i, n in zip(range(0, line.size, 777), [777] * 10_000)])
    assert np.array_equal(whole, cut)


def test_silence_stays_silence() -> None:
    keeper = LevelKeeper(RATE)
    assert not keeper.process(np.zeros(RATE, np.float32)).any()
    quiet = np.full(RATE, 1e-4, np.float32)  # under the gate: not speech, not lifted
    assert np.array_equal(keeper.process(quiet), quiet)


@pytest.mark.slow  # the embedded voice and a clip's analysis: two takes of six lines and two previews
def test_embedded_takes_and_the_say_it_preview_are_even_through_the_engine() -> None:
    """The embedded voice's own take and a matched one, each even; "Say it" (the Pronunciation tab's preview, in
    the embedded voice's own, one short line) within 2 dB of either take's median."""
    from tts_app.engine import Engine, SpeechParams
    from tts_app.engine.input_processing import resolve_params
    from tts_app.web.ui.pronunciation.panel import SAY_IT_TEMPLATE

    engine = Engine()
    try:
        takes = []
        for voice in (None, str(REPO / "assets" / "voices" / "lj_female_us.wav")):
            params = resolve_params(SpeechParams(seed=0, voice=voice))
            takes.append([h.result(timeout=600) for h in [engine.submit(t, params) for t in LINES]])
        previews = [engine.submit(SAY_IT_TEMPLATE.format(word=w), SpeechParams()).result(timeout=600) for w in ("Siobhan", "cat")]
        rate = int(engine.sample_rate)
    finally:
        engine.close()
    for take in takes:
        spread, peak = _take_spread(take, rate)
        assert spread <= 2.0 and peak <= CEILING_DBFS + 1e-6, (spread, peak)
    medians = [statistics.median(active_level_dbfs(a, rate) for a in take) for take in takes]
    for preview in previews:
        assert all(abs(active_level_dbfs(preview, rate) - m) <= 2.0 for m in medians), (active_level_dbfs(preview, rate), medians)
        assert 20 * np.log10(float(np.abs(preview).max())) <= CEILING_DBFS + 1e-6


def _clip(seed: int) -> SimpleNamespace:
    g = np.random.default_rng(seed)
    t = np.arange(16000) / 16000
    audio = (0.3 * np.sin(2 * np.pi * (120 + 40 * seed) * t) + 0.05 * g.standard_normal(t.size)).astype(np.float32)
    return SimpleNamespace(reference_audio=audio, reference_sample_rate=16000, content_hash=f"clip{seed}")


@pytest.mark.parametrize("voice", [None, _clip(3)], ids=["own", "cloned"])
def test_a_pocket_take_is_even_cloned_or_its_own(tmp_path, voice) -> None:
    from tests.support.pocket_tts_tiny import write_tiny_checkpoint
    from tts_app.backends.pocket_tts import PocketBackend
    from tts_app.engine import Engine, SpeechParams
    from tts_app.models.pocket_tts.weights import load_pocket

    backend = PocketBackend(load_pocket(write_tiny_checkpoint(tmp_path / "ckpt")), max_batch=8, max_seconds=3)
    engine = Engine(backend=backend, max_batch_size=8)
    try:
        params = SpeechParams(seed=2, voice=voice)
        take = [h.result(timeout=300) for h in [engine.submit(t, params) for t in LINES]]
    finally:
        engine.close()
    spread, peak = _take_spread(take, backend.sample_rate)
    assert spread <= 2.0 and peak <= CEILING_DBFS + 1e-6, (spread, peak)
