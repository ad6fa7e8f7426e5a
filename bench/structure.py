"""``python -m bench.structure``: the shape of the code, measured from the source.

Prints module sizes (the largest, and every one over ``LIMIT`` lines), each
subpackage of ``recorder`` and ``replay`` with its line count, the import
cycles between modules (imports run at any depth, not those under ``if
TYPE_CHECKING:``), and the imports that reach into another subpackage's
private module. Exits 1 when a module is over the limit, a cycle exists or a
private module is reached into. The rules are the tests' own, read from them:
the import graph and its cycles from ``tests/test_import_graph.py``, the reach
from ``tests/test_layers.py``; those tests and the size test hold all three.
"""

from __future__ import annotations

import sys
from collections import defaultdict

from tests.test_import_graph import PACKAGES, all_imports, describe_cycles, modules
from tests.test_layers import reaches_into_private

LIMIT = 450
"""Lines a module may hold (generated files excepted: none today)."""


def unit(module: str) -> str:
    """The subpackage a module belongs to (``replay.results``), else its package."""
    package = ".".join(module.split(".")[:2])
    path = modules().get(package)
    return package if path is not None and path.name == "__init__.py" else module.split(".")[0]


def measure() -> int:
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    reaching = [
        f"{imp.source} imports {imp.written}"
        for imp in all_imports()
        if reaches_into_private(imp.source, imp.written)
    ]
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
    found = [cycle for package in PACKAGES for cycle in describe_cycles(package)]
    print(f"\nimport cycles: {len(found)}")
    for cycle in found:
        print("  " + cycle)
    print(f"imports into another subpackage's private module: {len(reaching)}")
    for line in reaching:
        print(f"  {line}")
    print(f"modules over {LIMIT} lines: {len(over)}")
    return 1 if over or found or reaching else 0


if __name__ == "__main__":
    sys.exit(measure())
