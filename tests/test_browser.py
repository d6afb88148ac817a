"""A real browser (Debian's chromium, driven by Playwright): upload, three lines, streaming, line players.

While the page plays the live stream, a Web Audio tap records exactly what the player renders, and
the test aligns that against the joined file the server wrote, to measure any silence the streaming
path inserted at chunk boundaries (tests/artifacts/stream_gaps.json).
"""

from __future__ import annotations

import base64
import io
import json
import os
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf

from conftest import REPO
from stream_gaps import measure_gaps

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REFERENCE = REPO / "assets" / "voices" / "f5_ref_en.wav"
LONG_LINE = (
    "The third line is much longer than the others, so that it is still being decoded "
    "while the first line is already playing: the small boy put the worm on the hook, "
    "the box was thrown beside the parked truck, four hours of steady work faced us, "
    "a large size in stockings is hard to sell, the salt breeze came across from the sea, "
    "and the girl at the booth sold fifty bonds before the long day was over. "
    "Then the wide road shimmered in the hot sun, the rope will bind the seven books at once, "
    "the frosty air passed through the coat, the crooked maze failed to fool the mouse, "
    "adding fast leads to wrong sums, and the show was a flop from the very start. "
    "A pot of tea helps to pass the evening, smoky fires lack flame and heat, the soft cushion "
    "broke the man's fall, the salt breeze came across from the sea, the girl at the booth sold "
    "fifty bonds, the small pup gnawed a hole in the sock, the fish twisted and turned on the bent "
    "hook, press the pants and sew a button on the vest, the swan dive was far short of perfect, "
    "and the beauty of the view stunned the young boy on the hill."
)
LISTEN_AT_MOST_S = 25  # how much of the live stream the gap measurement listens to
LINES = ["The birch canoe slid on the smooth planks.", "Glue the sheet to the dark blue background.", LONG_LINE]

# Runs before the page's own scripts: taps the live player into Web Audio to record what it
# plays, and notes when it starts playing and when each line player appears.
TAP_SCRIPT = r"""
(() => {
  const probe = { rate: 0, chunks: [], events: [], firstPlayingAt: null, linesAt: {} };
  window.__probe = probe;
  const originalPlay = HTMLMediaElement.prototype.play;
  HTMLMediaElement.prototype.play = function () {
    try {
      if (!this.__tapped && this.closest && this.closest('#stream-player')) {
        this.__tapped = true;
        const ctx = new AudioContext();
        const source = ctx.createMediaElementSource(this);
        const tap = ctx.createScriptProcessor(4096, 1, 1);
        probe.rate = ctx.sampleRate;
        tap.onaudioprocess = (e) => {
          probe.chunks.push(new Float32Array(e.inputBuffer.getChannelData(0)));
        };
        source.connect(tap);
        tap.connect(ctx.destination);
        ctx.resume();
        for (const name of ['playing', 'waiting', 'stalled', 'ended']) {
          this.addEventListener(name, () => {
            probe.events.push([name, performance.now(), this.currentTime]);
            if (name === 'playing' && probe.firstPlayingAt === null) probe.firstPlayingAt = performance.now();
          });
        }
      }
    } catch (err) { console.log('tap failed: ' + err); }
    return originalPlay.apply(this, arguments);
  };
  new MutationObserver(() => {
    const count = document.querySelectorAll('#line-players .line-player a[download]').length;
    if (count && !(count in probe.linesAt)) probe.linesAt[count] = performance.now();
  }).observe(document, { childList: true, subtree: true });
  probe.capturedPcm16 = () => {
    const total = probe.chunks.reduce((n, c) => n + c.length, 0);
    const pcm = new Int16Array(total);
    let at = 0;
    for (const c of probe.chunks) {
      for (let i = 0; i < c.length; i++) pcm[at++] = Math.max(-32768, Math.min(32767, Math.round(c[i] * 32767)));
    }
    const bytes = new Uint8Array(pcm.buffer);
    let binary = '';
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(binary);
  };
})();
"""


def _require_browser() -> None:
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("TTS_APP_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{CHROMIUM} is missing (apt-get install chromium chromium-driver)")
    pytest.skip(f"{CHROMIUM} is not installed")


def test_streaming_page_end_to_end(app_server: str, artifacts_dir: Path) -> None:
    _require_browser()
    from playwright.sync_api import sync_playwright

    segment_requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1360, "height": 900})
            page.add_init_script(TAP_SCRIPT)
            page.on("request", lambda r: segment_requests.append(r.url) if "/stream/" in r.url else None)
            page.goto(app_server + "/", wait_until="domcontentloaded")
            page.wait_for_selector("#generate-btn", timeout=60_000)

            # Voice: upload a reference clip; the page switches to it and shows its report.
            page.get_by_label("Upload or record").check()
            page.locator("#reference-upload input[type=file]").set_input_files(str(REFERENCE))
            page.wait_for_function(
                "() => document.querySelector('#reference-report')?.innerText.includes('f5_ref_en.wav')", timeout=60_000
            )

            # Text: three lines; streaming on; Generate.
            page.locator("#text-input textarea").fill("\n".join(LINES))
            toggle = page.locator("#streaming-toggle input[type=checkbox]")
            if not toggle.is_checked():
                toggle.check()
            clicked_at = page.evaluate("() => performance.now()")
            page.click("#generate-btn")

            # The live player has audio before the last line has finished.
            page.wait_for_function("() => window.__probe.firstPlayingAt !== null", timeout=60_000)
            probe = page.evaluate("() => ({playing: window.__probe.firstPlayingAt, lines: window.__probe.linesAt})")
            third_line_at = probe["lines"].get("3")
            assert third_line_at is None or probe["playing"] < third_line_at, probe

            # At the end, three line players hold audio.
            page.wait_for_function(
                "() => document.querySelector('#run-status')?.innerText.includes('Done')", timeout=180_000
            )
            page.wait_for_function(
                "() => document.querySelectorAll('#line-players .line-player a[download]').length === 3", timeout=30_000
            )
            page.wait_for_function(  # each player has loaded its audio and shows its length
                "() => { const d = [...document.querySelectorAll('#line-players .line-player time#duration')];"
                " return d.length === 3 && d.every(e => e.textContent && e.textContent !== '0:00'); }",
                timeout=30_000,
            )
            hrefs = page.eval_on_selector_all("#line-players .line-player a[download]", "els => els.map(e => e.href)")
            durations = page.eval_on_selector_all("#line-players .line-player time#duration", "els => els.map(e => e.textContent)")
            assert len(hrefs) == 3 and all(h.endswith(".wav") for h in hrefs), hrefs
            assert all(d and d != "0:00" for d in durations), durations
            line_seconds = []
            for href in hrefs:
                audio, rate = sf.read(io.BytesIO(httpx.get(href, timeout=30).content), dtype="float32")
                assert len(audio) > rate // 2 and np.abs(audio).max() > 0.01
                line_seconds.append(len(audio) / rate)
            full_href = page.eval_on_selector("#full-player a[download]", "e => e.href")
            sent, sent_rate = sf.read(io.BytesIO(httpx.get(full_href, timeout=30).content), dtype="float32")

            page.screenshot(path=str(artifacts_dir / "browser_streaming.png"), full_page=True)

            # Listen to the live player until it ends or for LISTEN_AT_MOST_S, then measure what it inserted.
            page.wait_for_function(
                f"() => window.__probe.events.some(e => e[0] === 'ended') "
                f"|| performance.now() - window.__probe.firstPlayingAt > {LISTEN_AT_MOST_S * 1000}",
                timeout=(LISTEN_AT_MOST_S + 60) * 1000,
            )
            time.sleep(0.3)
            played_rate = page.evaluate("() => window.__probe.rate")
            pcm = base64.b64decode(page.evaluate("() => window.__probe.capturedPcm16()"))
            events = page.evaluate("() => window.__probe.events")
            played = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32767
        finally:
            browser.close()

    sf.write(artifacts_dir / "browser_played.wav", played, played_rate)
    report = measure_gaps(played, played_rate, sent, sent_rate)
    stalls = [e for e in events if e[0] in ("waiting", "stalled") and e[2] > 0]
    result = {
        "gaps": report.as_dict(),
        "stream_requests": len(segment_requests),
        "stalls_after_start": len(stalls),
        "time_to_play_ms": round(probe["playing"] - clicked_at, 1),
        "third_line_done_ms": round(third_line_at - clicked_at, 1) if third_line_at else None,
        "line_seconds": [round(s, 2) for s in line_seconds],
        "sent_seconds": round(len(sent) / sent_rate, 2),
        "played_seconds": round(len(played) / played_rate, 2),
        "events": events,
    }
    (artifacts_dir / "stream_gaps.json").write_text(json.dumps(result, indent=2))
    assert report.windows > 50, result
    listened_s = min(len(sent) / sent_rate, len(played) / played_rate)
    assert report.compared_s > 0.8 * listened_s, result
    # No gaps at chunk boundaries: the played timeline drifts by under 50 ms over the whole stream.
    assert report.inserted_total_ms < 50, result
    assert report.largest_jump_ms < 25, result
    assert report.largest_drop_ms < 25, result
