"""The pytest plugin (entry point ``pytest11``): replay an agent's cassette in a test.

```python
@pytest.mark.replay                     # cassettes/test_shop/test_refund.cassette
def test_refund(replay_session):        # cases/test_shop/test_refund.yaml (or case=...)
    result = replay_session.run(agent, make_tools)
    assert result.verdict == "pass", result.evidence
```

Paths are relative to the test file. Without ``cassette=``, a test's cassette
is ``cassettes/<module>/<test>.cassette`` beside it, as pytest-recording names
its own (``<module>`` the test file's name without ``.py``; ``<test>`` the
test's name with its class, ``TestX.test_y``, and its parameter id,
``test_y[a-b]``, anything but letters, digits and ``_.-[]`` turned into
``-``). Without ``case=``, the case is ``cases/<module>/<test>.yaml`` beside
it when that file exists; else the marker must name it.

``--replay-mode`` takes pytest-recording's record modes (``RECORD_MODES``):
``none`` (the default: offline and strict, the cassette must exist, tools
are answered from it and the LLM is frozen), ``once`` (record a missing
cassette, replay an existing one), ``new_episodes`` (as ``once``, and
re-record a cassette whose replay met calls it has not seen: the agent took
a new path; a trial is one episode, so the whole cassette is recorded again,
never patched) and ``all`` (re-record every cassette); and ours, ``sandbox``
(live, the cassettes untouched). Recording is sandbox mode: a live LLM, the
real tools, under the sandbox's watch. The former names stay: ``offline``
is ``none``, ``record`` is ``all``, ``--replay-record-missing`` is ``once``.
A live LLM's URL comes from ``run(llm_url=...)``, the marker, or
``REPLAY_LLM_URL``. The plugin holds no logic: it calls ``replay``'s modes.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class RecordMode:
    """One ``--replay-mode``: when a test replays its cassette and when it records it."""

    name: str
    help: str
    replays: bool
    """An existing cassette is replayed offline (else the agent runs live)."""
    writes: bool = True
    """A live run writes the test's cassette (``sandbox``: a throwaway one)."""
    records_missing: bool = False
    """A missing cassette is recorded (else the test fails)."""
    rerecords_unseen: bool = False
    """A replay that met calls the cassette has not seen is recorded again."""


RECORD_MODES = {
    m.name: m
    for m in (
        RecordMode("none", "replay only; a missing cassette fails the test", replays=True),
        RecordMode(
            "once",
            "record missing cassettes, replay the others",
            replays=True,
            records_missing=True,
        ),
        RecordMode(
            "new_episodes",
            "as once, and re-record a cassette whose replay met unseen calls",
            replays=True,
            records_missing=True,
            rerecords_unseen=True,
        ),
        RecordMode("all", "re-record every cassette", replays=False),
        RecordMode("sandbox", "run live, cassettes untouched", replays=False, writes=False),
    )
}
"""``--replay-mode`` choices, named as pytest-recording's record modes (and ``sandbox``)."""
ALIASES = {"offline": "none", "record": "all"}
"""The modes' former names."""
REPLAYS, RECORDS = "offline", "sandbox"
"""The registered modes (``replay.modes``) a test replays and records in. A test
records under the sandbox's watch (secrets hidden, HTTP to the LLM's host only):
a test must not reach third-party APIs."""


def record_mode(name: str) -> RecordMode:
    """The record mode called ``name`` (or by its former name).

    Raises:
        pytest.UsageError: No such mode.
    """
    found = RECORD_MODES.get(ALIASES.get(name, name))
    if found is None:
        names = ", ".join([*RECORD_MODES, *ALIASES])
        raise pytest.UsageError(f"no replay mode {name!r}; the modes are {names}")
    return found


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ``--replay-*`` options."""
    group = parser.getgroup("replay", "agent-replay")
    described = "; ".join(f"{m.name}: {m.help}" for m in RECORD_MODES.values())
    group.addoption(
        "--replay-mode",
        choices=[*RECORD_MODES, *ALIASES],
        default=None,
        help=f"Record mode, as pytest-recording's (default none). {described}. "
        "offline and record are former names of none and all.",
    )
    group.addoption(
        "--replay-record-missing",
        action="store_true",
        help="Record the cassettes that do not exist yet (--replay-mode once).",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``replay`` marker."""
    config.addinivalue_line(
        "markers",
        "replay(cassette=None, case=None, mode=None, llm_url=None): run an agent against a "
        "recorded cassette, by default cassettes/<module>/<test>.cassette (see agent-replay's "
        "docs, how-to/pytest)",
    )


@dataclass(frozen=True)
class Outcome:
    """What a test reads back: the verdict, the evidence, the whole trial."""

    verdict: str
    evidence: list[str]
    result: Any
    """The ``replay.TrialResult``."""
    recorded: bool = False
    """This run (re)wrote the test's cassette."""


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
        self.cassette, self.case_path = cassette, case
        chosen = record_mode(mode)
        if record_missing and chosen.name == "none":
            chosen = RECORD_MODES["once"]
        self.mode = chosen.name
        self._record_mode = chosen
        self._tmp, self._llm_url = tmp, llm_url

    def run(
        self, agent: Any, tools: Any, *, llm_url: str | None = None, **settings: Any
    ) -> Outcome:
        """Run ``agent(instruction, env)`` with ``tools(conn)`` and grade the trial."""
        from replay import load_case

        case = load_case(self.case_path)
        url = llm_url or self._llm_url or os.environ.get("REPLAY_LLM_URL")
        mode = self._record_mode
        if mode.replays and self.cassette.exists():
            result = self._trial(REPLAYS, case, agent, tools, url, settings, writes=False)
            unseen = result.trial.unsupported
            if not (mode.rerecords_unseen and unseen):
                return Outcome(result.outcome.verdict.value, result.outcome.evidence, result)
            why = f"its replay met calls it has not seen ({unseen[0]})"
        elif mode.replays and not mode.records_missing:
            pytest.fail(
                f"cassette {self.cassette} does not exist; record it with "
                "--replay-mode once (or all)",
                pytrace=False,
            )
        else:
            why = "it does not exist" if mode.replays else ""
        if not url:
            needs = f"recording {self.cassette} ({why})" if why else f"--replay-mode {mode.name}"
            pytest.fail(
                f"{needs} needs a live LLM: pass llm_url= or set REPLAY_LLM_URL", pytrace=False
            )
        result = self._trial(RECORDS, case, agent, tools, url, settings, writes=mode.writes)
        verdict = result.outcome.verdict.value
        return Outcome(verdict, result.outcome.evidence, result, recorded=mode.writes)

    def _trial(
        self,
        name: str,
        case: Any,
        agent: Any,
        tools: Any,
        url: str | None,
        settings: dict[str, Any],
        *,
        writes: bool,
    ) -> Any:
        from recorder import read_cassette
        from replay.modes import REGISTRY, TrialPlan, run_trial

        mode = REGISTRY[name]
        recorded = mode.needs_recorded(mode.default_llm, False)
        out = self.cassette if writes else self._tmp / f"{mode.name}.cassette"
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
        return run_trial(plan)


SAFE = re.compile(r"[^A-Za-z0-9_.\-\[\]]")
"""Characters a default cassette or case name does not keep (each becomes ``-``)."""
MAX_NAME = 150
"""Characters of a default name kept; a longer one is cut and ends in a hash of it."""


def default_name(request: pytest.FixtureRequest) -> str:
    """The test's file-safe name: ``test_y``, ``TestX.test_y``, ``test_y[param-id]``."""
    cls = getattr(request, "cls", None)
    name = f"{cls.__name__}.{request.node.name}" if cls is not None else request.node.name
    safe = SAFE.sub("-", name).strip(".")
    if len(safe) > MAX_NAME:
        safe = f"{safe[:MAX_NAME]}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    return safe


@pytest.fixture
def replay_session(request: pytest.FixtureRequest, tmp_path: Path) -> ReplaySession:
    """A session for the test's ``@pytest.mark.replay`` (cassette and case by default)."""
    marker = request.node.get_closest_marker("replay")
    if marker is None:
        pytest.fail("replay_session needs @pytest.mark.replay", pytrace=False)
    test_file = Path(str(request.node.fspath))
    base, module, name = test_file.parent, test_file.stem, default_name(request)
    cassette = base / marker.kwargs.get("cassette", f"cassettes/{module}/{name}.cassette")
    case = marker.kwargs.get("case")
    if case is None:
        case = f"cases/{module}/{name}.yaml"
        if not (base / case).exists():
            pytest.fail(
                f"no case for the test: {base / case} does not exist; "
                "name it with @pytest.mark.replay(case=...)",
                pytrace=False,
            )
    mode = request.config.getoption("--replay-mode") or marker.kwargs.get("mode") or "none"
    try:
        return ReplaySession(
            cassette,
            base / case,
            mode,
            tmp_path,
            marker.kwargs.get("llm_url"),
            bool(request.config.getoption("--replay-record-missing")),
        )
    except pytest.UsageError as exc:  # an unknown mode= on the marker
        pytest.fail(str(exc), pytrace=False)
