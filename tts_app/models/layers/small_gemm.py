"""A Linear whose products run in numpy's OpenBLAS in a one-thread stage on a CPU, when that is the faster library here.

A decode step multiplies a handful of rows (one per stream) by every weight matrix of the model. torch's CPU
products go through MKL, which on the AMD EPYC this project measures on makes 8 rows x the Pocket TTS flow LM's
matrices in 82-96 ms against OpenBLAS's 42-52 ms (one thread; the same sums, in another order), and larger
products (256 rows x Mimi's) 1.05-1.3x slower. Which library wins depends on the CPU, so ``calibrate`` times both
once per process on a matrix of the model's size and picks; $TTS_APP_SMALL_GEMM (settings) forces one. OpenBLAS
runs one thread for the whole process, so only a thread with one torch intra-op thread (a pipeline stage) uses it;
a thread with more (the prefill, a new row's first audio) keeps torch's threads.

The weight is stored transposed ([in, out] contiguous; the parameter is a [out, in] view of it), the layout
OpenBLAS reads fastest for few rows; torch's path reads either layout. ``load_state_dict`` copies into the
parameter and so keeps the layout.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)

_choice: dict[str, bool] = {}  # "openblas": whether small products use numpy's OpenBLAS (unset: torch)
_lock = threading.Lock()


class Linear(nn.Linear):
    """``nn.Linear`` (same parameters, same state-dict keys) with the small-product path above."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__(in_features, out_features, bias=bias)
        self.weight = nn.Parameter(self.weight.data.t().contiguous().t())  # [out, in] view of [in, out] storage

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight
        if (_choice.get("openblas") and x.device.type == "cpu" and x.dtype == torch.float32 and w.dtype == torch.float32
                and w.stride(0) == 1 and not torch.is_grad_enabled() and torch.get_num_threads() == 1):
            x_MxI = x.reshape(-1, self.in_features)
            y_MxO = torch.from_numpy(np.matmul(x_MxI.numpy(), w.detach().T.numpy()))  # numpy releases the GIL here
            if self.bias is not None:
                y_MxO += self.bias.detach()
            return y_MxO.view(*x.shape[:-1], self.out_features)
        return F.linear(x, w, self.bias)


def one_blas_thread() -> None:
    """numpy's OpenBLAS to one thread, for the process: its products here are small, run from stage threads that
    each own a core, and its idle threads busy-wait after each product (see piper.runtime)."""
    from threadpoolctl import threadpool_limits  # only when small products go to OpenBLAS

    threadpool_limits(1, user_api="blas")


def calibrate(setting: str = "auto", out_in: tuple[int, int] = (4096, 1024), rows: int = 8) -> bool:
    """Pick the library of one-thread products once per process: "openblas", "torch", or "auto" (time both, one thread,
    ``rows`` x a random [out, in] matrix, and keep OpenBLAS only when it is at least 10 % faster). Returns the choice."""
    with _lock:
        if "openblas" in _choice:
            return _choice["openblas"]
        if setting == "auto":
            use = _openblas_is_faster(out_in, rows)
        else:
            use = setting == "openblas"
        if use:
            one_blas_thread()
        _choice["openblas"] = use
        logger.info("one-thread products: %s", "numpy's OpenBLAS" if use else "torch")
        return use


def _openblas_is_faster(out_in: tuple[int, int], rows: int) -> bool:
    from threadpoolctl import threadpool_limits  # only while timing

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1, user_api="blas"):
            w_OxI = torch.randn(out_in[1], out_in[0]).t()  # the layer's layout
            x_MxI = torch.randn(rows, out_in[1])
            t_torch = _best(lambda: F.linear(x_MxI, w_OxI))
            t_blas = _best(lambda: np.matmul(x_MxI.numpy(), w_OxI.T.numpy()))
    finally:
        torch.set_num_threads(before)
    return t_blas < 0.9 * t_torch


def _best(fn, repeats: int = 7) -> float:
    fn()
    best: Optional[float] = None
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return float(best or 0.0)


def reset_for_tests() -> None:
    """Forget the choice (tests pick each path in turn)."""
    with _lock:
        _choice.clear()
