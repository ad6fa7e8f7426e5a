"""The benchmark command runs end to end (numbers are for people, not asserted)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import REPO


@pytest.mark.slow
def test_bench_runs_and_reports_every_target() -> None:
    out = subprocess.run(  # (--smoke: --quick's sizes, but fewer executor trials, no clusters)
        [sys.executable, "-m", "bench", "--smoke"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    for line in (
        "open a 1,000-call cassette",
        "smaller than vcrpy YAML",
        "record overhead",
        "world reset <= 1 ms",
        "state diff of 10 changed rows <= 1 ms",
        "tau2 airline gold pass (5 tasks) faster than tau2's own hash check",
        "MCP proxy adds < 1 ms per call, at every number of calls (10, 40)",
        "a walled trial starts within 50 ms of an in-process one",
        "local executor within 10% of the ideal (128 trials, 64 in flight)",
    ):
        assert line in out, f"bench output lacks {line!r}:\n{out}"
