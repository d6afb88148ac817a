"""The decoder's receptive field, and streamed vs whole decoding, to justify the stage contexts.

1. Perturb one latent frame (z [1, 192, 200] standard normal, +1.0 on every
   channel of frame 100), decode both, and report how far the audio changes,
   in frames left and right of frame 100, at several thresholds.
2. The streaming decoder's stages and the context each reads off its graph.
3. For every sentence: decode its latents whole and streamed window by window
   (``plan_windows``, as the backend does), with the stages' contexts as read
   off the graph and with every context cut by 2 and 4 samples, and report the
   max abs difference.

    python benchmarks/receptive_field.py [--shared PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Sequence

import numpy as np

import common

NAME = "receptive_field"
THRESHOLDS = (0.0, 1e-7, 1e-5, 1e-3)


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--frame", type=int, default=100)
    parser.add_argument("--cuts", type=int, nargs="+", default=[0, 2, 4])


# -- 1. perturbation -------------------------------------------------------------
def perturbation_diff(model: Any, n_frames: int, frame: int) -> np.ndarray:
    """|decode(z + e_frame) - decode(z)| per sample, z seeded standard normal."""
    z = np.random.default_rng(0).standard_normal((1, 192, n_frames)).astype(np.float32)
    bumped = z.copy()
    bumped[0, :, frame] += 1.0
    return np.abs(model.decode(bumped)[0] - model.decode(z)[0])


def reach(diff: np.ndarray, frame: int, hop: int, threshold: float) -> dict[str, Any]:
    """How far the change above ``threshold`` reaches, in whole frames and in samples / hop."""
    changed = np.flatnonzero(diff > threshold)
    if changed.size == 0:
        return {"threshold": threshold, "left_frames": 0, "right_frames": 0, "left_exact": 0.0, "right_exact": 0.0}
    first, last = int(changed[0]), int(changed[-1])
    return {
        "threshold": threshold,
        "left_frames": frame - first // hop,
        "right_frames": last // hop - frame,
        "left_exact": frame - first / hop,  # fractional frames from the perturbed frame's start
        "right_exact": (last + 1) / hop - (frame + 1),  # fractional frames past the perturbed frame's end
    }


# -- 2./3. streamed vs whole ------------------------------------------------------------
def sentence_latents(backend: Any, text: str) -> np.ndarray:
    """Latents [192, T] of a sentence's first chunk, seed 0."""
    from tts_app.models.piper import LatentRequest

    ids = backend.check_text(text).chunk_ids[0]
    (z_CxT,) = backend.model.text_to_latents([LatentRequest(ids=ids, rng=np.random.default_rng(0))])
    return z_CxT


def streamed_decode(model: Any, z_CxT: np.ndarray) -> np.ndarray:
    """Decode window by window through one decoder stream, as the backend does."""
    from tts_app.models.piper import plan_windows

    stream = model.new_decoder_stream()
    return np.concatenate([model.decode_stream([stream], [z_CxT[:, w.start : w.end]], [w.last])[0] for w in plan_windows(z_CxT.shape[1])])


def stream_errors(backend: Any, sentences: Sequence[str], cuts: Sequence[int]) -> list[dict[str, Any]]:
    """Max abs difference streamed vs whole, with every stage's context cut by each of ``cuts``."""
    model = backend.model
    stages = list(model.decoder_stages)
    rows = []
    for text in sentences:
        z = sentence_latents(backend, text)
        whole = model.decode(z[None])[0]
        row: dict[str, Any] = {"text": text, "frames": int(z.shape[1]), "peak": float(np.abs(whole).max())}
        for cut in cuts:
            model.decoder_stages = [dataclasses.replace(st, left=st.left - cut, right=st.right - cut) for st in stages]
            try:
                row[f"cut{cut}"] = float(np.abs(streamed_decode(model, z) - whole).max())
            finally:
                model.decoder_stages = stages
        rows.append(row)
    return rows


# -- tables ------------------------------------------------------------------------------
def reach_table(reaches: Sequence[dict[str, Any]]) -> str:
    headers = ["threshold", "left (frames)", "right (frames)", "left (exact, frames)", "right (exact, frames)"]
    return common.markdown_table(headers, [[f"{r['threshold']:g}", r["left_frames"], r["right_frames"], r["left_exact"], r["right_exact"]] for r in reaches])


def stages_table(model: Any) -> str:
    headers = ["stage", "input", "channels in", "output samples per input sample", "left context (input samples)", "right context (input samples)"]
    rows = [[k + 1, st.input_name, st.channels, st.up, st.left, st.right] for k, st in enumerate(model.decoder_stages)]
    return common.markdown_table(headers, rows)


def errors_table(rows: Sequence[dict[str, Any]], cuts: Sequence[int]) -> str:
    name = {0: "contexts as read off the graph"}
    headers = ["sentence", "frames", "peak |audio|"] + [f"max abs diff, {name.get(c, f'contexts - {c}')}" for c in cuts]
    body = [[r["text"], r["frames"], r["peak"]] + [r[f"cut{c}"] for c in cuts] for r in rows]
    body.append(["**max over sentences**", "", ""] + [max(r[f"cut{c}"] for r in rows) for c in cuts])
    return common.markdown_table(headers, body)


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0], _extra_args)
    info_before = common.machine_info()
    sentences = common.load_sentences(args.shared)
    backend = common.load_backend(2)
    diff = perturbation_diff(backend.model, args.frames, args.frame)
    reaches = [reach(diff, args.frame, backend.model.hop, t) for t in THRESHOLDS]
    errors = stream_errors(backend, sentences, args.cuts)
    t_reach, t_stages, t_errors = reach_table(reaches), stages_table(backend.model), errors_table(errors, args.cuts)
    common.report(f"Change from +1.0 at latent frame {args.frame} of {args.frames} (max diff {diff.max():.3g})", t_reach)
    common.report("Streaming decoder stages", t_stages)
    common.report("Streamed vs whole decoding, max abs difference", t_errors)
    path = common.write_results(
        NAME,
        {
            "machine_before": info_before,
            "machine_after": common.machine_info(),
            "args": {k: str(v) if k == "shared" else v for k, v in vars(args).items()},
            "max_diff": float(diff.max()),
            "reach": reaches,
            "stream_errors": errors,
            "max_error_by_context_cut": {str(c): max(r[f"cut{c}"] for r in errors) for c in args.cuts},
            "tables_markdown": {"reach": t_reach, "stages": t_stages, "errors": t_errors},
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
