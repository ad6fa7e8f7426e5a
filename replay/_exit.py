"""Exit codes of the ``replay`` command, one meaning each (``replay.ExitCode``)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a ``replay`` command's exit status means; every command exits with one of these.

    ```
    0 OK         the command did what it was asked, and its check (if any) held
    1 FAILED     the command ran, and its check did not hold
    2 BAD_INPUT  it could not run: a bad option, file, case or store (`error: ...`)
    3 INCOMPLETE nothing failed, but some trials could not be judged (infrastructure)
    130 INTERRUPTED  stopped by Ctrl-C (`replay run` says how to resume)
    ```

    In CI, tell 1 (the agent got worse) from 2 (the job is misconfigured).
    A traceback is a bug in agent-replay, never a verdict (Python then
    exits with 1 too: the traceback on stderr tells it from ``FAILED``).
    """

    OK = 0
    """Done; the gate holds, the trial passes, every reference solution passes."""
    FAILED = 1
    """The command ran and its check did not hold: ``replay gate`` does not hold,
    ``replay grade``'s trial does not pass, or ``replay check-cases`` found a case
    whose reference solution fails its own graders."""
    BAD_INPUT = 2
    """Nothing was judged: a bad option or option value, a missing, corrupt or
    unsupported file, a case file that does not validate, an unknown run, or
    runs a gate may not compare. The one line on stderr says which."""
    INCOMPLETE = 3
    """The command ran and nothing failed, but not everything could be judged: a trial
    is an ``error`` the agent is not to blame for (the harness, an MCP server or the
    simulated user failed), ``unsupported`` (the recording lacks a call) or ``unknown``
    (a judge could not decide). Fix the environment or re-record, then run again."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C (as shells report SIGINT): ``replay run`` keeps the trials
    finished and says how to resume."""
