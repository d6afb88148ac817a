"""The Space recipes' files (spaces/gpu/, spaces/cpu/): each README header, the pins of its requirements and the
``TTS_APP_MODELS`` it tells the Space to set, read for tests/repo/test_space_recipe.py and the HTTP tests that start
the app with them."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.paths import REPO

RECIPE = REPO / "spaces" / "gpu"
CPU_RECIPE = REPO / "spaces" / "cpu"


def header(readme: Path) -> dict:
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{readme} has no YAML header"
    return yaml.safe_load(text.split("---\n", 2)[1])


def pins(path: Path) -> dict[str, str]:
    """name -> pinned version of a requirements file (comments, includes and blank lines left out)."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"{path.name}: {line} is not pinned"
            found[canonicalize_name(req.name)] = spec.version
    return found


def index_options(path: Path) -> list[str]:
    """The option lines of a requirements file (``--extra-index-url URL``...)."""
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip().startswith("-")]


def recipe_models(recipe: Path = RECIPE) -> list[str]:
    found = re.findall(r"`TTS_APP_MODELS=([^`]+)`", (recipe / "README.md").read_text(encoding="utf-8"))
    assert found, f"{recipe}/README.md does not say which TTS_APP_MODELS to set"
    return found[0].split(",")
