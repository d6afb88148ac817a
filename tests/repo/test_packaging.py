"""pyproject.toml: its pins are the requirements files' pins, and the wheel carries the package's data files."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
# Each extra (or the base install) and the requirements file it mirrors.
MIRRORS = {
    "dependencies": "requirements.txt",
    "qwen3": "requirements-gpu.txt",
    "chatterbox": "requirements-chatterbox.txt",
    "dev": "requirements-dev.txt",
}


def _pins(path: Path) -> set[str]:
    """The requirement lines of a requirements file: comments, blank lines and ``-r`` includes left out."""
    lines = (re.sub(r"\s+#.*$", "", line).strip() for line in path.read_text(encoding="utf-8").splitlines())
    return {line for line in lines if line and not line.startswith(("#", "-r"))}


def _own(requirements: list[str]) -> set[str]:
    """An extra's pins without its references to other extras (``tts_app[qwen3]``)."""
    return {req for req in requirements if not req.startswith("tts_app[")}


def test_every_pin_is_the_requirements_files_pin() -> None:
    project = PYPROJECT["project"]
    extras = project["optional-dependencies"]
    for name, file in MIRRORS.items():
        declared = project["dependencies"] if name == "dependencies" else extras[name]
        assert _own(declared) == _pins(REPO / file), f"pyproject's {name} differs from {file}"
    # The includes of requirements-dev.txt, and Chatterbox's torch stack, come through the qwen3 extra.
    assert "tts_app[qwen3]" in extras["dev"] and "tts_app[qwen3]" in extras["chatterbox"]
    assert extras["gpu"] == ["tts_app[qwen3]"]


def test_the_built_in_voices_live_in_the_top_level_assets_with_their_attribution() -> None:
    from tts_app.assets import BUILTIN_VOICES_DIR
    from tts_app.catalog.voices import builtin_voices

    assert BUILTIN_VOICES_DIR == REPO / "assets" / "voices"  # the top-level assets/ the design card names
    assert (BUILTIN_VOICES_DIR / "SOURCES.md").is_file()
    voices = builtin_voices()
    assert voices and all(path.parent == BUILTIN_VOICES_DIR for path in voices.values())
    sources = (BUILTIN_VOICES_DIR / "SOURCES.md").read_text(encoding="utf-8")
    assert all(path.name in sources for path in voices.values()), "every built-in clip is attributed"


@pytest.mark.slow
def test_the_wheel_carries_the_data_files(tmp_path: Path) -> None:
    # Built from a copy: setuptools writes build/ and *.egg-info beside the sources it builds.
    source = tmp_path / "source"
    for folder in ("tts_app", "assets"):
        shutil.copytree(REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, source / name)
    # --no-build-isolation: the installed setuptools builds it, no download.
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(source)],
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = tmp_path.glob("tts_app-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    data = {path.relative_to(REPO).as_posix() for path in (REPO / "tts_app").rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc")}
    data |= {"tts_app/" + path.relative_to(REPO).as_posix() for path in (REPO / "assets").rglob("*") if path.is_file()}
    assert data and data <= names, sorted(data - names)
    assert "tts_app/assets/voices/SOURCES.md" in names and "tts_app/voice/data/model_voice_joe.flac" in names
    assert not [name for name in names if name.startswith("tests/")], "the tests stay out of the wheel"
    # Installed and used from outside the checkout, the package finds its voices inside itself.
    target = tmp_path / "installed"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)],
                               capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert installed.returncode == 0, installed.stderr[-2000:]
    probe = ("from tts_app.assets import BUILTIN_VOICES_DIR; from tts_app.catalog.voices import builtin_voices; "
             "print(BUILTIN_VOICES_DIR); print(sorted(builtin_voices()))")
    found = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(target)},
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert found.returncode == 0, found.stderr[-2000:]
    folder, voices = found.stdout.splitlines()
    assert Path(folder) == target / "tts_app" / "assets" / "voices" and "lj_female_us" in voices
