"""The API tab: how to call this server from code (the OpenAI-compatible route and the named Gradio endpoints)."""

from __future__ import annotations

import re
from typing import Any

import gradio as gr

from tts_app.catalog.voice_aliases import OPENAI_VOICES
from tts_app.catalog.clone_route import FILTER, voice_panel_line
from tts_app.models.available import EMBEDDED_ID as MODEL_ID
from tts_app.models.available import OPENAI_MODELS
from tts_app.models.piper.config import SPEED_MAX, SPEED_MIN


DEFAULT_ORIGIN = "http://localhost:7860"  # `python app.py`'s own address, until the page says where it was loaded from
# A Host header as browsers send it: a name or IPv4 address, or a bracketed IPv6 one, and a port (linear-time pattern).
_HOST_PATTERN = re.compile(r"(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?")


def page_origin(request: Any) -> str:
    """The address this page was loaded from (``https://name.hf.space``, ``http://127.0.0.1:7860``), for the snippets.

    The Host header is the visitor's own: anything but a plain host and port gives the default.
    """
    headers = getattr(request, "headers", None) or {}
    host = str(headers.get("host", ""))
    if not _HOST_PATTERN.fullmatch(host):
        return DEFAULT_ORIGIN
    secure = str(headers.get("x-forwarded-proto", "")).split(",")[0].strip().lower() == "https"
    return f"{'https' if secure else 'http'}://{host}"


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def api_help_markdown(origin: str = DEFAULT_ORIGIN) -> str:
    """Markdown describing the OpenAI-compatible endpoint and the named Gradio endpoints, with ``origin`` in the snippets."""
    return f"""
### OpenAI-compatible speech

`POST /v1/audio/speech` with a JSON body, served by the same engine as this page (requests from
both batch together). The body streams as audio is produced.

| field | meaning |
|---|---|
| `model` | `{MODEL_ID}`; OpenAI's names are aliases of it: {_names(OPENAI_MODELS)} |
| `input` | the text, up to 4,096 characters |
| `voice` | a built-in or operator-saved voice name (not a voice saved on the page: those are the visitor's alone), `default` (the model's own voice), or one of OpenAI's {len(OPENAI_VOICES)} names, each an alias of a voice here: {_names(OPENAI_VOICES)} (`GET /v1/audio/voices` lists them all) |
| `response_format` | `mp3` (default), `opus`, `aac`, `flac`, `wav` or `pcm` (16-bit little-endian mono at the rate in the `X-Sample-Rate` header) |
| `speed` | {SPEED_MIN:g} to {SPEED_MAX:g}; the length scales as 1/speed |
| `instructions` | accepted and ignored (this model takes no style prompt) |
| `stream_format` | `audio` (default) or `sse`: `speech.audio.delta` events (`audio`: base64 of the next piece of the body, any `response_format`), then one `speech.audio.done` with `usage` (input characters, audio milliseconds); refused for `tts-1`/`tts-1-hd`, as OpenAI does |
| `seed`, `voice_strength`, `stream` | extensions: sampling seed, voice-matching strength 0 to 1, `false` for a complete file whose header states its length (a `wav` without `stream` is sent whole too, unless the openai client streams it: `with_streaming_response`) |

**A clip's route:** given to `{MODEL_ID}`, a voice is the {FILTER} (not a clone); a cloning model clones it
(`GET /v1/models` says each model's `voice_clip`). {voice_panel_line()}

```bash
curl -s {origin}/v1/audio/speech -H 'Content-Type: application/json' \\
  -d '{{"model": "{MODEL_ID}", "input": "Hello there.", "voice": "lj_female_us", "response_format": "wav"}}' \\
  -o hello.wav
```

```python
from openai import OpenAI
client = OpenAI(base_url="{origin}/v1", api_key="unused")
with client.audio.speech.with_streaming_response.create(
        model="{MODEL_ID}", voice="default", input="Hello there.", response_format="wav") as response:
    response.stream_to_file("hello.wav")
```

Invalid requests get a 4xx with `{{"error": {{"message": ..., "type": ..., "param": ..., "code": ...}}}}`.

### Word timestamps and subtitles

`POST /v1/audio/speech/captioned`, same body: `{{"audio": base64, "audio_format", "sample_rate", "words": [{{"word", "start", "end"}}]}}`;
`"stream": true` gives one such JSON object per line (NDJSON) as audio is made; `response_format` `srt` or `vtt` returns subtitles.

### Long documents

`POST /v1/documents` `{{"input": "# Chapter\\n\\nText…", "markdown": true, "voice": "default"}}` → 202 `{{"id", …}}`;
`GET /v1/documents/ID` (progress), `GET /v1/documents/ID/audio.wav` (streams while it runs), `audio.m4b`, `audio.mp3`,
`captions.srt`, `captions.vtt`; `DELETE /v1/documents/ID` stops it.

### Gradio endpoints (`gradio_client`)

```python
import shutil
from gradio_client import Client
client = Client("{origin}/")
stream, full, files, status, figures, captions, live, timeline = client.predict(
    "First line.\\nSecond line.", "Built-in voice", "lj_female_us", None, 1.0, 1.0, 0, False,
    api_name="/generate")
shutil.copy(full, "lines.wav")  # every line in one WAV; `files` holds one per line
print(status)  # "✓ Done: 2 lines, …"
```

Each named endpoint and what it returns (every update of a streaming one holds all of it; text is plain unless it says Markdown or HTML):

| endpoint | takes | returns |
|---|---|---|
| `/generate` | text, voice mode, built-in voice, reference clip, strength, speed, seed, streaming, what the clip says, normalise text, model | 8 values: the live stream's HLS playlist (a file path; no pieces with streaming off), the joined WAV (None until the end), the files so far (a list: line WAVs, the joined WAV, SRT and VTT), the status line, the figures (`{{"headers", "data"}}`: a row a line, then the run's), the captions (HTML), the page's live player (`""` for an API caller) and the run's timeline (HTML) |
| `/stop` | nothing | the status line of this session's stopped run (`■ Stopped: 1 of 8 lines finished, 7 cancelled.`) or `■ Nothing was running.`; the `/generate` job then ends with what was made |
| `/reference_report` | voice mode, built-in voice, reference clip, what the clip says | the voice's report (Markdown) |
| `/ab_render` | text, blind, then side A and side B (model, voice, strength, seed, speed) | sample 1 and sample 2 (WAV paths named by place only), a message (Markdown) |
| `/ab_reveal` | nothing | which sample was which and this session's blind tally (Markdown) |
| `/read_document` | text, Markdown, title, voice mode, built-in voice, upload, what the clip says, strength, speed, seed | the progress box (HTML; `data-job` is the job id, `data-status` its state); the files are named by the title, else the first heading, else "Document" |
| `/stop_document` | nothing | the progress box once the job has stopped (`data-status="cancelled"`) |
| `/share_document` | nothing | a read-only link to this session's document (`?share=…`: listen and download, no Stop), the same until revoked |
| `/unshare_document` | nothing | `""` once the link no longer opens the document |
| `/engine_stats` | nothing | the engine's counters (a dict) |
"""


def origin_markdown(request: gr.Request) -> str:
    """The tab's Markdown for this page's own address (on load)."""
    return api_help_markdown(page_origin(request))


def build_api_tab() -> gr.Markdown:
    """Lay out the API tab inside the current tab; the caller fills in the page's address on load."""
    return gr.Markdown(api_help_markdown(), elem_id="api-help")
