"""A Linear whose products run in numpy's OpenBLAS in a one-thread stage on a CPU, when that is the faster library here.

A decode step multiplies a handful of rows (one per stream) by every weight matrix of the model. torch's CPU
products go through MKL, which on the AMD EPYC this project measures on makes 8 rows x the Pocket TTS flow LM's
matrices in 82-96 ms against OpenBLAS's 42-52 ms (one thread; the same sums, in another order), and larger
products (256 rows x Mimi's) 1.05-1.3x slower. Which library wins depends on the CPU, so ``calibrate`` times both
once per process on a matrix of the model's size and picks; $TTS_APP_SMALL_GEMM (settings) forces one. OpenBLAS
runs one thread for the whole process, so only a thread with one torch intra-op thread (a pipeline stage) uses it;
a thread with more (the prefill, a new row's first audio) keeps torch's threads.

OpenBLAS's kernels take rows four at a time: on that EPYC (0.3.31, one thread, weights streamed from memory as a
decode step does), [1024, 4096] took 1.0-1.2 ms for 1 row, 2.6 ms for 2 rows (2 x 1 row as one gemv each: 2.1 ms),
3.4-3.5 ms for 3 or 5 rows and 2.3-2.4 ms for 4 rows (3 rows padded with a zero row to 4: 2.3 ms). So ``calibrate`` also
times, for each count of 2..8 rows, the product as it is, one gemv per row and padded to a multiple of four, and
keeps the fastest (``_ways``).

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

from tts_app.models.layers.blas_threads import one_blas_thread

logger = logging.getLogger(__name__)

_choice: dict[str, bool] = {}  # "openblas": whether small products use numpy's OpenBLAS (unset: torch)
_ways: dict[int, str] = {}  # rows -> "rows" (one gemv each) or "padded" (to a multiple of 4); unset: as they are
_MOST_ROWS = 8  # the row counts timed: a decode step's batch
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
            x_MxI = x.reshape(-1, self.in_features).numpy()
            y_MxO = torch.from_numpy(_product(x_MxI, w.detach().T.numpy()))
            if self.bias is not None:
                y_MxO += self.bias.detach()
            return y_MxO.view(*x.shape[:-1], self.out_features)
        return F.linear(x, w, self.bias)


def _product(x_MxI: np.ndarray, w_IxO: np.ndarray) -> np.ndarray:
    """x @ w in OpenBLAS (numpy releases the GIL), the fastest way for this many rows (``_ways``)."""
    return _product_as(_ways.get(x_MxI.shape[0], "as_is"), x_MxI, w_IxO)


def _product_as(way: str, x_MxI: np.ndarray, w_IxO: np.ndarray) -> np.ndarray:
    m = x_MxI.shape[0]
    if way == "rows":
        y_MxO = np.empty((m, w_IxO.shape[1]), dtype=np.float32)
        for i in range(m):
            np.matmul(x_MxI[i], w_IxO, out=y_MxO[i])
        return y_MxO
    if way == "padded":
        x_PxI = np.zeros((-(-m // 4) * 4, x_MxI.shape[1]), dtype=np.float32)
        x_PxI[:m] = x_MxI
        return np.matmul(x_PxI, w_IxO)[:m]
    return np.matmul(x_MxI, w_IxO)


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
            _ways.update(_fastest_ways(out_in))
        _choice["openblas"] = use
        logger.info("one-thread products: %s", f"numpy's OpenBLAS {_ways}" if use else "torch")
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


def _fastest_ways(out_in: tuple[int, int], matrices: int = 3) -> dict[int, str]:
    """For 2.._MOST_ROWS rows, the fastest way ("rows", "padded") where it beats the product as it is. Timed over
    ``matrices`` weights, more than a cache holds, so that they stream from memory as a decode step's do."""
    from threadpoolctl import threadpool_limits  # only while timing

    rng = np.random.default_rng(0)
    w_NxIxO = rng.standard_normal((matrices, out_in[1], out_in[0]), dtype=np.float32)
    ways: dict[int, str] = {}
    with threadpool_limits(1, user_api="blas"):
        for m in range(2, _MOST_ROWS + 1):
            x_MxI = rng.standard_normal((m, out_in[1]), dtype=np.float32)
            candidates = ["as_is", "rows"] + (["padded"] if m % 4 else [])
            times = {way: _best(lambda: [_product_as(way, x_MxI, w) for w in w_NxIxO], repeats=3) for way in candidates}
            best = min(times, key=times.__getitem__)
            if best != "as_is":
                ways[m] = best
    return ways


def _best(fn, repeats: int = 7) -> float:
    fn()
    best: Optional[float] = None
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return float(best or 0.0)
