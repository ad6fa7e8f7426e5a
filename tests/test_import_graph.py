"""The layering, read from the source: no import cycles, and replay on top of recorder's public API.

The graph is built with ``ast`` from every ``import`` statement of every module of
``recorder`` and ``replay``, at any depth (a deferred import inside a function is
still an edge: it only hides a cycle), except those under ``if TYPE_CHECKING:``.
Relative imports are resolved; importing a package is an edge to its
``__init__``; ``from pkg import name`` is an edge to ``pkg.name`` when that is a
module. Nothing here names a module of ``replay``: the checks hold for whatever
layout is on disk.
"""

from __future__ import annotations

import ast
import functools
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import REPO

PACKAGES = ("recorder", "replay")


@dataclass(frozen=True, slots=True)
class Import:
    """One imported name, resolved to the module it loads."""

    source: str
    """The importing module."""
    target: str
    """The module loaded (a package's ``__init__`` is the package's name)."""
    written: str
    """The absolute dotted name as imported, e.g. ``recorder._schema.Header``."""
    line: int
    type_only: bool
    """Under ``if TYPE_CHECKING:``: seen by the type checker, never run."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for package in PACKAGES
        for path in sorted((REPO / package).rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _statements(node: ast.AST, type_only: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement below ``node``, with whether only the type checker runs it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _statements_of(stmt, True)
            for stmt in child.orelse:
                yield from _statements_of(stmt, type_only)
            continue
        yield from _statements_of(child, type_only)


def _statements_of(node: ast.AST, type_only: bool) -> Iterator[tuple[ast.stmt, bool]]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node, type_only
    yield from _statements(node, type_only)


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The module of ours that importing ``name`` loads: the longest known prefix."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[Import]:
    tree = ast.parse(path.read_text(), str(path))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: list[Import] = []
    for stmt, type_only in _statements(tree):
        written: list[str]
        if isinstance(stmt, ast.Import):
            written = [alias.name for alias in stmt.names]
            targets = [_resolve(w, known) for w in written]
        else:
            assert isinstance(stmt, ast.ImportFrom)
            if stmt.level:
                base = package[: len(package) - (stmt.level - 1)]
                module = ".".join([*base, *([stmt.module] if stmt.module else [])])
            else:
                module = stmt.module or ""
            written = [f"{module}.{alias.name}" for alias in stmt.names]
            targets = [w if w in known else _resolve(module, known) for w in written]
        found += [
            Import(name, target, w, stmt.lineno, type_only)
            for w, target in zip(written, targets, strict=True)
            if target is not None and target != name
        ]
    return found


@functools.cache
def all_imports() -> list[Import]:
    known = modules()
    return [imp for name, path in known.items() for imp in imports_of(name, path, known)]


def runtime_graph(package: str) -> dict[str, dict[str, Import]]:
    """Module -> module it imports when run, within ``package``, with the first import of each."""
    graph: dict[str, dict[str, Import]] = {
        name: {} for name in modules() if name.split(".")[0] == package
    }
    for imp in all_imports():
        if not imp.type_only and imp.source in graph and imp.target in graph:
            graph[imp.source].setdefault(imp.target, imp)
    return graph


def strongly_connected(graph: dict[str, dict[str, Import]]) -> list[list[str]]:
    """Tarjan's components of more than one module (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return components


def shortest_cycle(graph: dict[str, dict[str, Import]], component: list[str]) -> list[str]:
    """The shortest chain from the component's first module back to itself (breadth first)."""
    start = component[0]
    members = set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if child in members and child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{component} is not strongly connected")


def describe_cycles(package: str) -> list[str]:
    """Each cycle of ``package`` as ``a -> b -> a``, then where each import is."""
    graph = runtime_graph(package)
    found = []
    for component in strongly_connected(graph):
        chain = shortest_cycle(graph, component)
        where = [
            f"    {graph[a][b].source.replace('.', '/')}.py:{graph[a][b].line} imports {b}"
            for a, b in itertools.pairwise(chain)
        ]
        others = sorted(set(component) - set(chain))
        also = [f"    (same knot: {', '.join(others)})"] if others else []
        found.append("\n".join([" -> ".join(chain), *where, *also]))
    return found


def test_the_graph_sees_deferred_imports_and_skips_type_checking_ones() -> None:
    """The reader itself, on a module of known shape (so a broken walk cannot pass vacuously)."""
    graph = runtime_graph("recorder")
    assert "recorder._errors" in graph["recorder"]
    assert "recorder._http" in graph["recorder._interceptors"]  # inside a function
    session = {imp.target for imp in all_imports() if imp.source == "recorder._session"}
    assert "recorder._recording" in session  # seen, but only by the type checker
    assert "recorder._recording" not in graph["recorder._session"]


def test_recorder_has_no_import_cycle() -> None:
    cycles = describe_cycles("recorder")
    assert not cycles, "import cycles in recorder:\n" + "\n".join(cycles)


def test_replay_has_no_import_cycle() -> None:
    cycles = describe_cycles("replay")
    assert not cycles, "import cycles in replay:\n" + "\n".join(cycles)


def test_recorder_never_imports_replay() -> None:
    """Statically, type-only imports included (tests/test_meta.py checks what loads at run time)."""
    reaches = [
        f"{imp.source}:{imp.line} imports {imp.written}"
        for imp in all_imports()
        if imp.source.split(".")[0] == "recorder" and imp.target.split(".")[0] == "replay"
    ]
    assert not reaches, "recorder imports replay:\n" + "\n".join(reaches)


def _is_private(name: str) -> bool:
    """``_schema`` or ``_schema.Header``, not ``__version__`` nor a public name."""
    return name.startswith("_") and not name.startswith("__")


def test_replay_uses_only_the_public_api_of_recorder() -> None:
    """``import recorder``, ``from recorder import x``; never ``recorder._x``, even for types."""
    private = [
        f"{imp.source}:{imp.line} imports {imp.written}"
        for imp in all_imports()
        if imp.source.split(".")[0] == "replay"
        and imp.written.split(".")[0] == "recorder"
        and _is_private(imp.written.partition(".")[2])
    ]
    assert not private, "replay imports private modules of recorder:\n" + "\n".join(private)
