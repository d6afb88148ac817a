"""The decoder runs only at a fixed set of input widths, with the audio of exact-width calls (issue 46, hole 4:
OpenVINO keeps memory for every width it has run; a whole WAV at speed 0.25, its windows grown to 640 frames,
kept +787 MB for the life of the process)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tts_app.backends.base import RowInput
from tts_app.backends.params import SpeechParams
from tts_app.backends.piper import PiperBackend
from tts_app.models.piper import plan_windows, warm_up
from tts_app.models.piper.stream_decoder import MAX_CALL_FRAMES, SHAPE_STEP_FRAMES
from tests.support.backend_driver import run_rows

pytestmark = pytest.mark.slow

# The bucketed, windowed decode against the exact-width one: measured at most 1.7e-7 on the real model
# (audio peaks near 1), the masked padding reading as the convolutions' own zero padding.
TOLERANCE = 1e-5
# Chunk lengths in frames: a single-call chunk (the row's first and last sample in one call), a first
# window alone, one frame over it, a few windows, and chunks longer than the widest call many times over.
CHUNKS = (1, 7, 23, 64, 65, 200, 701, 1500)
WINDOWS = (64, 160, 320, 640)  # the engine's window sizes: a level-0 listener's, the usual, the grown ones


class _Recording:
    """A stage session that records the input widths it is run at."""

    def __init__(self, session, input_name: str) -> None:
        self.session, self.input_name, self.widths = session, input_name, set()

    def run(self, feed):
        self.widths.add(feed[self.input_name].shape[2])
        return self.session.run(feed)


@pytest.fixture
def recorded(vits, monkeypatch: pytest.MonkeyPatch) -> list[_Recording]:
    """The model's decoder stages, each session wrapped in a _Recording."""
    recordings = [_Recording(st.session, st.input_name) for st in vits.decoder_stages]
    stages = [replace(st, session=rec) for st, rec in zip(vits.decoder_stages, recordings)]
    monkeypatch.setattr(vits, "decoder_stages", stages)
    return recordings


def _exact(vits, z_CxT: np.ndarray) -> np.ndarray:
    """The unbucketed decode: each stage once over the whole input at its exact width, every sample real."""
    x = z_CxT[None]
    for st in vits.decoder_stages:
        (x,) = st.session.run(st.feed(x, [x.shape[2]]))
    return x[0, 0]


def _streamed(vits, z_CxT: np.ndarray, window: int) -> np.ndarray:
    stream = vits.new_decoder_stream()
    plan = plan_windows(z_CxT.shape[1], window)
    return np.concatenate([vits.decode_stream([stream], [z_CxT[:, w.start : w.end]], [w.last])[0] for w in plan])


def test_the_stages_have_fourteen_widths_each(vits):
    for rate, st in zip((1, 8), vits.decoder_stages):
        assert st.widths == tuple(SHAPE_STEP_FRAMES * rate * j for j in range(1, MAX_CALL_FRAMES // SHAPE_STEP_FRAMES + 1))


@pytest.mark.parametrize("n_frames", CHUNKS)
def test_every_window_plan_decodes_at_the_fixed_widths_with_exact_audio(vits, recorded, n_frames):
    z_CxT = np.random.default_rng(n_frames).standard_normal((192, n_frames)).astype(np.float32)
    whole = _exact(vits, z_CxT)
    for window in WINDOWS:
        for rec in recorded:
            rec.widths.clear()
        streamed = _streamed(vits, z_CxT, window)
        for st, rec in zip(vits.decoder_stages, recorded):
            assert rec.widths <= set(st.widths), (window, sorted(rec.widths - set(st.widths)))
        assert streamed.shape == whole.shape == (n_frames * vits.hop,)
        assert np.abs(streamed - whole).max() <= TOLERANCE, window


def test_grown_windows_at_speed_a_quarter_meet_no_other_width(piper_backend, recorded):
    """The engine grows a safe listener's windows up to 640 frames (a whole WAV at speed 0.25 kept +787 MB):
    their calls are cut to the widest width, and the audio is the usual windows' audio."""
    text = "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background."
    row = lambda backend: RowInput(0, text, SpeechParams(seed=1, speed=0.25), parsed=backend.check_text(text))  # noqa: E731
    (usual,) = run_rows(piper_backend, [row(piper_backend)])
    grown_backend = PiperBackend(piper_backend.model, window_frames=640)
    for rec in recorded:
        rec.widths.clear()
    (grown,) = run_rows(grown_backend, [row(grown_backend)])
    assert grown.size > 15 * piper_backend.sample_rate  # two chunks of about 800 frames: a 640-frame window each
    for st, rec in zip(piper_backend.model.decoder_stages, recorded):
        assert max(rec.widths) == st.max_width and rec.widths <= set(st.widths)
    assert grown.shape == usual.shape and np.abs(grown - usual).max() <= TOLERANCE


def test_warm_up_prepares_every_width_a_stage_runs_at(vits):
    keys = warm_up._streamed_feeds(vits)
    for k, st in enumerate(vits.decoder_stages):
        assert sorted(n for stage, n in keys if stage == f"dec{k}") == list(st.widths)
