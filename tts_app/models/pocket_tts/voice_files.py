"""A Pocket TTS checkpoint's saved voices: name -> file, read from the folder's listing alone (no torch), so the
catalogue can name them before the model loads."""

from __future__ import annotations

from pathlib import Path

VOICE_FOLDERS = ("voices", "embeddings")  # where the official layouts keep them; the first of a name wins


def saved_voice_files(folder: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for sub in VOICE_FOLDERS:
        if (folder / sub).is_dir():
            for f in sorted((folder / sub).glob("*.safetensors")):
                found.setdefault(f.stem, f)
    return found
