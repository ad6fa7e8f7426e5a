"""``python -m bench.structure``: the shape of the code, measured from the source.

Prints module sizes (the largest, and every one over ``LIMIT`` lines), each
subpackage of ``recorder`` and ``replay`` with its line count, the import
cycles between modules (imports run at any depth, not those under ``if
TYPE_CHECKING:``), and the imports that reach into another subpackage's
private module. Exits 1 when a module is over the limit, a cycle exists or a
private module is reached into; ``tests/test_layers.py`` and
``tests/test_import_graph.py`` hold the last two in the test suite.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("recorder", "replay")
LIMIT = 450
"""Lines a module may hold (generated files excepted: none today)."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {
        module_name(p): p
        for package in PACKAGES
        for p in sorted((ROOT / package).rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, str, bool]]:
    """(written name, module it loads, type-only) for every import in the module."""
    package = path.name == "__init__.py"
    found: list[tuple[str, str, bool]] = []

    def target(written: str) -> str:
        while written and written not in known:
            written = written.rpartition(".")[0]
        return written

    def visit(node: ast.AST, type_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), True)
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), type_only)
                continue
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name.split(".") if package else name.split(".")[:-1]
                    base = base[: len(base) - (child.level - 1)]
                    module = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    module = child.module or ""
                for alias in child.names:
                    written = f"{module}.{alias.name}"
                    found.append((written, target(written), type_only))
            elif isinstance(child, ast.Import):
                found.extend((a.name, target(a.name), type_only) for a in child.names)
            visit(child, type_only)

    visit(ast.parse(path.read_text()), False)
    return [f for f in found if f[1]]


def unit(module: str) -> str:
    """The subpackage a module or name belongs to (``replay.results``), else its package."""
    parts = module.split(".")
    if len(parts) > 2 or (ROOT / parts[0] / parts[-1]).is_dir():
        return ".".join(parts[:2])
    return parts[0]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
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


def measure() -> int:
    known = modules()
    sizes = {name: len(path.read_text().splitlines()) for name, path in known.items()}
    graph: dict[str, set[str]] = defaultdict(set)
    reaching: list[str] = []
    for name, path in known.items():
        graph[name]
        for written, loaded, type_only in imports(name, path, known):
            if not type_only and loaded != name and loaded.partition(".")[0] in PACKAGES:
                graph[name].add(loaded)
            parts = written.split(".")
            if parts[0] != "replay" or len(parts) < 3 or unit(written) == unit(name):
                continue
            if (ROOT / "replay" / f"{parts[1]}.py").exists():
                continue  # the top package's own modules serve its CLI and plugin
            if any(p.startswith("_") for p in parts[2:]):
                reaching.append(f"{name} imports {written}")
    units: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))
    for name, lines in sizes.items():
        count, total = units[unit(name)]
        units[unit(name)] = (count + 1, total + lines)

    over = sorted(((n, s) for n, s in sizes.items() if s > LIMIT), key=lambda x: -x[1])
    print(f"{len(sizes)} modules, {sum(sizes.values()):,} lines")
    print(f"\nlargest modules (limit {LIMIT} lines):")
    for name, lines in sorted(sizes.items(), key=lambda x: -x[1])[:10]:
        print(f"  {lines:5}  {name}{'  OVER' if lines > LIMIT else ''}")
    print("\nsubpackages:")
    for name, (count, total) in sorted(units.items()):
        print(f"  {total:6,} lines  {count:3} modules  {name}")
    found = cycles(graph)
    print(f"\nimport cycles: {len(found)}")
    for component in found:
        print("  " + " <-> ".join(component))
    print(f"imports into another subpackage's private module: {len(reaching)}")
    for line in reaching:
        print(f"  {line}")
    print(f"modules over {LIMIT} lines: {len(over)}")
    return 1 if over or found or reaching else 0


if __name__ == "__main__":
    sys.exit(measure())
