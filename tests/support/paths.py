"""Where the tests find the checkout, their data and their artifacts."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
ARTIFACTS = REPO / "tests" / "artifacts"  # ignored by git: screenshots, logs and measurements
