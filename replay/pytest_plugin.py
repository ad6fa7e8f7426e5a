"""The pytest plugin (entry point ``pytest11``): replay an agent's cassette in a test.

```python
@pytest.mark.replay(cassette="cassettes/refund-4812.cassette", case="cases/refund-4812.yaml")
def test_refund(replay_session):
    result = replay_session.run(agent, make_tools)
    assert result.verdict == "pass", result.evidence
```

Offline by default and strict, like pytest-recording: the cassette must
exist, tools are answered from it and the LLM is frozen. ``--replay-mode
record`` re-records every marked test (under the sandbox's watch), ``--replay-mode
sandbox`` runs live without touching the cassettes, and
``--replay-record-missing`` records only the cassettes that do not exist.
A live LLM's URL comes from ``run(llm_url=...)``, the marker, or
``REPLAY_LLM_URL``. The plugin holds no logic: it calls ``replay``'s modes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

MODES = {"offline": ("offline", False), "record": ("sandbox", True), "sandbox": ("sandbox", False)}
"""``--replay-mode`` choices: the registered mode each runs, and whether it writes the
test's cassette. A test records under the sandbox's watch (secrets hidden, HTTP to
the LLM's host only), as it always has: a test must not reach third-party APIs."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ``--replay-*`` options."""
    group = parser.getgroup("replay", "agent-replay")
    group.addoption(
        "--replay-mode",
        choices=list(MODES),
        default=None,
        help="offline (default: frozen tools and LLM from the cassette), record, or sandbox.",
    )
    group.addoption(
        "--replay-record-missing",
        action="store_true",
        help="Record the cassettes that do not exist yet (needs a live LLM).",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``replay`` marker."""
    config.addinivalue_line(
        "markers",
        "replay(cassette, case, mode=None, llm_url=None): run an agent against a recorded "
        "cassette (see agent-replay's README)",
    )


@dataclass(frozen=True)
class Outcome:
    """What a test reads back: the verdict, the evidence, the whole trial."""

    verdict: str
    evidence: list[str]
    result: Any
    """The ``replay.TrialResult``."""


class ReplaySession:
    """Runs an agent for one test, as the marker and the command line say."""

    def __init__(
        self,
        cassette: Path,
        case: Path,
        mode: str,
        tmp: Path,
        llm_url: str | None,
        record_missing: bool,
    ) -> None:
        self.cassette, self.case_path, self.mode = cassette, case, mode
        self._tmp, self._llm_url, self._record_missing = tmp, llm_url, record_missing

    def run(
        self, agent: Any, tools: Any, *, llm_url: str | None = None, **settings: Any
    ) -> Outcome:
        """Run ``agent(instruction, env)`` with ``tools(conn)`` and grade the trial."""
        from recorder import read_cassette
        from replay import load_case
        from replay.modes import REGISTRY, TrialPlan, run_trial

        case = load_case(self.case_path)
        url = llm_url or self._llm_url or os.environ.get("REPLAY_LLM_URL")
        name, records = MODES[self.mode]
        mode = REGISTRY[name]
        if mode.needs_recorded(mode.default_llm, False) and not self.cassette.exists():
            if not self._record_missing:
                pytest.fail(
                    f"cassette {self.cassette} does not exist; record it with "
                    "--replay-mode record or --replay-record-missing",
                    pytrace=False,
                )
            name, records = MODES["record"]
            mode = REGISTRY[name]
        if mode.default_llm == "live" and not url:
            pytest.fail(
                f"--replay-mode {self.mode} needs a live LLM: pass llm_url= or set REPLAY_LLM_URL",
                pytrace=False,
            )
        recorded = mode.needs_recorded(mode.default_llm, False)
        out = self.cassette if records else self._tmp / f"{mode.name}.cassette"
        out.parent.mkdir(parents=True, exist_ok=True)
        plan = TrialPlan(
            case=case,
            mode=mode.name,
            out=out,
            agent=agent,
            tools=tools,
            recorded=read_cassette(self.cassette) if recorded else None,
            llm_url=url,
            settings=settings,
        )
        result = run_trial(plan)
        return Outcome(result.outcome.verdict.value, result.outcome.evidence, result)


@pytest.fixture
def replay_session(request: pytest.FixtureRequest, tmp_path: Path) -> ReplaySession:
    """A session for the test's ``@pytest.mark.replay(cassette=..., case=...)``."""
    marker = request.node.get_closest_marker("replay")
    if marker is None or "cassette" not in marker.kwargs or "case" not in marker.kwargs:
        pytest.fail(
            "replay_session needs @pytest.mark.replay(cassette=..., case=...)", pytrace=False
        )
    base = Path(str(request.node.fspath)).parent
    mode = request.config.getoption("--replay-mode") or marker.kwargs.get("mode") or "offline"
    return ReplaySession(
        base / marker.kwargs["cassette"],
        base / marker.kwargs["case"],
        mode,
        tmp_path,
        marker.kwargs.get("llm_url"),
        bool(request.config.getoption("--replay-record-missing")),
    )
