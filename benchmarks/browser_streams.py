"""M pages streaming at once in headless Chromium: what each page's own live player heard, per policy.

For each scheduling policy (a fresh ``python app.py`` with ``TTS_APP_ENGINE_POLICY`` set), M pages (each its
own browser context: its own session) type the same long line, streaming on, and Generate is clicked on
all of them within a few milliseconds. Each page's live player (Web Audio fed from ``/live/{token}``)
reports its first sound (seconds from its own click) and every gap it heard (``window.ttsLive``);
the figures are those a listener hears, browser and hand-over included, beside the engine-level
``stream_qos.py``. All pages come from one address, one visitor: ``TTS_APP_CLIENT_SHARE=1`` lets that
visitor hold every slot (a public server shares them between visitors).

    python benchmarks/browser_streams.py [--pages 8] [--words 50] [--shared ../shared]

Needs Debian's chromium (/usr/bin/chromium) and Playwright, as the browser tests do.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.app_server import serve_app  # noqa: E402 - the tests' server starter, shared

NAME = "browser_streams"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required"]
POLICIES = ("fifo", "deadline")
HEARD_JS = """() => ({ended: !!window.ttsLive && window.ttsLive.ended, first: window.ttsLive && window.ttsLive.firstSoundS,
  gaps: window.ttsLive ? window.ttsLive.underruns.map(u => u[1]) : [], received: window.ttsLive ? window.ttsLive.received : 0,
  rate: window.ttsLive && window.ttsLive.ctx ? window.ttsLive.ctx.sampleRate : 0})"""


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pages", type=int, default=8, help="pages streaming at once (default 8)")
    parser.add_argument("--words", type=int, default=50, help="words of the line each page speaks (default 50: about 15 s)")
    parser.add_argument("--timeout-s", type=float, default=240.0, help="a run is cut after this long")


def _run_policy(browser: Any, policy: str, text: str, pages_n: int, timeout_s: float, log_dir: Path) -> dict[str, Any]:
    env = {"TTS_APP_ENGINE_POLICY": policy, "TTS_APP_CLIENT_SHARE": "1"}
    with serve_app(log_dir / f"browser_streams_{policy}.log", env) as (base, _process):
        deadline = time.monotonic() + 300
        while httpx.get(f"{base}/readyz", timeout=10).status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("the engine did not load")
            time.sleep(0.25)
        contexts = [browser.new_context(viewport={"width": 1280, "height": 900}) for _ in range(pages_n)]
        pages = []
        for context in contexts:
            page = context.new_page()
            page.goto(base + "/", wait_until="domcontentloaded")
            page.wait_for_selector("#generate-btn", timeout=60_000)
            page.locator("#text-input textarea").fill(text)
            toggle = page.locator("#streaming-toggle input[type=checkbox]")
            if not toggle.is_checked():
                toggle.check()
            pages.append(page)
        load1 = os.getloadavg()[0]
        for page in pages:  # the clicks come within a few milliseconds of each other
            page.click("#generate-btn", no_wait_after=True)
        heard: list[dict[str, Any]] = []
        end = time.monotonic() + timeout_s
        for page in pages:
            left_ms = max(1.0, (end - time.monotonic()) * 1000)
            try:
                page.wait_for_function("() => window.ttsLive && window.ttsLive.ended", timeout=left_ms, polling=200)
            except Exception:  # noqa: BLE001 - a page that did not finish is reported as such, not a crash
                pass
            heard.append(page.evaluate(HEARD_JS))
        for context in contexts:
            context.close()
    firsts = [h["first"] for h in heard if h["first"] is not None]
    audio = sum(h["received"] / h["rate"] for h in heard if h["rate"])
    gaps = [sum(h["gaps"]) for h in heard]
    return {
        "policy": policy,
        "pages": pages_n,
        "ended": sum(bool(h["ended"]) for h in heard),
        "load1_at_click": load1,
        "first_sound_p50_s": common.percentile(firsts, 50),
        "first_sound_p95_s": common.percentile(firsts, 95),
        "pages_with_gaps": sum(g > 0.01 for g in gaps),
        "gaps_heard": sum(len(h["gaps"]) for h in heard),
        "gap_s_per_page": sum(gaps) / len(heard) if heard else float("nan"),
        "stall_fraction": sum(gaps) / audio if audio else float("nan"),
        "audio_s_per_page": audio / len(heard) if heard else float("nan"),
        "per_page": heard,
    }


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0], _extra_args)
    info = common.machine_info()
    common.print_machine(info)
    from playwright.sync_api import sync_playwright  # the browser driver: only this benchmark needs it

    text = common.text_of_words(common.load_sentences(args.shared), args.words)
    log_dir = Path(tempfile.mkdtemp(prefix="browser_streams_"))  # the servers' logs, if a run needs reading
    print(f"server logs: {log_dir}", flush=True)
    results: dict[str, Any] = {"machine": info, "pages": args.pages, "words": args.words, "runs": []}
    rows = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for policy in POLICIES:
                run = _run_policy(browser, policy, text, args.pages, args.timeout_s, log_dir)
                results["runs"].append(run)
                print({k: v for k, v in run.items() if k != "per_page"}, flush=True)
                rows.append([policy, run["pages"], run["ended"], f"{run['load1_at_click']:.1f}", run["first_sound_p50_s"],
                             run["first_sound_p95_s"], run["pages_with_gaps"], run["gaps_heard"], run["gap_s_per_page"],
                             run["stall_fraction"], run["audio_s_per_page"]])
        finally:
            browser.close()
    results["machine_after"] = common.machine_info()
    common.write_results(NAME, results)
    headers = ["policy", "pages", "ended", "load 1 min", "first sound p50", "first sound p95", "pages with gaps", "gaps",
               "gap s/page", "stall fraction", "audio s/page"]
    common.report(f"{args.pages} pages streaming at once in headless Chromium", common.markdown_table(headers, rows))


if __name__ == "__main__":
    main()
