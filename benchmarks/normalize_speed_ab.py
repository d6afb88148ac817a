"""Normalisation cost against an earlier revision, both in one process (issue 35: "no slower").

The base revision's ``tts_app`` is extracted (``git archive``) into a temporary folder as the package
``tts_base`` and imported beside this checkout's. Every 1,000-character piece is run by each variant in
turn (base ``expand_text``; this ``expand_text``; this ``expand_text`` with every rewrite recorded and each
word mapped back to its span, what ``prepare_text`` runs), best of ``--repeats`` on the measuring
thread's CPU time, summed: a shared machine's load then falls on all variants alike. Outputs of the
span path are checked equal to the base's when the base records spans too.

    python benchmarks/normalize_speed_ab.py --base 7774157   # the commit before span tracking
"""

from __future__ import annotations

import argparse
import importlib
import io
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.normalize_wer import SENTENCES, isa_flags, load_pairs  # noqa: E402
from benchmarks.voice_similarity import cpu_name  # noqa: E402

Variant = Callable[[str], object]


def extract(rev: str, into: Path) -> None:
    """``rev``'s ``tts_app`` as the package ``tts_base`` under ``into``."""
    tar = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "archive", rev, "tts_app"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(into, filter="data")
    (into / "tts_app").rename(into / "tts_base")
    for path in (into / "tts_base").rglob("*.py"):
        path.write_text(re.sub(r"\btts_app\b", "tts_base", path.read_text(encoding="utf-8")), encoding="utf-8")


def variants(package: str) -> tuple[Variant, Variant | None]:
    """(``expand_text``, ``expand_text`` with spans recorded and mapped back, or None where it has no spans)."""
    expand = importlib.import_module(f"{package}.text.expand").expand_text
    try:
        offsets = importlib.import_module(f"{package}.text.offsets")
    except ModuleNotFoundError:  # a revision before span tracking
        return expand, None
    words = importlib.import_module(f"{package}.text.words")

    def with_spans(text: str) -> object:
        with offsets.recording(offsets.Recorder()) as rec:
            out = expand(text)
        if hasattr(offsets, "map_bounds_back"):
            return out, offsets.map_bounds_back(*words.written_word_bounds(out), rec.passes)
        return out, offsets.map_back(words.written_word_spans(out), rec.passes)

    return expand, with_spans


def texts(chars: int) -> dict[str, str]:
    """Prose, dense and written-form text, ``chars`` long, one space between words (as normalize_text leaves it)."""
    shared = REPO_ROOT.parent / "shared" / "eval" / "sentences.txt"
    sources = {
        "prose": shared.read_text(encoding="utf-8")
        if shared.is_file()
        else "The birch canoe slid on the smooth planks.",
        "dense": " ".join(w for w, _ in load_pairs(SENTENCES)),
        "written": (REPO_ROOT / "tests" / "data" / "written_forms.txt").read_text(encoding="utf-8"),
    }
    return {k: " ".join(((t + " ") * (chars // len(t) + 1)).split())[:chars] for k, t in sources.items()}


def measure(fns: dict[str, Variant], text: str, repeats: int) -> dict[str, float]:
    """ms per 1,000 characters of each variant: per piece the best of ``repeats``, summed."""
    total = dict.fromkeys(fns, 0.0)
    for at in range(0, len(text), 1000):
        piece = text[at : at + 1000]
        best = dict.fromkeys(fns, float("inf"))
        for _ in range(repeats):
            for name, fn in fns.items():
                t0 = time.thread_time()
                fn(piece)
                best[name] = min(best[name], time.thread_time() - t0)
        for name in fns:
            total[name] += best[name]
    return {name: 1e3 * s / (len(text) / 1000) for name, s in total.items()}


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").is_file() else "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="7774157", help="revision to compare with (default: before span tracking)")
    parser.add_argument("--chars", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        extract(args.base, Path(tmp))
        sys.path.insert(0, tmp)
        base, base_spans = variants("tts_base")
        this, this_spans = variants("tts_app")
        assert this_spans is not None
        fns: dict[str, Variant] = {"base": base, "this": this, "this+spans": this_spans}
        if base_spans is not None:
            fns["base+spans"] = base_spans
        print(f"{cpu_name()} ({isa_flags()}); base {args.base}; load average {load()}")
        for name, text in texts(args.chars).items():
            pieces = [text[i : i + 1000] for i in range(0, len(text), 1000)]
            if base_spans is not None:  # the same words and spans, or the timing compares different work
                assert all(base_spans(p) == this_spans(p) for p in pieces), f"{name}: spans differ from the base's"
            ms = measure(fns, text, args.repeats)
            cols = "  ".join(f"{k} {v:.3f}" for k, v in ms.items())
            ratios = f"this+spans/this {ms['this+spans'] / ms['this']:.3f}, this+spans/base {ms['this+spans'] / ms['base']:.3f}"
            if "base+spans" in ms:
                ratios += f", base+spans/base {ms['base+spans'] / ms['base']:.3f}"
            print(f"{name}: ms per 1,000 characters: {cols}; {ratios}")
        print(f"load average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
