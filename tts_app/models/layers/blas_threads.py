"""numpy's OpenBLAS held to one thread for the process (no torch: Piper's path uses it too)."""

from __future__ import annotations


def one_blas_thread() -> None:
    """numpy's OpenBLAS to one thread, for the process. Its idle threads busy-wait after each product: on 2 cores
    the OpenVINO call after a 200x513 @ 513x40 product (the voice filter's) ran at half speed, 32 -> 66 ms, and
    Pocket TTS's small products run from stage threads that each own a core."""
    from threadpoolctl import threadpool_limits  # only where BLAS threads are capped

    threadpool_limits(1, user_api="blas")
