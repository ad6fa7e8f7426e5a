"""The LLM judge: one call per rubric dimension, JSON verdicts, ``unknown`` when unsure.

The judge is any OpenAI-compatible chat endpoint, called through httpx inside
a recording, so its traffic lands in a cassette beside the trial's (``replay
show`` reads it like any other). Temperature 0. Anything but a well-formed
``{"verdict": "pass"|"fail"|"unknown", "reason": "..."}`` answer (prose, a
refusal, an HTTP error, a timeout) is ``unknown``, never pass.

A judge gates nothing until it is calibrated: its grades are *advisory*
(shown, stored, left out of the trial's verdict) unless its model and the
dimension's rubric hash are in ``calibrated``, which the runner computes from
human labels (see ``Store.calibrated_judges``) and ``replay judge-check``
has not found it biased. ``Judge.compare`` asks it which of two trials is
better (``_pairwise``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recorder import ErrorEvent, Pins, ToolEvent, record

from ._core import Grade, Trial, Verdict
from ._pairwise import (
    FENCE,
    PAIRWISE_PROMPT,
    Choice,
    chat_content,
    pairwise_text,
    parse_choice,
)

JUDGE_PROMPT = (
    "You grade one dimension of an AI agent's work on a task. Read the task, what the "
    "agent did, how the world changed and its final answer, then judge only the "
    "dimension given. Reply with one JSON object and nothing else: "
    '{"verdict": "pass" | "fail" | "unknown", "reason": "<one sentence>"}. '
    'Answer "unknown" when the transcript does not let you tell.'
)
"""The judge's system prompt; part of every rubric hash, so changing it recalibrates."""

_MAX_RESULT = 600
"""Characters of a tool result shown to the judge."""


@dataclass(frozen=True, slots=True)
class Dimension:
    """One rubric dimension: a name and the criteria the judge applies."""

    name: str
    criteria: str

    @property
    def hash(self) -> str:
        """sha256 (16 hex digits) of the judge prompt, name and criteria."""
        text = json.dumps([JUDGE_PROMPT, self.name, self.criteria])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Judge:
    """An OpenAI-compatible endpoint that grades rubric dimensions.

    Args:
        base_url: The endpoint's base URL (``.../v1``).
        model: The judge model.
        timeout: Seconds a judge call may take in all (connecting, sending, every byte of
            the answer); past it the grade is ``unknown``, and a late answer is never read.
        max_tokens: Cap on the judge's answer.
        api_key: Key sent as a bearer token (redacted in the cassette).
        calibrated: ``(model, rubric hash)`` pairs whose grades count toward the
            verdict (the others are advisory); None: every grade counts.
    """

    base_url: str
    model: str
    timeout: float = 60.0
    max_tokens: int = 300
    api_key: str = field(default="sk-judge", repr=False)
    calibrated: Collection[tuple[str, str]] | None = frozenset()

    @property
    def settings(self) -> dict[str, Any]:
        """The sampling settings sent with every judge call (stored with each grade)."""
        return {"temperature": 0, "max_tokens": self.max_tokens, "timeout": self.timeout}

    def grade(self, trial: Trial, dimensions: list[Dimension], cassette: Path) -> list[Grade]:
        """Judge every dimension of a trial; the calls are recorded into ``cassette``."""
        if not dimensions:
            return []
        evidence = trial_text(trial)
        grades = []
        with record(
            cassette,
            case_id=trial.case.id,
            trial=trial.cassette.header.trial,
            pins=Pins(model=self.model, user={"role": "judge"}),
            overwrite=True,
            strict=True,
        ):
            for dimension in dimensions:
                verdict, reason = self._ask(dimension, evidence)
                gates = self.calibrated is None or (self.model, dimension.hash) in self.calibrated
                meta = {
                    "model": self.model,
                    "settings": self.settings,
                    "rubric_hash": dimension.hash,
                    "dimension": dimension.name,
                    "cassette": cassette.name,  # beside the trial's cassette
                }
                grades.append(
                    Grade(
                        f"judge:{dimension.name}",
                        verdict,
                        (reason,),
                        advisory=not gates,
                        meta=meta,
                    )
                )
        return grades

    def compare(
        self, first: Trial, second: Trial, dimension: Dimension, cassette: Path
    ) -> tuple[Choice, str]:
        """Which of two trials of one case (``first`` shown as A) meets ``dimension`` better.

        One call with the pairwise prompt (``PAIRWISE_PROMPT``), recorded into
        ``cassette``; None (unknown) for anything but a well-formed choice.
        """
        with record(
            cassette,
            case_id=first.case.id,
            trial=first.cassette.header.trial,
            pins=Pins(model=self.model, user={"role": "judge", "kind": "pairwise"}),
            overwrite=True,
            strict=True,
        ):
            raw, failure = self._post(
                PAIRWISE_PROMPT,
                f"Dimension: {dimension.name}\nCriteria: {dimension.criteria}\n\n"
                + pairwise_text(trial_text(first), trial_text(second)),
            )
        return parse_choice(raw) if raw is not None else (None, failure)

    def _ask(self, dimension: Dimension, evidence: str) -> tuple[Verdict, str]:
        raw, failure = self._post(
            JUDGE_PROMPT,
            f"Dimension: {dimension.name}\nCriteria: {dimension.criteria}\n\n{evidence}",
        )
        return parse_verdict(raw) if raw is not None else (Verdict.UNKNOWN, failure)

    def _post(self, system: str, user: str) -> tuple[bytes | None, str]:
        """The judge's raw answer to one call, or None and why there is none."""
        body = {
            "model": self.model,
            "temperature": 0,
            "max_tokens": self.max_tokens,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
        }
        headers = {"Authorization": f"Bearer {self.api_key}"}
        import httpx  # (here, not above: a process that never asks a judge never loads it)

        from ._deadline import post_within

        try:
            response = post_within(
                self.base_url, "chat/completions", json=body, headers=headers, deadline=self.timeout
            )
        except httpx.TimeoutException:  # the deadline, or a phase of the call timing out
            return None, f"judge timed out after {self.timeout:g}s"
        except httpx.HTTPError as exc:
            return None, f"judge unreachable: {type(exc).__name__}: {exc}"
        if response.status_code != 200:
            return None, f"judge answered HTTP {response.status_code}"
        return response.content, ""


def parse_verdict(raw: bytes) -> tuple[Verdict, str]:
    """Read a chat completion's verdict; anything but the JSON contract is ``unknown``."""
    content, failure = chat_content(raw)
    if content is None:
        return Verdict.UNKNOWN, failure
    fenced = FENCE.match(content)
    try:
        data = json.loads(fenced.group(1) if fenced else content)
        verdict = Verdict(str(data["verdict"]).lower())
        reason = str(data.get("reason", ""))
    except (ValueError, KeyError, TypeError):
        return Verdict.UNKNOWN, f"judge did not answer the JSON verdict: {content[:200]!r}"
    if verdict not in (Verdict.PASS, Verdict.FAIL, Verdict.UNKNOWN):
        return Verdict.UNKNOWN, f"judge answered verdict {verdict.value!r}"
    return verdict, reason or "(no reason given)"


def trial_text(trial: Trial) -> str:
    """What the judge reads: the task, the tool calls, the world's changes, the answer."""
    lines = [f"Task given to the agent: {trial.case.instruction}", ""]
    lines.append("What the agent did:")
    calls = [e for e in trial.cassette.events if isinstance(e, (ToolEvent, ErrorEvent))]
    for n, event in enumerate(calls, 1):
        if isinstance(event, ErrorEvent):
            lines.append(f"{n}. the agent raised {event.error.type}: {event.error.message}")
            continue
        args = ", ".join(f"{k}={v!r}" for k, v in event.args.items())
        if event.error is not None:
            outcome = f"error {event.error.type}: {event.error.message}"
        else:
            outcome = json.dumps(event.result, default=str)[:_MAX_RESULT]
        lines.append(f"{n}. {event.name}({args}) -> {outcome}")
    if not calls:
        lines.append("(no tool calls)")
    lines += ["", "Changes to the world:"]
    changes = trial.diff.to_json()
    lines.append(json.dumps(changes, default=str, sort_keys=True) if changes else "(none)")
    lines += ["", "Final answer to the user:", trial.answer or "(none)"]
    return "\n".join(lines)
