"""A crashed agent is what `replay report` shows first, and `replay show` shows where it raised."""

from __future__ import annotations

from pathlib import Path

from replay import Store, run_html
from tests.helpers import replay


def test_a_crash_comes_before_the_assertions_it_broke_and_its_traceback_is_shown(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.sql").write_text("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);\n")
    case = tmp_path / "c.yaml"
    case.write_text(
        "id: c\ninstruction: write two notes\nfixture: notes.sql\nassert:\n"
        '  - answer contains "done"\n  - notes.count() == 2\n  - "notes[1].text == \\"a\\""\n'
    )
    store = str(tmp_path / "r.db")
    module = "tests.cli.secret_agents"
    agent = ["--agent", f"{module}:crash", "--tools", f"{module}:make_tools"]
    code, _, err = replay(
        "run", str(case), "--run", "r", "-k", "2", "--store", store, *agent, "--isolation", "none",
        "--llm-url", "http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert code == 1, err  # the agent crashed (an error of cause agent)
    code, out, _ = replay("report", "r", "--store", store)
    reasons = [r.strip() for r in out.split("c failed because:")[1].strip().splitlines()]
    # The crash (one trial) before the assertions both trials fail.
    assert reasons[0].startswith("1 x agent: ") and "the agent fell over" in reasons[0]
    assert reasons[1].startswith("2 x ")
    (trial, _) = Store(store).trials("r")
    code, out, _ = replay("show", trial["cassette"])
    assert "RuntimeError: the agent fell over" in out
    assert 'raise RuntimeError("the agent fell over")' in out  # the traceback's last frames
    assert "<summary>traceback</summary>" in run_html(Store(store), "r")
