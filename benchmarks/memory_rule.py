"""The memory rule on a fresh server (issue 46, hole 4): each case's peak RSS over idle, and the idle after it.

Starts ``python app.py`` from a checkout (this one, or ``--repo DIR`` for another revision, e.g. a
``git worktree`` of main), warms it with one short request, reads the warmed idle RSS, then runs the
cases of tests/support/memory_cases.py in turn and a page run (``--page-lines`` lines of 2,000 characters,
Stream on, its event stream read; 0 skips it). Prints the CPU, the warmed idle and one row per case as JSON.

    python benchmarks/memory_rule.py [--repo DIR] [--page-lines 50]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.voice_similarity import cpu_name  # noqa: E402
from tests.support.app_server import serve_app  # noqa: E402
from tests.support.memory_cases import CASES, Case, Sampler, measure, page_run, settled, speech, text_of  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO_ROOT, help="the checkout whose app.py runs")
    parser.add_argument("--page-lines", type=int, default=50, help="lines of the page run (0: none)")
    args = parser.parse_args()
    cases = dict(CASES)
    if args.page_lines:
        cases[f"page run, {args.page_lines} x 2,000 characters, Stream on"] = Case("page run", lambda base: page_run(base, args.page_lines, 2000))
    with tempfile.TemporaryDirectory() as tmp, serve_app(Path(tmp) / "app.log", {"GRADIO_TEMP_DIR": tmp}, repo=args.repo) as (base, process):
        import httpx

        while httpx.get(f"{base}/readyz", timeout=10).status_code != 200:
            pass
        speech(base, text_of(200), stream=True)  # warm: the route, the encoder, a first shape
        warm = settled(process.pid)
        sampler = Sampler(process.pid)
        try:
            rows = measure(base, process.pid, cases, sampler, warm)
        finally:
            sampler.stop()
    print(json.dumps({"cpu": cpu_name(), "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                      "repo": str(args.repo), "warm_idle_mb": round(warm, 1), "cases": rows}, indent=1))


if __name__ == "__main__":
    main()
