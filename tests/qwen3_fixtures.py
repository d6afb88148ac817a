"""Setup shared by the Qwen3 test modules (tests/test_qwen3_*.py).

Import ``one_thread`` into a test module to use it there: it is module-scoped and autouse,
so it applies to every test of the importing module and to no other.
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # Tiny matmuls on a shared 2-core box: one intra-op thread avoids OpenMP contention stalls.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
