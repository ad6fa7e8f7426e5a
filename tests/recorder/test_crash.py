"""A recording process killed with SIGKILL leaves a cassette that reads back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from recorder import ToolEvent, read_cassette
from tests.helpers import REPO

AGENT = textwrap.dedent(
    """
    import sqlite3, sys, time
    from recorder import record, tool

    path, k = sys.argv[1], int(sys.argv[2])
    conn = sqlite3.connect(":memory:")
    conn.execute("create table notes (id integer primary key, text text)")

    @tool(writes=True)
    def add_note(text: str) -> int:
        return conn.execute("insert into notes (text) values (?)", (text,)).lastrowid

    with record(path, world=conn, case_id="crash"):
        for i in range(k):
            add_note(f"note {i}")
        print("ready", flush=True)
        time.sleep(60)
    """
)


@pytest.mark.parametrize("k", [0, 1, 7])
def test_sigkill_after_k_events_keeps_them_all(tmp_path: Path, k: int) -> None:
    path = tmp_path / "killed.cassette"
    proc = subprocess.Popen(
        [sys.executable, "-c", AGENT, str(path), str(k)],
        stdout=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()

    cassette = read_cassette(path)
    assert cassette.header.case_id == "crash"
    tools = [e for e in cassette.events if isinstance(e, ToolEvent)]
    assert [t.args["text"] for t in tools] == [f"note {i}" for i in range(k)]
    assert [t.delta["notes"][0].after for t in tools if t.delta] == [
        {"id": i + 1, "text": f"note {i}"} for i in range(k)
    ]
    assert cassette.footer is None
    assert cassette.truncation is not None and f"{k} complete events" in cassette.truncation
    # The summary of a cut cassette is derived from what it kept.
    summary = cassette.summary()
    assert summary.status == "error" and summary.usage.tool_calls == k
