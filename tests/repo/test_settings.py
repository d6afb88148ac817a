"""tts_app.settings: every TTS_APP_* variable declared once, read only there, listed in docs/operating.md, one-line errors."""

from __future__ import annotations

import ast
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tts_app import settings
from tts_app.engine.qos_settings import QosSettings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
OPERATING = (DOCS / "operating.md").read_text(encoding="utf-8")
NAME = re.compile(r"TTS_APP_[A-Z0-9][A-Z0-9_]*")
DECLARED = {n for s in settings.SETTINGS for n in (s.name, *s.aliases)}


def _runtime_files() -> list[Path]:
    """The runtime package's files (code, JSON, anything text) and app.py."""
    return [ROOT / "app.py"] + sorted(p for p in (ROOT / "tts_app").rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def test_the_operating_page_holds_the_generated_table() -> None:
    begin, end = OPERATING.index(settings.TABLE_BEGIN) + len(settings.TABLE_BEGIN), OPERATING.index(settings.TABLE_END)
    assert OPERATING[begin:end].strip() == settings.markdown_table(), "run: python -m tts_app.settings --write docs/operating.md"
    for s in settings.SETTINGS:
        assert f"`{s.name}`" in OPERATING[begin:end]


@pytest.mark.parametrize("section", sorted({s.section for s in settings.SETTINGS if s.section}))
def test_every_setting_points_at_a_heading_that_exists(section: str) -> None:
    page, _, heading = section.partition("#")
    text = (DOCS / (page or "operating.md")).read_text(encoding="utf-8")
    assert re.search(rf"^#{{1,3}} {re.escape(heading)}$", text, flags=re.M), section


def test_the_table_is_written_into_the_page_it_is_given(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"before\n{settings.TABLE_BEGIN}\nstale\n{settings.TABLE_END}\nafter\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "tts_app.settings", "--write", str(page)], check=True, cwd=ROOT)
    written = page.read_text(encoding="utf-8")
    assert "stale" not in written and settings.markdown_table() in written
    assert written.startswith("before\n") and written.endswith("after\n")


def test_a_page_without_the_markers_is_refused_in_one_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("no table here\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "tts_app.settings", "--write", str(page)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "no settings table" in done.stderr
    assert page.read_text(encoding="utf-8") == "no table here\n"


def test_every_variable_named_in_the_runtime_is_declared() -> None:
    named = {name: path for path in _runtime_files() for name in NAME.findall(_text(path))}
    assert {n: str(p.relative_to(ROOT)) for n, p in named.items() if n not in DECLARED} == {}
    assert len(settings.BY_NAME) == len(settings.SETTINGS)  # no name declared twice


def _module_strings(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            found.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
    return found


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (isinstance(node, ast.Name) and node.id == "environ")


def _direct_reads(path: Path) -> list[int]:
    """Environment reads in ``path`` that bypass tts_app.settings: a TTS_APP_* key read from any mapping's
    ``get``, from ``os.environ[...]`` or ``os.getenv``, or an ``os.environ`` read whose key cannot be resolved."""
    tree = ast.parse(_text(path))
    strings = _module_strings(tree)
    env_names = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and _is_environ(n.value)
                 for t in n.targets if isinstance(t, ast.Name)}  # env = os.environ

    def key(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return strings.get(node.id) if isinstance(node, ast.Name) else None

    found = []
    for node in ast.walk(tree):
        target = arg = None
        if isinstance(node, ast.Call) and node.args:
            func, arg = node.func, node.args[0]
            if isinstance(func, ast.Attribute) and func.attr in ("get", "getenv", "pop"):
                target = func.value
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            target, arg = node.value, node.slice
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In):
            target, arg = node.comparators[0], node.left
        if target is None or arg is None:
            continue
        from_environ = target is not None and (_is_environ(target) or (isinstance(target, ast.Name) and target.id in env_names)
                                               or (isinstance(target, ast.Name) and target.id == "os"))
        resolved = key(arg)
        if (resolved or "").startswith("TTS_APP_") or (from_environ and resolved is None):
            found.append(node.lineno)
    return sorted(found)


def test_only_the_settings_module_reads_tts_app_variables() -> None:
    files = [p for p in _runtime_files() if p.suffix == ".py" and p.name != "settings.py"]
    assert {str(p.relative_to(ROOT)): lines for p in files if (lines := _direct_reads(p))} == {}


def test_the_checker_sees_the_old_ways_of_reading(tmp_path: Path) -> None:
    """The reads this module replaced are each caught (so the test above can fail)."""
    old = tmp_path / "old.py"
    old.write_text('import os\nA = "TTS_APP_X"\nB = "HOME"\n'
                   'int(os.environ.get("TTS_APP_Y", "1"))\nos.environ.get(A)\nos.getenv(A)\n'
                   'env = os.environ\nenv.get(A)\nos.environ[A]\nA in os.environ\nos.environ.get(name)\n'
                   'os.environ.get(B)\nos.environ["TTS_APP_Z"] = "1"\n')
    assert _direct_reads(old) == [4, 5, 6, 8, 9, 10, 11]


@pytest.mark.parametrize("s", settings.SETTINGS, ids=lambda s: s.name)
def test_the_default_is_what_an_unset_or_empty_variable_gives(s: settings.Setting) -> None:
    assert settings.value(s.name, {}) == settings.default(s.name) == (s.default.expanduser() if s.kind == "path" and s.default else s.default)
    assert settings.value(s.name, {s.name: "  "}) == settings.default(s.name)
    if s.kind in ("int", "float", "choice") and s.default is not None:
        assert settings.value(s.name, {s.name: str(s.default)}) == s.default  # in its own range


@pytest.mark.parametrize("s", [s for s in settings.SETTINGS if s.kind in ("int", "float", "choice")], ids=lambda s: s.name)
def test_a_bad_value_is_one_line_naming_the_variable(s: settings.Setting, caplog: pytest.LogCaptureFixture) -> None:
    bad = {s.name: "12 apples\nand a second line"}
    if s.fallback:
        with caplog.at_level(logging.WARNING, logger="tts_app.settings"):
            assert settings.value(s.name, bad) == s.default
        message = caplog.records[-1].getMessage()
        assert settings.problems(bad) == []  # a fallback never stops the start
    else:
        with pytest.raises(settings.SettingError) as error:
            settings.value(s.name, bad)
        message = str(error.value)
        assert settings.problems(bad) == [message]
    assert "\n" not in message and message.startswith(f"{s.name} must be {settings.accepts(s)}, got '12 apples\\n")


@pytest.mark.parametrize(("name", "raw", "good"), [
    ("TTS_APP_CLIENT_SHARE", "0", False), ("TTS_APP_CLIENT_SHARE", "1", True), ("TTS_APP_CLIENT_SHARE", "1.01", False),
    ("TTS_APP_MAX_QUEUE_WAIT_S", "-1", False), ("TTS_APP_MAX_QUEUE_WAIT_S", "0", True), ("TTS_APP_MAX_QUEUE_WAIT_S", "nan", False),
    ("TTS_APP_DOCUMENTS_RUNNING", "0", False), ("TTS_APP_DOCUMENTS_WAITING", "0", True), ("TTS_APP_MAX_UPLOAD_FILES", "2.5", False),
    ("TTS_APP_ENGINE_POLICY", " Deadline ", True), ("TTS_APP_PRECISION", "fastest", False),
])
def test_ranges(name: str, raw: str, good: bool) -> None:
    if good:
        assert settings.value(name, {name: raw}) is not None
    else:
        with pytest.raises(settings.SettingError, match=f"^{name} must be "):
            settings.value(name, {name: raw})


def test_kinds_and_the_old_name_of_max_seconds() -> None:
    assert settings.value("TTS_APP_ALIGN_WORDS", {"TTS_APP_ALIGN_WORDS": "Off"}) is False
    assert settings.value("TTS_APP_ALIGN_WORDS", {"TTS_APP_ALIGN_WORDS": "yes please"}) is True
    assert settings.value("TTS_APP_CORS_ORIGINS", {"TTS_APP_CORS_ORIGINS": " https://a.example, ,*"}) == ("https://a.example", "*")
    assert settings.value("TTS_APP_VOICES_DIR", {"TTS_APP_VOICES_DIR": "~/v"}) == Path.home() / "v"
    assert settings.value("TTS_APP_VOICES_DIR", {}) is None  # then voices/ in the cache folder (voice.library.voices_dir)
    assert settings.cache_root({}) == Path.home() / ".cache" / "tts_app"
    assert settings.cache_root({"XDG_CACHE_HOME": "/x"}) == Path("/x/tts_app")
    assert settings.cache_root({"XDG_CACHE_HOME": "rel", "TTS_APP_CACHE_DIR": ""}) == Path.home() / ".cache" / "tts_app"
    assert settings.cache_root({"XDG_CACHE_HOME": "/x", "TTS_APP_CACHE_DIR": "/c"}) == Path("/c")
    assert settings.value("TTS_APP_DECODER_RUNTIME", {"TTS_APP_DECODER_RUNTIME": "OpenVINO"}) == "openvino"
    assert settings.value("TTS_APP_MAX_SECONDS", {"TTS_APP_QWEN3_MAX_SECONDS": "2"}) == 2.0
    assert settings.value("TTS_APP_MAX_SECONDS", {"TTS_APP_QWEN3_MAX_SECONDS": "2", "TTS_APP_MAX_SECONDS": "3"}) == 3.0


def test_values_are_read_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTS_APP_MAX_QUEUE_WAIT_S", "7.5")
    monkeypatch.setenv("TTS_APP_CLIENT_SHARE", "0.5")
    assert (QosSettings.from_env().max_queue_wait_s, QosSettings.from_env().client_share) == (7.5, 0.5)
    monkeypatch.setenv("TTS_APP_CLIENT_SHARE", "1.5")
    with pytest.raises(ValueError, match=r"^TTS_APP_CLIENT_SHARE must be a number in \(0, 1\], got '1.5'$"):
        QosSettings.from_env()


def test_a_bad_value_stops_the_server_with_one_line(tmp_path: Path) -> None:
    """Before: the server started, and each document request failed importing tts_app.documents.registry
    (a ValueError traceback, ``invalid literal for int()``); a bad client share failed every engine's creation."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TTS_APP_DOCUMENTS_RUNNING": "two",
           "TTS_APP_CLIENT_SHARE": "2", "TTS_APP_MAX_SECONDS": "x"}  # the last falls back: no line
    done = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["TTS_APP_DOCUMENTS_RUNNING must be an integer >= 1, got 'two'",
                                        "TTS_APP_CLIENT_SHARE must be a number in (0, 1], got '2'"]
