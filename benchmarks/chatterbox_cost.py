"""Chatterbox's compute cost on this machine with random full-size weights (T3 Llama-520M + perceiver,
S3Gen, voice encoder; official initialisers), through our batched code paths.

- T3: tokens/s while decoding with classifier-free guidance (2 cache rows per request), batch 1..N;
- S3Gen: one ragged flow pass (10 Euler steps with guidance) + the vocoder row by row, for B rows of
  ``--tokens`` speech tokens each (25 tokens = 1 s of audio); real-time factor = compute s / audio s.
Random weights never say EOS, so every row runs its full budget. Meant for a GPU too: ``--device cuda``.

    python benchmarks/chatterbox_cost.py --batch-sizes 1,2,4,8 [--device cuda] [--out results/chatterbox_cost.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.common import machine_info, print_machine  # noqa: E402
from tts_app.models.chatterbox import s3gen_batch  # noqa: E402
from tts_app.models.chatterbox.config import ChatterboxSampling, T3Tokens  # noqa: E402
from tts_app.models.chatterbox.official import official  # noqa: E402
from tts_app.models.chatterbox.t3_generator import T3Generator, T3Prompt  # noqa: E402
from tts_app.models.chatterbox.voice import conditionals  # noqa: E402
from tts_app.models.chatterbox.weights import LoadedChatterbox, backbone_from_state, llama_config  # noqa: E402

TEXT_TOKENS = 60  # a sentence of about 60 characters


def random_model(device: torch.device, seed: int = 0) -> LoadedChatterbox:
    torch.manual_seed(seed)
    t3 = official("models.t3.t3").T3().eval()
    backbone = backbone_from_state(llama_config(), t3.state_dict()).to(device)
    t3.tfmr = None
    s3gen = official("models.s3gen").S3Gen().eval().to(device)
    ve = official("models.voice_encoder").VoiceEncoder().eval().to(device)
    model = LoadedChatterbox(t3.to(device), backbone, s3gen, ve, None, None, T3Tokens(), Path("random"))
    t = np.arange(3 * 24000) / 24000
    clip = (0.3 * np.sin(2 * np.pi * 150 * t) + 0.05 * np.random.default_rng(seed).standard_normal(t.size)).astype(np.float32)
    model.builtin = conditionals(model, clip, 24000, 0.5)
    return model


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def t3_rate(model: LoadedChatterbox, batch: int, tokens: int, device: torch.device) -> dict:
    gen = T3Generator(model.t3, model.backbone, model.tokens, max_batch=batch, max_seq_len=256)
    prompt = T3Prompt(model.t3, model.tokens)
    cond = prompt.cond_embeds(model.builtin.t3)
    rows_in = [prompt.rows(cond, torch.randint(1, 200, (TEXT_TOKENS,)), 0.5) for _ in range(batch)]
    params = [ChatterboxSampling(max_new_tokens=tokens + 1)] * batch
    sync(device)
    t0 = time.perf_counter()
    rows = gen.prefill(rows_in, params, list(range(batch)))
    sync(device)
    t1 = time.perf_counter()
    while not all(r.done for r in rows):
        gen.decode(rows, 4)
    sync(device)
    t2 = time.perf_counter()
    decoded = sum(len(r.tokens) - 1 for r in rows)
    return {"batch": batch, "prefill_s": round(t1 - t0, 3), "decode_tokens": decoded,
            "tokens_per_s": round(decoded / (t2 - t1), 1), "tokens_per_s_per_row": round(decoded / (t2 - t1) / batch, 1)}


def s3gen_rtf(model: LoadedChatterbox, batch: int, tokens: int, device: torch.device) -> dict:
    ref = model.builtin.gen
    rows, gens = [], []
    for r in range(batch):
        g = torch.Generator().manual_seed(r)
        rows.append(s3gen_batch.FlowRow(torch.randint(0, 6561, (tokens,)), ref, s3gen_batch.starting_noise(ref, tokens, g)))
        gens.append(g)
    sync(device)
    t0 = time.perf_counter()
    mels = s3gen_batch.flow_mels(model.s3gen, rows)
    sync(device)
    t1 = time.perf_counter()
    for mel, g in zip(mels, gens):
        s3gen_batch.vocode(model.s3gen, mel, g)
    sync(device)
    t2 = time.perf_counter()
    audio_s = batch * tokens / 25.0
    return {"batch": batch, "audio_s": audio_s, "flow_s": round(t1 - t0, 3), "vocoder_s": round(t2 - t1, 3),
            "rtf": round((t2 - t0) / audio_s, 3), "flow_rtf": round((t1 - t0) / audio_s, 3), "vocoder_rtf": round((t2 - t1) / audio_s, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-sizes", default="1,2,4,8")
    ap.add_argument("--tokens", type=int, default=50, help="speech tokens per row (25 = 1 s)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    info = machine_info()
    print_machine(info)
    device = torch.device(args.device)
    t0 = time.perf_counter()
    with torch.inference_mode():
        model = random_model(device)
        print(f"random full-size model built in {time.perf_counter() - t0:.1f} s on {device}")
        sizes = [int(b) for b in args.batch_sizes.split(",")]
        t3_rate(model, 1, 8, device), s3gen_rtf(model, 1, 10, device)  # warm-up (first calls allocate)
        t3 = [t3_rate(model, b, args.tokens, device) for b in sizes]
        for row in t3:
            print("T3   ", row)
        s3 = [s3gen_rtf(model, b, args.tokens, device) for b in sizes]
        for row in s3:
            print("S3Gen", row)
    if args.out:
        args.out.write_text(json.dumps({"machine": info, "device": str(device), "tokens": args.tokens, "t3": t3, "s3gen": s3}, indent=1))


if __name__ == "__main__":
    main()
