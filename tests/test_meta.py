"""Packaging promises: the layering, the committed schema, one set of exit codes.

The public API itself is pinned name by name in tests/test_exported_members.py; the
import graph (no cycles, replay on recorder's public API only) in tests/test_import_graph.py.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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


_READING = """
import sys
from replay._cli.main import main
sys.argv = ["replay", *sys.argv[1:]]
try:
    main()
except SystemExit as end:
    code = end.code
heavy = ("pydantic", "yaml", "recorder._schema", "replay.cases._case",
         "replay.graders._builtin", "replay.modes._registered")
print(code, [name for name in heavy if name in sys.modules])
"""


def test_reading_a_runs_results_loads_no_case_model_cassette_reader_or_grader(
    tmp_path: Path,
) -> None:
    """``report``, ``gate`` and ``runs`` read the store: not pydantic's models, YAML, graders.

    (Importing them was most of a report's time on a large run: ~0.6 s a command.)
    """
    from replay import GradeRecord, Store, Suite, TrialRecord, TrialUsage
    from replay.graders import Verdict

    store = Store(tmp_path / "results.db")
    for run in ("base", "cand"):
        store.start_run(run, {"mode": "review"}, {"model": run})
        for idx, verdict in enumerate((Verdict.PASS, Verdict.FAIL, Verdict.PASS)):
            grade = GradeRecord("state", verdict, 1.0 if verdict is Verdict.PASS else 0.0)
            trial = TrialRecord(
                case_id="c1",
                idx=idx,
                suite=Suite.REGRESSION,
                verdict=verdict,
                cassette=f"{run}/{idx}.cassette",
                usage=TrialUsage(2, 10, 5, 0.1, 0.0),
                grades=(grade,),
            )
            store.add_trial(run, trial)
        store.finish_run(run)
    for args in (
        ("report", "cand"),
        ("report", "cand", "--json"),
        ("gate", "--baseline", "base", "--candidate", "cand", "--max-drop", "0.5"),
        ("runs",),
    ):
        out = subprocess.run(
            [sys.executable, "-c", _READING, *args, "--store", str(tmp_path / "results.db")],
            capture_output=True,
            text=True,
            cwd=REPO,
            check=True,
        )
        code, loaded = out.stdout.splitlines()[-1].split(" ", 1)
        assert code in ("0", "3"), (args, out.stdout[-500:], out.stderr)  # 3: gate undecided
        assert loaded == "[]", args
