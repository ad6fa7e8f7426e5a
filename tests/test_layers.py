"""replay's subpackages are stages, and each depends only on the stages below it.

Layout (README, "Layout"): worlds < graders < surroundings < mcp < cases <
modes < agents < results < runs < views < integrations < the top (``replay/__init__``, the CLI,
the pytest plugin, ``replay.tau2``). ``replay.stub_llm`` stands alone: it
imports nothing of replay's but itself (the standard library only). Every
import counts, deferred ones too; those under ``if TYPE_CHECKING:`` do not.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO

LAYERS = [
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


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in ``path`` outside ``if TYPE_CHECKING:``."""
    name, package = _module(path), path.name == "__init__.py"
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
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

    visit(ast.parse(path.read_text()))
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
