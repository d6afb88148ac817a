"""README: its first screen is what a CPU user needs; what the optional files cost is said; headings stay."""

from __future__ import annotations

import re

from tests.support.paths import REPO
from tts_app.web.ui.common.model_picker import FAST_NOTE

README = (REPO / "README.md").read_text(encoding="utf-8")
# Every section other parts of the project (and other pages) point to.
HEADINGS = [
    "Set up and run", "The app", "OpenAI-compatible speech API", "Word timestamps and captions", "Long documents",
    "Security and limits", "Test", "Command line", "Reading text: normalisation, lexicon, SSML", "Library",
    "How it works", "Voices", "What voice matching does, and does not do",
]


def _first_screen() -> str:
    """From the title to the first section after set-up."""
    body = README[README.index("# tts_app") :]
    return body[: body.index("\n## The app")]


def test_the_first_screen_is_set_up_the_page_and_the_api() -> None:
    first = _first_screen()
    for needed in ("pip install -r requirements.txt", "python app.py", "http://localhost:7860", "/v1/audio/speech",
                   "base_url", "Speak", "Document"):  # fmt: skip
        assert needed in first, needed
    for internal in ("Qwen3", "Chatterbox", "HLS", "imageio-ffmpeg", "OpenVINO", "--precision"):
        assert internal not in first, internal


def test_the_first_screen_says_it_clones_on_a_cpu_with_one_setting() -> None:
    first = _first_screen()
    assert "TTS_APP_MODELS=pocket-tts" in first and "clones" in first and "CPU" in first and "HF_TOKEN" in first


def test_the_optional_files_are_explained() -> None:
    first = _first_screen()
    dev = first[first.index("requirements-dev.txt") :][:400]
    assert "torch" in dev and "transformers" in dev and "GB" in dev
    spaces = first[first.index("packages.txt") :][:300]
    assert "Hugging Face Spaces" in spaces and "apt" in spaces


def test_every_section_heading_is_kept() -> None:
    found = re.findall(r"^#{2,3} (.+)$", README, flags=re.M)
    assert [h for h in HEADINGS if h not in found] == []
    assert found.index("Optional GPU models: Qwen3-TTS and Chatterbox") > found.index("Voices")  # the GPU models last


def test_the_fast_voice_says_what_loading_it_costs() -> None:
    assert re.search(r"TTS_APP_LOAD_MODELS=piper-joe-medium-fast.{0,80}7 s.{0,40}540 MB", README, flags=re.S)
    assert re.search(r"second model in memory, about 540 MB", FAST_NOTE)


def _apt_packages(text: str) -> set[str]:
    """The packages of the first ``apt-get install`` line in ``text`` (options left out)."""
    line = next(line for line in text.splitlines() if "apt-get install" in line)
    words = line.split("apt-get install", 1)[1].split("<")[0].split()
    return {w for w in words if not w.startswith("-")}


def test_the_test_section_gives_the_system_packages_and_scripts_beside_the_test_command() -> None:
    """A new user's `python -m pytest` needs what CI installs: the same apt-get line as .ci/run, the chatterbox
    modules' script and the reference venvs' scripts, next to the test command."""
    from tests.support.system_tools import PACKAGES

    section = README[README.index("\n## Test\n") : README.index("\n## Command line")]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert _apt_packages(section) == _apt_packages(ci)
    assert {p for packages in PACKAGES.values() for p in packages.split()} <= _apt_packages(ci)
    assert "python -m pytest -q" in section and "bash scripts/install_chatterbox.sh" in section
    for script in sorted((REPO / "tests" / "reference_envs").glob("*.sh")):
        assert script.name in section, script.name
    assert "TTS_APP_FAIL_ON_SKIP=1" in section and "apt-get install mpg123" in section
