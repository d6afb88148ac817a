"""Fixtures of the unit tests: one torch thread for the tiny torch models."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """One torch intra-op thread for a module's tests (``pytestmark = pytest.mark.usefixtures("one_thread")``)."""
    # Imported here, not at the top: only the torch models' tests need torch, and it takes seconds to import.
    import torch

    # Tiny matmuls on a shared 2-core box: one intra-op thread avoids OpenMP contention stalls.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
