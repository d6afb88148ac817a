"""Build a reference's class map: get its words, make parallel data with the model voice, fit.

Route (chosen per reference, reported in the profile):
- transcript typed by the user (or recognised by PocketSphinx when RECOGNISE_TRANSCRIPT) -> the model speaks it through
  the strength-1 pitch/formant/EQ stage -> frames paired by DTW -> class map ("parallel");
- no usable transcript (silence to the recogniser, too few words, music, another language) ->
  the model's own shipped clip, frames assigned to their nearest class ("nearest").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from tts_app.voice.matching.adapt import run_adapter
from tts_app.voice.analysis.stats import ANALYSIS_RATE, VoiceStats, to_analysis_rate
from tts_app.voice.matching.classmap import N_CLASSES, ClassMap, fit_class_map
from tts_app.voice.model_voice import model_voice
from tts_app.voice.matching.plan import _resample, make_plan

logger = logging.getLogger(__name__)

CONVERSION_VERSION = 2  # bump when the class map's fit changes: saved profiles then rebuild it
MIN_TRANSCRIPT_WORDS = 3  # fewer recognised words than this: alignment is not worth trusting
# Measured (docs/benchmarks-log.md, 20 sentences): aligning on PocketSphinx's transcript lost to the
# nearest-class fallback on 2 of 3 voices in similarity and on WER (wrong words, wrong pairs), so a
# recognised transcript is not used for alignment; a typed one is.
RECOGNISE_TRANSCRIPT = False


@dataclass(frozen=True)
class ConversionConfig:
    """Constants chosen leave-one-voice-out on the shared voices (docs/benchmarks-log.md)."""

    n_classes: int = N_CLASSES
    parallel: bool = True  # align against the model speaking the transcript when there is one


@dataclass(frozen=True)
class ParallelData:
    """Both sides of the fit at ANALYSIS_RATE; the model side already through the strength-1 stage."""

    reference: np.ndarray  # [N] the processed reference clip
    model_clip: np.ndarray  # [M] the model's shipped clip (other words): for the fallback
    model_spoken: np.ndarray | None  # [M'] the model saying the transcript, None without one
    transcript: str
    transcript_source: str  # "typed", "recognised" or "none"
    carried: np.ndarray  # [N_BANDS] bands the reference has sound in (its band limit: ltas.content_cutoff_hz)


def parallel_data(audio: np.ndarray, sample_rate: int, stats: VoiceStats, text: str | None) -> ParallelData:
    """Find the clip's words (typed, else recognised) and have the model voice say them."""
    from tts_app.voice.analysis import transcript as words  # lazy: recogniser and piper load on first use

    ref = to_analysis_rate(audio, sample_rate)
    plan = make_plan(stats, 1.0, ANALYSIS_RATE)
    mv = model_voice()
    clip = run_adapter(_resample(mv.audio, mv.sample_rate, ANALYSIS_RATE), plan, ANALYSIS_RATE)
    said, source = (text, "typed") if text else ("", "none")
    if not said and RECOGNISE_TRANSCRIPT:
        heard = words.recognise(ref, ANALYSIS_RATE)
        if len(heard.split()) >= MIN_TRANSCRIPT_WORDS:
            said, source = heard, "recognised"
        else:
            logger.info("recogniser heard %r in the reference: using the fallback alignment", heard)
    spoken = None
    if said:
        audio_m, rate = words.speak(said)
        if len(audio_m):
            spoken = run_adapter(_resample(audio_m, rate, ANALYSIS_RATE), plan, ANALYSIS_RATE)
    return ParallelData(ref, clip, spoken, said, source, ~np.isnan(stats.ltas_db))


def fit(data: ParallelData, config: ConversionConfig = ConversionConfig()) -> ClassMap:
    if config.parallel and data.model_spoken is not None:
        return fit_class_map(data.reference, data.model_spoken, ANALYSIS_RATE, config.n_classes, True, data.carried)
    return fit_class_map(data.reference, data.model_clip, ANALYSIS_RATE, config.n_classes, False, data.carried)


def build_class_map(
    audio: np.ndarray, sample_rate: int, stats: VoiceStats, text: str | None
) -> tuple[ClassMap, str, str]:
    """(class map, transcript used, its source: "typed" / "recognised" / "none") for a processed clip."""
    data = parallel_data(audio, sample_rate, stats, text)
    return fit(data), data.transcript, data.transcript_source
