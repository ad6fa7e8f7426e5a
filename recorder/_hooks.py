"""The one seam through which a harness that runs agents (replay) hooks into a recording."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._schema import HttpRequest, HttpResponse

if TYPE_CHECKING:
    from ._playback import Playback


def utc_now() -> dt.datetime:
    """The current time, timezone-aware, in UTC: when a recording started, by default."""
    return dt.datetime.now(dt.timezone.utc)


@dataclass(frozen=True, slots=True, kw_only=True)
class Hooks:
    """What a harness running agents adds to a recording: ``record(path, hooks=Hooks(...))``.

    A person recording their own agent never needs these: ``record()``'s own
    keywords say what is recorded and how (``path``, ``case_id``, ``trial``,
    ``pins``, ``world``, ``fixture_source``, ``redaction``, ``secrets``,
    ``agent_version``, ``overwrite``, ``ignore_hosts``, ``strict``; README,
    "Recording a session"). The hooks change what the agent *meets* while it
    is recorded (its HTTP answered from a cassette, hosts refused, faults
    injected, tool results capped, calls after the end refused) or inject the
    clocks; replay's trials pass them (``replay/modes/_trial.py``). recorder
    calls them and never imports the harness. The default, ``Hooks()``, hooks
    nothing: a plain recording. ``strict`` and ``ignore_hosts`` stay keywords
    though replay passes them too: they say how a recording is kept, not what
    the agent meets, and people use them on their own (``strict`` in tests and
    CI, ``ignore_hosts`` for their tracing endpoints).

    ``interpose`` and ``check_result`` are called on the agent's own thread,
    inside the call they concern: an exception they raise fails that call (it
    reaches the agent and is recorded as the call's error), never the
    recording.

    Attributes:
        source: Answers the agent's HTTP from a recorded cassette (a frozen
            LLM): every request that is not ignored is matched there
            (``Playback.respond``, which raises ``FixtureUnsupported`` on a
            miss) instead of going out, and the answer is recorded as usual.
            Its secrets are shared with the recording's, and the hosts its
            recording ignored are ignored too.
        allowed_hosts: Hostnames the agent may reach over HTTP (the sandbox);
            None lets every host through. Checked before each request goes
            out: a request to another host is recorded as a violation event
            and raises ``SandboxViolation``. With ``source`` or
            ``allowed_hosts`` set, a request to an ignored host gets an empty
            success (``200 {}``) instead of going out.
        interpose: Called with every HTTP request the recording records, as
            the agent sent it (not yet redacted), once ``allowed_hosts`` let it
            through and before ``source`` or the network is asked: a response
            it returns is the answer, recorded as usual, and the request goes
            nowhere; None lets the request go on (fault injection).
        check_result: Called with each ``@tool`` call's name and result
            (JSON-ready) when the tool returns, before the result reaches the
            agent: an exception it raises is the call's outcome instead,
            recorded as its error and raised to the caller (a cap on what the
            agent is given).
        refuse_late: When True, a call made after the recording closed, from
            a thread or task started in its context (an agent abandoned at
            its deadline), raises ``RecordingClosed`` instead of going out
            unrecorded or into another active recording's cassette.
        clock: Seconds, monotonic: read when the recording starts and for
            every event's time and duration (``time.perf_counter``).
        wall_clock: The date and time, read once, for ``Header.started_at``.

    Example:
        A fault that makes every third LLM call fail, recorded as if the
        server had answered so::

            calls = itertools.count(1)

            def flaky(request: HttpRequest) -> HttpResponse | None:
                if next(calls) % 3:
                    return None  # the request goes on
                return HttpResponse(status=503, headers=[], chunks=[b"overloaded"])

            with record("flaky.cassette", hooks=Hooks(interpose=flaky)):
                run_agent()
    """

    source: Playback | None = None
    allowed_hosts: Collection[str] | None = None
    interpose: Callable[[HttpRequest], HttpResponse | None] | None = None
    check_result: Callable[[str, Any], None] | None = None
    refuse_late: bool = False
    clock: Callable[[], float] = time.perf_counter
    wall_clock: Callable[[], dt.datetime] = utc_now

    def __post_init__(self) -> None:
        if self.allowed_hosts is not None:  # sorted: a violation's message lists them
            object.__setattr__(self, "allowed_hosts", tuple(sorted(self.allowed_hosts)))
