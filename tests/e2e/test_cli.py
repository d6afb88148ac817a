"""The command line: files out, one JSON line, exit status 2 on bad input."""

import json
import subprocess
import sys

import soundfile as sf
import pytest

from tts_app.assets import BUILTIN_VOICES_DIR
from tests.support.paths import REPO

pytestmark = pytest.mark.slow


def _synth(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "tts_app", "synth", *args], cwd=REPO, capture_output=True, text=True, input=stdin, timeout=300
    )


def test_one_wav_per_non_empty_line_and_a_json_line(tmp_path):
    lines = tmp_path / "lines.txt"
    lines.write_text("First line here.\n\n   \nSecond line, a bit longer than the first.\nThird.\n", encoding="utf-8")
    out = tmp_path / "out"
    done = _synth("-i", str(lines), "-o", str(out), "--seed", "3", "--stream")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["lines"] == 3 and report["stream"] is True
    assert sorted(p.name for p in out.iterdir()) == ["001.wav", "002.wav", "003.wav"]
    a, sr = sf.read(out / "002.wav")
    assert sr == 22050 and 1.5 < a.size / sr < 6
    assert report["audio_s"] > 0 and report["wall_s"] > 0


def test_same_seed_same_files_streamed_or_not(tmp_path):
    lines = tmp_path / "l.txt"
    lines.write_text("Seeds make this repeatable.\n", encoding="utf-8")
    assert _synth("-i", str(lines), "-o", str(tmp_path / "a"), "--seed", "5").returncode == 0
    assert _synth("-i", str(lines), "-o", str(tmp_path / "b"), "--seed", "5", "--stream").returncode == 0
    assert (tmp_path / "a" / "001.wav").read_bytes() == (tmp_path / "b" / "001.wav").read_bytes()


def test_bad_input_exits_2_with_one_line(tmp_path):
    emoji = tmp_path / "e.txt"
    emoji.write_text("Fine line.\n😀🎉\n", encoding="utf-8")
    binary = tmp_path / "b.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    good = tmp_path / "good.txt"
    good.write_text("Fine line.\n", encoding="utf-8")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n", encoding="utf-8")
    cases = [
        (["-i", str(tmp_path / "missing.txt")], "cannot read"),
        (["-i", str(emoji)], "line 2: text has nothing to speak"),
        (["-i", str(binary)], "not UTF-8"),
        (["-i", str(empty)], "no non-empty lines"),
        (["-i", str(good), "--speed", "9"], "speed must be between"),
    ]
    for args, message in cases:
        done = _synth(*args, "-o", str(tmp_path / "o"))
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_voice_reference_option(tmp_path):
    lines = tmp_path / "l.txt"
    lines.write_text("Matching a reference voice.\n", encoding="utf-8")
    plain = _synth("-i", str(lines), "-o", str(tmp_path / "plain"), "--seed", "1")
    matched = _synth("-i", str(lines), "-o", str(tmp_path / "m"), "--seed", "1", "--voice", "lj_female_us", "--voice-strength", "0.8")
    assert plain.returncode == 0 and matched.returncode == 0, matched.stderr
    a, _ = sf.read(tmp_path / "plain" / "001.wav")
    b, _ = sf.read(tmp_path / "m" / "001.wav")
    assert a.shape == b.shape and abs(a - b).max() > 0.01  # same length, different voice
    bad = tmp_path / "noise.wav"
    bad.write_bytes(b"RIFF....WAVEfmt not really audio")
    done = _synth("-i", str(lines), "-o", str(tmp_path / "x"), "--voice", str(bad))
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def _library(tmp_path, *args):
    env = {**__import__("os").environ, "TTS_APP_VOICES_DIR": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "tts_app", *args], cwd=REPO, capture_output=True, text=True, timeout=300, env=env)


def test_the_operator_edits_the_servers_lexicon(tmp_path):
    assert json.loads(_library(tmp_path, "lexicon", "set", "Nguyen", "win").stdout)["entries"] == 1
    assert json.loads(_library(tmp_path, "lexicon", "set", "Siobhan", "/ʃɪvˈɔːn/").stdout)["entries"] == 2
    assert json.loads(_library(tmp_path, "lexicon", "list").stdout) == {"nguyen": "win", "siobhan": "/ʃɪvˈɔːn/"}
    assert _library(tmp_path, "lexicon", "delete", "NGUYEN").returncode == 0
    refused = _library(tmp_path, "lexicon", "set", "two words", "x")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "one word" in refused.stderr
    assert json.loads(_library(tmp_path, "lexicon", "list").stdout) == {"siobhan": "/ʃɪvˈɔːn/"}


def test_the_operator_library_refuses_openai_and_builtin_names_in_one_line(tmp_path):
    clip = str(BUILTIN_VOICES_DIR / "f5_ref_en.wav")
    for name, reason in (("alloy", "OpenAI voice"), ("lj_female_us", "built-in voice")):
        done = _library(tmp_path, "voice", "save", name, clip)
        assert done.returncode == 2 and reason in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert json.loads(_library(tmp_path, "voice", "list").stdout)["saved"] == []
    missing = _library(tmp_path, "voice", "delete", "nope")
    assert missing.returncode == 2 and "unknown voice" in missing.stderr


def test_a_lexicon_entry_the_voice_cannot_say_is_refused_as_the_page_refuses_it(tmp_path):
    """The page's check (parse_lexicon with the voice's phonemes), one line, exit 2, nothing written."""
    refused = _library(tmp_path, "lexicon", "set", "Snowman", "/ʃ☃n/")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr == "error: lexicon entry 'Snowman': '☃' (U+2603) is not a phoneme of this voice\n"
    assert not (tmp_path / "lexicon.json").exists()
    bad_file = tmp_path / "import.json"
    bad_file.write_text(json.dumps({"fine": "fyne", "Snowman": "/ʃ☃n/"}), encoding="utf-8")
    refused = _library(tmp_path, "lexicon", "import", str(bad_file))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "U+2603" in refused.stderr


def test_an_entry_edited_in_by_hand_is_listed_as_skipped_and_kept_until_deleted(tmp_path):
    (tmp_path / "lexicon.json").write_text(json.dumps({"Nguyen": "win", "Snowman": "/ʃ☃n/"}), encoding="utf-8")
    listed = _library(tmp_path, "lexicon", "list")
    assert listed.returncode == 0 and json.loads(listed.stdout) == {"nguyen": "win"}
    assert listed.stderr.count("\n") == 1 and "skipped lexicon entry 'Snowman'" in listed.stderr
    assert _library(tmp_path, "lexicon", "set", "Siobhan", "/ʃɪvˈɔːn/").returncode == 0
    assert "Snowman" in json.loads((tmp_path / "lexicon.json").read_text(encoding="utf-8"))  # the operator's own text stays
    assert _library(tmp_path, "lexicon", "delete", "snowman").returncode == 0
    listed = _library(tmp_path, "lexicon", "list")
    assert listed.stderr == "" and json.loads(listed.stdout) == {"nguyen": "win", "siobhan": "/ʃɪvˈɔːn/"}
