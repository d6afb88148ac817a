"""Import every module of the installed tts_app that one install needs (.ci/extras.sh runs it in each fresh venv).

    python import_modules.py base|qwen3|chatterbox

base: every module outside the model families that need an extra; qwen3: Qwen3-TTS's and Pocket TTS's (the
torch stack of requirements-gpu.txt); chatterbox: Chatterbox's, and the official chatterbox-tts modules it
loads by name. Fails with the first module that does not import, and the package it lacked.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings
from pathlib import Path

# The same split as tests/repo/test_packaging.py's EXTRA_FOLDERS.
FAMILIES = {
    "qwen3": ("models/qwen3", "models/pocket_tts", "models/layers", "backends/qwen3", "backends/pocket_tts"),
    "chatterbox": ("models/chatterbox", "backends/chatterbox"),
}


def main() -> None:
    (group,) = sys.argv[1:]
    import tts_app

    root = Path(tts_app.__file__).parent
    assert "site-packages" in root.parts, f"tts_app comes from {root}, not from the venv's install"
    extra = tuple(f for folders in FAMILIES.values() for f in folders)
    names = []
    for info in pkgutil.walk_packages([str(root)], "tts_app."):
        relative = info.name.removeprefix("tts_app.").replace(".", "/")
        if info.name.endswith("__main__"):
            continue  # runs the CLI
        in_group = relative.startswith(FAMILIES[group]) if group in FAMILIES else not relative.startswith(extra)
        if in_group:
            names.append(info.name)
    assert len(names) > (50 if group == "base" else 3), names
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            try:
                importlib.import_module(name)
            except ImportError as error:
                sys.exit(f"{group}: {name} does not import in a fresh venv: {error}")
        if group == "chatterbox":
            from tts_app.models.chatterbox.official import official

            for name in ("tts", "models.t3", "models.s3gen"):
                official(name)
    print(f"{group}: {len(names)} modules import")


if __name__ == "__main__":
    main()
