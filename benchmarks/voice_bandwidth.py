"""Band-limited references: what the voice match does with a phone-quality copy of each built-in voice.

Each built-in reference clip is also passed through an 8 kHz, an 11.025 kHz and a 16 kHz file and
back to its own rate (what a phone call, an old recorder or a low-bitrate file gives: nothing above
about 4, 5.5 or 8 kHz). The engine's output for the first --limit eval sentences (seed 0) is matched
to every version twice: with the band-limit detection (the app) and without it (the bands above the
limit read as a voice with no highs, as before 2026-11-25). Scored against the full-band clip:
Resemblyzer similarity gain over the unadapted output, PocketSphinx WER, and the share of output
energy above 4.5 kHz.

    python benchmarks/voice_bandwidth.py [--limit 10]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from scipy.signal import resample_poly

import common

NAME = "voice_bandwidth"
VIA_RATES = (8000, 11025, 16000)


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=10, help="eval sentences used")


def high_share_db(audio: np.ndarray, sample_rate: int, above_hz: float = 4500.0) -> float:
    power = np.abs(np.fft.rfft(audio)) ** 2
    f = np.fft.rfftfreq(len(audio), 1 / sample_rate)
    return float(10 * np.log10(power[f > above_hz].sum() / max(power.sum(), 1e-20)))


def through(audio: np.ndarray, rate: int, via: int) -> np.ndarray:
    return resample_poly(resample_poly(audio, via, rate), rate, via).astype(np.float32)


def score(scorer: Any, outputs: list[np.ndarray], sentences: list[str], ref_emb: np.ndarray, sr: int) -> tuple[float, float, float]:
    from voice_similarity import word_errors

    sim = float(np.mean([scorer.embed(o, sr) @ ref_emb for o in outputs]))
    errs = [word_errors(s, scorer.transcribe(o, sr)) for s, o in zip(sentences, outputs)]
    wer = sum(e for e, _ in errs) / sum(n for _, n in errs)
    return sim, wer, float(np.mean([high_share_db(o, sr) for o in outputs]))


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0], _extra_args)
    info = common.machine_info()
    common.print_machine(info)
    from voice_similarity import Scorer, Synth

    from tts_app.voice import adapt, default_library
    from tts_app.voice.analysis import ltas
    from tts_app.voice.matching import plan
    from tts_app.voice.profile import clear_profile_cache, make_profile

    sentences = common.load_sentences(args.shared)[: args.limit]
    synth = Synth()
    sr = synth.sample_rate
    base = [synth(s) for s in sentences]
    synth.close()
    scorer = Scorer()
    base_embs = [scorer.embed(a, sr) for a in base]
    base_high = float(np.mean([high_share_db(a, sr) for a in base]))
    library = default_library()
    rows, raw = [], []
    cliff_db = ltas._CLIFF_DB
    for name in library.builtin_names():
        clip = library.load(name)
        ref_emb = scorer.embed(clip.audio, clip.sample_rate)
        plain = float(np.mean([e @ ref_emb for e in base_embs]))
        versions = {"full band": clip.audio} | {f"via {v} Hz": through(clip.audio, clip.sample_rate, v) for v in VIA_RATES if v < clip.sample_rate}
        for version, audio in versions.items():
            result = {}
            for mode, threshold in (("detected", cliff_db), ("not detected", float("inf"))):
                ltas._CLIFF_DB = threshold  # "not detected": every band reads as carried
                clear_profile_cache()
                plan._PLANS.clear()  # plans are cached by the clip's hash: both modes share it
                t = time.perf_counter()
                profile = make_profile((audio, clip.sample_rate))
                build_s = time.perf_counter() - t
                sim, wer, high = score(scorer, [adapt(a, profile, 1.0, sr) for a in base], sentences, ref_emb, sr)
                result[mode] = (sim - plain, wer, high, profile.report.bandwidth_hz, build_s)
            ltas._CLIFF_DB = cliff_db
            d, n = result["detected"], result["not detected"]
            rows.append([name, version, f"{d[3]:.0f}", f"{d[0]:+.3f} / {n[0]:+.3f}", f"{100 * d[1]:.1f} / {100 * n[1]:.1f}", f"{d[2]:.1f} / {n[2]:.1f}"])
            raw.append({"voice": name, "version": version, "plain_similarity": plain} | {m: dict(zip(("gain", "wer", "high_share_db", "bandwidth_hz", "build_s"), r)) for m, r in result.items()})
            print(" | ".join(rows[-1]), flush=True)
    headers = ["voice", "reference", "bandwidth found (Hz)", "gain: detected / not", "WER %: detected / not", "energy above 4.5 kHz (dB): detected / not"]
    table = common.markdown_table(headers, rows)
    unadapted_wer = score(scorer, base, sentences, scorer.embed(base[0], sr), sr)[1]
    common.report(
        f"Band-limited references, {len(sentences)} sentences ({info['cpu_model']}; unadapted WER {100 * unadapted_wer:.1f}%, "
        f"energy above 4.5 kHz {base_high:.1f} dB)",
        table,
    )
    print(f"wrote {common.write_results(NAME, {'machine': info, 'rows': raw, 'unadapted_wer': unadapted_wer, 'unadapted_high_share_db': base_high, 'table': table})}")


if __name__ == "__main__":
    main()
