"""The Linear of one-thread stages: nn.Linear's parameters and outputs, on either library."""

from __future__ import annotations

from collections.abc import Iterator
from unittest import mock

import numpy as np
import pytest
import torch
from torch import nn

from tts_app.models.layers import small_gemm
from tts_app.models.layers.small_gemm import Linear
from tts_app.models.layers.stage_thread import StageThread
from tests.support.internals import reset_small_gemm


@pytest.fixture
def library() -> Iterator[None]:
    reset_small_gemm()
    yield
    reset_small_gemm()


def _pair(bias: bool) -> tuple[nn.Linear, Linear]:
    torch.manual_seed(0)
    ref = nn.Linear(48, 80, bias=bias)
    ours = Linear(48, 80, bias=bias)
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def test_it_loads_nn_linear_s_state_dict_and_keeps_the_transposed_layout() -> None:
    ref, ours = _pair(bias=True)
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert ours.weight.shape == ref.weight.shape and ours.weight.stride() == (1, 80)  # [in, out] storage
    assert torch.equal(ours.weight, ref.weight)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("choice", ["openblas", "torch"])
def test_a_one_thread_stage_gives_nn_linear_s_output_on_either_library(library: None, choice: str, bias: bool) -> None:
    small_gemm.calibrate(choice)
    ref, ours = _pair(bias)
    x = torch.randn(2, 3, 48)  # [B, T, in]
    stage = StageThread("test-gemm", 1)
    calls = mock.patch.object(small_gemm.np, "matmul", wraps=np.matmul)
    with calls as matmul:  # no_grad is per thread: inside the stage's call, as the generator's are
        y = stage.run(torch.no_grad()(ours), x)
        one_d = stage.run(torch.no_grad()(ours), x[0, 0])
    stage.close()
    assert matmul.called == (choice == "openblas")
    assert y.shape == (2, 3, 80) and one_d.shape == (80,)
    with torch.no_grad():
        torch.testing.assert_close(y, ref(x), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(one_d, ref(x[0, 0]), rtol=1e-5, atol=1e-5)


def test_torch_s_threads_and_autograd_keep_torch(library: None) -> None:
    small_gemm.calibrate("openblas")
    ref, ours = _pair(bias=True)
    x = torch.randn(4, 48)
    before = torch.get_num_threads()
    with mock.patch.object(small_gemm.np, "matmul", wraps=np.matmul) as matmul:
        torch.set_num_threads(2)  # this thread: more than one intra-op thread (the prefill's)
        try:
            with torch.no_grad():
                torch.testing.assert_close(ours(x), ref(x))
        finally:
            torch.set_num_threads(before)
        one = StageThread("test-gemm", 1)
        y = one.run(ours, x)  # autograd on: a training or gradient check never leaves torch
        one.close()
    assert not matmul.called
    assert y.requires_grad


def test_auto_keeps_openblas_only_when_it_is_faster(library: None) -> None:
    with mock.patch.object(small_gemm, "_best", side_effect=[1.0, 0.95]):  # torch, then OpenBLAS: 5 % faster
        assert small_gemm.calibrate("auto") is False
    reset_small_gemm()
    with (mock.patch.object(small_gemm, "_best", side_effect=[1.0, 0.5]), mock.patch.object(small_gemm, "one_blas_thread") as one,
          mock.patch.object(small_gemm, "_fastest_ways", return_value={3: "padded"})):
        assert small_gemm.calibrate("auto") is True
    one.assert_called_once()
    assert small_gemm._ways == {3: "padded"}
    assert small_gemm.calibrate("torch") is True  # decided once per process


@pytest.mark.parametrize("rows", range(1, 10))
@pytest.mark.parametrize("way", ["as_is", "rows", "padded"])
def test_every_way_of_a_few_row_product_gives_the_same_rows(rows: int, way: str) -> None:
    rng = np.random.default_rng(rows)
    x_MxI = rng.standard_normal((rows, 48), dtype=np.float32)
    w_IxO = rng.standard_normal((48, 80), dtype=np.float32)
    y_MxO = small_gemm._product_as(way, x_MxI, w_IxO)
    assert y_MxO.shape == (rows, 80) and y_MxO.dtype == np.float32
    np.testing.assert_allclose(y_MxO, x_MxI.astype(np.float64) @ w_IxO, rtol=1e-5, atol=1e-4)


def test_calibration_keeps_the_fastest_way_per_row_count(library: None) -> None:
    def timed(fn, repeats: int = 7) -> float:  # "rows" fastest for 2 rows, "padded" for 3, the plain product else
        fn()
        return {(2, "rows"): 0.5, (3, "padded"): 0.6}.get((timed.m, timed.way), 1.0)

    def product_as(way, x, w):
        timed.m, timed.way = x.shape[0], way
        return x @ w

    with mock.patch.object(small_gemm, "_best", side_effect=timed), mock.patch.object(small_gemm, "_product_as", side_effect=product_as):
        assert small_gemm._fastest_ways((64, 32), matrices=1) == {2: "rows", 3: "padded"}


def test_a_stage_s_product_takes_the_calibrated_way(library: None) -> None:
    small_gemm.calibrate("openblas")
    small_gemm._ways.clear()
    small_gemm._ways.update({2: "rows"})
    ref, ours = _pair(bias=True)
    stage = StageThread("test-gemm", 1)
    with mock.patch.object(small_gemm, "_product_as", wraps=small_gemm._product_as) as product:
        y = stage.run(torch.no_grad()(ours), torch.randn(2, 48))
        stage.run(torch.no_grad()(ours), torch.randn(3, 48))
    stage.close()
    assert [c.args[0] for c in product.call_args_list] == ["rows", "as_is"]
    assert y.shape == (2, 80)
