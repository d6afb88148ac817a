"""A Qwen3-only install stays light: the Qwen3-TTS serving path (engine, backend, word alignment) speaks a line
with piper-tts made unimportable, and its samples are those of the same checkpoint spoken with piper installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tests.support.qwen3_tiny import tiny_backend, write_checkpoint

pytestmark = pytest.mark.usefixtures("one_thread")

LINE = "Hello there, world."

SPEAK = """
import hashlib, sys
import torch
torch.set_num_threads(1)
from tts_app.audio.wav_io import pcm16_array
from tts_app.backends.qwen3 import Qwen3Backend
from tts_app.engine import Engine, SpeechParams
from tts_app.models.qwen3.sampling import SamplingParams

backend = Qwen3Backend.from_pretrained(sys.argv[1], device="cpu", sampling=SamplingParams(max_new_tokens=9))
engine = Engine(backend=backend)
try:
    handle = engine.submit(sys.argv[2], SpeechParams(seed=3))
    samples = pcm16_array(handle.result(timeout=300))
finally:
    engine.close()
print(hashlib.sha256(samples.tobytes()).hexdigest(), samples.size, len(handle.words))
print(sorted(m for m in sys.modules if m == "piper" or m.startswith("piper.")))
"""

# Any import of piper (or piper.*) fails, as it would where piper-tts is not installed.
BLOCK_PIPER = """
import importlib.abc, sys

class NoPiper(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "piper" or name.startswith("piper."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None

sys.meta_path.insert(0, NoPiper())
"""


def _speak(folder: Path, block_piper: bool) -> list[str]:
    code = (BLOCK_PIPER if block_piper else "") + SPEAK
    r = subprocess.run([sys.executable, "-c", code, str(folder), LINE], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.splitlines()


def test_qwen3_speaks_without_piper_installed(tmp_path: Path) -> None:
    write_checkpoint(tiny_backend(), tmp_path)
    blocked = _speak(tmp_path, block_piper=True)
    assert blocked[1] == "[]"  # nothing of piper was imported
    digest, size, words = blocked[0].split()
    assert int(size) > 0 and int(words) == 3  # audio, and a timing for each of the line's words (aligned)
    assert blocked[0] == _speak(tmp_path, block_piper=False)[0]  # the same samples as with piper importable


def test_the_blocker_does_block_piper() -> None:
    """The check above can fail: with the blocker, the embedded voice's text path cannot import piper."""
    code = BLOCK_PIPER + "from tts_app.text import phonemize\nphonemize('hello', 'en-us')\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 1 and "No module named 'piper' (blocked by the test)" in r.stderr
