"""Building (or reusing) an official reference venv and the random-weight fixture made in it.

The venv script (tests/reference_envs/NAME.sh) prints its python on its last stdout line; the fixture
script writes OUT/checkpoint and OUT/reference.pt. Both are cached under ~/.cache/tts_app/reference_envs
(or $TTS_APP_REFERENCE_ENVS), keyed by the hash of the scripts and pins, and rebuilt when they change.
Without them the tests skip with the reason; with CI=true (or TTS_APP_REQUIRE_REFERENCE=1) they fail.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.paths import REPO

REF_DIR = REPO / "tests" / "reference_envs"
VENV_TIMEOUT_S = 40 * 60
FIXTURE_TIMEOUT_S = 10 * 60


def required() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes") or os.environ.get("TTS_APP_REQUIRE_REFERENCE") == "1"


def unavailable(what: str, reason: str) -> None:
    if required():
        pytest.fail(f"official {what} reference unavailable: {reason}", pytrace=False)
    pytest.skip(f"official {what} reference unavailable (set CI=true to fail instead): {reason}")


def cache_root() -> Path:
    return Path(os.environ.get("TTS_APP_REFERENCE_ENVS", Path.home() / ".cache" / "tts_app" / "reference_envs"))


def run(cmd: list[str], timeout: int, what: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # PYTHON: the interpreter the venv scripts make a venv from (a venv's python makes one from its base).
    full_env = {**os.environ, "PYTHON": os.environ.get("PYTHON", sys.executable), **(env or {})}
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO, stdin=subprocess.DEVNULL, env=full_env)
    except subprocess.TimeoutExpired:
        unavailable(what, f"{cmd[0]} ran past {timeout} s")
        raise  # unreachable: unavailable() raises


def fixture_dir(name: str, what: str) -> Path:
    """OUT for tests/reference_envs/{name}.sh + {name}_make_fixture.py, built once per change of their files."""
    h = hashlib.sha256()
    for f in (f"{name}.sh", f"{name}_requirements.txt", f"{name}_make_fixture.py"):
        h.update((REF_DIR / f).read_bytes())
    out = cache_root() / "fixtures" / f"{name}-{h.hexdigest()[:16]}"
    if (out / "reference.pt").is_file():
        return out
    env = run(["bash", str(REF_DIR / f"{name}.sh")], VENV_TIMEOUT_S, what)
    if env.returncode != 0:
        unavailable(what, f"{name}.sh failed: {env.stderr.strip().splitlines()[-1:]}")
    python = env.stdout.strip().splitlines()[-1]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    made = run([python, str(REF_DIR / f"{name}_make_fixture.py"), str(tmp)], FIXTURE_TIMEOUT_S, what)
    if made.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        unavailable(what, f"the fixture script failed: {made.stderr.strip()[-2000:]}")
    if out.exists():  # a concurrent run finished first
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        tmp.rename(out)
    return out
