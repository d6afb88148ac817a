"""README is the front door: short, its first screen is what a CPU user needs (cloning included), its test command is
CI's, and it carries no figures; every other fact lives under docs/, every figure in docs/benchmarks*.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tests.support.system_tools import PACKAGES
from tts_app import settings
from tts_app.web.ui.common.model_picker import FAST_NOTE

README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = REPO / "docs"
SECTIONS = ["Set up and run", "What the page does", "The API", "The models", "Test", "Documentation"]
PAGES = ["operating.md", "api.md", "page.md", "text.md", "architecture.md", "testing.md", "benchmarks.md",
         "benchmarks-log.md", "models/embedded.md", "models/pocket-tts.md", "models/qwen3.md", "models/chatterbox.md",
         "models/fetching.md"]  # fmt: skip
# A number with a unit, a speed ratio or a quality score: a figure. README carries none of them.
README_FIGURE = re.compile(
    r"\d[\d,.]*\s?(?:ms|s|MB|GB|KB|[KMG]iB|dB|dBFS|kHz|Hz|%|audio-s/s)(?![\w/])|\d(?:\.\d+)?x\b|x faster|\bWER\b|\bRTF\b"
)
# What a measurement looks like in prose: a speed ratio, audio made a second, a word error rate, a level spread.
# Limits and design constants (50 MB uploads, 10 s timeouts, -22 dBFS) are no measurements and may stay in docs/.
MEASURED = re.compile(
    r"\d(?:\.\d+)?x (?:faster|slower|real time|stock|the official)|\d(?:\.\d+)?x\b(?! (?:C|rate))|audio-s/s"
    r"|\bWER\b[^.\n]{0,30}\d|\d[^.\n]{0,12}WER points|\d(?:\.\d+)? dB\b|\bRTF \d"
)


def section(text: str, heading: str) -> str:
    """The body of ``## heading`` in ``text``, up to the next ``## ``."""
    start = text.index(f"\n## {heading}\n")
    following = text.find("\n## ", start + 1)
    return text[start : following if following != -1 else len(text)]


def _first_screen() -> str:
    """From the title to the page's tour: what a visitor reads before scrolling."""
    body = README[README.index("# tts_app") :]
    return body[: body.index("\n## What the page does")]


def test_the_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 200
    assert README.startswith("---\ntitle: tts_app\n")  # the Hugging Face Spaces header stays on top
    found = re.findall(r"^## (.+)$", README, flags=re.M)
    assert [s for s in SECTIONS if s not in found] == []


def test_the_first_screen_is_set_up_and_cloning_on_a_cpu() -> None:
    first = _first_screen()
    for needed in ("pip install -r requirements.txt", "python app.py", "http://localhost:7860", "in your voice",
                   "TTS_APP_MODELS=pocket-tts", "HF_TOKEN", "clones", "CPU", "Pocket TTS"):  # fmt: skip
        assert needed in first, needed
    for internal in ("Qwen3", "Chatterbox", "HLS", "imageio-ffmpeg", "OpenVINO", "--precision"):
        assert internal not in first, internal


def test_the_optional_files_are_explained() -> None:
    first = _first_screen()
    dev = first[first.index("requirements-dev.txt") :][:300]
    assert "torch" in dev and "transformers" in dev
    spaces = first[first.index("packages.txt") :][:300]
    assert "Hugging Face Spaces" in spaces and "apt" in spaces


def test_the_api_section_gives_one_openai_example() -> None:
    api = section(README, "The API")
    assert "/v1/audio/speech" in api and 'base_url="http://localhost:7860/v1"' in api
    assert api.count("```python") == 1 and "(docs/api.md)" in api


@pytest.mark.parametrize("model, page", [("Embedded Piper voice", "embedded"), ("Pocket TTS", "pocket-tts"),
                                         ("Qwen3-TTS", "qwen3"), ("Chatterbox", "chatterbox")])  # fmt: skip
def test_the_models_table_says_what_each_needs_where_it_runs_and_how_to_turn_it_on(model: str, page: str) -> None:
    table = section(README, "The models")
    assert "| what it needs | where it runs | how to turn it on |" in table
    row = next(line for line in table.splitlines() if line.startswith(f"| {model}"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert len(cells) == 5 and all(cells), row
    assert "TTS_APP_" in cells[3] or "always on" in cells[3], cells[3]
    assert f"(docs/models/{page}.md)" in cells[4]


def _apt_packages(text: str) -> set[str]:
    """The packages of the first ``apt-get install`` line in ``text`` (options left out)."""
    line = next(line for line in text.splitlines() if "apt-get install" in line)
    words = line.split("apt-get install", 1)[1].split("<")[0].split()
    return {w for w in words if not w.startswith("-")}


def _ci_test_command() -> str:
    """The pytest command .ci/run runs, without its stdin redirect and comment."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    return re.search(r"(python -m pytest [^<#\n]*?)\s*<", ci).group(1)


@pytest.mark.parametrize("path", ["README.md", "docs/testing.md"])
def test_the_test_section_gives_ci_s_command_system_packages_and_scripts(path: str) -> None:
    """A new user's test run needs what CI installs: the same apt-get line as .ci/run, the chatterbox modules'
    script and the reference venvs' scripts, next to the exact command CI runs."""
    text = (REPO / path).read_text(encoding="utf-8")
    body = section(text, "Test") if path == "README.md" else text
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert _apt_packages(body) == _apt_packages(ci)
    assert {p for packages in PACKAGES.values() for p in packages.split()} <= _apt_packages(ci)
    assert f"\n{_ci_test_command()}\n" in body, _ci_test_command()
    assert "bash scripts/install_chatterbox.sh" in body
    for script in sorted((REPO / "tests" / "reference_envs").glob("*.sh")):
        assert script.name in body, script.name
    assert "TTS_APP_FAIL_ON_SKIP=1" in body and "apt-get install mpg123" in body


def test_the_ci_command_is_found() -> None:
    assert _ci_test_command().startswith("python -m pytest -q")


@pytest.mark.parametrize("page", PAGES)
def test_every_docs_page_exists_and_the_readme_links_it(page: str) -> None:
    assert (DOCS / page).is_file(), page
    assert f"(docs/{page})" in README or f"](docs/{page}#" in README, page


def test_the_readme_carries_no_figures() -> None:
    assert README_FIGURE.findall(README) == []


def _prose(path: Path) -> str:
    """A docs page without its code blocks and without the settings table (generated from tts_app/settings.py)."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    if settings.TABLE_BEGIN in text:
        text = text[: text.index(settings.TABLE_BEGIN)] + text[text.index(settings.TABLE_END) :]
    return text


@pytest.mark.parametrize("page", [p for p in PAGES if not p.startswith("benchmarks")])
def test_measured_figures_live_only_in_the_benchmarks_pages(page: str) -> None:
    assert MEASURED.findall(_prose(DOCS / page)) == [], f"move the figure to docs/benchmarks.md and link it from {page}"


def test_the_figure_checks_catch_figures() -> None:
    """The two patterns above would fail a figure: guards against a pattern that matches nothing."""
    for figure in ("runs 1.46x faster", "0.078 s", "1.44 GB", "WER 28.5 %", "3.9-7.6 dB", "7.9 audio-s/s"):
        assert README_FIGURE.search(figure), figure
    for figure in ("1.46x faster", "WER 28.5", "17 WER points", "3.9-7.6 dB", "8.3 audio-s/s", "2.34x real time"):
        assert MEASURED.search(figure), figure
    for limit in ("uploads at most 50 MB", "-22 dBFS", "the 0.75 x C burst", "its eight-times rate"):
        assert not MEASURED.search(limit), limit


def test_the_fast_voice_s_cost_is_one_figure_the_page_repeats() -> None:
    """FAST_NOTE (the model picker's line) quotes the figure docs/benchmarks.md holds for loading the fast voice."""
    row = next(line for line in (DOCS / "benchmarks.md").read_text(encoding="utf-8").splitlines()
               if "piper-joe-medium-fast" in line)  # fmt: skip
    measured = re.search(r"about 7 s and (\d+ MB) more", row)
    assert measured, row
    assert re.search(rf"second model in memory, about {measured.group(1)}", FAST_NOTE)


def _markers() -> list[str]:
    """The pytest markers pyproject.toml declares (each a lane besides the fast one)."""
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    block = pyproject[pyproject.index("markers = [") :].split("]", 1)[0]
    return re.findall(r'"(\w+):', block)


def test_the_testing_page_has_a_lane_a_marker_and_a_row_a_system_package() -> None:
    testing = (DOCS / "testing.md").read_text(encoding="utf-8")
    times = section(testing, "Lane times")
    assert "| lane | command | tests | time | machine | date |" in times
    assert _markers() and all(f"`python -m pytest -m {m}`" in times for m in _markers()), _markers()
    assert f"`{_ci_test_command()}`" in times
    packages = section(testing, "System packages")
    listed = {
        p for cells in re.findall(r"^\| (`[^|]+`) \|", packages, flags=re.M) for p in re.findall(r"`([^`]+)`", cells)
    }
    assert listed == _apt_packages((REPO / ".ci" / "run").read_text(encoding="utf-8"))
