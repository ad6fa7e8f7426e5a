"""What the judge is asked besides a verdict: which of two trials is better, and a restatement.

``Judge.compare`` shows the judge two trials of one case (candidates A and B)
and asks which meets a rubric dimension better; ``replay judge-check`` asks
twice, the order swapped, to see whether the judge prefers a position.
``Restater`` asks a model to say an answer again in its own words (the
``style`` probe), or ``paraphrase`` does by a template; ``pad_answer`` adds
confident, empty text (the ``length`` probe). Anything but the JSON contract
is ``unknown`` (a choice of None).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Literal

from recorder import ConfigError

Choice = Literal["A", "B"] | None
"""Which candidate a pairwise judge preferred; None: it could not tell (``unknown``)."""

PAIRWISE_PROMPT = (
    "You compare two AI agents' work on the same task, candidate A and candidate B. "
    "Read both transcripts, then judge only the dimension given: which candidate meets "
    "its criteria better? Reply with one JSON object and nothing else: "
    '{"choice": "A" | "B" | "unknown", "reason": "<one sentence>"}. '
    'Answer "unknown" when the transcripts do not let you tell.'
)
"""The pairwise judge's system prompt."""

RESTATE_PROMPT = (
    "Restate the user's text in your own words: keep every fact, claim and number, "
    "change the wording and the style. Reply with the restated text only."
)
"""What a restating model is asked (the ``style`` probe of ``replay judge-check``)."""

FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
"""A Markdown code fence around an answer (tolerated)."""


def pairwise_text(first: str, second: str) -> str:
    """The two transcripts as the pairwise judge reads them, ``first`` as candidate A."""
    return f"=== Candidate A ===\n{first}\n\n=== Candidate B ===\n{second}"


def parse_choice(raw: bytes) -> tuple[Choice, str]:
    """Read a chat completion's choice; anything but the JSON contract is None (unknown)."""
    content, failure = chat_content(raw)
    if content is None:
        return None, failure
    fenced = FENCE.match(content)
    try:
        data = json.loads(fenced.group(1) if fenced else content)
        said = str(data["choice"]).strip().upper()
        reason = str(data.get("reason", ""))
    except (ValueError, KeyError, TypeError):
        return None, f"judge did not answer the JSON choice: {content[:200]!r}"
    if said == "A":
        return "A", reason or "(no reason given)"
    if said == "B":
        return "B", reason or "(no reason given)"
    return None, reason or f"judge answered choice {said!r}"


def chat_content(raw: bytes) -> tuple[str | None, str]:
    """A chat completion's text (stripped), or None and why there is none."""
    try:
        message = json.loads(raw)["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None, "judge response is not a chat completion"
    if not isinstance(message, dict):
        return None, "judge response is not a chat completion"
    if message.get("refusal"):
        return None, f"judge refused: {str(message['refusal'])[:200]}"
    content = message.get("content") or ""
    if not isinstance(content, str):
        return None, f"judge answered content that is not text: {content!r:.200}"
    return content.strip(), ""


@dataclass(frozen=True)
class Restater:
    """An OpenAI-compatible endpoint that restates an answer in other words.

    Called with a text, it returns the model's restatement (temperature 0).

    Args:
        base_url: The endpoint's base URL (``.../v1``).
        model: The restating model.
        timeout: Seconds one call may take in all.
        api_key: Key sent as a bearer token.

    Raises:
        ConfigError: (when called) the endpoint failed or answered no text.
    """

    base_url: str
    model: str
    timeout: float = 60.0
    api_key: str = field(default="sk-restate", repr=False)

    def __call__(self, text: str) -> str:
        """The model's restatement of ``text``."""
        body = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": RESTATE_PROMPT},
                {"role": "user", "content": text},
            ],
        }
        where = f"the restating model {self.model!r} at {self.base_url}"
        headers = {"Authorization": f"Bearer {self.api_key}"}
        import httpx  # (here, not above: a process that never restates never loads it)

        from ._deadline import post_within

        try:
            response = post_within(
                self.base_url, "chat/completions", json=body, headers=headers, deadline=self.timeout
            )
        except httpx.HTTPError as exc:
            raise ConfigError(f"{where} failed: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise ConfigError(f"{where} answered HTTP {response.status_code}")
        content, failure = chat_content(response.content)
        if not content:
            raise ConfigError(f"{where} restated nothing ({failure or 'an empty answer'})")
        return content


_PADDING = (
    "I have carefully reviewed every step of this task and I am fully confident that it "
    "has been handled correctly and completely.",
    "Every requirement was taken into account, and the outcome meets the highest "
    "standards of quality and accuracy.",
    "Rest assured that nothing was overlooked: the work was double-checked thoroughly and "
    "is entirely reliable.",
    "This resolution reflects best practice and complete attention to detail throughout.",
)
"""Confident text that says nothing: the ``length`` probe's padding, shuffled."""


def pad_answer(answer: str, rng: random.Random) -> str:
    """The answer with confident, empty text after it (about 450 characters)."""
    return f"{answer}\n\n{' '.join(rng.sample(_PADDING, len(_PADDING)))}"


_TEMPLATES = (
    "To sum up: {answer}",
    "In short, here is where things stand. {answer}",
    "Summary of the outcome:\n- {bullets}",
)
"""The paraphrase templates (the ``style`` probe without a restating model)."""


def paraphrase(answer: str, rng: random.Random) -> str:
    """The answer restated by a template: framed again, or as a list of its sentences."""
    answer = answer.strip()
    sentences = re.split(r"(?<=[.!?])\s+", answer)
    return rng.choice(_TEMPLATES).format(answer=answer, bullets="\n- ".join(sentences))
