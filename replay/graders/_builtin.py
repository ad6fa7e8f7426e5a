"""The built-in graders: rule, state, replay, sandbox, matches_reference, judge.

Rule is free and deterministic, state grades the outcome, replay marks what
offline replay could not answer, sandbox fails a trial that reached out.

They register through the same ``@grader`` registry users extend.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from recorder import Event, HttpEvent, ToolEvent, ViolationEvent, llm_call

from ._core import Grade, Trial, Verdict, grader
from ._reference import matches_reference as grade_reference
from ._values import Context

LOOP_REPEATS = 3
"""The same tool with the same arguments this many times is a loop."""


def step_order(events: Sequence[Event]) -> list[Event]:
    """The events as a transcript tells them: by start time.

    ``replay show`` numbers its steps from 1 in this order, and ``replay diff`` names
    steps by those numbers.
    """
    return sorted(events, key=lambda e: e.t)


def agent_calls(events: Sequence[object]) -> list[ToolEvent]:
    """The tool calls that are the agent's decisions: not an MCP session's housekeeping.

    The recording proxy records every MCP request as a call
    (``mcp:<server>:<method>``); its handshake and listings (``initialize``,
    ``tools/list``, ``resources/list``...) are what a client does, not what an
    agent chooses, and a framework that lists tools every turn is no loop.
    Reading a resource or getting a prompt is a decision, and stays.
    """
    return [
        e
        for e in events
        if isinstance(e, ToolEvent)
        and not (e.name.startswith("mcp:") and e.name.endswith((":initialize", "/list")))
    ]


def _call_text(name: str, args: dict[str, object]) -> str:
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


def loops(calls: Sequence[ToolEvent]) -> list[str]:
    """The calls made ``LOOP_REPEATS`` times or more with the same arguments, described."""
    repeats = Counter((c.name, json.dumps(c.args, sort_keys=True, default=str)) for c in calls)
    return [
        f"{_call_text(name, json.loads(args))} called {times} times"
        for (name, args), times in repeats.items()
        if times >= LOOP_REPEATS
    ]


@grader("rule")
def rule(trial: Trial) -> Grade:
    """Loops, forbidden tools (a veto), must-call tools, and the step and cost budgets.

    Steps are LLM calls (the agent's turns); an agent that made none is
    counted in tool calls.
    """
    case = trial.case
    calls = agent_calls(trial.cassette.events)
    problems: list[str] = []
    veto = False
    problems += [f"loop: {loop}" for loop in loops(calls)]
    called = {c.name for c in calls}
    for name in sorted(called & set(case.forbidden_tools)):
        problems.append(f"forbidden tool {name} was called")
        veto = True
    for name in case.must_call:
        if name not in called:
            problems.append(f"{name} was never called (must_call)")
    if case.max_steps is not None:
        turns = sum(
            1
            for e in trial.cassette.events
            if isinstance(e, HttpEvent) and llm_call(e, request=False)
        )
        steps = turns or len(calls)
        if steps > case.max_steps:
            problems.append(f"{steps} steps, over the budget of {case.max_steps}")
    if case.max_cost is not None and trial.cost is not None and trial.cost > case.max_cost:
        problems.append(f"cost ${trial.cost:.4f}, over the budget of ${case.max_cost:.4f}")
    verdict = Verdict.FAIL if problems else Verdict.PASS
    notes: tuple[str, ...] = ()
    if case.max_cost is not None and trial.cost is None:
        unknown = trial.cassette.summary().usage.llm_calls_without_usage
        notes = (
            f"cost budget not checked: {unknown} LLM calls reported no token usage "
            "(a stream without it: ask for stream_options include_usage)"
            if unknown
            else "cost budget not checked: no price for a model the trial called (--price)",
        )
    return Grade("rule", verdict, (*problems, *notes), veto=veto)


@grader("state")
def state(trial: Trial) -> Grade:
    """The case's assertions over the world after the trial and its diff.

    Partial credit is the share of assertions that hold; an unauthorized
    write (``no_side_effects`` failing) is a veto. A case scored by that share
    (``scoring: weighted`` or ``hybrid``) also gets which held and which failed,
    by their source, in the grade's ``meta`` (``{"held": [...], "failed": [...]}``):
    what the score counts (``GradeRecord.partial_credit`` reads it back).
    """
    case = trial.case
    allowed = frozenset(case.allowed_tables) if case.allowed_tables is not None else None
    ctx = Context(trial.world, trial.diff, trial.answer, allowed)
    checks = [a.check(ctx) for a in case.parsed_assertions()]
    if not checks:
        return Grade("state", Verdict.PASS, ("no assertions",), score=1.0)
    failed = [c for c in checks if not c.passed]
    veto = any(c.source == "no_side_effects" for c in failed)
    # A case that is not a replay.Case (a test's own GradedCase) may have no scoring.
    scoring = getattr(getattr(case, "scoring", None), "value", None)
    meta = None
    if scoring in SHARE_SCORINGS:
        meta = {
            "held": [c.source for c in checks if c.passed],
            "failed": [c.source for c in failed],
        }
    return Grade(
        "state",
        Verdict.FAIL if failed else Verdict.PASS,
        tuple(str(c) for c in failed),
        score=(len(checks) - len(failed)) / len(checks),
        veto=veto,
        meta=meta,
    )


SHARE_SCORINGS = ("weighted", "hybrid")
"""The scorings that count the share of assertions held (``all_pass`` needs every one)."""


@grader("replay")
def replay_misses(trial: Trial) -> list[Grade]:
    """``unsupported`` when offline replay met calls the cassette could not answer."""
    if not trial.unsupported:
        return []
    return [Grade("replay", Verdict.UNSUPPORTED, trial.unsupported)]


@grader("sandbox")
def sandbox(trial: Trial) -> list[Grade]:
    """A veto for each attempt to reach what the sandbox does not allow (none: no grade).

    Each was refused as it was made (the agent got an error); the grade says the
    trial is a failure all the same: an agent that reaches for production is one,
    whatever it answered. ``--allow-host`` allows a host (then no attempt is one).
    """
    seen = [e for e in trial.cassette.events if isinstance(e, ViolationEvent)]
    if not seen:
        return []
    targets = Counter(f"{e.action} {e.target}" for e in seen)
    details = tuple(
        f"sandbox violation: {what} (refused{f', {n} times' if n > 1 else ''})"
        for what, n in targets.items()
    )
    return [Grade("sandbox", Verdict.FAIL, details, veto=True)]


@grader("matches_reference")
def matches_reference(trial: Trial) -> list[Grade]:
    """Pass when the trial leaves every row as the case's reference solution does.

    Registered here, with the other built-ins; the work is in ``._reference``.
    """
    return grade_reference(trial)


@grader("judge")
def judge(trial: Trial) -> list[Grade]:
    """The case's rubric, one ``judge:<dimension>`` grade each, when the run has a judge.

    A trial whose agent raised is not judged (its answer is not one).
    """
    if trial.judge is None or not trial.case.rubric:
        return []
    if trial.cassette.summary().status == "error":
        return []
    return trial.judge(trial)
