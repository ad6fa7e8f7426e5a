"""The user channel: a simulated user the agent talks to, live or frozen, recorded turn by turn.

A multi-turn case has a ``user:`` section: a hidden instruction for an LLM
that plays the user. The user speaks first (its opening message is the
agent's ``instruction``); the agent answers through ``env.user.say(text)``,
which returns the user's next message, or None once the user has ended the
conversation (by answering with ``###STOP###``, as tau-bench's users do).

Each turn is a ``UserEvent`` in the trial's cassette. A *live* user is an
OpenAI-compatible endpoint called through httpx outside the trial's
recording (so its traffic is neither served by a frozen LLM nor counted as
the agent's); a *frozen* user answers turn by turn from a recorded cassette,
so a change to the agent alone replays against the same user. Past the
recorded turns a frozen user cannot answer: ``FixtureUnsupported``.

When the simulated user fails (its endpoint errs, or it answers nothing),
the turn records why and ``UserSimulatorError`` is raised in the agent; the
trial is an ``error`` graded ``user``, reported apart from the agent's
failures.
"""

from __future__ import annotations

import contextvars
import http.server
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from recorder import (
    USER_MATCHERS,
    Cassette,
    ErrorInfo,
    FixtureUnsupported,
    RecordedAnswers,
    Recording,
    ReplayError,
    UserEvent,
    UserTurn,
    unrecorded,
)

from ._loopback import LoopbackServer, serve_in_thread, stop_serving

if TYPE_CHECKING:
    import httpx

STOP = "###STOP###"
USER_PROMPT = (
    "You play a customer talking to a support agent. Stay in character; follow the "
    "instruction below, revealing only what the agent needs when it asks. Write only your "
    f"next message. When your request is done, or cannot be done, answer {STOP}.\n\n"
    "Instruction: {instruction}"
)
"""The simulated user's system prompt (the case's hidden instruction goes in it)."""


class UserSpec(BaseModel):
    """A case's simulated user."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    instruction: str = Field(min_length=1)
    """What the user wants and knows, hidden from the agent."""
    max_turns: int = Field(default=10, gt=0)
    """Turns after which the user ends the conversation."""


class UserSimulatorError(ReplayError):
    """The simulated user could not answer (not the agent's fault)."""

    def __init__(self, message: str) -> None:
        super().__init__(f"the simulated user failed: {message}")


@dataclass
class LiveUser:
    """A simulated user played by an OpenAI-compatible endpoint.

    Args:
        base_url: The endpoint's base URL (``.../v1``).
        model: The model that plays the user.
        timeout: Seconds each answer may take in all (connecting, sending, every byte);
            past it the user has failed (``UserSimulatorError``), a late answer unread.
    """

    base_url: str
    model: str = "user-sim"
    timeout: float = 60.0
    api_key: str = field(default="sk-user", repr=False)

    def answer(
        self, instruction: str, turns: Sequence[tuple[str | None, str]], said: str | None
    ) -> str:
        """The user's next message, given the conversation so far (roles seen from the user)."""
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": USER_PROMPT.format(instruction=instruction)}
        ]
        for agent_said, user_said in turns:
            if agent_said is not None:
                messages.append({"role": "user", "content": agent_said})
            messages.append({"role": "assistant", "content": user_said})
        messages.append(
            {"role": "user", "content": said if said is not None else "Hello, how can I help?"}
        )
        body = {"model": self.model, "messages": messages, "temperature": 0}
        # Unrecorded: the agent's cassette (and a frozen LLM serving it) never sees the
        # user's traffic; the turn is recorded as a UserEvent.
        with unrecorded():
            response = self._post(body)
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise UserSimulatorError("its endpoint's answer is not a chat completion") from None
        if not isinstance(content, str) or not content.strip():
            raise UserSimulatorError("it answered nothing")
        return content.strip()

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        import httpx  # (here, not above: a case without a simulated user never loads it)

        from ..graders import DeadlinePassed, post_within

        headers = {"Authorization": f"Bearer {self.api_key}"}
        try:
            response = post_within(
                self.base_url, "chat/completions", json=body, headers=headers, deadline=self.timeout
            )
        except DeadlinePassed:
            raise UserSimulatorError(f"it gave no answer within {self.timeout:g}s") from None
        except httpx.HTTPError as exc:
            raise UserSimulatorError(f"{type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise UserSimulatorError(f"its endpoint answered HTTP {response.status_code}")
        return response


USER_MATCH_ON = ("turn",)
"""What a frozen user matches on unless told (names in ``recorder.USER_MATCHERS``)."""


class FrozenUser:
    """A user answering turn by turn from a recorded cassette.

    A turn is matched on ``match_on``, names from ``recorder.USER_MATCHERS``:
    by default the turn's number alone (what the agent said before it may
    differ; ``UserChannel`` warns then), ``("turn", "said")`` makes a changed
    agent message a miss. The policy is every replay source's: each recorded
    turn answers once; a turn past the recording raises ``FixtureUnsupported``
    and is kept in ``misses``.

    Args:
        cassette: The recording.
        match_on: Names of the matchers that make a turn's key.
    """

    def __init__(self, cassette: Cassette, *, match_on: Sequence[str] = USER_MATCH_ON) -> None:
        # Every answered turn, a bare ###STOP### (reply "") included.
        turns = [e for e in cassette.events if isinstance(e, UserEvent) and e.error is None]
        self.path = cassette.path
        self.answers: RecordedAnswers[UserTurn, UserEvent] = RecordedAnswers(
            ((UserTurn(i, e.said), e) for i, e in enumerate(turns)),
            match_on=match_on,
            matchers=USER_MATCHERS,
            describe=lambda t: f"user turn {t.index + 1} (after {t.said!r})",
            nearest=self._nearest,
        )
        """The recorded turns, by key; every replay source answers through one of these."""
        self._count = len(turns)

    @property
    def misses(self) -> list[FixtureUnsupported]:
        """Every turn this user could not answer, in order."""
        return self.answers.misses

    def turn(self, index: int, said: str | None) -> UserEvent:
        """The recorded turn ``index``, or ``FixtureUnsupported`` past the recording."""
        return self.answers.answer(UserTurn(index, said))

    def _nearest(self, turn: UserTurn) -> str | None:
        if turn.index >= self._count:
            return f"the recording has {self._count} user turns"
        return self.answers.nearest_by_parts(turn)


class UserChannel:
    """What the agent holds as ``env.user``: say something, get the user's answer.

    Args:
        spec: The case's simulated user.
        live: The endpoint playing it, when live.
        frozen: The recorded user, when frozen.
    """

    def __init__(
        self, spec: UserSpec, *, live: LiveUser | None = None, frozen: FrozenUser | None = None
    ) -> None:
        if (live is None) == (frozen is None):
            raise ValueError("a user channel is either live or frozen")
        self.spec, self.live, self.frozen = spec, live, frozen
        self.recording: Recording | None = None
        self.turns: list[tuple[str | None, str]] = []
        self.ended = False
        self.failure: str | None = None
        """Why the simulated user failed, if it did (the trial is then the user's fault)."""
        self.divergences: list[str] = []
        """Turns where the agent said something else than in the recording (frozen user)."""
        self._server: _UserServer | None = None

    @property
    def url(self) -> str:
        """The channel for an agent in another process (``REPLAY_USER_URL``), started on use.

        ``POST`` ``{"text": ...}`` answers ``{"reply": ...}`` (``null`` once the user
        has ended the conversation) or ``{"error": {"type": ..., "message": ...}}``:
        ``say`` in the trial, recorded as an in-process agent's turns are.
        """
        if self._server is None:
            server = _UserServer(("127.0.0.1", 0), _Say)
            server.channel, server.context = self, contextvars.copy_context()
            serve_in_thread(server, "replay-user")
            self._server = server
            if self.recording is not None:
                self.recording.channel(f"127.0.0.1:{server.server_address[1]}")
        return f"http://127.0.0.1:{self._server.server_address[1]}/say"

    def close(self) -> None:
        """Stop the channel's endpoint, if it started."""
        server, self._server = self._server, None
        if server is not None:
            stop_serving(server)

    def opening(self) -> str:
        """The user's first message: the agent's instruction."""
        reply = self._turn(None)
        assert reply is not None  # the opening never ends the conversation
        return reply

    def say(self, text: str) -> str | None:
        """Tell the user ``text``; return its answer, or None once it has ended the talk.

        Raises:
            UserSimulatorError: The simulated user could not answer.
            FixtureUnsupported: A frozen user has no recorded answer for this turn.
        """
        if self.ended:
            return None
        if len(self.turns) >= self.spec.max_turns:
            self.ended = True
            return None
        return self._turn(text)

    def _turn(self, said: str | None) -> str | None:
        index = len(self.turns)
        started = time.perf_counter()
        t = self.recording.now() if self.recording is not None else 0.0
        if self.frozen is not None:
            if said is not None and self.recording is not None:
                said = self.recording.scrub(said)  # as it was recorded: secrets replaced
            recorded = self.frozen.turn(index, said)
            if recorded.said != said:
                note = (
                    f"frozen user, turn {index + 1}: the agent said {said!r}, not {recorded.said!r}"
                )
                self.divergences.append(note)
                if self.recording is not None:
                    self.recording.warn(note)
            reply, stop = recorded.reply or "", recorded.stop
            self._record(t, started, said, reply, stop, "frozen", recorded.model, None)
        else:
            assert self.live is not None
            try:
                text = self.live.answer(self.spec.instruction, self.turns, said)
            except UserSimulatorError as exc:
                self.failure = str(exc)
                error = ErrorInfo(type="UserSimulatorError", message=str(exc))
                self._record(t, started, said, None, False, "live", self.live.model, error)
                raise
            stop = STOP in text
            reply = text.replace(STOP, "").strip()
            self._record(t, started, said, reply, stop, "live", self.live.model, None)
        self.turns.append((said, reply))
        if stop:
            self.ended = True
            return None
        return reply

    def _record(
        self,
        t: float,
        started: float,
        said: str | None,
        reply: str | None,
        stop: bool,
        source: str,
        model: str | None,
        error: ErrorInfo | None,
    ) -> None:
        if self.recording is None:
            return
        self.recording.user_turn(
            UserEvent(
                t=t,
                duration=time.perf_counter() - started,
                said=said,
                reply=reply,
                stop=stop,
                source=source,
                model=model,
                error=error,
            )
        )


class _UserServer(LoopbackServer):
    channel: UserChannel
    context: contextvars.Context


class _Say(http.server.BaseHTTPRequestHandler):
    """One turn of an agent in another process: ``say`` in the trial's context."""

    server: _UserServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        try:
            size = int(self.headers.get("Content-Length") or 0)
            text = json.loads(self.rfile.read(size) or b"{}").get("text")
            if not isinstance(text, str):
                raise ValueError('send {"text": "..."}')
            answer: dict[str, Any] = {
                "reply": self.server.context.copy().run(self.server.channel.say, text)
            }
        except Exception as exc:  # told to the agent, as say() would raise it in-process
            answer = {"error": {"type": type(exc).__name__, "message": str(exc)}}
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""
