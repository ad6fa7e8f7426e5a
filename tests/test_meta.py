"""Packaging promises: the public API, the layering, the committed schema."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import pytest

import recorder
import replay
from recorder._schema import schema_text
from replay import graders
from tests.helpers import REPO


@pytest.mark.parametrize(
    "module", [recorder, replay, graders], ids=["recorder", "replay", "replay.graders"]
)
def test_exported_members_are_complete(module: ModuleType) -> None:
    exported = module.__all__
    assert len(exported) == len(set(exported))
    assert all(hasattr(module, name) for name in exported)
    public = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and not isinstance(v, ModuleType)
    }
    assert public - {"annotations"} <= set(exported)


def test_recorder_never_imports_replay() -> None:
    code = "import sys, recorder; print([m for m in sys.modules if m.split('.')[0] == 'replay'])"
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert out.stdout.strip() == "[]"


def test_committed_json_schema_is_current() -> None:
    committed = (REPO / "recorder" / "cassette.schema.json").read_text()
    assert committed == schema_text(), "run `make schema` and commit recorder/cassette.schema.json"


def test_replay_uses_only_the_public_api_of_recorder() -> None:
    import ast

    private = []
    for path in sorted((REPO / "replay").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
                if node.module == "recorder":
                    names += [f"recorder.{a.name}" for a in node.names if a.name[:2] != "__"]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            private += [
                f"{path.relative_to(REPO)}: {n}" for n in names if n.startswith("recorder._")
            ]
    assert private == []
