"""The folders are the architecture: imports go down the layers, never up, and never round in a cycle.

How it checks: every module under tts_app/ is parsed with ``ast`` (nothing is imported or run). Each
``import`` and ``from ... import`` statement, at module level (``if TYPE_CHECKING:`` blocks included: a
type is a dependency too) and inside functions, becomes an edge from the module to the tts_app module
it names (``from tts_app.pkg import name`` names the submodule ``pkg.name`` when one exists, else the
package). Each module belongs to the unit of LAYERS with the longest matching prefix (a loose module at
the package root belongs to none and fails). An edge may go to a lower layer or stay inside its own
unit, never to a higher layer nor to another unit of the same layer (peers such as the API and the
page, or two models, know nothing of each other). The edges, all of them, must form no cycle (a
depth-first walk finds none). An import inside a function must say why it is not at the top: a ``#``
comment on its own line(s), or on the line above its block of imports.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = next(p / "tts_app" for p in Path(__file__).resolve().parents if (p / "tts_app" / "__init__.py").is_file())

# Lowest first. Units on one line are peers: neither may import the other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("tts_app.settings", "tts_app.assets", "tts_app.framework"),  # framework: Gradio's and uvicorn's internals, nothing of ours
    ("tts_app.audio",),
    ("tts_app.voice", "tts_app.text"),  # a reference clip's analysis and a text's reading know nothing of each other
    ("tts_app.captions",),
    ("tts_app.models",),  # its package docstring, and what describes every model (which exist, what each honours)
    ("tts_app.models.layers",),
    ("tts_app.models.piper",),
    ("tts_app.models.available",),
    ("tts_app.models.hub_fetch",),  # downloads what available.HUB_CHECKPOINTS lists
    ("tts_app.models.qwen3", "tts_app.models.chatterbox", "tts_app.models.pocket_tts"),
    ("tts_app.backends",),
    ("tts_app.engine",),
    ("tts_app.catalog",),
    ("tts_app.storage",),
    ("tts_app.documents",),
    ("tts_app.web",),  # its guards, shutdown, live channel, session sweeper: what both the API and the page use
    ("tts_app.web.api", "tts_app.web.ui"),
    ("tts_app.web.server",),
    ("tts_app.cli",),
    ("tts_app",),  # the package's own __init__ and __main__ (ROOT_MODULES)
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    in_function: bool


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


def _target(name: str) -> str | None:
    """The tts_app module ``name`` denotes: itself, else the nearest enclosing module."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _named(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # relative: counted from the importing module's package
        package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]


def _function_import_lines(tree: ast.AST) -> set[int]:
    lines = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            lines |= {n.lineno for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return lines


def edges_of(module: str) -> list[Edge]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    in_fn = _function_import_lines(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _named(module, node):
                target = _target(name) if name.split(".")[0] == "tts_app" else None
                if target and target != module:
                    found.append(Edge(module, target, node.lineno, node.lineno in in_fn))
    return found


ALL_EDGES = [edge for module in MODULES for edge in edges_of(module)]


ROOT_MODULES = ("tts_app", "tts_app.__main__")  # no other loose module at the package root: it would have no layer


def unit_of(module: str) -> str:
    if module in ROOT_MODULES:
        return "tts_app"
    parts = module.split(".")
    for i in range(len(parts), 1, -1):
        if ".".join(parts[:i]) in RANK:
            return ".".join(parts[:i])
    raise AssertionError(f"{module} belongs to no layer: put it in a folder of LAYERS")


def test_every_module_has_a_layer() -> None:
    loose = []
    for module in MODULES:
        try:
            unit_of(module)
        except AssertionError as exc:
            loose.append(str(exc))
    assert not loose, "\n".join(loose)


def wrong_way(edges: list[Edge]) -> list[str]:
    """The edges that go to a higher layer, or to another unit of the same layer."""
    wrong = []
    for e in edges:
        src, dst = unit_of(e.source), unit_of(e.target)
        if src != dst and RANK[dst] >= RANK[src]:
            way = "up" if RANK[dst] > RANK[src] else "to a peer"
            wrong.append(f"{e.source}:{e.line} imports {e.target} ({src} -> {dst}: {way})")
    return wrong


def test_no_import_goes_up_or_sideways() -> None:
    wrong = wrong_way(ALL_EDGES)
    assert not wrong, "imports that cross the layers the wrong way:\n" + "\n".join(wrong)


def test_the_layer_check_finds_each_wrong_way() -> None:
    """Down, and inside a unit, pass; up, and to a peer, fail (whether at the top or inside a function)."""
    edge = lambda source, target, in_function=False: Edge(source, target, 1, in_function)  # noqa: E731
    assert wrong_way([edge("tts_app.engine.engine", "tts_app.backends.base"), edge("tts_app.text.prepare", "tts_app.text.words"),
                      edge("tts_app.web.api.openai_speech", "tts_app.web.guards.client_identity")]) == []
    assert len(wrong_way([edge("tts_app.captions.stream", "tts_app.models.available", True)])) == 1  # up
    assert len(wrong_way([edge("tts_app.text.lexicon", "tts_app.voice.library", True)])) == 1  # a peer
    assert len(wrong_way([edge("tts_app.web.api.openai_speech", "tts_app.web.ui.layout")])) == 1  # a peer
    assert len(wrong_way([edge("tts_app.models.piper.loader", "tts_app.models.qwen3.config")])) == 1  # a peer model


def test_every_unit_of_the_layers_exists() -> None:
    """A stale entry (a folder deleted or renamed) would leave a layer that checks nothing."""
    missing = [unit for unit in RANK if unit not in MODULES]
    assert not missing, f"LAYERS names what tts_app/ no longer has: {missing}"


# The routes' own layer computes who is asking (web/api/client_id.py over web/guards/client_identity.py) once, in
# the route function, and hands it down; nothing the route calls climbs back up to the request for it.
IDENTITY_CALLS = {"client_id", "visitor_key"}


def identity_calls_outside_routes(tree: ast.AST) -> list[int]:
    """Lines where ``client_id(...)`` or ``visitor_key(...)`` is called outside a function decorated ``@router.*``."""
    routes = [fn for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
              and any(isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and isinstance(d.func.value, ast.Name)
                      and d.func.value.id == "router" for d in fn.decorator_list)]
    inside = {id(n) for fn in routes for n in ast.walk(fn)}
    return sorted(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                  and n.func.id in IDENTITY_CALLS and id(n) not in inside)


def test_an_api_request_learns_who_asks_at_its_route_and_walks_down() -> None:
    found = []
    for module, path in MODULES.items():
        if module.startswith("tts_app.web.api.") and module != "tts_app.web.api.client_id":
            found += [f"{path.relative_to(PACKAGE.parent)}:{line}" for line in identity_calls_outside_routes(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, "the client's identity computed below the route (pass the route's client_id down):\n" + "\n".join(found)
    sample = "@router.post('/x')\nasync def route(request):\n    c = client_id(request)\n\nasync def below(request):\n    return client_id(request)\n"
    assert identity_calls_outside_routes(ast.parse(sample)) == [6]


def find_cycles(edges: list[tuple[str, str]]) -> list[list[str]]:
    """One cycle through each back edge a depth-first walk meets: none iff the graph is acyclic."""
    graph: dict[str, list[str]] = {}
    for source, target in edges:
        graph.setdefault(source, []).append(target)
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []
    cycles = []

    def walk(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(set(graph.get(node, ()))):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt) :])
            elif nxt not in state:
                walk(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)
    return cycles


def test_the_import_graph_has_no_cycle() -> None:
    cycles = [" -> ".join([*c, c[0]]) for c in find_cycles([(e.source, e.target) for e in ALL_EDGES])]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]) == [["a", "b", "c"]]
    assert find_cycles([("a", "b"), ("a", "c"), ("b", "c")]) == []


def _lacks_reason(lines: list[str], node: ast.Import | ast.ImportFrom, covered: set[int]) -> bool:
    own = lines[node.lineno - 1 : node.end_lineno]
    above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
    if any("#" in line for line in own) or above.startswith("#"):
        return False
    return node.lineno - 1 not in covered  # the line above is an import of the same block that gave a reason


def test_every_import_inside_a_function_says_why() -> None:
    missing = []
    for module, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
        in_fn = _function_import_lines(tree)
        nodes = sorted((n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno in in_fn),
                       key=lambda n: n.lineno)
        covered: set[int] = set()
        for node in nodes:
            if _lacks_reason(lines, node, covered):
                missing.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
            else:
                covered.add(node.end_lineno or node.lineno)
    assert not missing, "imports inside functions with no comment saying why:\n" + "\n".join(missing)


def test_the_checks_see_what_they_should() -> None:
    """The parser finds the imports it judges: a known top-level edge, a known edge inside a function."""
    assert Edge("tts_app.engine.engine", "tts_app.engine.scheduler", 0, False) in {
        Edge(e.source, e.target, 0, e.in_function) for e in ALL_EDGES
    }
    assert any(e.in_function for e in ALL_EDGES)
    assert len(MODULES) > 100
