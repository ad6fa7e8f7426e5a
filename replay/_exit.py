"""Exit codes of the ``replay`` command, one meaning each (``replay.ExitCode``)."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import TYPE_CHECKING

from .graders import AGENT_CAUSES, Cause, Verdict

if TYPE_CHECKING:
    from .modes import TrialResult
    from .results import RunReport

_AGENTS: frozenset[Cause | None] = frozenset(Cause(cause) for cause in AGENT_CAUSES)
"""Causes of an ``error`` trial that are the agent's doing: it raised, or ran past a limit."""


class ExitCode(IntEnum):
    """What a ``replay`` command's exit status means; every command exits with one of these.

    ```
    0 OK         the command did what it was asked, and its check (if any) held
    1 FAILED     the command ran, and its check did not hold
    2 BAD_INPUT  it could not run: a bad option, file, case or store (`error: ...`)
    3 INCOMPLETE nothing failed, but not everything could be judged (trials, or a gate)
    130 INTERRUPTED  stopped by Ctrl-C (`replay run` says how to resume)
    ```

    In CI, tell 1 (the agent got worse) from 2 (the job is misconfigured).
    A traceback is a bug in agent-replay, never a verdict (Python then
    exits with 1 too: the traceback on stderr tells it from ``FAILED``).

    Trials map to a status by one rule (``of_verdicts``), the same for
    ``replay run`` (its run), ``replay grade`` (its trial) and
    ``replay check-cases`` (the reference solutions' trials).
    """

    OK = 0
    """Done; the gate holds, the trial passes, every reference solution passes."""
    FAILED = 1
    """The command ran and its check did not hold: ``replay gate`` does not hold;
    a trial of ``replay run`` or ``replay grade`` failed (verdict ``fail``, or an
    ``error`` the agent is to blame for: cause ``agent`` or ``limit``); or
    ``replay check-cases`` found a case whose reference solution fails its own
    graders; ``replay regrade`` moved more verdicts than ``--max-drift`` allows."""
    BAD_INPUT = 2
    """Nothing was judged: a bad option or option value, a missing, corrupt or
    unsupported file, a case file that does not validate, an unknown run, or
    runs a gate may not compare. The one line on stderr says which."""
    INCOMPLETE = 3
    """The command ran and nothing failed, but not everything could be judged: a trial
    is an ``error`` the agent is not to blame for (the harness, an MCP server or the
    simulated user failed, or a grader erred), ``unsupported`` (the recording lacks a
    call) or ``unknown`` (a judge could not decide). Fix the environment or re-record,
    then run again. (``replay run --measure`` exits 0 instead, as for ``FAILED``.)
    ``replay gate`` exits 3 when its runs cannot settle ``--max-drop`` (too few cases
    or trials for the drop asked): it says how many would; ``replay regrade`` when a
    trial could not be graded again (its cassette gone, damaged or cut short, its
    case gone); ``replay judge-check`` when no probe could measure anything."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C (as shells report SIGINT): ``replay run`` keeps the trials
    finished and says how to resume."""

    @property
    def meaning(self) -> str:
        """What the status says, in one line (``replay run --json`` gives it)."""
        return _MEANINGS[self]

    @classmethod
    def of_verdicts(
        cls,
        trials: Iterable[tuple[Verdict | str, Cause | str | None]],
        *,
        grader_errors_fail: bool = False,
    ) -> ExitCode:
        """The status of judged trials, each a ``(verdict, cause)`` pair.

        ``FAILED`` when some trial failed: its verdict is ``fail``, or ``error``
        with cause ``agent`` or ``limit`` (the agent raised, or ran past a limit);
        else ``INCOMPLETE`` when some trial is an ``error`` of another cause
        (``harness``, ``server``, ``user``, or none: a grader erred),
        ``unsupported`` or ``unknown``; else ``OK`` (every trial passes, or
        there are none). Verdicts and causes are ``replay.graders`` enums, or
        their names. ``grader_errors_fail``: an ``error`` no cause
        explains (a grader raised) is ``FAILED`` too, where the graders are what
        is checked (``replay check-cases``).
        """
        incomplete = False
        blamed = _AGENTS | {None} if grader_errors_fail else _AGENTS
        for name, named in trials:
            verdict, cause = Verdict(name), None if named is None else Cause(named)
            if verdict is Verdict.FAIL or (verdict is Verdict.ERROR and cause in blamed):
                return cls.FAILED
            incomplete = incomplete or verdict is not Verdict.PASS
        return cls.INCOMPLETE if incomplete else cls.OK

    @classmethod
    def of_report(cls, report: RunReport) -> ExitCode:
        """The status of a run's trials (``replay run``): ``of_verdicts`` over ``report.trials``."""
        return cls.of_verdicts((t.verdict, t.cause) for t in report.trials)

    @classmethod
    def of_results(
        cls, results: Iterable[TrialResult], *, grader_errors_fail: bool = False
    ) -> ExitCode:
        """The status of trials just run or graded (``replay grade``, ``replay check-cases``)."""
        return cls.of_verdicts(
            ((r.outcome.verdict, r.outcome.cause) for r in results),
            grader_errors_fail=grader_errors_fail,
        )


_MEANINGS = {
    ExitCode.OK: "every trial passes (every check held)",
    ExitCode.FAILED: "some trial failed: verdict fail, or an error of cause agent or limit",
    ExitCode.BAD_INPUT: "nothing was judged: bad input",
    ExitCode.INCOMPLETE: "nothing failed, but some trials could not be judged: an error of "
    "cause harness, server or user, unsupported or unknown",
    ExitCode.INTERRUPTED: "stopped by Ctrl-C",
}
