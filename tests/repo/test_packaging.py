"""pyproject.toml and the requirements files: ranges there, exact pins here, one pin per package, every import
declared; and the wheel carries the package's data files."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.paths import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
# Each extra (or the base install) and the requirements file it mirrors.
MIRRORS = {
    "dependencies": "requirements.txt",
    "qwen3": "requirements-gpu.txt",
    "chatterbox": "requirements-chatterbox.txt",
    "dev": "requirements-dev.txt",
}
# What each requirements file includes with ``-r``, and each extra with ``tts_app[...]``: the same layering.
INCLUDES = {"requirements-dev.txt": ["requirements.txt", "requirements-gpu.txt", "requirements-chatterbox.txt"]}
EXTRA_INCLUDES = {"qwen3": [], "chatterbox": ["tts_app[qwen3]"], "dev": ["tts_app[chatterbox]"], "gpu": ["tts_app[qwen3]"]}
# Imported by name at run time (importlib), so no import statement shows them: the official chatterbox-tts
# modules (tts_app/models/chatterbox/official.py), installed --no-deps by scripts/install_chatterbox.sh.
DYNAMIC = {"chatterbox"}
# Model families whose modules need an extra (torch and the rest); every other module runs on requirements.txt.
EXTRA_FOLDERS = ("models/qwen3", "models/chatterbox", "models/pocket_tts", "models/layers", "backends/qwen3",
                 "backends/chatterbox", "backends/pocket_tts")


def _lines(path: Path) -> list[str]:
    lines = (re.sub(r"\s+#.*$", "", line).strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _pins(path: Path) -> dict[str, str]:
    """name -> exact version of a requirements file's own lines (its ``-r`` includes left out)."""
    found = {}
    for line in _lines(path):
        if line.startswith("-r"):
            continue
        req = Requirement(line)
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"{path.name}: {line} is not an exact pin"
        name = canonicalize_name(req.name)
        assert name not in found, f"{path.name} pins {name} twice"
        found[name] = specs[0].version
    return found


def _ranges(requirements: list[str]) -> dict[str, Requirement]:
    """name -> requirement of an extra's own entries (its ``tts_app[...]`` references left out)."""
    return {canonicalize_name(r.name): r for r in map(Requirement, requirements) if canonicalize_name(r.name) != "tts-app"}


def _declared(name: str) -> list[str]:
    project = PYPROJECT["project"]
    return project["dependencies"] if name == "dependencies" else project["optional-dependencies"][name]


def test_pyproject_has_ranges_and_each_pin_lies_in_its_range() -> None:
    for name, file in MIRRORS.items():
        ranges, pins = _ranges(_declared(name)), _pins(REPO / file)
        assert set(ranges) == set(pins), f"pyproject's {name} and {file} name different packages: {set(ranges) ^ set(pins)}"
        for package, req in ranges.items():
            operators = {spec.operator for spec in req.specifier}
            assert ">=" in operators and "<" in operators, f"pyproject's {name}: {req} is not a range (>= and <)"
            assert req.specifier.contains(pins[package], prereleases=True), f"{file} pins {package}=={pins[package]} outside {req}"


def test_the_includes_are_the_same_on_both_sides() -> None:
    for file in MIRRORS.values():
        included = [line.split(None, 1)[1] for line in _lines(REPO / file) if line.startswith("-r")]
        assert included == INCLUDES.get(file, []), f"{file} includes {included}"
    for extra, refs in EXTRA_INCLUDES.items():
        assert [r for r in _declared(extra) if r.startswith("tts_app[")] == refs, f"pyproject's {extra}"
    assert _declared("gpu") == ["tts_app[qwen3]"]


def test_each_package_is_pinned_once() -> None:
    seen: dict[str, str] = {}
    for file in MIRRORS.values():
        for package in _pins(REPO / file):
            assert package not in seen, f"{package} is pinned in {seen.get(package)} and {file}: pin it once"
            seen[package] = file


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(top-level names imported at module level, inside functions) by one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_functions = {n.lineno for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                    for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))}
    top: set[str] = set()
    inner: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        (inner if node.lineno in in_functions else top).update(n.split(".")[0] for n in names)
    return top, inner


def _third_party(names: set[str]) -> set[str]:
    return {n for n in names if n not in sys.stdlib_module_names and n not in ("tts_app", "__future__")}


def test_every_third_party_import_of_the_package_is_declared() -> None:
    """Each module's imports map (by the installed distributions' metadata) to a package pinned in the file its
    layer installs: requirements.txt for the app, plus requirements-gpu.txt and requirements-chatterbox.txt for the
    model families that need torch. A framework used only through another package's dependency fails here."""
    distributions = importlib.metadata.packages_distributions()
    base = set(_pins(REPO / "requirements.txt"))
    everything = base | set(_pins(REPO / "requirements-gpu.txt")) | set(_pins(REPO / "requirements-chatterbox.txt"))
    missing, checked = [], 0
    for path in sorted((REPO / "tts_app").rglob("*.py")):
        relative = path.relative_to(REPO / "tts_app").as_posix()
        top, inner = _imports(path)
        needs_extra = relative.startswith(EXTRA_FOLDERS)
        for name in sorted(_third_party(top | inner) - DYNAMIC):
            packages = {canonicalize_name(d) for d in distributions.get(name, [name])}
            allowed = everything if needs_extra or name not in top else base
            checked += 1
            if not packages & allowed:
                where = "requirements.txt" if allowed is base else "any requirements file"
                missing.append(f"tts_app/{relative} imports {name} ({', '.join(sorted(packages))}), not pinned in {where}")
    assert not missing, "\n".join(missing)
    assert checked > 100  # numpy alone is imported by dozens of modules: the scan saw the package


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
