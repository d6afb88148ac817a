"""The page's look: theme, a little CSS, and the head tags."""

from __future__ import annotations

import gradio as gr

from tts_app.web.ui.common.tooltips import tooltip_script
from tts_app.web.ui.documents.tab import JOB_URL_SCRIPT
from tts_app.web.ui.history.takes import HISTORY_TIPS
from tts_app.web.ui.speak.captions_view import CAPTION_SCRIPT
from tts_app.web.ui.speak.live_player import LIVE_PLAYER_SCRIPT
from tts_app.web.ui.speak.run_status import STATUS_TIP

# Local font stacks only: a Space or a laptop offline must not wait on a font CDN.
_SANS = ["Inter", "ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "Roboto", "sans-serif"]
_MONO = ["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"]


def app_theme() -> gr.themes.Base:
    """A soft indigo theme with local fonts."""
    return gr.themes.Soft(
        primary_hue="indigo",
        secondary_hue="sky",
        neutral_hue="slate",
        radius_size="lg",
        font=_SANS,
        font_mono=_MONO,
    ).set(
        block_title_text_weight="600",
        button_large_text_weight="600",
    )


APP_CSS = """
#live-player .live, #live-player .live-idle { display: flex; align-items: center; gap: 0.5rem; min-height: 2.4rem;
  padding: 0.4rem 0.8rem; border-radius: var(--radius-lg); border: 1px solid var(--border-color-primary);
  background: var(--background-fill-primary); font-variant-numeric: tabular-nums; }
#live-player .live-dot { width: 0.6rem; height: 0.6rem; border-radius: 50%; background: #e11d48; flex: none; }
#live-player .live.ended .live-dot { background: var(--body-text-color-subdued); }
#live-captions .captions { line-height: 1.8; max-height: 9.5em; overflow-y: auto; padding: 0.2rem 0.1rem; text-align: left; position: relative; }
#document-progress .doc-progress > * { margin: 0.35rem 0; }
#document-progress progress { width: 100%; height: 14px; accent-color: var(--color-accent); }
#document-progress audio { width: 100%; }
#live-captions .captions p { margin: 0 0 0.35rem 0; text-align: left; }
#live-captions .captions span { padding: 0.05rem 0.12rem; border-radius: 4px; transition: background-color 80ms; }
#live-captions .captions span.now { background: var(--color-accent-soft); color: var(--body-text-color); font-weight: 600; }
.gradio-container { max-width: 1280px !important; margin: 0 auto !important; }
#app-header { padding: 0.6rem 0 0.2rem 0; }
#app-header h1 { margin-bottom: 0.1rem; font-size: 1.7rem; }
#app-header p { margin-top: 0; color: var(--body-text-color-subdued); }
.step-title h3 { margin: 0.2rem 0 0 0 !important; font-size: 1.02rem; letter-spacing: 0.01em; }
#run-status { min-height: 2.4rem; padding: 0.45rem 0.8rem; border-radius: var(--radius-lg);
  background: var(--background-fill-secondary); border: 1px solid var(--border-color-primary); }
#run-status p { margin: 0; }
#reference-report { font-size: 0.86rem; line-height: 1.35; padding: 0.5rem 0.75rem; border-radius: var(--radius-lg);
  background: var(--background-fill-secondary); border: 1px dashed var(--border-color-primary); }
#reference-report p { margin: 0; }
#line-players .line-player { margin-bottom: 0.25rem; }
#generate-btn, #stop-btn { min-height: 2.8rem; }
.ab-side { border-radius: var(--radius-lg); }
#ab-reveal { min-height: 2rem; }
footer { opacity: 0.75; }
#voice-library-status p { margin: 0; font-size: 0.86rem; }
/* Toasts replace each other: Gradio stacks every message of a kind in one growing box ("Error (3)",
   three times the same line over the form on a phone); only the newest of each kind is shown. */
.toast-messages .toast-message-item:not(:last-child), .toast-title .toast-count { display: none; }
/* Tables scroll sideways inside their own box, never the page (phones): their content must not set
   the column's width (contain: inline-size), and they never squeeze a column to a letter per line. */
#history-table, #lexicon-table { contain: inline-size; max-width: 100%; }
#history-table td { white-space: nowrap; }
/* Headers wrap onto a second line rather than being cut ("li…", "TTFA …" at 1280 px; the Pronunciation
   table's on a phone). */
#history-table th, #history-table th *, #lexicon-table th, #lexicon-table th * { white-space: normal !important;
  text-overflow: clip !important; overflow-wrap: normal; word-break: normal; }
@media (max-width: 900px) {
  #history-table table { min-width: 1500px; }
}
/* Wide screens: the Speak tab's outputs stay in view beside the form while it scrolls to Generate. Gradio's
   container clips with overflow: hidden, which makes it a scroll box and keeps sticky from working; clip does not. */
.gradio-container { overflow: clip !important; }
@media (min-width: 900px) {
  #speak-outputs { position: sticky; top: 0.5rem; align-self: flex-start; max-height: calc(100vh - 5rem); overflow-y: auto; }
  /* Taller than the screen: the column scrolls, its parts keep their height and one column (Gradio's wraps). */
  #speak-outputs { flex-wrap: nowrap !important; }
  #speak-outputs > * { flex-shrink: 0; }
}
/* The run's timeline (run_timeline.py): a bar a line on one time axis; percent widths, so any screen reads it. */
#run-timeline .run-timeline { font-size: 0.82rem; font-variant-numeric: tabular-nums; padding: 0.4rem 0.2rem; }
#run-timeline .tl-head, #run-timeline .tl-row { display: grid; grid-template-columns: 2.2rem 1fr 7.2rem; gap: 0.4rem; align-items: center; }
#run-timeline .tl-head { color: var(--body-text-color-subdued); grid-template-columns: 2.2rem 1fr 1fr 7.2rem; }
#run-timeline .tl-head span:nth-child(3) { text-align: right; }
#run-timeline .tl-row { margin: 0.18rem 0; }
#run-timeline .tl-track { position: relative; height: 0.9rem; border-radius: 4px; background: var(--background-fill-secondary); }
#run-timeline .tl-track span { position: absolute; top: 0; bottom: 0; }
#run-timeline .tl-figs { text-align: right; white-space: nowrap; }
#run-timeline .tl-wait { background: repeating-linear-gradient(45deg, #cbd5e1 0 4px, #e2e8f0 4px 8px); }
#run-timeline .tl-decode { background: #a5b4fc; }
#run-timeline .tl-audio { background: #4f46e5; border-radius: 0 4px 4px 0; }
#run-timeline .tl-legend { display: flex; flex-wrap: wrap; gap: 0.3rem 0.9rem; margin-top: 0.35rem; color: var(--body-text-color-subdued); }
#run-timeline .tl-key::before { content: ""; display: inline-block; width: 0.8rem; height: 0.6rem; margin-right: 0.3rem; border-radius: 2px; vertical-align: baseline; }
#run-timeline .tl-key.tl-wait, #run-timeline .tl-key.tl-decode, #run-timeline .tl-key.tl-audio { background: none; }
#run-timeline .tl-key.tl-wait::before { background: repeating-linear-gradient(45deg, #cbd5e1 0 3px, #e2e8f0 3px 6px); }
#run-timeline .tl-key.tl-decode::before { background: #a5b4fc; }
#run-timeline .tl-key.tl-audio::before { background: #4f46e5; }
#run-timeline .tl-summary { margin-top: 0.25rem; }
#api-help { contain: inline-size; overflow-wrap: anywhere; }
#api-help pre, #api-help table { display: block; max-width: 100%; overflow-x: auto; }
#api-help table { border: none; border-collapse: collapse; }
#api-help th, #api-help td { border: 1px solid var(--border-color-primary) !important; padding: 0.35rem 0.6rem; }
/* Five tab names do not fit a phone's width, and the tab bar's one-line row set the page's width:
   let it wrap onto a second line instead (what Gradio's own .wrap state does). */
.tabs .tab-wrapper { height: auto; min-width: 0; }
.tabs .tab-container { flex-wrap: wrap; height: auto; overflow: visible; min-width: 0; }
"""

# The live player (hls.js) gets a first buffered range that starts a few milliseconds after 0
# (AAC framing), and waits at currentTime 0 until its stall handling jumps the hole, measured at
# ~3.4 s in the browser test. While the stream player waits before its first buffered range,
# start it at that range (holes of up to 0.25 s, at the start only: later holes stay audible).
START_GAP_SCRIPT = """<script>
(() => {
  const MAX_START_GAP_S = 0.25;
  const jump = (media) => {
    const b = media.buffered;
    if (!b.length) return false;
    const gap = b.start(0) - media.currentTime;
    if (gap > 0 && gap <= MAX_START_GAP_S) { media.currentTime = b.start(0); return true; }
    return media.currentTime >= b.start(0);
  };
  const onWait = (event) => {
    const media = event.target;
    if (!(media instanceof HTMLMediaElement) || !media.closest || !media.closest('#stream-player')) return;
    if (media.currentTime > MAX_START_GAP_S || media.__startGapPoll) return;
    let tries = 0;
    media.__startGapPoll = setInterval(() => {  // until the first segment lands, for at most 10 s
      if (jump(media) || ++tries > 400) { clearInterval(media.__startGapPoll); media.__startGapPoll = null; }
    }, 25);
  };
  document.addEventListener('waiting', onWait, true);  // media events do not bubble: listen while capturing
})();
</script>"""

APP_HEAD = (
    '<meta name="description" content="Streaming text to speech with voice matching, A/B listening and an OpenAI-compatible API.">'
    + START_GAP_SCRIPT
    + LIVE_PLAYER_SCRIPT
    + CAPTION_SCRIPT
    + JOB_URL_SCRIPT
    + tooltip_script({"#history-table": HISTORY_TIPS}, {"#run-status": STATUS_TIP})
)
