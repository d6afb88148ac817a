"""Build a reference's class map: get its words, make parallel data with the model voice, fit.

Route (chosen per reference, reported in the profile):
- transcript typed by the user, or recognised by PocketSphinx -> the model speaks it through
  the strength-1 pitch/formant/EQ stage -> frames paired by DTW -> class map ("parallel");
- no usable transcript (silence to the recogniser, too few words, music, another language) ->
  the model's own shipped clip, frames assigned to their nearest class ("nearest").
"""

from __future__ import annotations

import logging

import numpy as np

from tts_app.voice.analysis import ANALYSIS_RATE, VoiceStats, to_analysis_rate
from tts_app.voice.classmap import ClassMap, fit_class_map
from tts_app.voice.model_voice import model_voice
from tts_app.voice.plan import _resample, make_plan

logger = logging.getLogger(__name__)

CONVERSION_VERSION = 1  # bump when the class map's fit changes: saved profiles then rebuild it
MIN_TRANSCRIPT_WORDS = 3  # fewer recognised words than this: alignment is not worth trusting
USE_PARALLEL = True  # see BENCHMARKS.voice.md: parallel vs nearest, leave-one-voice-out


def build_class_map(
    audio: np.ndarray, sample_rate: int, stats: VoiceStats, text: str | None
) -> tuple[ClassMap, str, str]:
    """(class map, transcript used, its source: "typed" / "recognised" / "none") for a processed clip."""
    from tts_app.voice.adapt import run_adapter  # adapt imports plan; keep import order simple

    ref = to_analysis_rate(audio, sample_rate)
    plan = make_plan(stats, 1.0, ANALYSIS_RATE)
    transcript, source = (text, "typed") if text else ("", "none")
    if not transcript and USE_PARALLEL:
        from tts_app.voice.transcript import recognise

        heard = recognise(ref, ANALYSIS_RATE)
        if len(heard.split()) >= MIN_TRANSCRIPT_WORDS:
            transcript, source = heard, "recognised"
        else:
            logger.info("recogniser heard %r in the reference: using the fallback alignment", heard)
    if transcript and USE_PARALLEL:
        from tts_app.voice.transcript import speak

        spoken, rate = speak(transcript)
        model_side = run_adapter(_resample(spoken, rate, ANALYSIS_RATE), plan, ANALYSIS_RATE)
        return fit_class_map(ref, model_side, ANALYSIS_RATE, parallel=True), transcript, source
    mv = model_voice()
    model_side = run_adapter(_resample(mv.audio, mv.sample_rate, ANALYSIS_RATE), plan, ANALYSIS_RATE)
    return fit_class_map(ref, model_side, ANALYSIS_RATE, parallel=False), transcript, source
