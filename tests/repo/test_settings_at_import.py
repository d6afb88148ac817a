"""Settings are read when used, never at import (tts_app/settings.py's rule): a bad value is then the one-line
SettingError where it is used instead of an import traceback, and a test's or operator's environment is seen.

How it checks: every module under tts_app/ is parsed with ``ast`` (nothing is imported or run), and the code that
runs at import is walked: module and class bodies, the blocks inside them (``if``, ``try``, ``with``, loops), the
default values and decorators of functions (evaluated when the ``def`` runs), but not function bodies, lambdas or
an ``if __name__ == "__main__":`` block. In that code a call of a settings function that reads the environment
(``settings.value``, ``problems``, ``exit_on_bad_values``; ``setting``, ``default`` and the rest only read the
declarations) or any use of ``os.environ``, ``os.getenv`` or ``os.environb`` fails, with file:line.
"""

from __future__ import annotations

import ast

from tests.support.paths import REPO

PACKAGE = REPO / "tts_app"
READS_ENV = {"value", "problems", "exit_on_bad_values"}  # tts_app.settings functions that look at the environment
ENV_NAMES = {"environ", "getenv", "environb"}  # of os


def _reads(node: ast.AST, settings_names: set[str], imported_reads: set[str]) -> list[ast.AST]:
    """The environment reads in one expression or simple statement (lambdas skipped: their bodies run later)."""
    found, stack = [], [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Lambda):
            stack.extend(n.args.defaults + [d for d in n.args.kw_defaults if d is not None])
            continue
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            if n.value.id in settings_names and n.attr in READS_ENV:
                found.append(n)
            if n.value.id == "os" and n.attr in ENV_NAMES:
                found.append(n)
        if isinstance(n, ast.Name) and (n.id in imported_reads or n.id in ENV_NAMES) and isinstance(n.ctx, ast.Load):
            found.append(n)
        stack.extend(ast.iter_child_nodes(n))
    return found


def _is_main_guard(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))


def import_time_reads(source: str) -> list[int]:
    """Line numbers of the environment reads that run when ``source`` is imported."""
    tree = ast.parse(source)
    settings_names, imported_reads = {"settings"}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "tts_app":
            settings_names |= {a.asname or a.name for a in node.names if a.name == "settings"}
        if isinstance(node, ast.ImportFrom) and node.module == "tts_app.settings":
            imported_reads |= {a.asname or a.name for a in node.names if a.name in READS_ENV}
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            imported_reads |= {a.asname or a.name for a in node.names if a.name in ENV_NAMES}
        if isinstance(node, ast.Import):
            settings_names |= {a.asname for a in node.names if a.name == "tts_app.settings" and a.asname}
    lines: list[int] = []

    def walk(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                at_def = stmt.decorator_list + stmt.args.defaults + [d for d in stmt.args.kw_defaults if d is not None]
                lines.extend(n.lineno for d in at_def for n in _reads(d, settings_names, imported_reads))
            elif isinstance(stmt, ast.ClassDef):
                for d in stmt.decorator_list + stmt.bases + [k.value for k in stmt.keywords]:
                    lines.extend(n.lineno for n in _reads(d, settings_names, imported_reads))
                walk(stmt.body)
            elif isinstance(stmt, ast.If) and _is_main_guard(stmt):
                walk(stmt.orelse)
            elif isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar)):
                for field in ("test", "iter", "target"):
                    if isinstance(getattr(stmt, field, None), ast.AST):
                        lines.extend(n.lineno for n in _reads(getattr(stmt, field), settings_names, imported_reads))
                for item in getattr(stmt, "items", []):
                    lines.extend(n.lineno for n in _reads(item, settings_names, imported_reads))
                for field in ("body", "orelse", "finalbody"):
                    walk(getattr(stmt, field, []))
                for handler in getattr(stmt, "handlers", []):
                    walk(handler.body)
            else:
                lines.extend(n.lineno for n in _reads(stmt, settings_names, imported_reads))

    walk(tree.body)
    return sorted(set(lines))


def test_no_module_reads_a_setting_or_the_environment_at_import() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for line in import_time_reads("\n".join(lines)):
            found.append(f"{path.relative_to(REPO)}:{line}: {lines[line - 1].strip()}")
    assert not found, "settings or environment read at import (read them in the function that uses them):\n" + "\n".join(found)


def test_the_scan_finds_reads_at_import_and_only_those() -> None:
    source = '''
import os
from os import environ as env
from tts_app import settings
from tts_app.settings import value
A = settings.value("TTS_APP_X")
B = settings.default("TTS_APP_X")
class C:
    limit = os.environ.get("X", "1")
    def f(self, n=value("TTS_APP_Y")):
        return settings.value("TTS_APP_Z") + os.getenv("Z")
if True:
    D = env["X"]
F = lambda: settings.value("TTS_APP_X")
if __name__ == "__main__":
    settings.value("TTS_APP_X")
'''
    assert import_time_reads(source) == [6, 9, 10, 13]
