"""A visitor's own blind preferences: wins per contender (model and voice) over the pairs they voted on.

The way TTS Arena ranks models, but private: the tally is counted from this session's takes (its
History), never pooled across visitors. Each A/B take carries its pair number, its contender (the
side's identity, see ``contender``) and, once voted before the reveal, whether it was preferred.
A side counts one round; the preferred side one win (a pair of the same contender, seed 1 vs
seed 2, is one win in two rounds: a coin toss, as it should read).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

# What names a side in the tally; an A/B comparison that adds a choice (a route, say) adds its key here.
CONTENDER_FIELDS = ("model", "voice")
TALLY_HEADERS = ["model · voice", "wins", "rounds", "win rate"]


def contender(side: Mapping[str, Any]) -> str:
    """The tally's name for one side's settings, e.g. ``piper-joe-medium · lj_female_us``."""
    return " · ".join(str(side.get(name, "")) for name in CONTENDER_FIELDS)


def tally(history: Sequence[Mapping[str, Any]] | None) -> list[list[Any]]:
    """Rows (contender, wins, rounds, win rate), most wins first, over the voted blind pairs of ``history``."""
    wins: dict[str, int] = {}
    rounds: dict[str, int] = {}
    for take in history or []:
        if not take.get("pair") or take.get("preferred") is None:
            continue  # not an A/B side, or its pair was never voted on blind
        name = str(take.get("contender") or "")
        rounds[name] = rounds.get(name, 0) + 1
        wins[name] = wins.get(name, 0) + (1 if take["preferred"] else 0)
    rows = [[name, wins[name], rounds[name], round(wins[name] / rounds[name], 3)] for name in rounds]
    return sorted(rows, key=lambda row: (-row[1], -row[3], row[0]))


def tally_markdown(history: Sequence[Mapping[str, Any]] | None) -> str:
    """The tally as a small Markdown table (empty before the first blind vote)."""
    rows = tally(history)
    if not rows:
        return ""
    pairs = len({take["pair"] for take in history or [] if take.get("pair") and take.get("preferred") is not None})
    lines = [
        f"**Your blind preferences this session** ({pairs} pair{'s' if pairs != 1 else ''}; private to this page):",
        "",
        "| " + " | ".join(TALLY_HEADERS) + " |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {name} | {won} | {played} | {rate:.0%} |" for name, won, played, rate in rows]
    return "\n".join(lines)


def tally_csv(history: Sequence[Mapping[str, Any]] | None) -> str:
    """The tally as CSV text (header only before the first blind vote)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(TALLY_HEADERS)
    writer.writerows(tally(history))
    return buffer.getvalue()
