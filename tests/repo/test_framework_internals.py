"""Gradio's and uvicorn's private internals are touched in tts_app/framework.py only, and its docstring lists each.

How it checks: every module under tts_app/ but the adapter is parsed with ``ast`` (nothing is imported). It
must not read, write or define (a method of that name) an attribute named in ``INTERNALS``, name ``H11Protocol``,
subclass ``uvicorn.Server``, import ``h11`` or a private uvicorn module (``uvicorn.protocols``, ``uvicorn.server``,
...), or import any submodule of ``gradio`` (``from gradio import audio_stream_encoder``, ``gradio.utils``): the
public API is ``import gradio as gr``. A new use goes into the adapter, with its reason in the docstring.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

PACKAGE = next(p / "tts_app" for p in Path(__file__).resolve().parents if (p / "tts_app" / "__init__.py").is_file())
ADAPTER = PACKAGE / "framework.py"

# Attribute names of Gradio's and uvicorn's internals (each in the adapter's docstring).
INTERNALS = frozenset({
    # Gradio
    "_queue", "event_ids_to_events", "pending_event_ids_session", "pending_messages_per_session", "state_holder",
    "session_data", "time_last_used", "pending_streams", "pending_diff_streams", "end_stream", "fns", "preprocess",
    "has_launched", "stop_event", "STARTUP_WAIT", "get_upload_folder",
    # uvicorn and h11
    "H11Protocol", "their_state", "response_started", "read_paused", "handle_exit", "handle_websocket_upgrade",
})
PUBLIC_UVICORN = frozenset({"uvicorn"})  # uvicorn.Config and uvicorn.Server, as uvicorn's docs use them


def _gradio_submodules() -> frozenset[str]:
    """The modules and packages inside gradio's folder (found without importing gradio)."""
    spec = importlib.util.find_spec("gradio")
    assert spec is not None and spec.submodule_search_locations, "gradio is not installed"
    folder = Path(next(iter(spec.submodule_search_locations)))
    return frozenset(p.stem for p in folder.iterdir() if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file())


def _is_uvicorn_server(base: ast.expr) -> bool:
    return isinstance(base, ast.Attribute) and base.attr == "Server" and isinstance(base.value, ast.Name) and base.value.id == "uvicorn"


def internals_touched(source: str, gradio_modules: frozenset[str]) -> list[tuple[int, str]]:
    """(line, what) for each use of a framework internal in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in INTERNALS:
            found.append((node.lineno, f"attribute {node.attr}"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in INTERNALS:
            found.append((node.lineno, f"override {node.name}"))
        elif isinstance(node, ast.Name) and node.id == "H11Protocol":  # other names: a local variable may share them
            found.append((node.lineno, f"name {node.id}"))
        elif isinstance(node, ast.ClassDef) and any(_is_uvicorn_server(b) for b in node.bases):
            found.append((node.lineno, "subclass of uvicorn.Server"))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if _private_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if _private_module(node.module):
                found.append((node.lineno, f"from {node.module} import"))
            elif node.module == "gradio":
                found += [(node.lineno, f"from gradio import {a.name}") for a in node.names if a.name in gradio_modules]
    return sorted(found)


def _private_module(name: str) -> bool:
    top, _, rest = name.partition(".")
    return top == "h11" or (top == "uvicorn" and name not in PUBLIC_UVICORN) or (top == "gradio" and bool(rest))


def test_no_module_but_the_adapter_touches_framework_internals() -> None:
    gradio_modules = _gradio_submodules()
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
             for path in sorted(PACKAGE.rglob("*.py")) if path != ADAPTER and "__pycache__" not in path.parts
             for line, what in internals_touched(path.read_text(encoding="utf-8"), gradio_modules)]
    assert not found, "framework internals outside tts_app/framework.py (add a function there):\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_use() -> None:
    sample = (
        "import gradio as gr\nimport uvicorn\nimport h11\nfrom gradio import audio_stream_encoder, Blocks\n"
        "from uvicorn.protocols.http.h11_impl import H11Protocol\nimport gradio.utils\n"
        "x = demo._queue.pending_event_ids_session\n"
        "class S(uvicorn.Server):\n    def handle_exit(self, sig, frame): pass\n"
        "config = uvicorn.Config(app)\n"
    )
    assert internals_touched(sample, frozenset({"audio_stream_encoder", "utils"})) == [
        (3, "import h11"), (4, "from gradio import audio_stream_encoder"), (5, "from uvicorn.protocols.http.h11_impl import"),
        (6, "import gradio.utils"), (7, "attribute _queue"), (7, "attribute pending_event_ids_session"),
        (8, "subclass of uvicorn.Server"), (9, "override handle_exit"),
    ]


def test_the_adapter_says_why_for_each_internal() -> None:
    doc = ast.get_docstring(ast.parse(ADAPTER.read_text(encoding="utf-8"))) or ""
    missing = sorted(name for name in INTERNALS if name not in doc)
    assert not missing, f"tts_app/framework.py's docstring does not list: {missing}"
