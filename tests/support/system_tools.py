"""The system programs some tests run, each with the Debian package that installs it.

On a developer's machine without one, the tests that need it skip with one line naming the package
(``mpg123 is not installed (apt-get install mpg123)``); CI installs them all (.ci/run: APT_PACKAGES)
and, with TTS_APP_FAIL_ON_SKIP=1, fails on any skip (tests/support/skip_guard.py), so a missing tool
never passes there. The README's Test section and docs/testing.md hold the same apt-get line (tests/repo/test_readme.py).
"""

from __future__ import annotations

import shutil

import pytest

# Program -> the Debian package that installs it.
PACKAGES = {
    "mpg123": "mpg123",  # decodes the API's MP3 as libmpg123-based players do (tests/api/test_openai_formats.py)
    "nginx": "nginx",  # a real reverse proxy in front of the server (tests/e2e/test_visitor_identity.py)
    "chromium": "chromium chromium-driver",  # the browser tests (Playwright drives Debian's chromium)
}
# Beside PATH: Debian puts nginx in /usr/sbin, which a non-root PATH often lacks.
_SBIN = "/usr/sbin"


def missing_reason(name: str) -> str:
    """The one line a test that needs ``name`` skips with."""
    return f"{name} is not installed (apt-get install {PACKAGES[name]})"


def find_tool(name: str) -> str | None:
    """The path of program ``name`` (on PATH, else in /usr/sbin), or None."""
    return shutil.which(name) or shutil.which(name, path=_SBIN)


def system_tool(name: str) -> str:
    """The path of program ``name``; the test skips with ``missing_reason(name)`` when it is not installed."""
    found = find_tool(name)
    if found is None:
        pytest.skip(missing_reason(name))
    return found
