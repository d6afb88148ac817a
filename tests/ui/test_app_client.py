"""The Gradio app end to end through gradio_client: references, lines, streaming, bad input, A/B, stop."""

from __future__ import annotations

import re

import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from tts_app.assets import BUILTIN_VOICES_DIR
from tts_app.web.server import WARM_UP_LINES

pytestmark = pytest.mark.slow

VOICES = BUILTIN_VOICES_DIR
THREE_LINES = (
    "The birch canoe slid on the smooth planks.\n"
    "\n"
    "Glue the sheet to the dark blue background.\n"
    "It's easy to tell the depth of a well.\n"
)
UPLOAD = "Upload or record"
BUILTIN = "Built-in voice"
OWN = "Model's own voice"


def _client(base: str) -> Client:
    return Client(base + "/", verbose=False)


@pytest.fixture(scope="module")
def client(app_server: str) -> Client:
    return _client(app_server)


def _generate(client: Client, text: str, mode: str = OWN, builtin: str | None = "lj_female_us", clip=None,
              strength: float = 1.0, speed: float = 1.0, seed: int = 0, streaming: bool = False):
    return client.submit(text, mode, builtin, clip, strength, speed, seed, streaming, api_name="/generate")


def _pieces(playlist: object) -> int:
    """How many pieces the live stream's HLS playlist (what /generate's first output is for an API caller) lists."""
    return open(playlist, encoding="utf-8").read().count("#EXTINF") if isinstance(playlist, str) and playlist else 0


def _check_final(outputs: tuple, n_lines: int) -> dict:
    _stream, full, files, status, figures, captions, live, _timeline = outputs
    assert "data-token" not in str(live)  # an API caller streams through /generate, not the page's player
    assert status.startswith("✓"), status
    assert len(files) == 3 * (n_lines + 1), files  # a WAV a line, the joined WAV, then SRT and VTT of each
    assert [f.rsplit(".", 1)[1] for f in files[: n_lines + 1]] == ["wav"] * (n_lines + 1)
    take_srt = files[-2]
    assert take_srt.endswith("all-lines.srt") and files[-1].endswith("all-lines.vtt")
    last_end = open(take_srt, encoding="utf-8").read().strip().split("\n\n")[-1].split("\n")[1].split(" --> ")[1]
    h, m, s = last_end.replace(",", ".").split(":")
    take_end_s = int(h) * 3600 + int(m) * 60 + float(s)
    assert captions.count("<span data-s=") >= 3 * n_lines  # the live captions hold every line's words
    durations = []
    for path in files[:n_lines]:
        audio, rate = sf.read(path, dtype="float32")
        assert rate == 22050 and len(audio) > rate // 2 and abs(audio).max() > 0.01
        durations.append(len(audio) / rate)
    joined, _ = sf.read(full, dtype="float32")
    assert len(joined) / 22050 == pytest.approx(sum(durations) + 0.3 * (n_lines - 1), abs=0.01)
    assert len(joined) / 22050 - 0.5 < take_end_s <= len(joined) / 22050  # the last word ends with the take
    rows = figures["data"]
    assert [row[0] for row in rows] == [*(str(i) for i in range(1, n_lines + 1)), "run"]
    return {"rows": rows, "status": status}


def test_reference_clip_three_lines_streaming(client: Client) -> None:
    job = _generate(client, THREE_LINES, mode=UPLOAD, clip=handle_file(str(VOICES / "f5_ref_en.wav")), streaming=True)
    updates = list(job)
    assert _pieces(updates[-1][0]) >= 2, "the live stream should get several pieces"
    final = _check_final(job.outputs()[-1], 3)
    run = final["rows"][-1]
    assert run[3] is not None and run[4] is not None and run[3] < run[4]  # first audio before the end
    # The lines shared batches. Under the server's listener-first default a page's later lines step by
    # when the listener reaches them, so all three need not share one step (fifo stepped them together).
    assert int(re.search(r"max (\d+)", run[7]).group(1)) >= 2, run[7]


def test_builtin_voice_three_lines_not_streaming(client: Client) -> None:
    job = _generate(client, THREE_LINES, mode=BUILTIN, builtin="lj_female_us", streaming=False)
    updates = list(job)
    assert not any(_pieces(u[0]) for u in updates), "no live pieces when streaming is off"
    _check_final(job.outputs()[-1], 3)


def test_same_seed_same_audio(client: Client) -> None:
    first = _generate(client, "Seeded line.", seed=5).result()
    second = _generate(client, "Seeded line.", seed=5).result()
    a, _ = sf.read(first[2][0], dtype="float32")
    b, _ = sf.read(second[2][0], dtype="float32")
    assert a.shape == b.shape and abs(a - b).max() < 1e-3


def test_mp3_reference_report(client: Client) -> None:
    report = client.predict(UPLOAD, "lj_female_us", handle_file(str(VOICES / "ov_speaker0.mp3")), api_name="/reference_report")
    assert isinstance(report, str) and report and "cannot be used" not in report


@pytest.mark.parametrize(
    ("text", "mode", "clip", "message"),
    [
        ("", OWN, None, "Enter some text"),
        ("\n  \n", OWN, None, "Enter some text"),
        ("\n".join(f"Line {i}." for i in range(51)), OWN, None, "the limit is 50"),
        ("Fine.\n" + "a" * 2001, OWN, None, "Line 2 has 2,001 characters"),
        ("Hello.", UPLOAD, None, "Upload or record a reference clip first"),
    ],
)
def test_bad_input_gives_its_message(client: Client, text: str, mode: str, clip, message: str) -> None:
    with pytest.raises(AppError, match=message):
        _generate(client, text, mode=mode, clip=clip).result()


def test_bad_reference_clip_gives_its_message(client: Client, tmp_path: Path) -> None:
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF this is not audio at all" * 10)
    with pytest.raises(AppError) as info:
        _generate(client, "Hello.", mode=UPLOAD, clip=handle_file(str(broken))).result()
    message = str(info.value)
    assert message and "Traceback" not in message


def test_speed_out_of_range(client: Client) -> None:
    with pytest.raises(AppError, match="greater than maximum"):
        _generate(client, "Hello.", speed=9).result()


def test_stop_cancels_the_engine_requests(app_server: str) -> None:
    session = _client(app_server)
    before = session.predict(api_name="/engine_stats")["cancelled"]
    long_line = " ".join(["This sentence is long so the run takes a while to decode."] * 12)
    job = _generate(session, "\n".join([long_line] * 4), streaming=True)
    deadline = time.monotonic() + 60
    while not any(isinstance(u, tuple) and u[0] for u in job.outputs()):  # wait for audio to flow
        assert time.monotonic() < deadline
        time.sleep(0.05)
    message = session.predict(api_name="/stop")
    assert "Stopped" in message or "Nothing" in message
    deadline = time.monotonic() + 30
    while session.predict(api_name="/engine_stats")["cancelled"] <= before:
        assert time.monotonic() < deadline, "Stop should cancel the run's engine requests"
        time.sleep(0.2)


def test_stop_counts_what_it_cancelled_and_keeps_what_was_made(app_server: str) -> None:
    """Stop after the first of 8 lines finished: it says how many finished and how many it cancelled (it said
    "cancelled 8 engine requests" after 1 of 8 had finished), and the run's last outputs keep the finished
    lines' files and a joined file of what was made (it was empty)."""
    session = _client(app_server)
    long_line = " ".join(["This sentence is long so the run takes a while to decode."] * 14)
    job = _generate(session, "\n".join(["Short first line.", *[long_line] * 7]), streaming=False)
    deadline = time.monotonic() + 120
    while not any(isinstance(u, tuple) and isinstance(u[2], list) and u[2] for u in job.outputs()):  # a line file is out
        assert time.monotonic() < deadline
        time.sleep(0.05)
    message = session.predict(api_name="/stop")
    found = re.fullmatch(r"■ Stopped: (\d) of 8 lines finished, (\d) cancelled\.", message)
    assert found, message
    finished, cancelled = int(found.group(1)), int(found.group(2))
    assert 1 <= finished < 8 and finished + cancelled == 8, message
    job.result(timeout=60)  # the run ends by itself, with what it made
    _stream, full, files, status, *_ = job.outputs()[-1]
    assert status == message
    line_wavs = [f for f in files if re.search(r"line-\d+\.wav$", f)]
    assert len(line_wavs) == finished, files
    made = sum(sf.info(f).duration for f in line_wavs)
    assert full and sf.info(full).duration >= made > 0.5, (full, made)


def _ab_pair(client: Client, blind: bool) -> tuple[np.ndarray, np.ndarray, str]:
    """The two samples of an A/B render (A: seed 1, B: seed 2, same voice) as the page places them, and its text."""
    left, right, message, *_ = client.predict(
        "The birch canoe slid on the smooth planks.", blind,
        "piper-joe-medium", "lj_female_us", 1.0, 1, 1.0,
        "piper-joe-medium", "lj_female_us", 1.0, 2, 1.0,
        api_name="/ab_render",
    )
    return sf.read(left, dtype="float32")[0], sf.read(right, dtype="float32")[0], message


def test_ab_blind_pair_and_reveal(client: Client) -> None:
    """The blind pair holds the two configurations' audio, the reveal says truly which side is which: each sample
    equals the same configuration rendered again with blind mode off (A left, B right; a seed reproduces its audio)."""
    left, right, message = _ab_pair(client, blind=True)
    assert "Blind" in message and len(left) > 10000 and len(right) > 10000
    revealed = client.predict(api_name="/ab_reveal")
    seeds = [int(s) for s in re.findall(r"\*\*Sample [12]\*\* was \*\*[AB]\*\*: [^\n]* seed (\d+) ", revealed)]
    assert sorted(seeds) == [1, 2], revealed
    by_seed = dict(zip(seeds, (left, right)))
    seed_1, seed_2, shown = _ab_pair(client, blind=False)
    assert "Blind mode is off" in shown and re.search(r"Sample 1\*\* was \*\*A\*\*: [^\n]* seed 1 ", shown), shown
    for seed, again in ((1, seed_1), (2, seed_2)):
        assert by_seed[seed].shape == again.shape and np.abs(by_seed[seed] - again).max() <= 1e-3, f"seed {seed}"
    assert seed_1.shape != seed_2.shape or np.abs(seed_1 - seed_2).max() > 0.05, "two seeds gave the same audio"


def test_blind_ab_file_names_say_nothing_of_the_sides(client: Client) -> None:
    """Blind, the players' files are named by their place only (they were ab-A.wav and ab-B.wav, matching the
    reveal); the reveal then names the sides, here two voices."""
    for _ in range(3):
        left, right, message, *_ = client.predict(
            "The birch canoe slid on the smooth planks.", True,
            "piper-joe-medium", "lj_female_us", 1.0, 0, 1.0,
            "piper-joe-medium", "f5_ref_en", 1.0, 0, 1.0,
            api_name="/ab_render",
        )
        assert (Path(left).name, Path(right).name) == ("sample-1.wav", "sample-2.wav")
        assert "lj_female_us" not in message and "f5_ref_en" not in message
        revealed = client.predict(api_name="/ab_reveal")
        assert "lj_female_us" in revealed and "f5_ref_en" in revealed


def _warmed_and_idle(stats: dict) -> bool:
    return stats["finished"] >= len(WARM_UP_LINES) and stats["queued"] == 0 and stats["active"] == 0


def test_engine_stats_endpoint(client: Client) -> None:
    """The counters move with the work done: two lines finished, their audio counted, steps timed."""
    deadline = time.monotonic() + 300  # the server's own warm-up lines run first, in the background
    while not _warmed_and_idle(before := client.predict(api_name="/engine_stats")):
        assert time.monotonic() < deadline, before
        time.sleep(0.5)
    job = _generate(client, "The birch canoe slid on the smooth planks.\nGlue the sheet to the dark blue background.")
    job.result()
    _stream, _full, files, *_ = job.outputs()[-1]
    line_s = sum(sf.info(path).duration for path in files[:2])
    after = client.predict(api_name="/engine_stats")
    assert after["submitted"] - before["submitted"] == 2 and after["finished"] - before["finished"] == 2, (before, after)
    assert after["audio_s"] - before["audio_s"] == pytest.approx(line_s, abs=0.01), (before, after, line_s)
    assert after["steps"] > before["steps"] and after["mean_step_s"] > 0 and after["row_step_p90_s"] > 0
    assert 1 <= after["max_batch_seen"] <= after["max_batch_size"]
    assert after["queued"] == 0 and after["active"] == 0  # nothing else runs: the two lines are done


def test_generate_reads_well_in_gradio_client(client: Client) -> None:
    """The /generate view: only the text is required, and every output has a readable name."""
    endpoint = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/generate"]
    params = {p["parameter_name"]: p for p in endpoint["parameters"]}
    assert params["reference_clip"]["parameter_has_default"], params["reference_clip"]
    assert all(p["parameter_has_default"] for name, p in params.items() if name != "text"), params
    labels = [r["label"] for r in endpoint["returns"]]
    assert labels and not [label for label in labels if not label or label.startswith("value_")], labels
    assert "Status" in labels, labels


def _update_dicts(value: object) -> bool:
    if isinstance(value, dict):
        return "__type__" in value or any(_update_dicts(v) for v in value.values())
    return isinstance(value, (list, tuple)) and any(_update_dicts(v) for v in value)


@pytest.mark.parametrize("streaming", [True, False])
def test_generate_returns_what_the_api_tab_says(client: Client, streaming: bool) -> None:
    """Every update of /generate holds the values the API tab lists (it held {'__type__': 'update'} for every output
    an update left out), the status as plain text (it was Markdown), and no page player for an API caller."""
    job = _generate(client, THREE_LINES, streaming=streaming)
    job.result()
    updates = job.outputs()
    assert len(updates) >= 3
    for update in updates:
        assert not _update_dicts(update), update
        _stream, full, files, status, figures, captions, live, timeline = update
        assert isinstance(status, str) and status and "**" not in status, status
        assert isinstance(files, list) and (full is None or isinstance(full, str)) and isinstance(figures, dict)
        assert isinstance(captions, str) and live == "" and isinstance(timeline, str)
    assert updates[-1][3].startswith("✓ Done: 3 lines"), updates[-1][3]


def test_typed_transcript_shows_in_the_reference_report(client: Client) -> None:
    """The voice panel's "What the clip says" box reaches the profile: the report names the typed words."""
    clip = handle_file(str(VOICES / "lj_female_us.wav"))
    words = "printing in the only sense with which we are at present concerned"
    plain = client.predict(UPLOAD, "lj_female_us", clip, "", api_name="/reference_report")
    typed = client.predict(UPLOAD, "lj_female_us", clip, words, api_name="/reference_report")
    assert "Transcript (typed)" not in plain
    assert f'Transcript (typed): "{words}"' in typed


def test_normalisation_toggle_reaches_the_engine(client: Client) -> None:
    """The Settings checkbox: on reads "3/14/2026" as a date, off as written; the audio differs."""
    text = "On 3/14/2026 Dr. Smith paid $1,234.56."

    def speak(normalize: bool) -> np.ndarray:
        job = client.submit(text, OWN, None, None, 1.0, 1.0, 0, False, "", normalize, api_name="/generate")
        _stream, full, _files, status, _figures, _captions, _live, _timeline = job.result()
        assert status.startswith("✓"), status
        audio, _rate = sf.read(full, dtype="float32")
        return audio

    on, off = speak(True), speak(False)
    assert len(on) != len(off) or not np.array_equal(on, off)
    assert np.array_equal(on, speak(True))  # the toggle, not the run, makes the difference
