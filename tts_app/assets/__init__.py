"""Data files the app ships: the built-in reference voices (voices/, attribution in voices/SOURCES.md).

In a checkout they live in the repository's top-level ``assets/`` folder; ``pip install .`` copies
that folder into the installed package as ``tts_app/assets/voices`` (setup.py maps it), so an
installed app finds them beside this file and a checkout finds them two levels up.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent
_INSTALLED_VOICES = _HERE / "voices"  # an installed wheel
_CHECKOUT_VOICES = _HERE.parents[1] / "assets" / "voices"  # a checkout (or an editable install)
BUILTIN_VOICES_DIR = _INSTALLED_VOICES if _INSTALLED_VOICES.is_dir() else _CHECKOUT_VOICES
