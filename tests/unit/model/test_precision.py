"""Precision choice, the model cache, and the fast precision's batch invariance."""


import numpy as np
import pytest

from tts_app.backends.base import RowInput

from tts_app.backends.params import SpeechParams
from tts_app.models.piper.model_cache import ShapeLog, model_cache_dir
from tts_app.models.piper.precision import check_precision, decoder_kind
from tests.support.backend_driver import run_rows

pytestmark = pytest.mark.slow


def test_fast_precision_follows_the_cpu_flags():
    assert decoder_kind("exact", frozenset({"avx512_bf16"})) == "f32"
    assert decoder_kind("fast", frozenset({"avx2", "fma"})) == "f32"  # no bf16: fast runs as exact
    assert decoder_kind("fast", frozenset({"avx512f", "avx512_bf16"})) == "bf16"
    assert decoder_kind("fast", frozenset({"amx_bf16"})) == "bf16"
    with pytest.raises(ValueError, match="precision must be one of"):
        check_precision("int4")


def test_an_isa_cap_hides_the_flags_above_it(monkeypatch):
    from tts_app.models.piper.cpu import isa_summary, usable_flags

    zen4 = frozenset({"avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16"})
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert usable_flags(zen4) == zen4
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "avx2")  # how an AVX2-only CPU is emulated
    assert usable_flags(zen4) == {"avx2", "fma"}
    assert decoder_kind("fast", zen4) == "f32"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_VNNI")
    assert usable_flags(zen4) == {"avx2", "fma", "avx512f", "avx512_vnni"}
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert "avx512" not in isa_summary().split(" (")[0]


def test_the_model_runtimes_do_not_busy_wait(piper_backend):
    """Idle OpenBLAS or onnxruntime threads spinning on one of the 2 cores slowed the next
    OpenVINO call 1.5 to 2x (runtime.py): the model quiets both."""
    from threadpoolctl import threadpool_info

    from tts_app.models.piper.runtime import SessionOptions, open_session

    assert all(pool["num_threads"] == 1 for pool in threadpool_info() if pool["user_api"] == "blas")
    session = open_session(_tiny_onnx(), "cpu", SessionOptions(2, runtime="onnxruntime"))
    assert session._session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"


def _tiny_onnx() -> bytes:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_engine_rejects_an_unknown_precision():
    from tts_app.engine import Engine

    with pytest.raises(ValueError, match="precision"):
        Engine(precision="half")


def test_shape_log_round_trip_skips_torn_lines(tmp_path):
    path = tmp_path / "shapes.jsonl"
    log = ShapeLog(path)
    log.record("dec1", [(1, 128, 1408)])
    log.record("dec1", [(1, 128, 1408)])  # a shape is one line, with its hits
    log.record("encoder", [(2, 32), (2,), (3,), (2, 2, 32)])
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"stage": "dec0", "shapes": [[1, 1\n')  # a write cut short
    assert len(path.read_text().splitlines()) == 3
    loaded = ShapeLog(path).most_hit()
    assert loaded == [("dec1", [[1, 128, 1408]]), ("encoder", [[2, 32], [2], [3], [2, 2, 32]])]
    assert ShapeLog(path).most_hit(min_hits=2) == [("dec1", [[1, 128, 1408]])]


def test_shape_log_keeps_only_normal_shapes_and_a_bounded_count(tmp_path):
    """Issue 24 item 11: hostile lengths are not logged, the log has a count cap, the most hit stay."""
    from tts_app.models.piper.warm_up import MAX_LOGGED_IDS, normal_shape

    path = tmp_path / "shapes.jsonl"
    log = ShapeLog(path, accept=normal_shape, max_entries=8)
    for n in range(16, 4096, 16):  # every text length once, the hostile ones included
        log.record("encoder", [(1, n), (1,), (3,), (1, 2, n)])
    log.record("encoder", [(3, 64), (3,), (3,), (3, 2, 64)])  # a batch size the engine never makes
    log.record("flow", [(1, 192, 99_968), (1, 1, 99_968)])
    for _ in range(5):
        log.record("encoder", [(2, 160), (2,), (3,), (2, 2, 160)])
    log.counting = False
    log.record("encoder", [(4, 160), (4,), (3,), (4, 2, 160)])  # warm-up's own runs are not counted
    lines = path.read_text().splitlines()
    assert len(lines) == 8
    kept = ShapeLog(path, accept=normal_shape).most_hit()
    assert kept[0] == ("encoder", [[2, 160], [2], [3], [2, 2, 160]])
    assert all(normal_shape(stage, tuple(map(tuple, shapes))) and shapes[0][1] <= MAX_LOGGED_IDS for stage, shapes in kept)


def test_cache_dir_is_keyed_by_voice_and_runtime(tmp_path, monkeypatch):
    import openvino as ov

    monkeypatch.setenv("TTS_APP_CACHE_DIR", str(tmp_path))
    voice = tmp_path / "v.onnx"
    voice.write_bytes(b"a")
    a = model_cache_dir(str(voice))
    voice.write_bytes(b"b")
    b = model_cache_dir(str(voice))
    assert a != b and a.parent == b.parent == tmp_path / "ov"
    assert a.name.endswith(ov.get_version().split("-")[0]) and a.is_dir()


@pytest.fixture(scope="module")
def fast_backend():
    from tts_app.backends.piper import PiperBackend
    from tts_app.models.piper.loader import load_default_voice

    return PiperBackend(load_default_voice(precision="fast"))




def test_fast_batched_rows_equal_their_solo_runs(fast_backend, sentences):
    texts = [sentences[0], " ".join(sentences[1:4]), "Hi.", sentences[5]]
    rows = [RowInput(k, t, SpeechParams(seed=k), parsed=fast_backend.check_text(t)) for k, t in enumerate(texts)]
    batched = run_rows(fast_backend, rows)
    for row, audio in zip(rows, batched):
        (solo,) = run_rows(fast_backend, [row])
        assert solo.shape == audio.shape
        assert np.array_equal(solo, audio)


def test_fast_batched_decoder_call_equals_per_row_calls(fast_backend):
    """One batched decoder call against per-row calls.

    float32 (fast on a CPU without bf16) is batch invariant (<= 1e-4). bf16 is not: oneDNN blocks the
    work by batch and rounds to bf16 in between (3.9e-4 measured on a Zen 4 EPYC), so
    the engine decodes one row per call on CPU and a row never depends on its batch mates
    (``test_fast_batched_rows_equal_their_solo_runs``).
    """
    vits = fast_backend.model
    assert vits.cpu_decode_rows == 1
    z_BxCxT = np.random.default_rng(0).standard_normal((8, 192, 88)).astype(np.float32)
    per_row = vits.decode(z_BxCxT)
    saved = vits.cpu_decode_rows
    try:
        vits.cpu_decode_rows = 8
        batched = vits.decode(z_BxCxT)
    finally:
        vits.cpu_decode_rows = saved
    tolerance = 1e-4 if vits.decoder_kind == "f32" else 2e-3  # bf16 keeps 8 bits of mantissa
    assert np.abs(batched - per_row).max() <= tolerance


def test_fast_output_stays_close_to_exact(fast_backend, piper_backend, sentences):
    """Same durations (float32 text stage), waveform close to float32 (bf16), or float32 itself on a CPU without bf16."""
    row = RowInput(0, sentences[2], SpeechParams(seed=3), parsed=piper_backend.check_text(sentences[2]))
    (fast,) = run_rows(fast_backend, [row])
    (exact,) = run_rows(piper_backend, [row])
    assert fast.shape == exact.shape
    if fast_backend.model.decoder_kind == "f32":
        assert np.abs(fast - exact).max() <= 1e-4
    else:
        snr_db = 10 * np.log10(np.sum(exact**2) / np.sum((fast - exact) ** 2))
        assert fast_backend.model.decoder_kind == "bf16" and snr_db > 5.0


def test_cli_rejects_an_unknown_precision(tmp_path, capsys):
    from tts_app.cli.commands import main

    lines = tmp_path / "in.txt"
    lines.write_text("Hello.\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["synth", "-i", str(lines), "-o", str(tmp_path / "out"), "--precision", "half"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'half'" in capsys.readouterr().err


def test_warm_up_prepares_the_flows_one_row_shapes(vits, monkeypatch):
    """The flow runs one row per call (piper_vits._flow_row): warm-up prepares those shapes and
    skips batched flow shapes an older version logged."""
    from tts_app.models.piper import warm_up

    streamed = warm_up._streamed_feeds(vits)
    flow_lengths = sorted(key[1] for key in streamed if key[0] == "flow")
    assert flow_lengths[0] == vits.frame_bucket and flow_lengths[-1] >= warm_up.WARM_CHUNK_FRAMES.stop
    logged = warm_up._logged_feeds(vits, [("flow", [[4, 192, 224], [4, 1, 224]]), ("flow", [[1, 192, 1024], [1, 1, 1024]])])
    assert list(logged) == [("flow", 1024)]

