"""Blind A/B without a model: what History holds before and after the reveal, and the visitor's own tally."""

from __future__ import annotations

import csv
import io
import json
import zipfile

from tts_app.web.ui.ab.tab import BLIND_VOICE, _take_of, prefer, reveal
from tts_app.web.ui.history.preferences import tally, tally_csv
from tts_app.web.ui.history.takes import add_take, history_table, history_zip

SIDES = {
    "A": {"model": "piper-joe-medium", "voice": "lj_female_us", "strength": 1.0, "seed": 1, "speed": 1.0},
    "B": {"model": "piper-joe-medium", "voice": "f5_ref_en", "strength": 0.5, "seed": 2, "speed": 1.1},
}
FIGURES = {"A": {"time_to_first_audio_s": 0.25, "total_s": 0.45}, "B": {"time_to_first_audio_s": 0.917, "total_s": 1.357}}


def _blind_pair(history: list | None, pair: int, order: list[str], tmp_path) -> tuple[list, dict]:
    state = {"pair": pair, "order": order, "sides": SIDES, "blind": True, "revealed": False, "vote": None, "figures": FIGURES}
    takes = list(history or [])
    for position, label in enumerate(order, start=1):
        path = tmp_path / f"pair{pair}-sample-{position}.wav"
        path.write_bytes(b"RIFF")
        takes = add_take(takes, _take_of(position, {**SIDES[label], "label": label}, FIGURES[label], str(path), "Hello.", pair, False))
    return takes, state


def _everything_shown(history: list) -> str:
    """All a visitor can read of the history: its table, and its zip's takes.json and takes.csv."""
    archive = history_zip(history, None)
    with zipfile.ZipFile(archive) as z:
        return json.dumps(history_table(history)) + z.read("takes.json").decode() + z.read("takes.csv").decode()


def test_history_tells_the_sides_apart_only_after_the_reveal(tmp_path) -> None:
    takes, state = _blind_pair(None, 1, ["B", "A"], tmp_path)
    shown = _everything_shown(takes)
    for tell in ("lj_female_us", "f5_ref_en", "A/B A", "A/B B", "= A", "= B", "0.917", "1.357", '"seed": 2', '"speed": 1.1'):
        assert tell not in shown, tell
    rows = history_table(takes)
    assert [row[2] for row in rows] == ["A/B sample 2", "A/B sample 1"] and rows[0][4] == BLIND_VOICE

    message, state, takes = reveal(state, takes)
    rows = {row[2]: row for row in history_table(takes)}
    assert rows["A/B 1 = B"][4] == "f5_ref_en" and rows["A/B 2 = A"][4] == "lj_female_us", rows
    assert rows["A/B 1 = B"][7] == 2 and rows["A/B 1 = B"][9] == 0.917  # its seed and first audio, now shown
    assert "Sample 1** was **B" in message
    assert tally(takes) == []  # revealed without a vote: nothing tallied
    message, _state, again = prefer("Sample 1", state, takes)  # a vote after the reveal is not a blind one
    assert "Not counted" in message and tally(again) == []


def test_blind_votes_are_tallied_per_model_and_voice_and_exported(tmp_path) -> None:
    takes, state = _blind_pair(None, 1, ["B", "A"], tmp_path)
    message, state, takes = prefer("Sample 1", state, takes)  # sample 1 was B
    assert "You preferred sample 1**, which was **B" in message
    again, _state, same = prefer("Sample 2", state, takes)  # one vote a pair
    assert "Not counted" in again and tally(same) == tally(takes)
    takes, state = _blind_pair(takes, 2, ["A", "B"], tmp_path)
    message, state, takes = prefer("Sample 2", state, takes)  # B again
    takes, state = _blind_pair(takes, 3, ["A", "B"], tmp_path)
    message, state, takes = prefer("Sample 1", state, takes)  # A
    assert tally(takes) == [["piper-joe-medium · f5_ref_en", 2, 3, 0.667], ["piper-joe-medium · lj_female_us", 1, 3, 0.333]]
    assert "| piper-joe-medium · f5_ref_en | 2 | 3 | 67% |" in message and "3 pairs" in message
    preferred = [row[2] for row in history_table(takes) if "preferred" in row[2]]
    assert preferred == ["A/B 1 = A · preferred", "A/B 2 = B · preferred", "A/B 1 = B · preferred"]
    with zipfile.ZipFile(history_zip(takes, None)) as z:
        rows = list(csv.reader(io.StringIO(z.read("preferences.csv").decode())))
    assert rows == [["model · voice", "wins", "rounds", "win rate"], ["piper-joe-medium · f5_ref_en", "2", "3", "0.667"],
                    ["piper-joe-medium · lj_female_us", "1", "3", "0.333"]]
    assert tally_csv(None) == "model · voice,wins,rounds,win rate\r\n"
