"""A trial's limits and the guards that hold them: a deadline, LLM tokens, tool-result size.

``Limits`` says what one trial may use; a ``Guards`` enforces them in the
trial and remembers which fired (its *guard flags*: ``timeout``,
``memory``, ``llm_tokens``, ``tool_result_chars``). A trial with a guard
flag is ``error`` with cause ``limit``; its neighbours are unaffected.

- **timeout** (``--trial-timeout``): the agent's run, in every mode and
  wherever it runs. An agent in a process of its own (``AgentCommand``,
  ``ChildAgent``) is stopped with its processes. An in-process async agent
  is cancelled. An in-process sync agent runs in a thread of its own (kept for
  later trials once it returns: ``AGENT_THREADS``), which Python cannot kill:
  at the deadline the trial goes on without it, and its
  recording refuses every later call from it (``recorder.RecordingClosed``:
  its tools, its LLM, any host), so it cannot change the world or the
  cassette further; its world is not reused by another trial. It may go on
  computing until it returns.
- **memory** (``--trial-memory``): held by ``AgentCommand`` (an agent in a
  process of its own); an in-process agent shares the harness's memory.
- **llm_tokens** (``--max-llm-tokens``): input plus output tokens, as the
  LLM reported them, over the trial's LLM calls. Once the total passes the
  cap the trial is flagged, and every later LLM request (in-process or
  through the LLM proxy) is answered 403 with the reason in an API error body
  (and ``x-should-retry: false``): the agent's SDK raises as for any failed
  call. A reply that reports no usage (a stream without usage) cannot be
  counted: it adds nothing, and the cassette says how many were not counted.
- **tool_result_chars** (``--max-tool-result-chars``): a tool result longer
  than the cap as JSON text is not given to the agent: the call raises
  ``LimitExceeded`` and is recorded with that error (its world delta, if it
  wrote, is kept). It applies wherever the agent is given tool results:
  sandbox and record (the tool ran) and offline (the recorded result would
  be given), so a run's agent sees the same results whatever the mode.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import os
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from recorder import (
    HttpEvent,
    HttpRequest,
    HttpResponse,
    Recording,
    ReplayError,
    llm_call,
)

from ..surroundings import is_llm_request
from ._guard import Guard

_PROTOCOL = "mcp:"
"""Recorded calls named ``mcp:SERVER:METHOD`` are a third-party server's protocol
(``tools/list``...), not tool results: the tool-result cap leaves them alone."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one trial may use; None: no limit.

    Attributes:
        timeout: Seconds the agent may run (``--trial-timeout``).
        llm_tokens: Input plus output tokens its LLM calls may use together
            (``--max-llm-tokens``).
        tool_result_chars: Characters of one tool result, as JSON text, that the
            agent may be given (``--max-tool-result-chars``).
    """

    timeout: float | None = None
    llm_tokens: int | None = None
    tool_result_chars: int | None = None


class LimitExceeded(ReplayError):
    """A limit of the trial fired.

    Attributes:
        guard: Which (a ``Guard``: ``timeout``, ``memory``, ``llm_tokens``,
            ``tool_result_chars``).
    """

    def __init__(self, message: str, *, guard: str) -> None:
        super().__init__(message)
        self.guard = guard


def _is_async(agent: Any) -> bool:
    return inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(
        getattr(agent, "__call__", None)  # noqa: B004 - an async callable object
    )


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Take an abandoned task's outcome, so that nobody is told it was never retrieved."""
    if not task.cancelled():
        task.exception()


class Guards:
    """One trial's guards: they refuse what its limits forbid and keep the flags that fired.

    Args:
        limits: The trial's limits (None: none).
    """

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.fired: dict[str, str] = {}
        """Each guard that fired, in order, with what it said (the trial's ``error`` detail)."""
        self.recording: Recording | None = None
        """The trial's recording (its LLM calls are counted from it), once it is open."""
        self._lock = threading.Lock()
        self._expired = False
        self._counted = 0
        self._tokens = 0
        self._uncounted = 0

    def fire(self, guard: str, detail: str) -> None:
        """Flag ``guard`` on the trial (the first detail of each guard is kept)."""
        with self._lock:
            self.fired.setdefault(guard, detail)

    # -- the deadline ---------------------------------------------------------

    def call(self, agent: Callable[..., Any], instruction: str, env: Any) -> Any:
        """``agent(instruction, env)`` under the deadline: its answer, or an awaitable of it.

        An async agent's coroutine is given back wrapped, to be awaited where the
        driver awaits it; a sync agent runs in a thread of its own, waited for here.
        An agent that keeps its own deadline (``own_deadline``: a program, a child
        process) is called as it is.

        Raises:
            LimitExceeded: A sync agent ran past the deadline (it is left running).
        """
        seconds = self.limits.timeout
        if seconds is None or getattr(agent, "own_deadline", False):
            return agent(instruction, env)
        if _is_async(agent):
            return self._within(agent(instruction, env), seconds)
        started = time.monotonic()
        value = self._in_thread(agent, instruction, env, seconds)
        if inspect.isawaitable(value):  # a sync callable that returns a coroutine
            return self._within(value, max(0.0, seconds - (time.monotonic() - started)))
        return value

    def _in_thread(
        self, agent: Callable[..., Any], instruction: str, env: Any, seconds: float
    ) -> Any:
        context = contextvars.copy_context()  # the trial's recording goes with it
        outcome: Future[Any] = Future()
        AGENT_THREADS.run(functools.partial(context.run, agent, instruction, env), outcome)
        if not _done_within(outcome, seconds):
            raise self._expire()
        return outcome.result()

    async def _within(self, awaitable: Awaitable[Any], seconds: float) -> Any:
        task = asyncio.ensure_future(awaitable)
        try:
            done, _ = await asyncio.wait({task}, timeout=seconds)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if task in done:
            return task.result()
        task.cancel()  # not awaited: an agent that ignores its cancellation does not hold the run
        task.add_done_callback(_retrieved)
        raise self._expire()

    def _expire(self) -> LimitExceeded:
        detail = f"the agent ran past its deadline of {self.limits.timeout:g} s (--trial-timeout)"
        with self._lock:
            self._expired = True
        self.fire(Guard.TIMEOUT, detail)
        return LimitExceeded(detail, guard=Guard.TIMEOUT)

    # -- LLM tokens -----------------------------------------------------------

    def interpose(
        self, then: Callable[[HttpRequest], HttpResponse | None] | None
    ) -> Callable[[HttpRequest], HttpResponse | None] | None:
        """``Hooks.interpose`` of the recording: the guards' refusals, then ``then``'s (faults)."""
        if self.limits.llm_tokens is None and self.limits.timeout is None:
            return then

        def interposed(request: HttpRequest) -> HttpResponse | None:
            refused = self._refusal(request)
            if refused is not None:
                return refused
            return then(request) if then is not None else None

        return interposed

    def _refusal(self, request: HttpRequest) -> HttpResponse | None:
        if self._expired:  # (between the deadline and the recording's close)
            return _refused(Guard.TIMEOUT, "the trial's deadline has passed (--trial-timeout)")
        cap = self.limits.llm_tokens
        if cap is None or not is_llm_request(request):
            return None
        used = self._count()
        if used <= cap:
            return None
        detail = self._over(used, cap)
        return _refused(Guard.LLM_TOKENS, f"{detail}: request refused")

    def _count(self) -> int:
        """The tokens the trial's LLM calls reported so far (counting the new ones only)."""
        events = self.recording.events if self.recording is not None else ()
        with self._lock:
            for event in events[self._counted :]:
                if isinstance(event, HttpEvent):
                    call = llm_call(event, request=False)
                    if call is not None and call.usage_known:
                        self._tokens += call.input_tokens + call.output_tokens
                    elif call is not None:
                        self._uncounted += 1
            self._counted = max(self._counted, len(events))
            return self._tokens

    def _over(self, used: int, cap: int) -> str:
        detail = f"the trial's LLM calls used {used} tokens, more than its {cap} (--max-llm-tokens)"
        self.fire(Guard.LLM_TOKENS, detail)
        return detail

    def settle(self) -> None:
        """At the end of the agent's run, recording still open: count its last LLM calls.

        A trial whose calls used more than the cap is flagged even if it asked for
        nothing more; calls that reported no usage are named in a warning (they
        could not be counted).
        """
        cap = self.limits.llm_tokens
        if cap is None:
            return
        used = self._count()
        if used > cap:
            self._over(used, cap)
        if self._uncounted and self.recording is not None:
            self.recording.warn(
                f"{self._uncounted} LLM call(s) reported no token usage: not counted against "
                f"the trial's cap of {cap} tokens (--max-llm-tokens)"
            )

    # -- tool results ---------------------------------------------------------

    def check_result(self) -> Callable[[str, Any], None] | None:
        """``Hooks.check_result`` of the recording: refuses a result over the cap (None: no cap)."""
        cap = self.limits.tool_result_chars
        if cap is None:
            return None

        def check(name: str, result: Any) -> None:
            if name.startswith(_PROTOCOL):
                return
            size = len(json.dumps(result, ensure_ascii=False, default=str))
            if size > cap:
                detail = (
                    f"tool {name} returned {size} characters (as JSON), more than the trial's "
                    f"cap of {cap} (--max-tool-result-chars): not given to the agent"
                )
                self.fire(Guard.TOOL_RESULT_CHARS, detail)
                raise LimitExceeded(detail, guard=Guard.TOOL_RESULT_CHARS)

        return check


_Inbox = queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]]


class _Threads:
    """The threads sync agents run in, kept between trials (idle ones wait for the next).

    A thread a trial left behind (its agent ran past the deadline) is given no other
    trial until its agent returns. Kept rather than started per trial: a thread costs
    ~0.2 ms to start here, and an agent that keeps a connection per thread (as
    ``http.client`` agents and the bare pool the bench compares with do) keeps it open
    from one trial to the next instead of connecting again each time.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Inbox] = []
        os.register_at_fork(after_in_child=self._forget)

    def run(self, call: Callable[[], Any], outcome: Future[Any]) -> None:
        """Run ``call()`` in an idle thread, or a new one.

        What it returns or raises (even ``SystemExit``) goes to ``outcome`` once the
        thread is idle again: the trial after it, one at a time, finds it so.
        """
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            thread = threading.Thread(
                target=self._serve, args=(inbox,), name="replay-agent", daemon=True
            )
            thread.start()
        inbox.put((call, outcome))

    def _serve(self, inbox: _Inbox) -> None:
        while True:
            call, outcome = inbox.get()
            value = error = None
            try:
                value = call()
            except BaseException as exc:  # handed to the trial as it is
                error = exc
            with self._lock:
                self._idle.append(inbox)
            if error is not None:
                outcome.set_exception(error)
            else:
                outcome.set_result(value)
            del call, outcome, value, error  # (an idle thread holds nothing of its trial's)

    def _forget(self) -> None:
        """In a forked child: the parent's threads are not there to serve it."""
        self._lock = threading.Lock()
        self._idle = []


AGENT_THREADS = _Threads()
"""This process's agent threads."""


def _done_within(outcome: Future[Any], seconds: float) -> bool:
    try:
        outcome.exception(timeout=seconds)
    except futures.TimeoutError:  # (not the builtin one before Python 3.11)
        return False
    return True


def _refused(guard: Guard, message: str) -> HttpResponse:
    """An LLM API error answering a request a guard refused (read by any SDK as a failure)."""
    text = f"agent-replay: {message}"
    error = {"type": "limit_exceeded", "code": guard.value, "message": text}
    body = {"type": "error", "error": error}
    headers = [("content-type", "application/json"), ("x-should-retry", "false")]
    return HttpResponse(status=403, headers=headers, chunks=[json.dumps(body).encode()])
