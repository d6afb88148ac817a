"""Live captions under the stream player: the words heard so far, the current one highlighted.

The words are shown as the reader wrote them: one span per written token ("$5"), its times the
union of the words spoken for it ("five dollars", kept in the span's title).

The page gets the words as spans carrying their times in the live stream; a small script in
the page head compares them with the live player's clock every 40 ms. Word times are the
engine's (from the model's durations); the stream is the joined take, so the same times
serve both.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from tts_app.backends.base import WordTiming
from tts_app.captions.subtitles import written_words

EMPTY = '<div class="captions muted">Captions appear here as the lines are spoken.</div>'


def captions_html(lines: Sequence[Sequence[WordTiming]], run_id: str) -> str:
    """The caption box's HTML: a paragraph a line, a span a word with its start and end in the stream (seconds)."""
    if not any(lines):
        return EMPTY
    paragraphs = "".join("<p>" + " ".join(_span(line, w) for w in written_words(line)) + "</p>" for line in lines if line)
    return f'<div class="captions" data-run="{html.escape(run_id)}">{paragraphs}</div>'


# The box is re-sent whole (an HTML component has no append): sent on every update, a page run of 50 x 2,000
# characters sent 30 MB of event stream for 100 KB of text (issue 46). While a run is made the box holds at most
# LIVE_CAPTION_WORDS words (about 7 minutes of speech; the finished run's update carries every word), and is sent
# again only once it has grown by LIVE_CAPTION_STEP words and by LIVE_CAPTION_GROWTH of itself: a few dozen sends
# of a run, their bytes a few times the capped box, while the box stays a few seconds ahead of the listener.
LIVE_CAPTION_WORDS = 1000
LIVE_CAPTION_STEP = 6
LIVE_CAPTION_GROWTH = 1.1


class LiveCaptions:
    """The caption box of one run: ``update`` gives its HTML when it has grown enough to be sent again (None
    otherwise), within LIVE_CAPTION_WORDS words; ``final`` gives all of it."""

    def __init__(self, run_id: str, max_words: int = LIVE_CAPTION_WORDS) -> None:
        self.run_id = run_id
        self.max_words = max_words
        self._shown = 0

    def update(self, lines: Sequence[Sequence[WordTiming]]) -> str | None:
        capped, left = [], self.max_words
        for line in lines:
            capped.append(list(line[:left]))
            left -= len(capped[-1])
        shown = self.max_words - left
        due = shown == self.max_words or shown >= max(self._shown + LIVE_CAPTION_STEP, self._shown * LIVE_CAPTION_GROWTH)
        if shown <= self._shown or not due:
            return None
        self._shown = shown
        return captions_html(capped, self.run_id)

    def final(self, lines: Sequence[Sequence[WordTiming]]) -> str:
        return captions_html(lines, self.run_id)


def _span(line: Sequence[WordTiming], w: WordTiming) -> str:
    """A written token's span; where it was spoken otherwise ("$5": "five dollars"), the spoken words are its title."""
    spoken = " ".join(x.word for x in line if w.text_start is not None and (x.text_start, x.text_end) == (w.text_start, w.text_end))
    title = f' title="{html.escape(spoken)}"' if spoken and spoken != w.word else ""
    return f'<span data-s="{w.start:.3f}" data-e="{w.end:.3f}"{title}>{html.escape(w.word)}</span>'


# The stream player's clock starts at its first buffered range (the encoder's priming shifts it a little);
# a new run (data-run) takes a new origin. The highlighted span is the one whose [start, end) holds the clock.
CAPTION_SCRIPT = """<script>
(() => {
  const tick = () => {
    const box = document.querySelector('#live-captions .captions[data-run]');
    if (!box) return;
    // the page's own live player (live_player.py) keeps the take's clock; else the HLS player's
    let t = window.ttsLive ? window.ttsLive.clock(box.dataset.run) : null;
    if (t === null) {
      const media = document.querySelector('#stream-player audio');
      if (!media) return;
      if (media.__captionRun !== box.dataset.run) {
        if (!media.buffered.length) return;
        media.__captionRun = box.dataset.run;
        media.__captionT0 = media.buffered.start(0);
      }
      t = media.currentTime - media.__captionT0;
    }
    let now = null;
    for (const el of box.querySelectorAll('span[data-s]')) {
      if (+el.dataset.s <= t && t < +el.dataset.e) { now = el; break; }
    }
    for (const el of box.querySelectorAll('span.now')) if (el !== now) el.classList.remove('now');
    if (now && !now.classList.contains('now')) {
      now.classList.add('now');
      // keep the word in view inside the box (never scrolls the page)
      const top = now.offsetTop;  // the box is positioned, so this is within it
      if (top < box.scrollTop || top + now.offsetHeight > box.scrollTop + box.clientHeight) box.scrollTop = top - box.clientHeight / 3;
    }
    box.dataset.clock = t.toFixed(3);
  };
  setInterval(tick, 40);
})();
</script>"""
