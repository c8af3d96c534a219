"""The package's import graph: no cycles, and layers that import only downwards.

Every import counts, including those inside functions (a lazy import is still a dependency);
only imports under ``if TYPE_CHECKING:`` are left out, since they never run.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import glassrag

PACKAGE = Path(glassrag.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Import nodes outside ``if TYPE_CHECKING:`` blocks."""
    found: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _imports(name: str, path: Path) -> set[str]:
    out: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in MODULES)
            continue
        assert isinstance(node, ast.ImportFrom)
        if node.level:
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target not in MODULES:
            continue
        submodules = {f"{target}.{a.name}" for a in node.names} & MODULES.keys()
        out.update(submodules or {target})
        if len(submodules) < len(node.names):
            out.add(target)
    out.discard(name)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    assert sorted(_cycles(GRAPH)) == []


# The layers, top to bottom (docs/architecture.md): a module may import its own layer and
# the layers below it, never one above. A module belongs to the longest prefix listed.
LAYERS = [
    ("interfaces", "__main__"),
    ("",),  # the package itself: its lazy attributes reach the knowledge base
    ("eval",),  # evaluation runs that build and open knowledge bases
    ("kb",),
    # What the knowledge base calls after an ask or ingest, and the case checks it runs.
    ("audit", "follower", "eval.cases", "eval.docs_judge", "eval.docs_questions",
     "eval.docs_report", "eval.metrics", "eval.record_files"),
    ("pipeline", "observe", "telemetry"),
    ("retrieval",),
    ("llm",),
    ("answer",),
    ("ingest", "parsers"),
    ("dense",),
    ("vectors",),
    ("store",),
    ("text",),
    ("records", "settings", "errors", "faults", "locks", "http_calls", "trace", "disclosure"),
]


def _layer(module: str) -> int:
    name = module.removeprefix("glassrag").removeprefix(".")
    best, depth = None, -1
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".") or prefix == "") and \
                    len(prefix) > depth:
                best, depth = rank, len(prefix)
    assert best is not None, module
    return best


def test_the_layer_finder_places_modules_by_their_longest_prefix() -> None:
    assert _layer("glassrag.eval.cases") > _layer("glassrag.eval.beir")  # lower, later
    assert _layer("glassrag") == 1 and _layer("glassrag.store.traces") == LAYERS.index(("store",))


def test_imports_point_down_the_layers() -> None:
    upward = sorted(f"{a} -> {b}" for a, targets in GRAPH.items() for b in targets
                    if _layer(b) < _layer(a))
    assert upward == []
