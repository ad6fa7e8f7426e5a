"""``review``: nothing runs; the recorded outcome is graded again."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from recorder import ConfigError, FixtureError, read_cassette

from ..cases import Case
from ..worlds import StateDiff, World, load_fixture
from ._base import Mode
from ._drive import Steps, drive
from ._plan import Prices, RubricJudge, ToolFactory, TrialPlan
from ._trial import TrialResult, fresh_world, graded


def _steps(plan: TrialPlan) -> Steps[TrialResult]:
    started = time.perf_counter()
    case, cassette = plan.case, plan.needs_recorded()
    fixture = load_fixture(case.fixture)
    recorded_on = cassette.header.fixture_hash
    if recorded_on is not None and not fixture.matches(recorded_on):
        raise FixtureError(
            f"{cassette.path} was recorded on another world (fixture hash {recorded_on}, "
            f"this case's is {fixture.hash})",
            path=str(case.fixture),
        )
    if cassette.header.case_id not in (None, case.id):
        raise ConfigError(
            f"{cassette.path} records case {cassette.header.case_id!r}, not {case.id!r}"
        )
    world = fresh_world(plan)
    delta = cassette.summary().state_diff or {}
    world.apply(delta)
    return graded(plan, cassette, world, StateDiff.from_delta(delta), (), started)
    yield  # a generator: review has no agent to resolve


MODE = Mode(
    "review",
    "grade recorded trials again; nothing runs",
    {
        "llm": "not called",
        "tools": "not called",
        "http": "not made",
        "user": "not asked",
        "world": "the fixture with the recorded deltas",
    },
    _steps,
    runs_agent=False,
    llm=(),
    recorded="required",
    per_recording=True,
)


def review(
    case: Case,
    cassette_path: Path,
    index: int = 0,
    prices: Prices | None = None,
    world: World | None = None,
    judge: RubricJudge | None = None,
    judge_out: Path | None = None,
    tools: ToolFactory | None = None,
    graders: Sequence[str] = (),
) -> TrialResult:
    """Grade a recorded trial again: nothing runs.

    ``tools`` (the case's tool factory) lets ``matches_reference`` run the
    case's reference solution.

    With a ``judge``, the case's rubric is judged and the judge's calls are
    recorded into ``judge_out`` (required then: the recorded cassette's
    folder is left alone).

    Raises:
        ConfigError: The cassette records another case, or a judge has no ``judge_out``.
        FixtureError: The cassette was recorded on another fixture.
    """
    if judge is not None and judge_out is None:
        raise ConfigError("review with a judge needs judge_out (where to record its calls)")
    plan = TrialPlan(
        case=case,
        mode=MODE.name,
        out=cassette_path,
        judge_out=judge_out,
        index=index,
        recorded=read_cassette(cassette_path),
        tools=tools,
        world=world,
        judge=judge,
        prices=prices,
        graders=graders,
    )
    return drive(MODE.steps(plan))
