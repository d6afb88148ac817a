"""The Document tab: paste or upload a long text, read it as one job, follow it, get its files.

The job runs on the server, not in the page: the tab shows its progress from a timer, the
job id goes in the page's URL (?job=...), and reopening that URL finds the job again. The
voice and settings are the Speak tab's. Audio plays from the start through the job's
growing WAV (GET /v1/documents/{id}/audio.wav).

A job is its owner's (the browser that started it, see ``owner_keys``): another browser opening
``?job=<id>`` finds nothing. The owner may make a read-only share link (``?share=<token>``): it
shows the progress and files, never Stop; "Stop sharing" revokes it.
"""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Any

import gradio as gr

from tts_app.web.ui.common.user_error import UserError
from tts_app.web.guards.client_identity import owner_key, owner_keys, visitor_key
from tts_app.web.ui.speak.handlers import _settings_values, resolve_page_params
from tts_app.web.ui.voices.voice_input import MODE_UPLOAD, VoiceChoiceError, voice_choice

MAX_UPLOAD_BYTES = 1_500_000  # 200,000 characters of UTF-8, and then some
POLL_S = 1.0
STOP_WAIT_S = 10.0  # Stop's answer waits at most this long for the job to be over
# The share link comes back as "?share=<token>"; the page makes it a whole address (the server may sit behind a proxy).
FULL_LINK_JS = "(link) => link && link.startsWith('?') ? window.location.origin + window.location.pathname + link : link"
SHARED = "shared:"  # the tab's job reference for a job shown through a share link (else: the owner's job id)
UNKNOWN = "⚠ That document job is unknown (jobs are kept for an hour; another browser's job needs its share link)."
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


def progress_html(p: dict[str, Any], queue_position: int = 0, share: str = "") -> str:
    """The progress box: a bar, chapters and pieces done, audio so far, time left, the files (through
    the share link's routes when ``share`` is the token it is seen through)."""
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
        f'<div class="doc-progress" data-status="{status}"' + ("" if share else f' data-job="{p["id"]}"') + ">",
        f"<b>{head}</b>",
        f'<progress value="{done}" max="{total}"></progress>',
        f"<div>{done} of {p['pieces']} pieces · {p['chars_done']:,} of {p['chars']:,} characters · "
        f"{_fmt_s(p['audio_s'])} of audio · time left {_time_left(p)}</div>",
    ]
    if p.get("error"):
        lines.append(f"<div>{html.escape(p['error'])}</div>")
    base = f"/v1/shared-documents/{share}" if share else f"/v1/documents/{p['id']}"
    if status in ("running", "queued") or p["files"]:
        # A growing stream is fetched only when played; a finished file's length is shown at once ("0:00 / 0:00" otherwise).
        preload = "none" if status in ("running", "queued") else "metadata"
        lines.append(f'<audio controls preload="{preload}" src="{base}/audio.wav"></audio>')
    names = {"wav": "audio.wav", "m4b": "audio.m4b", "mp3": "audio.mp3", "srt": "captions.srt", "vtt": "captions.vtt"}
    links = [f'<a href="{base}/{names[k]}" download>{names[k]}</a>' for k in ("wav", "m4b", "mp3", "srt", "vtt") if k in p["files"]]
    if links:
        lines.append("<div>Download: " + " · ".join(links) + "</div>")
    if share:
        lines.append('<div class="muted">Shared with you by its owner: you can listen and download, not stop it.</div>')
    else:
        lines.append(f'<div class="muted">Job <code>{p["id"]}</code>: this page\'s address finds it again in this browser '
                     "for an hour.</div>")
    return "\n".join(lines) + "</div>"


def load_file(path: str | None) -> tuple[Any, Any, Any]:
    """An uploaded .txt/.md file's text for the document box, the title box cleared (the title of the text read
    before is not this file's; a typed title still wins) and the file's name, the job's title when the text has
    no heading either."""
    if not path:
        return gr.skip(), gr.skip(), ""
    file = Path(path)
    if file.suffix.lower() not in (".txt", ".md", ".markdown"):
        raise UserError("Upload a .txt or .md file.")
    if file.stat().st_size > MAX_UPLOAD_BYTES:
        raise UserError(f"That file is over {MAX_UPLOAD_BYTES // 1_000_000:.1f} MB; the limit is 200,000 characters.")
    try:
        return file.read_text(encoding="utf-8-sig"), "", file.stem[:200]
    except UnicodeDecodeError as exc:
        raise UserError("That file is not UTF-8 text.") from exc


def start(text: str, markdown: bool, title: str, voice_mode: str, builtin: str | None, upload: str | None,
          voice_text: str | None, strength: float, speed: float, seed: float, file_name: str | None = None,
          request: gr.Request | None = None) -> tuple[str, str]:  # fmt: skip
    """Start a job with the Speak tab's voice and settings; returns (job id, progress box); the timer starts after.

    Its title names its files: the typed one, else the document's first heading, else ``file_name`` (the page's
    upload: page state, not an API parameter), else "Document"."""
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
        untitled = (file_name or "").strip()[:200] or "Document"
        job = document_jobs().admit(text, bool(markdown), settings, (title or "").strip()[:200], clients,
                                    untitled=untitled, owner=owner_key(request))
    except TextError as exc:
        raise UserError(str(exc)) from exc
    except JobsBusy as exc:
        raise UserError(f"Not started: {exc}." if isinstance(exc, ClientJobsFull) else f"The server is busy: {exc}.") from exc
    return job.id, progress_html(job.progress(), document_jobs().queue_position(job.id))


def _job(ref: str | None, request: gr.Request | None) -> tuple[Any, str]:
    """The job ``ref`` names for this request and the share token it is seen through ("": its owner's
    own); (None, "") when it is unknown, or another browser's."""
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    ref = ref or ""
    if ref.startswith(SHARED):
        return document_jobs().shared(ref[len(SHARED):]), ref[len(SHARED):]
    return document_jobs().owned(ref, owner_keys(request)), ""


def poll(job_id: str | None, request: gr.Request | None = None) -> tuple[str, Any]:
    """The job's progress box; the timer stops once the job is over."""
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    job, share = _job(job_id, request)
    if job is None:
        return (IDLE if not job_id else UNKNOWN), gr.update(active=False)
    progress = job.progress()
    return progress_html(progress, document_jobs().queue_position(job.id), share), gr.update(active=not job.status.over)


def stop(job_id: str | None, request: gr.Request | None = None) -> str:
    """Stop this browser's job; returns its progress box once it is over (its last piece cut short, its files
    written), or after ``STOP_WAIT_S`` (it said "running" still: the job ends a moment after the cancel). The timer
    sees the job over at its next tick and stops itself."""
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    job, share = _job(job_id, request)
    if share:
        raise UserError("Only the browser that started this document can stop it.")
    jobs = document_jobs()
    if job is not None and jobs.cancel(job.id):
        deadline = time.monotonic() + STOP_WAIT_S
        while (current := jobs.get(job.id)) is not None and not current.status.over and time.monotonic() < deadline:
            time.sleep(0.05)
    return poll(job_id, request)[0]


def share_link(job_id: str | None, request: gr.Request | None = None) -> str:
    """A read-only link to this browser's job (the same until revoked), as a page address."""
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    job, share = _job(job_id, request)
    if job is None or share:
        raise UserError("Start a document in this browser first; only its owner can share it.")
    return f"?share={document_jobs().make_share(job.id)}"


def stop_sharing(job_id: str | None, request: gr.Request | None = None) -> str:
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    job, share = _job(job_id, request)
    if job is None or share:
        raise UserError("Only the browser that started this document can stop sharing it.")
    document_jobs().unshare(job.id)
    return ""


def resume(request: gr.Request) -> tuple[str, str, Any, Any]:
    """On page load: a ``?job=`` (this browser's job) or ``?share=`` (a link its owner made) in the address
    opens this tab on that job (running or done)."""
    params = request.query_params if request is not None else {}
    job_id = (params.get("job") or "").strip()[:64]
    share = (params.get("share") or "").strip()[:64]
    ref = f"{SHARED}{share}" if share else job_id
    if not ref:
        return "", IDLE, gr.update(active=False), gr.skip()
    box, timer = poll(ref, request)
    return ref, box, timer, gr.Tabs(selected="document")


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
                    title = gr.Textbox(label="Title", value="", placeholder="the first heading, else the file's name",
                                       max_length=200, elem_id="document-title")  # fmt: skip
                    markdown = gr.Checkbox(value=True, label="Markdown (headings are chapters)", elem_id="document-markdown")
            with gr.Row():
                read_btn = gr.Button("Read document", variant="primary", scale=3, elem_id="document-read")
                stop_btn = gr.Button("Stop", variant="stop", scale=1, elem_id="document-stop")
        with gr.Column(scale=5, min_width=300):
            box = gr.HTML(IDLE, label="Document progress", show_label=False, elem_id="document-progress")
            with gr.Row():  # a read-only link for others; nobody gets the job by its id alone
                share_btn = gr.Button("Share a read-only link", size="sm", elem_id="document-share")
                unshare_btn = gr.Button("Stop sharing", size="sm", elem_id="document-unshare")
            link = gr.Textbox(label="Share link (listen and download; no Stop)", interactive=False,
                              elem_id="document-share-link")  # fmt: skip
    timer = gr.Timer(POLL_S, active=False)
    file_name = gr.State("")  # the uploaded file's name (cleared with the upload)
    upload.change(load_file, upload, [text, title, file_name], api_visibility="private")
    # show_progress="hidden" everywhere: the box is its own progress; Gradio's queue text
    # ("processing | 0.3/4.6s") flickered inside it on every event.
    # The API returns what it documents (the progress box), never a timer's update: the page starts its timer after.
    read_btn.click(start, [text, markdown, title, *speak_inputs, file_name], [job_id, box], api_name="read_document",
                   show_progress="hidden").success(lambda: gr.Timer(active=True), None, timer, api_visibility="private")  # fmt: skip
    timer.tick(poll, job_id, [box, timer], show_progress="hidden", api_visibility="private")
    stop_btn.click(stop, job_id, box, api_name="stop_document", show_progress="hidden")
    share_btn.click(share_link, job_id, link, api_name="share_document", show_progress="hidden").then(
        None, link, link, js=FULL_LINK_JS)
    unshare_btn.click(stop_sharing, job_id, link, api_name="unshare_document", show_progress="hidden")
    return job_id, box, timer
