"""The Document tab: paste or upload a long text, read it as one job, follow it, get its files.

The job runs on the server, not in the page: the tab shows its progress from a timer, the
job id goes in the page's URL (?job=...), and reopening that URL finds the job again. The
voice and settings are the Speak tab's. Audio plays from the start through the job's
growing WAV (GET /v1/documents/{id}/audio.wav).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import gradio as gr

from tts_app.web.ui.common.user_error import UserError
from tts_app.web.guards.client_identity import visitor_key
from tts_app.web.ui.speak.handlers import _settings_values, resolve_page_params
from tts_app.web.ui.voices.voice_input import MODE_UPLOAD, VoiceChoiceError, voice_choice

MAX_UPLOAD_BYTES = 1_500_000  # 200,000 characters of UTF-8, and then some
POLL_S = 1.0
IDLE = '<div class="muted">Paste a document or upload a .txt or .md file, then <b>Read document</b>.</div>'
# Puts the shown job's id in the address bar, so a reload or a bookmark finds the job (page head).
JOB_URL_SCRIPT = """<script>
setInterval(() => {
  const el = document.querySelector('#document-progress .doc-progress[data-job]');
  if (!el) return;
  const url = new URL(window.location);
  if (url.searchParams.get('job') !== el.dataset.job) { url.searchParams.set('job', el.dataset.job); history.replaceState(null, '', url); }
}, 300);
</script>"""


def _fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "…"
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _time_left(p: dict[str, Any]) -> str:
    if p["status"] != "running":
        return "—"
    return "estimating…" if p["time_left_s"] is None else _fmt_s(p["time_left_s"])


def progress_html(p: dict[str, Any], queue_position: int = 0) -> str:
    """The progress box: a bar, chapters and pieces done, audio so far, time left, the files."""
    done, total = p["pieces_done"], max(p["pieces"], 1)
    status = p["status"]
    if status == "queued":
        head = f"Waiting for a free reader ({queue_position} ahead)" if queue_position else "Waiting for a free reader"
    elif status == "running" and p["pieces_done"] >= p["pieces"]:
        head = "Writing the files (WAV, M4B, MP3, captions)…"
    elif status == "running" and not p["chapters_started"]:
        head = "Starting…"
    elif status == "running":
        head = f"Reading chapter {p['chapters_started']} of {p['chapters']}: {html.escape(p['chapter'])}"
    else:
        head = {"finished": "✓ Finished", "cancelled": "■ Stopped", "failed": "⚠ Failed"}.get(status, status)
    lines = [
        f'<div class="doc-progress" data-status="{status}" data-job="{p["id"]}">',
        f"<b>{head}</b>",
        f'<progress value="{done}" max="{total}"></progress>',
        f"<div>{done} of {p['pieces']} pieces · {p['chars_done']:,} of {p['chars']:,} characters · "
        f"{_fmt_s(p['audio_s'])} of audio · time left {_time_left(p)}</div>",
    ]
    if p.get("error"):
        lines.append(f"<div>{html.escape(p['error'])}</div>")
    base = f"/v1/documents/{p['id']}"
    if status in ("running", "queued") or p["files"]:
        # A growing stream is fetched only when played; a finished file's length is shown at once ("0:00 / 0:00" otherwise).
        preload = "none" if status in ("running", "queued") else "metadata"
        lines.append(f'<audio controls preload="{preload}" src="{base}/audio.wav"></audio>')
    names = {"wav": "audio.wav", "m4b": "audio.m4b", "mp3": "audio.mp3", "srt": "captions.srt", "vtt": "captions.vtt"}
    links = [f'<a href="{base}/{names[k]}" download>{names[k]}</a>' for k in ("wav", "m4b", "mp3", "srt", "vtt") if k in p["files"]]
    if links:
        lines.append("<div>Download: " + " · ".join(links) + "</div>")
    lines.append(f'<div class="muted">Job <code>{p["id"]}</code>: this page\'s address finds it again for an hour.</div>')
    return "\n".join(lines) + "</div>"


def load_file(path: str | None) -> str:
    """An uploaded .txt/.md file's text, for the document box."""
    if not path:
        return gr.skip()
    file = Path(path)
    if file.suffix.lower() not in (".txt", ".md", ".markdown"):
        raise UserError("Upload a .txt or .md file.")
    if file.stat().st_size > MAX_UPLOAD_BYTES:
        raise UserError(f"That file is over {MAX_UPLOAD_BYTES // 1_000_000:.1f} MB; the limit is 200,000 characters.")
    try:
        return file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError("That file is not UTF-8 text.") from exc


def start(text: str, markdown: bool, title: str, voice_mode: str, builtin: str | None, upload: str | None,
          voice_text: str | None, strength: float, speed: float, seed: float,
          request: gr.Request | None = None) -> tuple[str, str, Any]:  # fmt: skip
    """Start a job with the Speak tab's voice and settings; returns (job id, progress, timer)."""
    from tts_app.documents import ClientJobsFull, JobsBusy, document_jobs, page_client  # start-up: the document jobs load on first use
    from tts_app.backends.params import SpeechParams  # start-up: with the document jobs
    from tts_app.text import TextError  # start-up: the text stack (espeak, lexicons) loads on first use

    if not (text or "").strip():
        raise UserError("The document is empty: paste some text or upload a file.")
    try:
        voice, _label = voice_choice(voice_mode, builtin, upload, getattr(request, "session_hash", None))
    except VoiceChoiceError as exc:
        raise UserError(str(exc)) from exc
    speed_value, seed_value, strength_value = _settings_values(speed, seed, strength)
    asked = SpeechParams(seed_value, speed_value, voice, voice_text if voice_mode == MODE_UPLOAD else None, strength_value,
                         client=visitor_key(request))  # its pieces count in the visitor's engine share
    settings = resolve_page_params(asked)  # now: the job outlives the upload
    try:  # caps checked before the text is parsed, and parsed in turn (documents/parse_gate.py)
        clients = page_client(visitor_key(request))  # the page's visitor, not its (free) session hash
        job = document_jobs().admit(text, bool(markdown), settings, (title or "").strip()[:200] or "Document", clients)
    except TextError as exc:
        raise UserError(str(exc)) from exc
    except JobsBusy as exc:
        raise UserError(f"Not started: {exc}." if isinstance(exc, ClientJobsFull) else f"The server is busy: {exc}.") from exc
    return job.id, progress_html(job.progress(), document_jobs().queue_position(job.id)), gr.update(active=True)


def poll(job_id: str | None) -> tuple[str, Any]:
    """The job's progress box; the timer stops once the job is over."""
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    job = document_jobs().get(job_id or "")
    if job is None:
        return (IDLE if not job_id else "⚠ That document job is unknown (jobs are kept for an hour)."), gr.update(active=False)
    progress = job.progress()
    return progress_html(progress, document_jobs().queue_position(job.id)), gr.update(active=not job.status.over)


def stop(job_id: str | None) -> tuple[str, Any]:
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    document_jobs().cancel(job_id or "")
    return poll(job_id)


def resume(request: gr.Request) -> tuple[str, str, Any, Any]:
    """On page load: a ``?job=`` in the address opens this tab on that job (running or done)."""
    job_id = (request.query_params.get("job") or "").strip()[:64] if request is not None else ""
    if not job_id:
        return "", IDLE, gr.update(active=False), gr.skip()
    box, timer = poll(job_id)
    return job_id, box, timer, gr.Tabs(selected="document")


def build_document_tab(speak_inputs: list[Any]) -> tuple[gr.State, gr.HTML, gr.Timer]:
    """The tab's components and events; ``speak_inputs``: the Speak tab's voice mode, built-in voice,
    upload, clip transcript, strength, speed and seed (the document is read with them)."""
    job_id = gr.State("")
    gr.Markdown(
        "Read a long text (up to 200,000 characters) as one job with the voice and settings of the "
        "**Speak** tab. Markdown headings become chapters; Markdown syntax is not read aloud. The job "
        "keeps running if you close this page; its address finds it again."
    )
    with gr.Row():
        with gr.Column(scale=5, min_width=300):
            text = gr.Textbox(label="Document", lines=12, max_lines=24, max_length=200_000, elem_id="document-text")
            with gr.Row(equal_height=True):
                # No fixed height: at 120 px the upload icon sat half under the label.
                upload = gr.File(label="…or upload .txt / .md", file_types=[".txt", ".md"], type="filepath",
                                 elem_id="document-upload")  # fmt: skip
                with gr.Column(min_width=160):
                    title = gr.Textbox(label="Title", value="Document", max_length=200, elem_id="document-title")
                    markdown = gr.Checkbox(value=True, label="Markdown (headings are chapters)", elem_id="document-markdown")
            with gr.Row():
                read_btn = gr.Button("Read document", variant="primary", scale=3, elem_id="document-read")
                stop_btn = gr.Button("Stop", variant="stop", scale=1, elem_id="document-stop")
        with gr.Column(scale=5, min_width=300):
            box = gr.HTML(IDLE, elem_id="document-progress")
    timer = gr.Timer(POLL_S, active=False)
    upload.change(load_file, upload, text, api_visibility="private")
    # show_progress="hidden" everywhere: the box is its own progress; Gradio's queue text
    # ("processing | 0.3/4.6s") flickered inside it on every event.
    read_btn.click(start, [text, markdown, title, *speak_inputs], [job_id, box, timer], api_name="read_document",
                   show_progress="hidden")  # fmt: skip
    timer.tick(poll, job_id, [box, timer], show_progress="hidden", api_visibility="private")
    stop_btn.click(stop, job_id, [box, timer], api_name="stop_document", show_progress="hidden")
    return job_id, box, timer
