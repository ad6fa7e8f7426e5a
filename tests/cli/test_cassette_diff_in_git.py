"""Cassettes in code review: ``git diff`` shows the calls that changed, as text.

With ``.gitattributes`` ``*.cassette diff=replay`` and ``git config
diff.replay.textconv "replay show --plain"`` (the two lines the README gives),
a pull request that re-records a cassette shows what the agent did differently,
and nothing that differs between any two recordings (times, dates, versions).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from recorder import record, tool
from tests.helpers import replay

REPLAY = Path(sys.executable).with_name("replay")


def _record(path: Path, amount: float) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE refunds (id INTEGER PRIMARY KEY, amount REAL)")

    @tool(writes=True)
    def issue_refund(amount: float) -> dict[str, float]:
        """Refund."""
        conn.execute("INSERT INTO refunds (amount) VALUES (?)", (amount,))
        conn.commit()
        return {"amount": amount}

    with record(path, world=conn, case_id="refund", overwrite=True) as rec:
        issue_refund(amount)
        rec.answer(f"refunded {amount}")


def test_git_diff_of_a_rerecorded_cassette_shows_the_changed_call(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
            timeout=120,
        )  # fmt: skip
        return done.stdout

    git("init", "-q")
    git("config", "user.email", "ci@example.com")
    git("config", "user.name", "ci")
    git("config", "diff.replay.textconv", f"{REPLAY} show --plain")
    (repo / ".gitattributes").write_text("*.cassette diff=replay\n")
    _record(repo / "refund.cassette", 35.0)
    git("add", ".")
    git("commit", "-qm", "recorded")
    _record(repo / "refund.cassette", 30.0)  # the agent now refunds less
    changed = [line for line in git("diff").splitlines() if line[:1] in "+-"][2:]
    assert sorted(changed) == sorted(  # the call, its result and delta, the answer: no more
        [
            '-  args: {"amount": 35.0}', '-  result: {"amount": 35.0}',
            "-  + refunds {id: 1, amount: 35.0}", "-final answer: refunded 35.0",
            "-  + refunds {id: 1, amount: 35.0}",
            '+  args: {"amount": 30.0}', '+  result: {"amount": 30.0}',
            "+  + refunds {id: 1, amount: 30.0}", "+final answer: refunded 30.0",
            "+  + refunds {id: 1, amount: 30.0}",
        ]
    )  # fmt: skip
    _record(repo / "refund.cassette", 35.0)  # recorded again as it was: no change to show
    assert git("diff") == ""


def test_plain_text_is_the_same_for_two_recordings_of_the_same_behaviour(tmp_path: Path) -> None:
    _record(tmp_path / "a.cassette", 35.0)
    _record(tmp_path / "b.cassette", 35.0)
    (code_a, a, _), (code_b, b, _) = (
        replay("show", "--plain", str(tmp_path / name)) for name in ("a.cassette", "b.cassette")
    )
    assert code_a == code_b == 0 and a == b and "step 1 tool issue_refund (write)" in a
