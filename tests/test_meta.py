"""Packaging promises: the layering, the committed schema, one set of exit codes.

The public API itself is pinned name by name in tests/test_exported_members.py; the
import graph (no cycles, replay on recorder's public API only) in tests/test_import_graph.py.
"""

from __future__ import annotations

import ast
import subprocess
import sys

from recorder._schema import schema_text
from replay import ExitCode
from tests.helpers import REPO, documentation


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


def test_the_cli_exits_only_through_exit_code() -> None:
    """No command exits with a bare number: each status means what ``replay.ExitCode`` says."""
    literal = []
    for path in sorted((REPO / "replay" / "_cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            code = node.args[0]
            if name in ("exit", "SystemExit", "Exit") and isinstance(code, ast.Constant):
                literal.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert literal == []


def test_exit_codes_keep_the_numbers_the_readme_documents() -> None:
    assert [(c.name, int(c)) for c in ExitCode] == [
        ("OK", 0),
        ("FAILED", 1),
        ("BAD_INPUT", 2),
        ("INCOMPLETE", 3),
        ("INTERRUPTED", 130),
    ]
    for code in ExitCode:
        assert f"| {int(code)} | `{code.name}` |" in documentation()
