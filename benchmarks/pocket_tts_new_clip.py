"""The cost of a new clip with Pocket TTS (issue 47, item 6), side by side in one run: from a request's submit to its
first audio with a fresh 10 s clip (never seen: its voice state is computed), with the same clip again (its state
cached for this visitor), and with a saved voice (no clip: the baseline); the fresh path split into the clip's
input processing, as the API runs it for Pocket TTS (its checks and cleaning: ``resolve_params(params, backend)``),
and its voice state (Mimi's encoder and the prompt's prefill). Beside it, in the same trial, what the same clip's
input processing cost before a cloning model skipped the filter's voice-matching analysis (``resolve_params(params)``,
the embedded voice's route): ``before_total_s`` is that plus the same first audio.

The page's way, in the same trial: another fresh clip prepared when the page gets it (``prepare_params(..., ahead=True)``,
what the page's early analysis runs; ``upload_prepare_s``), then Generate's first audio (``page_generate_s``). And a
listener's stall: a stream of a saved voice is playing when a request with a fresh clip arrives; ``listener_stall_s``
is how long that listener's 1x player waited for audio until the clip's first audio came (the engine's own count).
Every request starts from an idle engine (the one before it cancelled and gone), so no figure carries another's step.
On code without ``prepare_params`` (main before it) the page's upload prepares the checks only, as it did then.

Random weights at the released size (the compute does not depend on the values): ``--ckpt`` names a folder (e.g.
the one ``benchmarks/pocket_tts_throughput.py`` builds), else one is written with our modules at the released widths.

    python benchmarks/pocket_tts_new_clip.py [--ckpt DIR] [--clip FILE] [--trials 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import soundfile as sf
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.pocket_tts_throughput import machine  # noqa: E402
from tts_app.backends import pocket_tts as pocket_backend  # noqa: E402
from tts_app.backends.pocket_tts import PocketBackend  # noqa: E402
from tts_app.engine import Engine, SpeechParams  # noqa: E402
from tts_app.engine.input_processing import resolve_params  # noqa: E402
from tts_app.models.pocket_tts import voice as pocket_voice  # noqa: E402
from tts_app.models.pocket_tts.weights import load_pocket  # noqa: E402

TEXT = "Hello there, how are you today?"
LONG_TEXT = " ".join(["A listener hears this long story, sentence after sentence, while a new clip arrives."] * 4)
SHARED = next((p / "shared" for p in REPO.parents if (p / "shared" / "voices").is_dir()), REPO.parent / "shared")  # ../shared, or above a worktree
CLIP = SHARED / "voices" / "ov_speaker1_long.mp3"


def released_size(folder: Path) -> Path:
    """Random weights at the released widths, written by our own modules (tests/support/pocket_tts_tiny.py)."""
    from tests.support import pocket_tts_tiny as tiny
    from tts_app.models.pocket_tts.fetch import POCKET_ENGLISH_CONFIG

    if not (folder / "model.safetensors").is_file():
        def released(n_bins: int) -> dict:
            data = copy.deepcopy(POCKET_ENGLISH_CONFIG)
            data["flow_lm"]["lookup_table"]["n_bins"] = n_bins
            return data
        tiny._config = released
        tiny.write_tiny_checkpoint(folder)
    return folder


def _idle(engine: Engine) -> None:
    """Wait until the engine has nothing queued or running (a cancelled request leaves within a step)."""
    while True:
        stats = engine.stats()
        if not stats["queued"] and not stats["active"]:
            return
        time.sleep(0.005)


def _first_audio(engine: Engine, params: SpeechParams) -> float:
    _idle(engine)
    t = time.perf_counter()
    handle = engine.submit(TEXT, params)
    next(iter(handle))
    took = time.perf_counter() - t
    handle.cancel()
    return took


def _fresh(audio: np.ndarray, rate: int, root: Path, seed: int) -> Path:
    """A new clip: the same voice, its content made new (a quiet noise of its own)."""
    fresh = audio + 1e-4 * np.random.default_rng(seed).standard_normal(audio.size).astype(np.float32)
    path = root / f"clip-{seed}-{time.time_ns()}.wav"
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, fresh, rate)
    return path


def _listener_stall(engine: Engine, params: SpeechParams) -> float:
    """A saved voice's stream is playing when ``params`` (a fresh clip) is submitted: the listener's stall until the
    clip's first audio (the engine's count of how long its 1x player has waited)."""
    _idle(engine)
    listener = engine.submit(LONG_TEXT, SpeechParams(seed=1, client="listener"))
    next(iter(listener))
    handle = engine.submit(TEXT, params)
    next(iter(handle))
    stall = listener.stall_s
    for h in (handle, listener):
        h.cancel()
    return stall


def _bf16_state(backend: PocketBackend, samples: torch.Tensor, rate: int, exact) -> dict:
    """The same clip's voice state in bfloat16 (what ``TTS_APP_PRECISION=fast`` makes on a CPU with bf16): its time,
    and its keys/values' largest relative difference from float32's over the layers; {} where the code has no bf16."""
    if "bf16" not in inspect.signature(pocket_voice.voice_state).parameters:
        return {}
    t = time.perf_counter()
    fast = pocket_voice.voice_state(backend.model, samples, rate, bf16=True)
    took = time.perf_counter() - t
    rel = max(float((a - b).norm() / b.norm()) for (fk, fv), (ek, ev) in zip(fast.kv, exact.kv) for a, b in ((fk, ek), (fv, ev)))
    return {"voice_state_bf16_s": round(took, 3), "bf16_kv_rel_diff": round(rel, 4)}


def _page_prepare(backend: PocketBackend, params: SpeechParams) -> None:
    """What the page's early analysis does for a cloning model when it gets a clip (checks already made)."""
    prepare = getattr(backend, "prepare_params", None)
    if prepare is not None:
        prepare(params, ahead=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", type=Path)
    ap.add_argument("--root", type=Path, default=Path("/tmp/pocket_tts_new_clip"))
    ap.add_argument("--clip", type=Path, default=CLIP, help="a speech clip, at least 10 s (default: ../shared's)")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--voice-nice", type=int, help="the voice-state worker's nice value (default: the backend's VOICE_NICE)")
    args = ap.parse_args()
    if args.voice_nice is not None:
        pocket_backend.VOICE_NICE = args.voice_nice
    ckpt = args.ckpt or released_size(args.root / "released-size")
    backend = PocketBackend(load_pocket(ckpt), max_batch=8, max_seconds=20)  # the listener's story outlasts a build
    engine = Engine(backend=backend, max_batch_size=8)
    audio, rate = sf.read(args.clip, dtype="float32")
    audio = (audio if audio.ndim == 1 else audio.mean(axis=1))[: 10 * rate]
    rows = []
    try:
        _first_audio(engine, SpeechParams(seed=0))  # the engine's start-up sweep and first steps, before any figure
        for trial in range(args.trials):
            path = _fresh(audio, rate, args.root, 3 * trial)
            saved = _first_audio(engine, SpeechParams(seed=trial, client="bench"))
            asked = SpeechParams(seed=trial, voice=str(path), client="bench")
            t = time.perf_counter()
            resolve_params(asked)  # the filter's analysis: what a clip for Pocket TTS went through before
            matched = time.perf_counter() - t
            t = time.perf_counter()
            params = resolve_params(asked, engine.backend)  # a cloning model's: the clip's checks and cleaning
            checks = time.perf_counter() - t
            new = _first_audio(engine, params)
            cached = _first_audio(engine, params)
            samples = torch.from_numpy(sf.read(path, dtype="float32")[0])[None]
            t = time.perf_counter()
            exact = pocket_voice.voice_state(backend.model, samples, rate)
            state = time.perf_counter() - t
            bf16 = _bf16_state(backend, samples, rate, exact)
            # The page's way: a fresh clip prepared when the page gets it, then Generate.
            page = resolve_params(SpeechParams(seed=trial, voice=str(_fresh(audio, rate, args.root, 3 * trial + 1)), client="page"),
                                  engine.backend)
            t = time.perf_counter()
            _page_prepare(backend, page)
            upload = time.perf_counter() - t
            generate = _first_audio(engine, page)
            # A listener playing while a fresh clip arrives through the API.
            arriving = resolve_params(SpeechParams(seed=trial, voice=str(_fresh(audio, rate, args.root, 3 * trial + 2)), client="api"),
                                      engine.backend)
            stall = _listener_stall(engine, arriving)
            rows.append({"saved_voice_s": round(saved, 3), "clip_checks_s": round(checks, 3),
                         "filter_analysis_s": round(matched, 3), "new_clip_after_checks_s": round(new, 3),
                         "new_clip_total_s": round(checks + new, 3), "before_total_s": round(matched + new, 3),
                         "cached_clip_s": round(cached, 3), "voice_state_alone_s": round(state, 3),
                         "upload_prepare_s": round(upload, 3), "page_generate_s": round(generate, 3),
                         "listener_stall_s": round(stall, 3), **bf16})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        engine.close()
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    if "voice_state_bf16_s" in med:
        med["voice_state_bf16 / voice_state_alone"] = round(med["voice_state_bf16_s"] / med["voice_state_alone_s"], 2)
    report = {"machine": machine(), "voice_nice": getattr(pocket_backend, "VOICE_NICE", None), "trials": rows, "median": med,
              "ratios": {"new_clip_total / saved_voice": round(med["new_clip_total_s"] / med["saved_voice_s"], 2),
                         "new_clip_total / before_total": round(med["new_clip_total_s"] / med["before_total_s"], 2),
                         "voice_state_alone / new_clip_total": round(med["voice_state_alone_s"] / med["new_clip_total_s"], 2),
                         "cached_clip / saved_voice": round(med["cached_clip_s"] / med["saved_voice_s"], 2),
                         "page_generate / saved_voice": round(med["page_generate_s"] / med["saved_voice_s"], 2)},
              "bounds_s": {"new_clip_total": 1.0, "cached_clip": 0.3}}
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
