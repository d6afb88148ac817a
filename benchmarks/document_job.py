"""A long document as one job on the real engine, while one-line requests keep arriving.

Builds a Markdown document of ``--chars`` characters from the evaluation sentences (a heading
every ~5,000 characters), runs ``--documents`` such jobs at once through ``DocumentJobs``, and
meanwhile submits a one-line request every ``--every`` seconds. Reports each document's wall
time and audio length (throughput, x real time), peak RSS during the run and after it, and the
one-line requests' time to first audio (p50/p95; issue 15's goal: p95 <= 1 s while two
50,000-character documents run). Stock piper speaks a 2,000-character sample in the same run for
a throughput reference.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

import psutil

from common import (
    load_backend, load_sentences, load_stock_piper, machine_info, markdown_table, parse_args, percentile, print_machine,
    report, stock_synthesize, write_results,
)  # fmt: skip


def build_document(sentences: list[str], chars: int) -> str:
    parts, size, chapter, since = [], 0, 0, 10**9
    k = 0
    while size < chars:
        if since > 5000:
            chapter += 1
            parts.append(f"\n# Chapter {chapter}\n")
            since = 0
        line = sentences[k % len(sentences)]
        parts.append(line + ("\n\n" if k % 4 == 3 else " "))
        size += len(line) + 1
        since += len(line) + 1
        k += 1
    return "".join(parts)


def main() -> int:
    def extra(p) -> None:
        p.add_argument("--chars", type=int, default=50_000)
        p.add_argument("--documents", type=int, default=2)
        p.add_argument("--every", type=float, default=2.0)

    args = parse_args(__doc__, extra)
    from tts_app.documents import DocumentJobs, DocumentSettings
    from tts_app.engine import Engine
    from tts_app.backends.params import SpeechParams
    from tts_app.text.document import parse_document

    info = machine_info()
    print_machine(info)
    sentences = load_sentences(args.shared)
    stock = load_stock_piper()
    sample = build_document(sentences, 2000).replace("#", "")
    stock_run = stock_synthesize(stock, sample)
    stock_xrt = stock_run.audio_s / stock_run.wall_s

    engine = Engine(load_backend(threads=2), max_batch_size=16)
    process = psutil.Process()
    rss: list[float] = []
    done = threading.Event()

    def sample_rss() -> None:
        while not done.is_set():
            rss.append(process.memory_info().rss / 1e6)
            time.sleep(0.5)

    threading.Thread(target=sample_rss, daemon=True).start()
    document = parse_document(build_document(sentences, args.chars))
    with tempfile.TemporaryDirectory() as folder:
        jobs = DocumentJobs(Path(folder), lambda: engine, max_running=args.documents)
        started = time.perf_counter()
        running = [jobs.start(document, DocumentSettings(seed=k), f"doc {k}") for k in range(args.documents)]
        ttfa: list[float] = []
        n = 0
        while not all(j.status.over for j in running):
            handle = engine.submit(sentences[n % len(sentences)], SpeechParams(seed=n))
            handle.result(timeout=300)
            ttfa.append(handle.metrics.time_to_first_audio_s or float("nan"))
            n += 1
            time.sleep(args.every)
        wall = time.perf_counter() - started
        done.set()
        rows = []
        for j in running:
            seconds = (j.finished_at or time.time()) - (j.started_at or time.time())
            rows.append([j.title, j.status.value, f"{j.document.chars:,}", f"{j.audio_s / 60:.1f} min",
                         f"{seconds:.0f} s", f"{j.audio_s / seconds:.1f}x", sorted(j.files)])  # fmt: skip
    engine.close()
    table = markdown_table(["document", "status", "chars", "audio", "wall", "x real time", "files"], rows)
    figures = [
        ["one-line requests during the run", len(ttfa)],
        ["their time to first audio p50 / p95 (s)", f"{percentile(ttfa, 50):.3f} / {percentile(ttfa, 95):.3f}"],
        ["peak RSS during the run (MB)", f"{max(rss):.0f}"],
        ["RSS at start / end (MB)", f"{rss[0]:.0f} / {rss[-1]:.0f}"],
        ["stock piper on a 2,000-character sample (x real time)", f"{stock_xrt:.1f}x"],
        ["all documents together (x real time)", f"{sum(j.audio_s for j in running) / wall:.1f}x"],
    ]
    report("Long documents on the real engine", table + "\n\n" + markdown_table(["figure", "value"], figures))
    write_results("document_job", {"machine": info, "documents": rows, "figures": figures, "ttfa": ttfa, "rss_mb": rss[::10]})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
