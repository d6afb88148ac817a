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


@pytest.fixture
def library() -> Iterator[None]:
    small_gemm.reset_for_tests()
    yield
    small_gemm.reset_for_tests()


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
    small_gemm.reset_for_tests()
    with mock.patch.object(small_gemm, "_best", side_effect=[1.0, 0.5]), mock.patch.object(small_gemm, "one_blas_thread") as one:
        assert small_gemm.calibrate("auto") is True
    one.assert_called_once()
    assert small_gemm.calibrate("torch") is True  # decided once per process
