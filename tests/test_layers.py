"""replay's subpackages are stages, and each depends only on the stages below it.

Layout (README, "Layout"): plugins < worlds < graders < surroundings < mcp < cases <
modes < agents < results < runs < views < integrations < the top (``replay/__init__``, the CLI,
the pytest plugin, ``replay.tau2``). ``replay.stub_llm`` stands alone: it
imports nothing of replay's but itself (the standard library only). Every
import counts, deferred ones too; those under ``if TYPE_CHECKING:`` do not.

A subpackage is a unit: its ``__init__`` is its face, binding what the other
stages use; nothing outside it imports one of its private modules (type-only
imports included), the CLI and the top modules neither.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO

LAYERS = [
    "plugins",
    "worlds",
    "graders",
    "surroundings",
    "mcp",
    "cases",
    "modes",
    "agents",
    "results",
    "runs",
    "views",
    "integrations",
]
TOP = len(LAYERS)


def _module(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, type_only: bool = False) -> list[tuple[int, str]]:
    """(line, absolute name) of each import in ``path``; those under TYPE_CHECKING if asked."""
    return _imports_of(path.read_text(), _module(path), path.name == "__init__.py", type_only)


def _imports_of(
    source: str, name: str, package: bool, type_only: bool = False
) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if (
                not type_only
                and isinstance(child, ast.If)
                and "TYPE_CHECKING" in ast.unparse(child.test)
            ):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name.split(".") if package else name.split(".")[:-1]
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    target = child.module or ""
                found.extend((child.lineno, f"{target}.{a.name}") for a in child.names)
            elif isinstance(child, ast.Import):
                found.extend((child.lineno, a.name) for a in child.names)
            visit(child)

    visit(ast.parse(source))
    return found


def _stage(module: str) -> str | None:
    """The stage a ``replay`` module (or a name imported from one) belongs to."""
    parts = module.split(".")
    if parts[0] != "replay":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in (*LAYERS, "stub_llm") else "top"


def _rank(stage: str) -> int:
    return LAYERS.index(stage) if stage in LAYERS else TOP


def test_every_module_belongs_to_a_stage_and_the_flat_layout_is_gone() -> None:
    flat = sorted(
        p.name for p in (REPO / "replay").glob("_*.py") if p.name not in ("__init__.py", "_exit.py")
    )
    assert flat == [], f"modules outside any stage: {flat}"


def test_each_stage_imports_only_the_stages_below_it() -> None:
    upward = []
    for path in sorted((REPO / "replay").rglob("*.py")):
        here = _stage(_module(path))
        assert here is not None
        for line, target in _imports(path):
            there = _stage(target)
            if there is None or there == here:
                continue
            where = f"{path.relative_to(REPO)}:{line} imports {target}"
            if here == "stub_llm" or (there == "stub_llm" and here != "top"):
                upward.append(f"{where} (stub_llm stands alone)")
            elif _rank(there) > _rank(here):
                upward.append(f"{where} ({here} is below {there})")
    assert upward == [], "\n".join(upward)


def _home(module: str) -> str:
    """The unit a module belongs to: its subpackage (``replay.results``), or ``replay`` itself."""
    parts = module.split(".")
    return (
        ".".join(parts[:2])
        if len(parts) > 2 or (REPO / "replay" / parts[-1]).is_dir()
        else "replay"
    )


def reaches_into_private(source: str, written: str) -> bool:
    """Whether module ``source`` importing ``written`` (``replay.results._store.Store``) reaches
    into another unit's private module (``python -m bench.structure`` counts the same)."""
    parts = written.split(".")
    if parts[0] != "replay" or len(parts) < 3 or _home(written) == _home(source):
        return False
    if (REPO / "replay" / f"{parts[1]}.py").exists():
        return False  # the top package's own modules (``replay._exit``) serve its CLI and plugin
    return any(p.startswith("_") for p in parts[2:])


def _reaches(name: str, imports: list[tuple[int, str]]) -> list[str]:
    """Imports of another unit's private module: ``replay.results._store.Store`` from views."""
    return [f"{name}:{line} imports {t}" for line, t in imports if reaches_into_private(name, t)]


def test_no_module_imports_another_subpackages_private_module() -> None:
    reaching = [
        found
        for path in sorted((REPO / "replay").rglob("*.py"))
        for found in _reaches(_module(path), _imports(path, type_only=True))
    ]
    assert reaching == [], "use the subpackage's face (its __init__):\n" + "\n".join(reaching)


def test_a_reach_into_a_private_module_is_seen() -> None:
    source = """
from typing import TYPE_CHECKING
from ..results import Store
from ._html import run_html
if TYPE_CHECKING:
    from ..results._report import RunReport
def later():
    from ..worlds import _world
"""
    found = _reaches("replay.views._x", _imports_of(source, "replay.views._x", False, True))
    assert found == [
        "replay.views._x:6 imports replay.results._report.RunReport",
        "replay.views._x:8 imports replay.worlds._world",
    ]


def test_no_module_is_over_the_size_limit() -> None:
    """``python -m bench.structure`` measures the same; a module past it splits at a seam."""
    from bench.structure import LIMIT, modules

    over = {
        name: lines
        for name, path in modules().items()
        if (lines := len(path.read_text().splitlines())) > LIMIT
    }
    assert over == {}, f"modules over {LIMIT} lines: {over}"
