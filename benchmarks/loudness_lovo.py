"""Even loudness (issue 47, item 5): the level keeper's target chosen leaving one shared voice out, and each take's
spread with it, on the matched route (the embedded voice with each shared voice's filter) and its own voice.

For each shared voice (../shared/voices) the lines of ../shared/eval/sentences.txt are spoken without the keeper;
each line's peak-to-active-level ratio is measured. Leaving voice v out, the target is the highest level at which the
other voices' lines stay under the -1 dBFS ceiling 19 times in 20 (the ceiling minus their ratios' 95th percentile);
v's take is then levelled at that target and its spread (each line's active level minus the take's median) and
peaks reported. The constant kept in tts_app/audio/loudness.py is the median of the per-voice targets, to 0.5 dB.

    python benchmarks/loudness_lovo.py [--lines 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tts_app.audio import loudness  # noqa: E402

SHARED = next((p / "shared" for p in REPO.parents if (p / "shared" / "voices").is_dir()), REPO.parent / "shared")  # ../shared, or above a worktree


def _machine() -> str:
    flags = ""
    try:
        info = Path("/proc/cpuinfo").read_text()
        model = next(line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name"))
        have = set(next(line.split(":", 1)[1] for line in info.splitlines() if line.startswith("flags")).split())
        flags = " ".join(f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile") if f in have)
    except (OSError, StopIteration):
        model = platform.processor()
    return f"{model} ({flags})"


def _takes(voices: list[Path], lines: list[str]) -> dict[str, list[np.ndarray]]:
    """Each voice's lines (and the model's own), spoken with the keeper off (what it is given to level)."""
    from tts_app.backends import piper as piper_backend
    from tts_app.engine import Engine, SpeechParams
    from tts_app.engine.input_processing import resolve_params

    piper_backend.LEVELLED = False  # the raw route
    engine = Engine()
    try:
        takes = {}
        for voice in [None, *voices]:
            params = resolve_params(SpeechParams(seed=0, voice=str(voice) if voice else None))
            takes[voice.stem if voice else "own"] = [h.result(timeout=600) for h in [engine.submit(t, params) for t in lines]]
        return takes, int(engine.sample_rate)
    finally:
        engine.close()
        piper_backend.LEVELLED = True


def _ratio_db(audio: np.ndarray, rate: int) -> float:
    return 20 * np.log10(float(np.abs(audio).max()) + 1e-12) - loudness.active_level_dbfs(audio, rate)


def _levelled(take: list[np.ndarray], rate: int, **keep) -> dict:
    chunk = rate // 10  # levelled as it streams, 100 ms at a time (the gains do not depend on the chunks)
    out = []
    for line in take:
        keeper = loudness.LevelKeeper(rate, **keep)
        out.append(np.concatenate([keeper.process(line[i:i + chunk]) for i in range(0, line.size, chunk)]))
    levels = [loudness.active_level_dbfs(a, rate) for a in out]
    median = statistics.median(levels)
    return {"spread_db": round(max(abs(x - median) for x in levels), 2), "median_dbfs": round(median, 2),
            "peak_max_dbfs": round(max(20 * np.log10(float(np.abs(a).max())) for a in out), 2)}


GRID = [(prior_s, slack) for prior_s in (0.0, 0.25, 0.5, 1.0) for slack in (2.0, 3.0, 6.0)]


def _fold(takes: dict, rate: int, held: str, ratios: dict, raw_levels: dict) -> dict:
    """The constants chosen on every shared voice but ``held``, and ``held``'s take levelled with them."""
    train = [v for v in takes if v not in (held, "own")]
    target = loudness.CEILING_DBFS - float(np.percentile([r for v in train for r in ratios[v]], 95))
    prior = float(np.median([x for v in train for x in raw_levels[v]]))

    def worst(prior_s: float, slack: float) -> float:
        return max(_levelled(takes[v], rate, target_dbfs=target, prior_dbfs=prior, prior_s=prior_s, slack_db=slack)["spread_db"]
                   for v in train)

    prior_s, slack = min(GRID, key=lambda g: worst(*g))
    keep = dict(target_dbfs=target, prior_dbfs=prior, prior_s=prior_s, slack_db=slack)
    return {**{k: round(v, 2) for k, v in keep.items()}, "held_out": _levelled(takes[held], rate, **keep)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=10)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--raw", type=Path, help="an .npz of the raw takes to reuse (written when absent)")
    args = ap.parse_args()
    lines = [t for t in (SHARED / "eval" / "sentences.txt").read_text().splitlines() if t.strip()][: args.lines]
    voices = sorted(p for p in (SHARED / "voices").iterdir() if p.suffix in (".wav", ".flac", ".mp3"))
    if args.raw and args.raw.is_file():
        saved = np.load(args.raw)
        rate = int(saved["rate"])
        takes = {v: [saved[f"{v}/{i}"] for i in range(len(lines))] for v in ["own", *(p.stem for p in voices)]}
    else:
        takes, rate = _takes(voices, lines)
        if args.raw:
            np.savez(args.raw, rate=rate, **{f"{v}/{i}": a for v, take in takes.items() for i, a in enumerate(take)})
    ratios = {v: [_ratio_db(a, rate) for a in take] for v, take in takes.items()}
    raw_levels = {v: [loudness.active_level_dbfs(a, rate) for a in take] for v, take in takes.items()}
    folds = {held: _fold(takes, rate, held, ratios, raw_levels) for held in takes if held != "own"}
    chosen = {"target_dbfs": round(2 * statistics.median(f["target_dbfs"] for f in folds.values())) / 2,
              "prior_dbfs": round(2 * statistics.median(f["prior_dbfs"] for f in folds.values())) / 2,
              "prior_s": statistics.mode(f["prior_s"] for f in folds.values()),
              "slack_db": statistics.mode(f["slack_db"] for f in folds.values())}
    kept = dict(target_dbfs=loudness.TARGET_DBFS, prior_dbfs=loudness.PRIOR_DBFS, prior_s=loudness.PRIOR_S,
                slack_db=loudness.SLACK_DB)
    report = {"machine": _machine(), "lines": len(lines), "folds": folds, "chosen": chosen, "kept": kept,
              "with_kept": {v: _levelled(take, rate, **kept) for v, take in takes.items()},
              "raw_spread_db": {v: round(max(x) - min(x), 2) for v, x in raw_levels.items()}}
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
