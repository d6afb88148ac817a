"""The Space recipes. GPU (spaces/gpu/): its README header parses as a Space's, its build-time download and
``TTS_APP_MODELS`` name checkpoints the app can fetch and load, its requirements are the app's own pins plus the
Qwen3-TTS backend's, those pins agree with one another, and each has a wheel for the Space on the package index.
CPU (spaces/cpu/): the free CPU hardware, ``TTS_APP_MODELS=pocket-tts`` and the ``HF_TOKEN`` secret documented, the
same pins with torch's CPU build from PyTorch's CPU index (never PyPI's CUDA build), agreeing with one another, a wheel
for each on the index (torch's CPU wheels live on PyTorch's index, which these machines cannot reach: PyPI must
have the same torch version).

(tests/api/test_space_models_http.py and tests/api/test_cpu_space_http.py start ``app.py`` with each recipe's
``TTS_APP_MODELS`` against a fake hub.)
"""

from __future__ import annotations

import importlib.metadata
import re
from fnmatch import fnmatch
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from tests.support.paths import REPO
from tests.support.space_recipe import CPU_RECIPE, RECIPE, header, index_options, pins, recipe_models
from tts_app.models.available import FETCHABLE, HUB_CHECKPOINTS, POCKET_MODEL_IDS

# The Spaces configuration reference's GPU flavours (https://huggingface.co/docs/hub/spaces-config-reference).
CPU_FLAVOURS = {"cpu-basic", "cpu-upgrade"}
TORCH_CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"  # PyTorch's install instructions, CPU
GPU_FLAVOURS = {"t4-small", "t4-medium", "l4x1", "l4x4", "a10g-small", "a10g-large", "a10g-largex2", "a10g-largex4", "a100-large"}
TEST_ONLY = {"transformers"}  # in requirements-gpu.txt for the reference tests; the app never imports it
INDEX = "https://pypi.org/simple"


@pytest.mark.parametrize("recipe, flavours", [(RECIPE, GPU_FLAVOURS), (CPU_RECIPE, CPU_FLAVOURS)], ids=["gpu", "cpu"])
def test_the_header_is_a_spaces(recipe: Path, flavours: set[str]) -> None:
    space, root = header(recipe / "README.md"), header(REPO / "README.md")
    assert space["sdk"] == "gradio" and space["sdk_version"] == pins(REPO / "requirements.txt")["gradio"]
    assert space["python_version"] == root["python_version"] == "3.11"
    assert (REPO / space["app_file"]).is_file()
    assert space["suggested_hardware"] in flavours
    for key in ("title", "emoji", "colorFrom", "colorTo", "license", "short_description"):
        assert isinstance(space[key], str) and space[key], key
    assert len(space["short_description"]) <= 60  # the hub refuses a longer one


def test_the_build_time_download_is_what_the_loader_reads(tmp_path: Path) -> None:
    """Each preload_from_hub entry names a fetchable checkpoint's repository and files the loader reads, enough
    for a complete checkpoint; together they cover every model the recipe puts in TTS_APP_MODELS."""
    preloaded = {}
    for entry in header(RECIPE / "README.md")["preload_from_hub"]:
        repo, files = entry.split()
        model_id = next(m for m, spec in HUB_CHECKPOINTS.items() if spec.repo == repo)
        spec = HUB_CHECKPOINTS[model_id]
        folder = tmp_path / model_id
        for name in files.split(","):
            assert any(fnmatch(name, pattern) for pattern in spec.files), f"{repo}: {name} is not read by the loader"
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(b"")
        assert spec.complete(folder), f"{repo}: {files} is not a whole checkpoint"
        preloaded[model_id] = repo
    models = recipe_models()
    assert models and set(models) <= set(FETCHABLE) and set(models) <= set(preloaded)


def test_the_cpu_recipe_clones_with_one_setting_and_the_token_secret() -> None:
    text = (CPU_RECIPE / "README.md").read_text(encoding="utf-8")
    assert recipe_models(CPU_RECIPE) == ["pocket-tts"] and set(recipe_models(CPU_RECIPE)) <= set(FETCHABLE)
    assert set(recipe_models(CPU_RECIPE)) <= set(POCKET_MODEL_IDS)
    assert "secret `HF_TOKEN`" in text and "kyutai/pocket-tts" in text and "saved voices only: cloning is off" in text


def _expected_pins() -> dict[str, str]:
    expected = pins(REPO / "requirements.txt") | pins(REPO / "requirements-gpu.txt")
    for name in TEST_ONLY:
        expected.pop(name)
    return expected


def test_the_requirements_are_the_apps_pins_and_the_gpu_backends() -> None:
    assert pins(RECIPE / "requirements.txt") == _expected_pins()
    assert index_options(RECIPE / "requirements.txt") == []  # PyPI's torch is the CUDA build a GPU Space runs


def test_the_cpu_requirements_are_the_same_pins_with_torchs_cpu_build() -> None:
    """The same packages at the same versions, torch's local label ``+cpu`` and PyTorch's CPU index as an extra one (the
    default torch wheel for Linux x86-64 is the CUDA build: gigabytes a free CPU Space would download for nothing)."""
    cpu, expected = pins(CPU_RECIPE / "requirements.txt"), _expected_pins()
    assert cpu.pop("torch") == expected.pop("torch") + "+cpu"
    assert cpu == expected
    assert index_options(CPU_RECIPE / "requirements.txt") == [TORCH_CPU_INDEX]


@pytest.mark.parametrize("recipe", [RECIPE, CPU_RECIPE], ids=["gpu", "cpu"])
def test_the_pins_agree_with_one_another(recipe: Path) -> None:
    """Offline: every pinned package installed here at its pinned version (torch: its CPU build, same metadata)
    lists its requirements; each one on another pinned package must accept that pin (what a resolver checks)."""
    pinned = pins(recipe / "requirements.txt")
    environment = {"python_version": "3.11", "python_full_version": "3.11.7", "sys_platform": "linux",
                   "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
                   "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
    checked, clashes = 0, []
    for name, version in pinned.items():
        installed = importlib.metadata.version(name)
        assert Version(installed).public == Version(version).public, f"{name} {installed} installed, {version} pinned"
        for line in importlib.metadata.requires(name) or []:
            req = Requirement(line)
            other = canonicalize_name(req.name)
            if other in pinned and (req.marker is None or req.marker.evaluate(environment)):
                checked += 1
                if not req.specifier.contains(pinned[other], prereleases=True):
                    clashes.append(f"{name}=={version} needs {req}, pinned {other}=={pinned[other]}")
    assert not clashes, clashes
    assert checked >= 5  # gradio's numpy and huggingface_hub, piper's onnxruntime, ...: the check has something to check


def _fits_the_space(filename: str) -> bool:
    """A wheel pip installs on CPython 3.11, Linux x86-64 (glibc): cp311, abi3 of an older CPython 3, or pure Python."""
    if not filename.endswith(".whl"):
        return False
    _name, _version, _build, tags = parse_wheel_filename(filename)
    return any(
        (tag.interpreter in ("py3", "py311", "cp311") or (tag.abi == "abi3" and re.fullmatch(r"cp3(\d+)", tag.interpreter)
                                                          and int(tag.interpreter[3:]) <= 11))
        and tag.abi in ("cp311", "abi3", "none")
        and (tag.platform == "any" or (tag.platform.startswith(("manylinux", "linux_")) and tag.platform.endswith("x86_64")))
        for tag in tags
    )


@pytest.mark.slow  # asks the package index (a network call per pin)
@pytest.mark.parametrize("recipe", [RECIPE, CPU_RECIPE], ids=["gpu", "cpu"])
def test_every_pin_has_a_wheel_for_the_space_on_the_index(recipe: Path) -> None:
    """What ``pip install --dry-run`` would find first: each pinned version, with a wheel a CPython 3.11 Linux
    x86-64 Space installs (resolving the whole set would download every wheel, 1.5 GB with CUDA torch). torch+cpu is
    looked up by its public version: its CPU wheel is on PyTorch's index, out of these machines' reach."""
    missing = []
    with httpx.Client(timeout=30, headers={"Accept": "application/vnd.pypi.simple.v1+json"}) as http:
        try:
            http.get(f"{INDEX}/pip/").raise_for_status()
        except httpx.HTTPError as error:
            pytest.skip(f"the package index cannot be reached: {error}")
        for name, version in pins(recipe / "requirements.txt").items():
            version = Version(version).public
            files = http.get(f"{INDEX}/{name}/").raise_for_status().json()["files"]
            wheels = [f["filename"] for f in files if _fits_the_space(f["filename"]) and not f.get("yanked")
                      and parse_wheel_filename(f["filename"])[1] == Version(version)]
            if not wheels:
                missing.append(f"{name}=={version}")
    assert not missing, f"no wheel for CPython 3.11 on Linux x86-64: {missing}"
