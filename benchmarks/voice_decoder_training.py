"""Issue 27 trial: adapt the embedded voice's decoder to each shared voice, scored leave-one-voice-out.

Per voice: training pairs from the processed reference clip and its transcript (typed where the
clip's source publishes it, else PocketSphinx's), each variant in --variants fine-tuned on them,
then the eval sentences decoded from the SAME latents by the released decoder (plain), by the
adapted one, and the plain audio through the shipped filter route (v2, strength 1). Scored with
voice_similarity.py's Scorer (Resemblyzer similarity to the processed clip, PocketSphinx WER).

    python benchmarks/voice_decoder_training.py --voices lj_female_us --save-json /tmp/lj.json
    python benchmarks/voice_decoder_training.py --merge /tmp/*.json      # the leave-one-voice-out table

A variant is scheme:lr:steps:own_weight (adapters.trainable; own_weight keeps the model's own
latents -> its released audio). Every variant is run on every voice; each voice's left-out figure
is the variant that did best on the other four (mean gain, WER within 3 points of plain).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # run as `python benchmarks/voice_decoder_training.py` from anywhere
    sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

import numpy as np  # noqa: E402

from voice_similarity import Scorer, Table, cpu_name, isa_flags, word_errors  # noqa: E402

# Transcripts published with the clips (shared/voices/SOURCES.md); the others are recognised.
TYPED = {
    "lj_female_us": "Printing, in the only sense with which we are at present concerned, differs from most if not "
    "from all the arts and crafts represented in the Exhibition",
    "f5_ref_en": "Some call me nature, others call me mother nature.",
}
WER_SLACK = 0.03  # the goal: WER within 3 points of the unadapted voice
FILTER = "filter-v2"


def parse_variant(text: str):
    from tts_app.voice.training.finetune import TrainConfig

    scheme, lr, steps, own = text.split(":")
    return TrainConfig(scheme=scheme, lr=float(lr), steps=int(steps), own_weight=float(own))


def run_voice(name: str, args, scorer: Scorer, sentences: list[str], latents: list[np.ndarray], plain: list[np.ndarray]) -> dict:
    import torch

    from tts_app.voice import adapt, default_library
    from tts_app.voice.training.decoder import load_decoder
    from tts_app.voice.training.finetune import finetune
    from tts_app.voice.training.pairs import build_pairs
    from tts_app.voice.analysis.transcript import recognise

    profile = default_library().load(name)
    sr = 22050
    ref_emb = scorer.embed(profile.audio, profile.sample_rate)

    def score(audio: list[np.ndarray]) -> tuple[float, float]:
        sim = float(np.mean([scorer.embed(a, sr) @ ref_emb for a in audio]))
        errs = [word_errors(s, scorer.transcribe(a, sr)) for s, a in zip(sentences, audio)]
        return sim, sum(e for e, _ in errs) / sum(n for _, n in errs)

    text, source = (TYPED[name], "typed") if name in TYPED else (recognise(profile.audio, profile.sample_rate), "recognised")
    stock = load_decoder()
    c0 = time.process_time()
    pairs = build_pairs(profile.audio, profile.sample_rate, text, stock)
    out = {"voice": name, "ref_s": pairs.seconds, "source": source, "transcript": text,
           "pairs_cpu_s": time.process_time() - c0, "plain": score(plain), "variants": {}}
    out["variants"][FILTER] = {"score": score([adapt(a, profile, 1.0, sr) for a in plain])}
    print(name, source, repr(text), "plain", out["plain"], "filter", out["variants"][FILTER], flush=True)
    for v in args.variants:
        result = finetune(pairs, stock, parse_variant(v))
        with torch.no_grad():
            t = time.process_time()
            adapted = [result.decoder(torch.from_numpy(z)[None])[0, 0].numpy() for z in latents]
            adapted_cpu = time.process_time() - t
            t = time.process_time()
            for z in latents:
                stock(torch.from_numpy(z)[None])
            stock_cpu = time.process_time() - t
        out["variants"][v] = {
            "score": score(adapted), "train_cpu_s": result.cpu_s, "steps": result.steps_run, "best_step": result.best_step,
            "held": result.held_losses, "decode_cpu_s": [adapted_cpu, stock_cpu],
        }
        print(name, v, out["variants"][v], flush=True)
        if args.save_json:
            args.save_json.write_text(json.dumps(out))
    return out


def sentence_latents(sentences: list[str]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    import torch

    from tts_app.voice.training.decoder import load_decoder
    from tts_app.voice.training.latents import text_latents

    stock = load_decoder()
    latents = [text_latents(s, seed=0) for s in sentences]
    with torch.no_grad():
        plain = [stock(torch.from_numpy(z)[None])[0, 0].numpy() for z in latents]
    return latents, plain


def merge(paths: list[Path]) -> str:
    parts = [json.loads(p.read_text()) for p in paths]
    # only variants every voice finished: a cut-off run leaves the later ones out of the choice
    variants = [v for v in parts[0]["variants"] if v != FILTER and all(v in p["variants"] for p in parts)]
    sims_plain = {p["voice"]: p["plain"][0] for p in parts}
    wer_plain = float(np.mean([p["plain"][1] for p in parts]))
    results = {(p["voice"], v): tuple(p["variants"][v]["score"]) for p in parts for v in [*variants, FILTER] if v in p["variants"]}
    table = Table(sims_plain, wer_plain, results, {}, ["v1", *variants], variants[0], wer_slack=WER_SLACK)
    voices = [p["voice"] for p in parts if all((p["voice"], v) in results for v in variants)]
    lines = [
        f"CPU: {cpu_name()}, flags {isa_flags()}, {os.cpu_count()} cores shared with other jobs (load average "
        f"{os.getloadavg()[0]:.1f}); torch {__import__('torch').__version__}, 1 thread.",
        "",
        "| voice | ref (s) | transcript | variant chosen on the others | sim plain | gain trained (left out) | gain filter v2 "
        "| WER plain | WER trained | WER filter | train CPU s | decode CPU adapted / stock |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    gains, wers, fgains = [], [], []
    for p in parts:
        v = p["voice"]
        if v not in voices:
            continue
        chosen = table.pick([o for o in voices if o != v]) if len(voices) > 1 else variants[0]
        sim, wer = results[(v, chosen)]
        fsim, fwer = results[(v, FILTER)]
        info = p["variants"][chosen]
        gains.append(sim - sims_plain[v])
        wers.append(wer)
        fgains.append(fsim - sims_plain[v])
        lines.append(
            f"| {v} | {p['ref_s']:.1f} | {p['source']} | {chosen} | {sims_plain[v]:.3f} | {sim - sims_plain[v]:+.3f} | "
            f"{fsim - sims_plain[v]:+.3f} | {100 * p['plain'][1]:.1f}% | {100 * wer:.1f}% | {100 * fwer:.1f}% | "
            f"{info['train_cpu_s']:.0f} (+{p['pairs_cpu_s']:.0f} pairs) | {info['decode_cpu_s'][0]:.2f} / {info['decode_cpu_s'][1]:.2f} |"
        )
    if gains:
        lines.append(
            f"| **mean** | | | | | **{np.mean(gains):+.3f}** (lowest {min(gains):+.3f}) | {np.mean(fgains):+.3f} | "
            f"{100 * wer_plain:.1f}% | {100 * np.mean(wers):.1f}% | | | |"
        )
    every = sorted({v for p in parts for v in p["variants"] if v != FILTER}, key=lambda v: (v not in variants, v))
    variants = every
    lines += ["", "Every variant on every voice (gain / WER / train CPU s / steps run, best step):", ""]
    lines.append("| voice | " + " | ".join([*variants, FILTER]) + " |")
    lines.append("| --- |" + " --- |" * (len(variants) + 1))
    for p in parts:
        cells = []
        for v in [*variants, FILTER]:
            if v not in p["variants"]:
                cells.append("not run")
                continue
            info = p["variants"][v]
            sim, wer = info["score"]
            extra = f" / {info['train_cpu_s']:.0f} s / {info['steps']}, {info['best_step']}" if "train_cpu_s" in info else ""
            cells.append(f"{sim - sims_plain[p['voice']]:+.3f} / {100 * wer:.1f}%{extra}")
        lines.append(f"| {p['voice']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO_ROOT.parent / "shared")
    parser.add_argument("--voices", nargs="*", default=[])
    parser.add_argument("--limit", type=int, default=8, help="eval sentences (the first N)")
    parser.add_argument("--variants", nargs="*", default=["lora4:1e-3:60:0", "lora4:1e-3:60:0.3", "all:2e-5:60:0.3"])
    parser.add_argument("--save-json", type=Path)
    parser.add_argument("--merge", type=Path, nargs="*")
    args = parser.parse_args()
    if args.merge:
        print(merge(args.merge))
        return 0
    import torch

    sentences = [s.strip() for s in (args.shared / "eval" / "sentences.txt").read_text().splitlines() if s.strip()]
    sentences = sentences[: args.limit]
    scorer = Scorer()
    torch.set_num_threads(1)  # CPU seconds are the figure; one thread wastes none on a loaded machine
    latents, plain = sentence_latents(sentences)
    for name in args.voices:
        run_voice(name, args, scorer, sentences, latents, plain)
    return 0


if __name__ == "__main__":
    sys.exit(main())
