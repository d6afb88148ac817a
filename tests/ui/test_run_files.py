"""A run's file list leaves out what the output store has already removed (its size cap, under a flood)."""

from pathlib import Path
from types import SimpleNamespace

from tts_app.web.ui.speak.run_files import RunFiles


def test_a_file_the_store_removed_is_not_listed(tmp_path: Path) -> None:
    paths = {name: tmp_path / name for name in ("line-01.wav", "line-02.wav", "line-01.srt", "all-lines.wav")}
    for path in paths.values():
        path.write_bytes(b"x")
    files = RunFiles("s", wavs={0: str(paths["line-01.wav"]), 1: str(paths["line-02.wav"])},
                     captions={0: [str(paths["line-01.srt"])], 1: []}, full=str(paths["all-lines.wav"]))
    run = SimpleNamespace(lines=[SimpleNamespace(text="one"), SimpleNamespace(text="two")])
    assert files.listing() == [str(paths[n]) for n in ("line-01.wav", "line-02.wav", "all-lines.wav", "line-01.srt")]
    paths["line-01.wav"].unlink()  # swept while the run went on: the page's file box would fail on it
    assert str(paths["line-01.wav"]) not in files.listing() and len(files.listing()) == 3
    assert [item["index"] for item in files.line_items(run)] == ["2"]
