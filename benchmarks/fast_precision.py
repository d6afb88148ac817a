"""Stock piper, the engine in exact (float32) and in fast precision: speed in the same passes, and
the fast precision's quality against float32 output of the same requests.

Speed: every pass runs the same closed-loop load (16 clients, 2 requests each) on stock piper
(one FIFO worker), the exact engine and the fast engine, in an order that rotates between
passes, then single utterances (one at a time) on all three; ratios are taken within a pass
and their median reported. Both engines are warm (loaded, warmed, and run once first).

Quality: each eval sentence, seed k, through the backend in both precisions (same noise, same
durations: the text stage is float32 in both). PocketSphinx WER of each against the text,
mel-cepstral distortion fast vs exact (dB; 24 MFCCs from librosa, c0 dropped, frames aligned
since lengths are equal), Resemblyzer cosine similarity of fast to exact.

    python benchmarks/fast_precision.py [--passes 5] [--single 5]
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import numpy as np

import common

NAME = "fast_precision"
CLIENTS, PER_CLIENT = 16, 2
GOAL_FAST_RATIO, GOAL_EXACT_RATIO, GOAL_WER_POINTS, GOAL_SIM = 2.0, 1.3, 1.0, 0.95


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--single", type=int, default=5, help="sentences timed one at a time per pass")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")


# -- quality ---------------------------------------------------------------------------
def synthesize(backend: Any, text: str, seed: int) -> np.ndarray:
    from tts_app.backends.base import RowInput
    from tts_app.backends.params import SpeechParams

    (state,) = backend.prepare([RowInput(0, text, SpeechParams(seed=seed))])
    audio = []
    while True:
        (out,) = backend.step([state])
        audio.append(out.audio)
        if out.done:
            return np.concatenate(audio)


def mel_cepstral_distortion_db(a: np.ndarray, b: np.ndarray, sample_rate: int) -> float:
    """MCD of ``b`` against ``a`` over ``a``'s speech frames (RMS within 40 dB of its loudest):
    float32's near-silence sits far below a lower precision's noise floor, and would dominate otherwise."""
    import librosa

    ca = librosa.feature.mfcc(y=a, sr=sample_rate, n_mfcc=25)[1:]  # [24, frames]
    cb = librosa.feature.mfcc(y=b, sr=sample_rate, n_mfcc=25)[1:]
    rms_db = 20 * np.log10(np.maximum(librosa.feature.rms(y=a)[0], 1e-10))
    speech = rms_db > rms_db.max() - 40.0
    # librosa: orthonormal-DCT cepstra of mel power in dB; x ln(10) / 20 gives natural-log amplitude cepstra, as MCD wants.
    diff = (ca - cb)[:, speech] * math.log(10) / 20.0
    return float(np.mean(10.0 / math.log(10) * np.sqrt(2.0 * np.sum(diff**2, axis=0))))


def quality(exact: Any, fast: Any, sentences: Sequence[str]) -> dict[str, Any]:
    from voice_similarity import Scorer, word_errors

    scorer = Scorer()
    sr = exact.sample_rate
    rows = []
    for k, text in enumerate(sentences):
        a, b = synthesize(exact, text, k), synthesize(fast, text, k)
        assert a.shape == b.shape, "the text stage is float32 in both precisions: lengths must match"
        ea, eb = scorer.embed(a, sr), scorer.embed(b, sr)
        rows.append(
            {
                "text": text,
                "errors_exact": word_errors(text, scorer.transcribe(a, sr)),
                "errors_fast": word_errors(text, scorer.transcribe(b, sr)),
                "mcd_db": mel_cepstral_distortion_db(a, b, sr),
                "similarity": float(np.dot(ea, eb) / (np.linalg.norm(ea) * np.linalg.norm(eb))),
                "max_abs_diff": float(np.abs(a - b).max()),
                "snr_db": float(10 * np.log10(np.sum(a**2) / max(np.sum((a - b) ** 2), 1e-20))),
            }
        )
    n_words = sum(r["errors_exact"][1] for r in rows)
    wer = {p: 100.0 * sum(r[f"errors_{p}"][0] for r in rows) / n_words for p in ("exact", "fast")}
    return {
        "rows": rows,
        "wer_exact": wer["exact"],
        "wer_fast": wer["fast"],
        "mcd_db_mean": float(np.mean([r["mcd_db"] for r in rows])),
        "mcd_db_max": float(np.max([r["mcd_db"] for r in rows])),
        "similarity_mean": float(np.mean([r["similarity"] for r in rows])),
        "similarity_min": float(np.min([r["similarity"] for r in rows])),
        "snr_db_median": common.median([r["snr_db"] for r in rows]),
    }


# -- speed ---------------------------------------------------------------------------------
def speed(stock_voice: Any, engines: dict[str, Any], backends: dict[str, Any], sentences: Sequence[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    import engine_load

    passes = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        servers = {"stock": engine_load.stock_server(stock_voice, pool)} | {k: engine_load.engine_server(e) for k, e in engines.items()}
        order = list(servers)
        for name in order[1:]:  # one discarded run each: allocations, late shapes
            engine_load.run_load(servers[name], sentences, CLIENTS, 1)
        for i in range(args.passes):
            rot = order[i % len(order) :] + order[: i % len(order)]
            load = {name: engine_load.run_load(servers[name], sentences, CLIENTS, PER_CLIENT)["throughput"] for name in rot}
            single = {name: 0.0 for name in order}
            audio = {name: 0.0 for name in order}
            # Each system's sentences as one block: stock piper's onnxruntime threads busy-wait
            # after each call, which slowed whatever ran right after it (by up to a third, measured).
            for name in rot:
                time.sleep(0.5)
                for text in sentences[i * args.single % len(sentences) :][: args.single]:
                    timed = common.stock_synthesize(stock_voice, text) if name == "stock" else common.ours_synthesize(backends[name], text)
                    single[name] += timed.wall_s
                    audio[name] += timed.audio_s
            rtf = {name: single[name] / audio[name] for name in order}
            p = {"order": rot, "throughput": load, "rtf": rtf}
            passes.append(p)
            print(
                f"pass {i + 1}: 16 clients " + ", ".join(f"{n} {load[n]:.2f}" for n in order)
                + " audio s/s; single RTF " + ", ".join(f"{n} {rtf[n]:.3f}" for n in order),
                flush=True,
            )
    return passes


def speed_table(passes: Sequence[dict[str, Any]]) -> tuple[str, dict[str, float]]:
    names = list(passes[0]["throughput"])
    rows, summary = [], {}
    for n in names:
        tp_ratio = common.median([p["throughput"][n] / p["throughput"]["stock"] for p in passes])
        rtf_ratio = common.median([p["rtf"][n] / p["rtf"]["stock"] for p in passes])
        pass_ratios = " ".join(f"{p['throughput'][n] / p['throughput']['stock']:.2f}" for p in passes)
        rows.append([n, common.median([p["throughput"][n] for p in passes]), tp_ratio, pass_ratios, common.median([p["rtf"][n] for p in passes]), rtf_ratio])
        summary[f"{n}_x_stock_16_clients"] = tp_ratio
        summary[f"{n}_single_rtf_over_stock"] = rtf_ratio
    headers = ["system", "16 clients (audio s/s, median)", "x stock (median of pass ratios)", "pass ratios", "single-utterance RTF (median)", "RTF / stock RTF (median)"]
    return common.markdown_table(headers, rows), summary


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0], _extra_args)
    info = common.machine_info()
    common.print_machine(info)
    from tts_app.engine import Engine

    sentences = common.load_sentences(args.shared)
    t0 = time.perf_counter()
    backends = {"exact": common.load_backend(2, "exact"), "fast": common.load_backend(2, "fast")}
    print(f"loaded both precisions in {time.perf_counter() - t0:.1f} s; fast decoder: {backends['fast'].model.decoder_kind}", flush=True)
    out: dict[str, Any] = {"machine": info, "args": {k: str(v) for k, v in vars(args).items()}, "fast_decoder": backends["fast"].model.decoder_kind}
    if not args.skip_quality:
        q = quality(backends["exact"], backends["fast"], sentences)
        out["quality"] = q
        rows = [
            ["PocketSphinx WER, exact (float32)", f"{q['wer_exact']:.1f}%", "-"],
            ["PocketSphinx WER, fast", f"{q['wer_fast']:.1f}% ({q['wer_fast'] - q['wer_exact']:+.1f} points)", "PASS" if q["wer_fast"] - q["wer_exact"] <= GOAL_WER_POINTS else "FAIL"],
            ["mel-cepstral distortion fast vs exact (speech frames)", f"{q['mcd_db_mean']:.2f} dB mean, {q['mcd_db_max']:.2f} dB max", "reported"],
            ["Resemblyzer similarity fast vs exact", f"{q['similarity_mean']:.4f} mean, {q['similarity_min']:.4f} min", "PASS" if q["similarity_min"] >= GOAL_SIM else "FAIL"],
            ["waveform SNR fast vs exact", f"{q['snr_db_median']:.1f} dB median", "reported"],
        ]
        out["quality_table"] = common.markdown_table(["measure (20 eval sentences, seed = index)", "measured", "goal"], rows)
        common.report(f"Fast precision ({out['fast_decoder']}) quality vs float32; {info['cpu_model']}, ISA {info['isa']}", out["quality_table"])
    if not args.skip_speed:
        engines = {k: Engine(b) for k, b in backends.items()}
        try:
            passes = speed(common.load_stock_piper(), engines, backends, sentences, args)
        finally:
            for e in engines.values():
                e.close()
        out["speed_passes"] = passes
        out["speed_table"], out["speed_summary"] = speed_table(passes)
        common.report(f"Speed, {args.passes} passes ({info['cpu_model']}, ISA {info['isa']}, load average {info['loadavg_1_5_15']})", out["speed_table"])
    out["machine_after"] = common.machine_info()
    print(f"wrote {common.write_results(NAME, out)}")


if __name__ == "__main__":
    main()
