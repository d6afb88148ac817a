"""The checkout holds sources, not build or download leftovers."""

from __future__ import annotations

from tests.support.paths import REPO

LEFTOVERS = ("*.whl", "*.tar.gz", "*.zip", "*.egg")


def test_no_packages_lie_at_the_repo_root() -> None:
    found = sorted(path.name for pattern in LEFTOVERS for path in REPO.glob(pattern))
    assert not found, f"stray files at the repo root: {found}"
