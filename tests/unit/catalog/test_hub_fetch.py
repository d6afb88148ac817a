"""``tts_app.models.hub_fetch`` against a local fake hub (tests/support/fake_hub.py): huggingface_hub's real download
code fetches only the files the loader reads, resumes a cut file, refuses a file whose hash differs, and turns a
missing repository, a refused connection or a failing disk into one line. No internet."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.fake_hub import FakeHub
from tests.support.paths import REPO
from tts_app.models.available import CHATTERBOX_FILES, CHATTERBOX_ID, CHATTERBOX_REPO, QWEN3_MODELS, is_checkpoint
from tts_app.models.hub_fetch import FetchError, Plan, fetch

QWEN3_REPO = QWEN3_MODELS["qwen3-0.6b"].repo
# What a published Qwen3-TTS repository holds beside the loader's files (these must not be fetched).
EXTRA_FILES = {"README.md": b"# model card\n", "generation_config.json": b"{}", "assets/demo.wav": b"RIFF" + b"\0" * 400,
               "model.onnx": b"\1" * 300}


@pytest.fixture
def repo_folder(tmp_path: Path) -> Path:
    """A Qwen3-TTS repository in the released layout: config.json, model.safetensors, tokenizer.json,
    speech_tokenizer/{config.json, model.safetensors}, plus files the loader never reads. Not real weights: the
    download does not look inside (tests/api/test_space_models_http.py serves a loadable tiny checkpoint)."""
    folder = tmp_path / "repo"
    (folder / "speech_tokenizer").mkdir(parents=True)
    (folder / "assets").mkdir()
    (folder / "config.json").write_text('{"talker_config": {"hidden_size": 1024}}')
    (folder / "tokenizer.json").write_text('{"model": {}}')
    (folder / "speech_tokenizer" / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 300)  # 76,800 bytes
    (folder / "speech_tokenizer" / "model.safetensors").write_bytes(bytes(reversed(range(256))) * 100)
    for name, data in EXTRA_FILES.items():
        (folder / name).write_bytes(data)
    return folder


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache, where both huggingface_hub (read at its import) and our lookup see it."""
    from huggingface_hub import constants

    hub = tmp_path / "hf" / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return hub


def _files_in(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_fetch_takes_the_loaders_files_only_and_reports_its_plan(repo_folder: Path, cache: Path) -> None:
    plans: list[Plan] = []
    with FakeHub({QWEN3_REPO: repo_folder}) as hub:
        folder = fetch("qwen3-0.6b", endpoint=hub.url, on_plan=plans.append)
    wanted = {"config.json", "tokenizer.json", "model.safetensors", "speech_tokenizer/config.json",
              "speech_tokenizer/model.safetensors"}
    assert set(_files_in(folder)) == wanted and is_checkpoint(folder)
    assert _files_in(folder) == {k: v for k, v in _files_in(repo_folder).items() if k in wanted}
    assert folder.parent.parent == cache / "models--Qwen--Qwen3-TTS-12Hz-0.6B-Base"
    (plan,) = plans
    assert {f.path for f in plan.files} == wanted
    assert plan.total_bytes == sum(len(v) for k, v in _files_in(repo_folder).items() if k in wanted)
    assert plan.bytes_on_disk() == plan.total_bytes  # every blob in the cache, counted from the disk


def test_the_progress_counts_a_file_being_written(repo_folder: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mid-download, the plan counts the finished files and the bytes written of the one in flight (what the
    page's status line shows): the hub sends half the weights, then holds the rest until the test has seen them
    (well within huggingface_hub's 10 s read timeout)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 4096)  # written in 4 kB chunks (10 MB on the hub)
    release, plans, done = threading.Event(), [], []
    size = (repo_folder / "model.safetensors").stat().st_size
    with FakeHub({QWEN3_REPO: repo_folder}, stall={"model.safetensors": release}) as hub:
        worker = threading.Thread(target=lambda: done.append(fetch("qwen3-0.6b", endpoint=hub.url, on_plan=plans.append)))
        worker.start()
        try:
            config = len((repo_folder / "config.json").read_bytes())  # the file before the weights, finished
            deadline = time.monotonic() + 60
            while not plans or plans[0].bytes_on_disk() <= config:
                assert time.monotonic() < deadline, f"no progress: {plans[0].bytes_on_disk() if plans else None}"
                time.sleep(0.05)
            # Half the weights sent; what is on disk of them (whole 4 kB chunks, less what the file buffer holds).
            assert config < plans[0].bytes_on_disk() <= config + size // 2
        finally:
            release.set()
            worker.join(timeout=120)
    assert done and plans[0].bytes_on_disk() == plans[0].total_bytes


def test_fetch_into_a_folder_of_ones_own(repo_folder: Path, cache: Path, tmp_path: Path) -> None:
    chatterbox = tmp_path / "cb-repo"
    chatterbox.mkdir()
    for name in (*CHATTERBOX_FILES, "t3_mtl23ls_v2.safetensors"):  # the repository's multilingual model: not fetched
        (chatterbox / name).write_bytes(name.encode() * 50)
    with FakeHub({CHATTERBOX_REPO: chatterbox}) as hub:
        folder = fetch(CHATTERBOX_ID, str(tmp_path / "cb"), endpoint=hub.url)
    assert folder == tmp_path / "cb"
    assert {k for k in _files_in(folder) if not k.startswith(".cache/")} == set(CHATTERBOX_FILES)


def test_a_cut_download_resumes_where_it_stopped(repo_folder: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first GET of the weights drops the connection halfway; huggingface_hub asks for the rest with a Range
    (from the last whole chunk it wrote: 10 MB on the hub, 4 kB here) and the file comes out whole, its sha256 checked."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 4096)
    size = (repo_folder / "model.safetensors").stat().st_size
    with FakeHub({QWEN3_REPO: repo_folder}, cut_once={"model.safetensors"}) as hub:
        folder = fetch("qwen3-0.6b", endpoint=hub.url)
    assert hub.ranges_asked("model.safetensors") == ["", f"bytes={size // 2 // 4096 * 4096}-"]
    assert (folder / "model.safetensors").read_bytes() == (repo_folder / "model.safetensors").read_bytes()


def test_a_start_after_a_failed_download_keeps_the_files_it_finished(repo_folder: Path, cache: Path) -> None:
    """A failed run (here: a file whose hash differs) leaves its finished files in the cache; the next run asks the
    hub for the others only. (A file cut short is not resumed across runs: huggingface_hub 2.x writes it to a temp
    file of its own process, removed on failure.)"""
    with FakeHub({QWEN3_REPO: repo_folder}, corrupt={"speech_tokenizer/model.safetensors"}) as hub:
        with pytest.raises(FetchError):
            fetch("qwen3-0.6b", endpoint=hub.url)
        finished = hub.files_got() - {"speech_tokenizer/model.safetensors"}
        assert "model.safetensors" in finished
        hub.corrupt.clear()
        hub.requests.clear()
        folder = fetch("qwen3-0.6b", endpoint=hub.url)
    got = hub.files_got()
    assert "speech_tokenizer/model.safetensors" in got and not got & finished
    assert _files_in(folder)["speech_tokenizer/model.safetensors"] == (repo_folder / "speech_tokenizer" / "model.safetensors").read_bytes()


def test_a_file_whose_hash_differs_is_removed_with_one_line(repo_folder: Path, cache: Path) -> None:
    with FakeHub({QWEN3_REPO: repo_folder}, corrupt={"speech_tokenizer/model.safetensors"}) as hub:
        with pytest.raises(FetchError) as caught:
            fetch("qwen3-0.6b", endpoint=hub.url)
    line = str(caught.value)
    assert "\n" not in line and "speech_tokenizer/model.safetensors does not match the hub's hash" in line
    blobs = cache / "models--Qwen--Qwen3-TTS-12Hz-0.6B-Base" / "blobs"
    sizes = sorted(p.stat().st_size for p in blobs.iterdir())
    assert (repo_folder / "speech_tokenizer" / "model.safetensors").stat().st_size not in sizes


def test_a_missing_repository_is_one_line(repo_folder: Path, cache: Path) -> None:
    with FakeHub({"someone/else": repo_folder}) as hub:
        with pytest.raises(FetchError) as caught:
            fetch("qwen3-0.6b", endpoint=hub.url)
    assert str(caught.value) == f"no repository {QWEN3_REPO} on {hub.url} (or it is private: set HF_TOKEN)"


def test_a_refused_connection_is_one_line(cache: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with pytest.raises(FetchError) as caught:
            fetch("qwen3-0.6b", endpoint=url)
    line = str(caught.value)
    assert "\n" not in line and line.startswith(f"cannot download {QWEN3_REPO} from {url}: ConnectError")


def test_no_network_with_a_complete_cached_copy_uses_it(repo_folder: Path, cache: Path) -> None:
    with FakeHub({QWEN3_REPO: repo_folder}) as hub:
        folder = fetch("qwen3-0.6b", endpoint=hub.url)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        assert fetch("qwen3-0.6b", endpoint=f"http://127.0.0.1:{sock.getsockname()[1]}") == folder


def test_an_unknown_model_is_one_line() -> None:
    with pytest.raises(FetchError, match=r"^unknown model 'qwen3-9b'; choose one of: qwen3-0.6b, "):
        fetch("qwen3-9b")


FULL_DISK = """
import resource, signal, sys
from huggingface_hub import constants
constants.HF_HUB_CACHE = sys.argv[2]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write fails with EFBIG, as a full disk fails one
resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
from tts_app.models.hub_fetch import FetchError, fetch
try:
    fetch("qwen3-0.6b", endpoint=sys.argv[1])
except FetchError as e:
    print(e)
"""


def test_a_failing_disk_is_one_line(repo_folder: Path, tmp_path: Path) -> None:
    """Files may grow to 20 kB only (RLIMIT_FSIZE; the weights are 76.8 kB): the write error is the line."""
    with FakeHub({QWEN3_REPO: repo_folder}) as hub:
        r = subprocess.run([sys.executable, "-c", FULL_DISK, hub.url, str(tmp_path / "hub")], capture_output=True,
                           text=True, cwd=REPO, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "0"})
    assert r.stdout == f"cannot download {QWEN3_REPO}: File too large\n", r.stdout + r.stderr
